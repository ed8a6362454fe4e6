//! Kea's desktop shell: a thin Tauri layer over `kea-engine`. Each command
//! converts its DTO, makes one engine call on a blocking thread, and converts
//! back; index progress is broadcast as the `index-progress` event. The
//! window appears at once while the engine opens and syncs in the background.

mod dto;

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use dto::{ErrorDto, HitDto, ProgressDto, StatusDto};
use kea_engine::{CancelToken, Engine, EngineConfig, SearchMode};
use tauri::{AppHandle, Emitter, Manager, State};

/// The engine, set once it has opened.
#[derive(Default)]
struct AppState {
    engine: OnceLock<Arc<Engine>>,
    watcher: std::sync::Mutex<Option<kea_engine::WatchHandle>>,
}

impl AppState {
    fn engine(&self) -> Result<Arc<Engine>, ErrorDto> {
        self.engine.get().cloned().ok_or_else(ErrorDto::not_ready)
    }
}

/// Runs a blocking engine call off the async runtime's worker threads.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T, ErrorDto> + Send + 'static) -> Result<T, ErrorDto> {
    tauri::async_runtime::spawn_blocking(f)
        .await
        .unwrap_or_else(|e| Err(ErrorDto { kind: "internal", message: e.to_string() }))
}

#[tauri::command]
async fn status(state: State<'_, AppState>) -> Result<StatusDto, ErrorDto> {
    let engine = state.engine()?;
    blocking(move || engine.status().map(StatusDto::from).map_err(ErrorDto::from)).await
}

#[tauri::command]
async fn search(state: State<'_, AppState>, query: String, top_k: Option<usize>) -> Result<Vec<HitDto>, ErrorDto> {
    let engine = state.engine()?;
    let top_k = top_k.unwrap_or(5).clamp(1, 50);
    blocking(move || {
        let hits = engine.search(&query, top_k, SearchMode::Hybrid)?;
        Ok(hits.into_iter().map(HitDto::from).collect())
    })
    .await
}

#[tauri::command]
async fn reindex(app: AppHandle, state: State<'_, AppState>) -> Result<(), ErrorDto> {
    let engine = state.engine()?;
    blocking(move || {
        engine.sync(&progress_sink(app), &CancelToken::new())?;
        Ok(())
    })
    .await
}

fn progress_sink(app: AppHandle) -> impl kea_engine::ProgressSink {
    move |event: &kea_engine::IndexEvent| {
        if let Some(dto) = ProgressDto::from_event(event) {
            let _ = app.emit("index-progress", dto);
        }
    }
}

/// `--knowledge DIR` and `--data-dir DIR`, as for the CLI.
fn config_from_args() -> EngineConfig {
    let mut knowledge = PathBuf::from("knowledge");
    let mut data_dir = EngineConfig::default_data_dir();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--knowledge" => knowledge = args.next().map(PathBuf::from).unwrap_or(knowledge),
            "--data-dir" => data_dir = args.next().map(PathBuf::from).unwrap_or(data_dir),
            _ => {}
        }
    }
    EngineConfig::new(knowledge, data_dir)
}

/// Opens the engine, syncs, then keeps watching; reports failures to the UI.
fn start_engine(app: AppHandle, config: EngineConfig) {
    std::thread::spawn(move || {
        let _ = std::fs::create_dir_all(&config.knowledge_dir);
        let engine = match Engine::open(config) {
            Ok(engine) => Arc::new(engine),
            Err(e) => {
                let _ = app.emit("engine-error", ErrorDto::from(e));
                return;
            }
        };
        let state = app.state::<AppState>();
        let _ = state.engine.set(engine.clone());
        let _ = app.emit("engine-ready", ());
        if let Err(e) = engine.sync(&progress_sink(app.clone()), &CancelToken::new()) {
            let _ = app.emit("engine-error", ErrorDto::from(e));
        }
        let error_app = app.clone();
        let sink: Arc<dyn kea_engine::ProgressSink> = Arc::new(progress_sink(app.clone()));
        match kea_engine::watch(engine, sink, std::time::Duration::from_millis(300), move |e| {
            let _ = error_app.emit("engine-error", ErrorDto::from(e));
        }) {
            Ok(handle) => *state.watcher.lock().unwrap_or_else(|p| p.into_inner()) = Some(handle),
            Err(e) => {
                let _ = app.emit("engine-error", ErrorDto::from(e));
            }
        }
    });
}

/// Starts the desktop app.
pub fn run() {
    let config = config_from_args();
    tauri::Builder::default()
        .manage(AppState::default())
        .invoke_handler(tauri::generate_handler![status, search, reindex])
        .setup(move |app| {
            start_engine(app.handle().clone(), config);
            Ok(())
        })
        .run(tauri::generate_context!())
        .expect("error while running Kea");
}
