//! Kea's desktop shell: a thin Tauri layer over `kea-engine`. Each command
//! converts its DTO, makes one engine call on a blocking thread, and converts
//! back; index progress is broadcast as the `index-progress` event. The
//! window appears at once while the engine opens and syncs in the background.

mod dto;

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use dto::{AnswerDto, ConversationDto, ErrorDto, HitDto, IdentificationDto, ImportDto, PassageDto, ProgressDto, StatusDto, StreamDto};
use kea_engine::chat::{ChatOptions, RouterMode};
use kea_engine::identify::{ClipClassifier, IdentifyOptions};
use kea_engine::{CancelToken, Engine, EngineConfig, SearchMode};
use kea_llm::{LlmSettings, Provider};
use tauri::ipc::Channel;
use tauri::{AppHandle, Emitter, Manager, State};

/// The engine and language model, set once they have opened.
#[derive(Default)]
struct AppState {
    engine: OnceLock<Arc<Engine>>,
    llm: OnceLock<Arc<dyn Provider>>,
    /// What `llm-ready` announced, for a webview that loads after it.
    llm_info: OnceLock<serde_json::Value>,
    classifier: Arc<std::sync::Mutex<Option<ClipClassifier>>>,
    watcher: std::sync::Mutex<Option<kea_engine::WatchHandle>>,
}

impl AppState {
    fn engine(&self) -> Result<Arc<Engine>, ErrorDto> {
        self.engine.get().cloned().ok_or_else(ErrorDto::not_ready)
    }

    fn llm(&self) -> Result<Arc<dyn Provider>, ErrorDto> {
        self.llm.get().cloned().ok_or_else(ErrorDto::not_ready)
    }
}

/// Sends a stream event to the webview (a closed window just drops it).
fn forward(channel: &Channel<StreamDto>) -> impl FnMut(kea_engine::chat::ChatEvent) + '_ {
    move |event| {
        if let Some(dto) = StreamDto::from_event(&event) {
            let _ = channel.send(dto);
        }
    }
}

#[tauri::command]
async fn ask(state: State<'_, AppState>, question: String, chat_id: Option<i64>, on_event: Channel<StreamDto>) -> Result<AnswerDto, ErrorDto> {
    let (engine, llm) = (state.engine()?, state.llm()?);
    blocking(move || {
        let options = ChatOptions { router: RouterMode::for_provider(llm.kind()), ..Default::default() };
        let answer = engine.ask(llm.as_ref(), chat_id, &question, &options, &mut forward(&on_event), &|| false)?;
        Ok(AnswerDto::from(&answer))
    })
    .await
}

#[tauri::command]
async fn identify(
    state: State<'_, AppState>,
    path: Option<String>,
    bytes: Option<Vec<u8>>,
    chat_id: Option<i64>,
    on_event: Channel<StreamDto>,
) -> Result<IdentificationDto, ErrorDto> {
    let (engine, llm, slot) = (state.engine()?, state.llm()?, state.classifier.clone());
    blocking(move || {
        let image = match (path, bytes) {
            (Some(path), _) => std::fs::read(&path).map_err(|e| ErrorDto { kind: "io", message: format!("{path}: {e}") })?,
            (None, Some(bytes)) => bytes,
            (None, None) => return Err(ErrorDto { kind: "invalid_input", message: "no image given".into() }),
        };
        let mut slot = slot.lock().unwrap_or_else(|p| p.into_inner());
        if slot.is_none() {
            let config = engine.config();
            let id = std::env::var("KEA_IMAGE_MODEL").unwrap_or_else(|_| kea_engine::identify::DEFAULT_IMAGE_MODEL.to_string());
            *slot = Some(ClipClassifier::load(&config.model_paths, &id, &config.embed)?);
        }
        let classifier = slot.as_mut().expect("loaded above");
        let result = engine.identify(classifier, llm.as_ref(), &image, chat_id, &IdentifyOptions::default(), &mut forward(&on_event))?;
        Ok(IdentificationDto::from(&result))
    })
    .await
}

#[tauri::command]
async fn import_files(state: State<'_, AppState>, paths: Vec<String>) -> Result<ImportDto, ErrorDto> {
    let engine = state.engine()?;
    blocking(move || Ok(ImportDto::from(engine.import(&paths.into_iter().map(PathBuf::from).collect::<Vec<_>>())?))).await
}

#[tauri::command]
async fn passage(state: State<'_, AppState>, chunk_id: i64) -> Result<PassageDto, ErrorDto> {
    let engine = state.engine()?;
    blocking(move || {
        let row = engine.chunk_rows(&[chunk_id as u64])?.pop();
        row.map(PassageDto::from).ok_or_else(|| ErrorDto { kind: "not_found", message: format!("passage {chunk_id} is no longer indexed") })
    })
    .await
}

/// The language model in use and why (null until chosen).
#[tauri::command]
fn llm_info(state: State<'_, AppState>) -> serde_json::Value {
    state.llm_info.get().cloned().unwrap_or_default()
}

#[tauri::command]
async fn conversations(state: State<'_, AppState>) -> Result<Vec<ConversationDto>, ErrorDto> {
    let engine = state.engine()?;
    blocking(move || Ok(engine.conversations()?.into_iter().map(ConversationDto::from).collect())).await
}

/// Chooses the language model (auto: endpoint from the environment, Ollama,
/// the embedded GGUF, or none) and reports the choice to the UI.
fn start_llm(app: &AppHandle, config: &EngineConfig) {
    let settings = LlmSettings::from_env(config.model_paths.dirs.clone());
    let choice = kea_llm::auto_select(&settings).unwrap_or_else(|e| kea_llm::LlmChoice {
        provider: Box::new(kea_llm::select::NoProvider),
        reason: format!("no language model: {e}"),
    });
    let info = serde_json::json!({"provider": choice.provider.describe(), "reason": choice.reason});
    let state = app.state::<AppState>();
    let _ = state.llm.set(Arc::from(choice.provider));
    let _ = state.llm_info.set(info.clone());
    let _ = app.emit("llm-ready", info);
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
        start_llm(&app, engine.config());
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
        .invoke_handler(tauri::generate_handler![status, search, reindex, ask, identify, import_files, passage, conversations, llm_info])
        .setup(move |app| {
            start_engine(app.handle().clone(), config);
            Ok(())
        })
        .run(tauri::generate_context!())
        .expect("error while running Kea");
}
