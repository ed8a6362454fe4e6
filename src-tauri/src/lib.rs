//! Kea's desktop shell: a thin Tauri layer over `kea-engine`. Commands (in
//! `commands.rs`) convert a DTO, make one engine call on a blocking thread,
//! and convert back; index progress is broadcast as the `index-progress`
//! event. The window appears at once while the engine opens and syncs in the
//! background.

mod commands;
mod dto;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, OnceLock, RwLock};

use dto::{ErrorDto, ProgressDto};
use kea_engine::collections::{same_name, Collection, Library, DEFAULT_COLLECTION};
use kea_engine::model::catalog::Role;
use kea_engine::settings::Settings;
use kea_engine::{CancelToken, Engine, EngineConfig, ErrorKind};
use kea_llm::Provider;
use tauri::{AppHandle, Emitter, Manager};

/// The engine and language model (set once they have opened) and the
/// user's settings.
#[derive(Default)]
struct AppState {
    /// Replaced when the embedder or reranker changes (the engine reopens).
    engine: RwLock<Option<Arc<Engine>>>,
    /// The knowledge folder (`--knowledge`, else the settings' choice) and
    /// the data folder; the knowledge folder changes when the person picks another.
    dirs: RwLock<Option<(PathBuf, PathBuf)>>,
    /// Model downloads in progress, by model id.
    downloads: Mutex<HashMap<String, CancelToken>>,
    llm: RwLock<Option<Arc<dyn Provider>>>,
    /// What `llm-ready` announced, for a webview that loads after it.
    llm_info: RwLock<Option<dto::LlmInfoDto>>,
    settings: RwLock<Settings>,
    settings_path: OnceLock<PathBuf>,
    watcher: Mutex<Option<kea_engine::WatchHandle>>,
    /// Held while an engine replaces the previous one, and while it starts
    /// its watcher: two quick switches (reranker, then embedder) never leave
    /// an older engine, or its watcher, in place.
    restarting: Mutex<()>,
    /// Bumped by "stop": an answer started under an older value stops.
    stop_epoch: Arc<AtomicU64>,
    /// Files and folders the person picked in a dialog or dropped on the
    /// window: the only paths outside Kea's folders the webview may name.
    grants: kea_engine::access::Grants,
    /// The collection the knowledge pane and chat work on (empty: the default one).
    collection: RwLock<String>,
    /// The other collections, open, synced and watched in the background.
    background: Mutex<Vec<Background>>,
    /// Held while the background collections are replaced.
    background_turn: Mutex<()>,
}

/// A collection open beside the selected one.
struct Background {
    engine: Arc<Engine>,
    watcher: Option<kea_engine::WatchHandle>,
}

impl AppState {
    fn engine(&self) -> Result<Arc<Engine>, ErrorDto> {
        self.engine.read().unwrap_or_else(|p| p.into_inner()).clone().ok_or_else(ErrorDto::not_ready)
    }

    fn llm(&self) -> Result<Arc<dyn Provider>, ErrorDto> {
        self.llm.read().unwrap_or_else(|p| p.into_inner()).clone().ok_or_else(ErrorDto::not_ready)
    }

    fn settings(&self) -> Settings {
        self.settings.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The selected collection's engine configuration (the command line's
    /// folders, the settings, the collection's own).
    fn engine_config(&self) -> Result<EngineConfig, ErrorDto> {
        self.collection_config(&self.selected())
    }

    /// The selected collection's name.
    fn selected(&self) -> String {
        let name = self.collection.read().unwrap_or_else(|p| p.into_inner()).clone();
        if name.is_empty() {
            DEFAULT_COLLECTION.to_string()
        } else {
            name
        }
    }

    /// The collections' registry (a damaged one: only the default collection, and the error).
    fn library(&self) -> Result<Library, ErrorDto> {
        Ok(Library::load(&self.dirs()?.1)?)
    }

    /// Every collection, the default one first.
    fn collections(&self) -> Result<(Library, Vec<Collection>), ErrorDto> {
        let (knowledge, data_dir) = self.dirs()?;
        let library = Library::load(&data_dir).unwrap_or_else(|_| Library::empty(&data_dir));
        let all = library.list(&self.settings(), Some(knowledge));
        Ok((library, all))
    }

    /// The registry and the collection called `name`.
    fn collection(&self, name: &str) -> Result<(Library, Collection), ErrorDto> {
        let (library, all) = self.collections()?;
        let found = all.into_iter().find(|c| same_name(&c.name, name));
        let collection = found.ok_or_else(|| ErrorDto::new(ErrorKind::NotFound, format!("no collection is called '{name}'")))?;
        Ok((library, collection))
    }

    /// The engine configuration of the collection called `name`.
    fn collection_config(&self, name: &str) -> Result<EngineConfig, ErrorDto> {
        let (library, collection) = self.collection(name)?;
        Ok(library.engine_config(&collection, &self.settings(), &kea_engine::settings::Overrides::from_env()))
    }

    /// The open engine of the collection called `name` (selected or in the background).
    fn engine_of(&self, name: &str) -> Result<Arc<Engine>, ErrorDto> {
        let engines = self.engines_named(&[name.to_string()])?;
        let found = engines.into_iter().find(|e| same_name(&e.config().collection, name));
        found.ok_or_else(|| ErrorDto::new(ErrorKind::NotReady, format!("the collection '{name}' is not open yet")))
    }

    /// The open engines of the collections `names` names (`all`: every one), the selected one first.
    fn engines_named(&self, names: &[String]) -> Result<Vec<Arc<Engine>>, ErrorDto> {
        let all = names.iter().any(|n| same_name(n, kea_engine::collections::ALL_COLLECTIONS));
        let wanted = |e: &Engine| all || names.iter().any(|n| same_name(n, &e.config().collection));
        let mut engines: Vec<Arc<Engine>> = vec![self.engine()?];
        let background = self.background.lock().unwrap_or_else(|p| p.into_inner());
        engines.extend(background.iter().map(|b| b.engine.clone()).filter(|e| wanted(e)));
        Ok(engines)
    }

    /// The knowledge and data folders.
    fn dirs(&self) -> Result<(PathBuf, PathBuf), ErrorDto> {
        self.dirs.read().unwrap_or_else(|p| p.into_inner()).clone().ok_or_else(ErrorDto::not_ready)
    }

    /// A path from the webview, if the person chose it (or it is inside the
    /// knowledge or data folder).
    fn chosen(&self, path: &str) -> Result<PathBuf, ErrorDto> {
        let (knowledge, data_dir) = self.dirs()?;
        Ok(self.grants.check(std::path::Path::new(path), &[&knowledge, &data_dir])?)
    }

    /// The settings' paths that make Kea read files (a GGUF model, a
    /// models folder) must have been chosen by the person when they change.
    fn check_chosen_paths(&self, previous: &Settings, next: &Settings) -> Result<(), ErrorDto> {
        let changed = [(&previous.llm.gguf, &next.llm.gguf), (&previous.models_dir, &next.models_dir)];
        for (_, path) in changed.into_iter().filter(|(before, after)| before != after) {
            if let Some(path) = path {
                self.chosen(&path.display().to_string())?;
            }
        }
        Ok(())
    }

    /// Where the settings' secrets are kept (the keyring, else a file).
    fn secrets_kind(&self) -> kea_engine::secrets::SecretStoreKind {
        self.settings_path.get().map_or(kea_engine::secrets::SecretStoreKind::File, |path| Settings::secrets_kind(path))
    }

    /// Saves the settings (0600) and makes them the ones in effect.
    fn store_settings(&self, settings: Settings) -> Result<(), ErrorDto> {
        let path = self.settings_path.get().ok_or_else(ErrorDto::not_ready)?;
        settings.save(path)?;
        *self.settings.write().unwrap_or_else(|p| p.into_inner()) = settings;
        Ok(())
    }
}

/// The engine configuration for the settings and folders; this executable
/// reads PDF, Word and pictures as a child process (see `main.rs`).
fn engine_config(settings: &Settings, knowledge: PathBuf, data_dir: PathBuf) -> EngineConfig {
    // The CLI's precedence: the settings file, then the environment (the app has no flags).
    settings.engine_config_with(knowledge, data_dir, &kea_engine::settings::Overrides::from_env())
}

/// Chooses the language model from the settings (auto: endpoint from the
/// settings or environment, Ollama, the embedded GGUF, or none) and reports
/// the choice to the UI as `llm-ready`.
fn select_llm(app: &AppHandle, model_dirs: Vec<PathBuf>) {
    let state = app.state::<AppState>();
    let settings = state.settings().llm_settings(model_dirs);
    let choice = kea_llm::auto_select(&settings)
        .unwrap_or_else(|e| kea_llm::LlmChoice { provider: Box::new(kea_llm::select::NoProvider), reason: format!("no language model: {e}") });
    let info = dto::LlmInfoDto { provider: choice.provider.describe(), reason: choice.reason.clone() };
    let provider: Arc<dyn kea_llm::Provider> = Arc::from(choice.provider);
    if provider.kind() == kea_llm::ProviderKind::Embedded && provider.writes_answers() && !provider.is_tiny() {
        // The fixed part of every question's prompt, evaluated before the first question.
        let warming = provider.clone();
        std::thread::spawn(move || kea_engine::chat::reading::warm_up(warming.as_ref()));
    }
    *state.llm.write().unwrap_or_else(|p| p.into_inner()) = Some(provider);
    *state.llm_info.write().unwrap_or_else(|p| p.into_inner()) = Some(info.clone());
    let _ = app.emit("llm-ready", info);
}

/// Deletes a model (never the index's embedder) and forgets it wherever it
/// was chosen; a removed image model is unloaded.
fn remove_model(app: &AppHandle, id: &str) -> Result<(), ErrorDto> {
    let state = app.state::<AppState>();
    let mut settings = state.settings();
    settings.remove_model(&state.engine_config()?, id)?;
    state.store_settings(settings)?;
    if let Ok(engine) = state.engine() {
        engine.identifier().unload_image_model();
    }
    Ok(())
}

/// Records a model choice and applies it: the engine reopens for a new
/// embedder (re-embedding) or reranker, the image model reloads, the
/// language model is chosen again.
fn apply_model_choice(app: &AppHandle, role: Role, id: &str) -> Result<(), ErrorDto> {
    let state = app.state::<AppState>();
    let mut settings = state.settings();
    let mut config = state.engine_config()?;
    kea_engine::model::ModelId::parse(id)?;
    if settings.model_manager(&config).installed_dir(id).is_none() {
        return Err(ErrorDto::new(ErrorKind::ModelMissing, format!("{id} is not installed")));
    }
    settings.choose(role, Some(id.to_string()));
    state.store_settings(settings)?;
    match role {
        Role::Embedder => {
            config.use_model(id);
            config.reembed = true;
            // A named collection keeps its own embedder (the default one's is the settings').
            kea_engine::collections::remember_explicit_embedder(&config)?;
            start_engine(app.clone(), config);
        }
        Role::Reranker => start_engine(app.clone(), state.engine_config()?),
        // The next identification loads the chosen image model.
        Role::Image => {}
        Role::Llm => select_llm(app, config.model_paths.dirs.clone()),
    }
    Ok(())
}

/// Makes `folder` (chosen by the person) the selected collection's folder
/// (the default collection's is kept in the settings), and the engine reopens over it (the index follows the new
/// folder's files; no file of either folder is touched).
fn use_knowledge_dir(app: &AppHandle, folder: PathBuf) -> Result<(), ErrorDto> {
    let state = app.state::<AppState>();
    let (_, data_dir) = state.dirs()?;
    let folder = std::path::absolute(&folder).map_err(|e| ErrorDto::new(ErrorKind::InvalidInput, e.to_string()))?;
    if folder.starts_with(&data_dir) || data_dir.starts_with(&folder) {
        return Err(ErrorDto::new(ErrorKind::InvalidInput, format!("{} holds or is inside Kea's own data folder", folder.display())));
    }
    std::fs::create_dir_all(&folder).map_err(|e| ErrorDto::new(ErrorKind::Io, format!("{}: {e}", folder.display())))?;
    let selected = state.selected();
    if selected != DEFAULT_COLLECTION {
        // Another collection is re-pointed (its documents are re-read; vectors are reused by content).
        state.library()?.set_folders(&selected, &[folder])?;
        return select_collection(app, &selected);
    }
    let mut settings = state.settings();
    settings.knowledge_dir = Some(folder.clone());
    state.store_settings(settings)?;
    *state.dirs.write().unwrap_or_else(|p| p.into_inner()) = Some((folder, data_dir));
    start_engine(app.clone(), state.engine_config()?);
    Ok(())
}

/// Switches the index to a remote embedder after checking that it answers
/// (the UI has asked the user to confirm the re-embedding cost).
fn use_remote_embedder(app: &AppHandle, remote: kea_engine::remote_embed::RemoteEmbedConfig) -> Result<(), ErrorDto> {
    kea_engine::remote_embed::HttpEmbedder::connect(remote.clone())?;
    let state = app.state::<AppState>();
    let mut settings = state.settings();
    settings.models.embedder = Some(remote.model_id());
    settings.models.remote_embedder = Some(remote.clone());
    state.store_settings(settings)?;
    let mut config = state.engine_config()?;
    config.use_remote(remote);
    config.reembed = true;
    kea_engine::collections::remember_explicit_embedder(&config)?;
    start_engine(app.clone(), config);
    Ok(())
}

fn progress_sink(app: AppHandle) -> impl kea_engine::ProgressSink {
    move |event: &kea_engine::IndexEvent| {
        if let Some(dto) = ProgressDto::from_event(event) {
            let _ = app.emit("index-progress", dto);
        }
    }
}

/// `--knowledge DIR` and `--data-dir DIR`, as for the CLI (no
/// `--knowledge`: the folder the settings name, see `Settings::knowledge_dir`).
fn dirs_from_args() -> (Option<PathBuf>, PathBuf) {
    let mut knowledge = None;
    let mut data_dir = EngineConfig::default_data_dir();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--knowledge" => knowledge = args.next().map(PathBuf::from).or(knowledge),
            "--data-dir" => data_dir = args.next().map(PathBuf::from).unwrap_or(data_dir),
            _ => {}
        }
    }
    (knowledge, data_dir)
}

/// Opens the engine (again, after a model change), syncs, then keeps
/// watching; reports failures to the UI.
fn start_engine(app: AppHandle, config: EngineConfig) {
    std::thread::spawn(move || {
        if let Some(engine) = replace_engine(&app, config) {
            run_engine(&app, engine);
        }
    });
}

/// Chooses the language model, syncs `engine` (the selected collection's),
/// then watches its folders unless another engine replaced it meanwhile.
fn run_engine(app: &AppHandle, engine: Arc<Engine>) {
    let state = app.state::<AppState>();
    select_llm(app, engine.config().model_paths.dirs.clone());
    if engine.folders().primary().is_none() {
        return; // imported without its documents: searched as it is
    }
    let synced = engine.indexer().sync(&progress_sink(app.clone()), &CancelToken::new());
    let _turn = state.restarting.lock().unwrap_or_else(|p| p.into_inner());
    // A later switch has replaced this engine: its sync was cancelled or
    // refused (the index is the new embedder's); it watches nothing.
    if !state.engine().is_ok_and(|current| Arc::ptr_eq(&current, &engine)) {
        return;
    }
    if let Err(e) = synced {
        let _ = app.emit("engine-error", ErrorDto::from(e));
    }
    if let Some(handle) = watch_reporting(app, engine) {
        *state.watcher.lock().unwrap_or_else(|p| p.into_inner()) = Some(handle);
    }
}

/// Watches `engine`'s folders, its sync failures said as `engine-error` events.
fn watch_reporting(app: &AppHandle, engine: Arc<Engine>) -> Option<kea_engine::WatchHandle> {
    let error_app = app.clone();
    let sink: Arc<dyn kea_engine::ProgressSink> = Arc::new(progress_sink(app.clone()));
    let watched = kea_engine::watch(engine, sink, std::time::Duration::from_millis(300), move |e| {
        let _ = error_app.emit("engine-error", ErrorDto::from(e));
    });
    watched.map_err(|e| app.emit("engine-error", ErrorDto::from(e))).ok()
}

/// Stops the background collections' watchers and indexing.
fn stop_background(state: &AppState) {
    let previous = std::mem::take(&mut *state.background.lock().unwrap_or_else(|p| p.into_inner()));
    for background in previous {
        if let Some(watcher) = background.watcher {
            watcher.stop();
        }
        background.engine.retire();
    }
}

/// Opens every collection but the selected one, then syncs and watches
/// each (their progress is not the knowledge pane's: only failures are said).
fn start_background(app: AppHandle) {
    std::thread::spawn(move || {
        let state = app.state::<AppState>();
        let _turn = state.background_turn.lock().unwrap_or_else(|p| p.into_inner());
        stop_background(&state);
        let Ok((library, all)) = state.collections() else { return };
        let selected = state.selected();
        for collection in all.iter().filter(|c| !same_name(&c.name, &selected)) {
            let config = library.engine_config(collection, &state.settings(), &kea_engine::settings::Overrides::from_env());
            match Engine::open(config) {
                Ok(engine) => state.background.lock().unwrap_or_else(|p| p.into_inner()).push(Background { engine: Arc::new(engine), watcher: None }),
                Err(e) => drop(app.emit("engine-error", ErrorDto::from(e))),
            }
        }
        let engines: Vec<Arc<Engine>> = state.background.lock().unwrap_or_else(|p| p.into_inner()).iter().map(|b| b.engine.clone()).collect();
        for engine in engines.into_iter().filter(|e| e.folders().primary().is_some()) {
            if let Err(e) = engine.indexer().sync(&(), &CancelToken::new()) {
                let _ = app.emit("engine-error", ErrorDto::from(e));
            }
            let watcher = kea_engine::watch(engine.clone(), Arc::new(()), std::time::Duration::from_millis(300), |_| {}).ok();
            let mut background = state.background.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(slot) = background.iter_mut().find(|b| Arc::ptr_eq(&b.engine, &engine)) {
                slot.watcher = watcher;
            }
        }
    });
}

/// Makes `name` the collection the knowledge pane and chat work on: the
/// others are stopped, it opens (the previous one retired first), and they
/// all reopen in the background.
fn select_collection(app: &AppHandle, name: &str) -> Result<(), ErrorDto> {
    let state = app.state::<AppState>();
    let config = state.collection_config(name)?;
    let _turn = state.background_turn.lock().unwrap_or_else(|p| p.into_inner());
    stop_background(&state);
    *state.collection.write().unwrap_or_else(|p| p.into_inner()) = config.collection.clone();
    let engine = replace_engine(app, config).ok_or_else(|| ErrorDto::new(ErrorKind::Internal, format!("the collection '{name}' did not open")))?;
    let run_app = app.clone();
    std::thread::spawn(move || run_engine(&run_app, engine));
    start_background(app.clone());
    Ok(())
}

/// How many names `first_free` tries.
const MAX_NAME_TRIES: usize = 1000;

/// `base`, then `base (2)`, `base (3)`… : the first that `free` accepts,
/// within [`MAX_NAME_TRIES`] (a name `free` can never accept ends there too).
fn first_free<T>(base: &str, free: impl Fn(&str) -> Option<T>) -> Result<T, ErrorDto> {
    (1..=MAX_NAME_TRIES).find_map(|n| free(&if n == 1 { base.to_string() } else { format!("{base} ({n})") })).ok_or_else(|| {
        ErrorDto::new(ErrorKind::InvalidInput, format!("no free name like {base:?} after {MAX_NAME_TRIES} tries: rename a collection and try again"))
    })
}

/// Where new collections' folders go: beside the default collection's
/// knowledge folder (else in the data folder).
fn folders_parent<'a>(knowledge: &'a std::path::Path, data_dir: &'a std::path::Path) -> &'a std::path::Path {
    knowledge.parent().unwrap_or(data_dir)
}

/// Creates a collection over the folder the person chose, or a new folder
/// named after it beside the default collection's, and selects it.
fn create_collection(app: &AppHandle, name: &str, folder: Option<PathBuf>) -> Result<Collection, ErrorDto> {
    let state = app.state::<AppState>();
    let (knowledge, data_dir) = state.dirs()?;
    let mut library = state.library()?;
    let name = library.check_new_name(name)?;
    let folder = match folder {
        Some(folder) => folder,
        None => {
            let free = kea_engine::collections::new_folder_for(folders_parent(&knowledge, &data_dir), &name)?;
            std::fs::create_dir_all(&free).map_err(|e| ErrorDto::new(ErrorKind::Io, format!("{}: {e}", free.display())))?;
            free
        }
    };
    let collection = library.create(&name, &[folder], kea_engine::collections::CollectionSettings::default())?;
    select_collection(app, &collection.name)?;
    Ok(collection)
}

/// Writes the collection `name` to `file` (a `.keakb`), with its documents
/// when `with_files`; the number of documents written.
fn export_collection(app: &AppHandle, name: &str, file: &std::path::Path, with_files: bool) -> Result<usize, ErrorDto> {
    let state = app.state::<AppState>();
    let (_, collection) = state.collection(name)?;
    let engine = state.engine_of(&collection.name)?;
    let (_, data_folder) = state.dirs()?;
    // The save dialog asked before an existing file is replaced.
    let dest = kea_engine::keakb::Destination { file, replace: true, data_folder: &data_folder };
    Ok(kea_engine::keakb::export(&engine, &collection, &dest, with_files)?.documents)
}

/// Adds the collection in `file` (checked before anything is written; its
/// documents, if any, go to a new folder beside the default collection's;
/// a remote embedder it names only with the address the person confirmed)
/// and opens it in the background; its name.
fn import_collection(app: &AppHandle, file: &std::path::Path, trust_embedder: Option<&str>) -> Result<String, ErrorDto> {
    let state = app.state::<AppState>();
    let (knowledge, data_dir) = state.dirs()?;
    let mut library = state.library()?;
    let name = first_free(&kea_engine::keakb::inspect(file)?.name, |n| library.check_new_name(n).ok())?;
    let paths = state.engine_config()?.model_paths;
    let folder = kea_engine::keakb::DocumentsFolder::Inside(folders_parent(&knowledge, &data_dir));
    let read: Vec<PathBuf> = library.list(&state.settings(), Some(knowledge.clone())).into_iter().flat_map(|c| c.folders).collect();
    let target = kea_engine::keakb::ImportTarget { name: Some(&name), folder, model_paths: &paths, trust_embedder, collection_folders: &read };
    let imported = kea_engine::keakb::import(&mut library, file, &target)?;
    start_background(app.clone());
    Ok(imported.name)
}

/// Removes a collection (never its folders; its index only when asked); the
/// default one is selected if it was this one.
fn remove_collection(app: &AppHandle, name: &str, delete_index: bool) -> Result<(), ErrorDto> {
    let state = app.state::<AppState>();
    let mut library = state.library()?;
    if same_name(&state.selected(), name) {
        select_collection(app, DEFAULT_COLLECTION)?;
    }
    // Its engine is in the background now: stopped before its index goes.
    let _turn = state.background_turn.lock().unwrap_or_else(|p| p.into_inner());
    stop_background(&state);
    let removed = library.remove(name, delete_index);
    drop(_turn);
    start_background(app.clone());
    removed.map(drop).map_err(ErrorDto::from)
}

/// Saves a collection's own settings and reopens it with them.
fn update_collection(
    app: &AppHandle,
    name: &str,
    edit: impl FnOnce(&Collection) -> Result<kea_engine::collections::CollectionSettings, ErrorDto>,
) -> Result<(), ErrorDto> {
    let state = app.state::<AppState>();
    let (mut library, collection) = state.collection(name)?;
    library.set_settings(&collection.name, edit(&collection)?)?;
    select_collection(app, &state.selected())
}

/// Stops the running engine's watcher and indexing, opens one for
/// `config` and makes it the app's (`None`, said as an event, when it
/// cannot open).
fn replace_engine(app: &AppHandle, config: EngineConfig) -> Option<Arc<Engine>> {
    let state = app.state::<AppState>();
    let _turn = state.restarting.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(watcher) = state.watcher.lock().unwrap_or_else(|p| p.into_inner()).take() {
        watcher.stop();
    }
    if let Ok(previous) = state.engine() {
        previous.retire();
    }
    let _ = std::fs::create_dir_all(&config.knowledge_dir);
    let engine = match Engine::open(config) {
        Ok(engine) => Arc::new(engine),
        Err(e) => {
            let _ = app.emit("engine-error", ErrorDto::from(e));
            return None;
        }
    };
    *state.engine.write().unwrap_or_else(|p| p.into_inner()) = Some(engine.clone());
    let _ = app.emit("engine-ready", ());
    Some(engine)
}

/// Starts the desktop app.
pub fn run() {
    let (knowledge, data_dir) = dirs_from_args();
    let settings_path = data_dir.join(Settings::FILE_NAME);
    let state = AppState::default();
    match Settings::load(&settings_path) {
        Ok(settings) => *state.settings.write().unwrap_or_else(|p| p.into_inner()) = settings,
        Err(e) => eprintln!("kea-desktop: ignoring unreadable settings: {e}"),
    }
    let _ = state.settings_path.set(settings_path);
    let knowledge = state.settings().knowledge_dir(knowledge);
    *state.dirs.write().unwrap_or_else(|p| p.into_inner()) = Some((knowledge.clone(), data_dir.clone()));
    // The default collection (a damaged collections file cannot keep it from opening).
    let config = state.engine_config().unwrap_or_else(|_| engine_config(&state.settings(), knowledge, data_dir));
    tauri::Builder::default()
        .plugin(tauri_plugin_dialog::init())
        .plugin(tauri_plugin_opener::init())
        .manage(state)
        .on_window_event(|window, event| {
            // What the person drops may be imported or identified.
            if let tauri::WindowEvent::DragDrop(tauri::DragDropEvent::Drop { paths, .. }) = event {
                window.state::<AppState>().grants.grant(paths.iter().cloned());
            }
        })
        .invoke_handler(commands::handler())
        .setup(move |app| {
            start_engine(app.handle().clone(), config);
            start_background(app.handle().clone());
            Ok(())
        })
        .run(tauri::generate_context!())
        .expect("error while running Kea");
}

#[cfg(test)]
mod capability_tests {
    include!("../command_list.rs");

    /// Architecture Invariant: the webview may call Kea's own commands and
    /// listen to events, and nothing else (no shell, fs, dialog or opener
    /// permissions: files are picked through Kea's `pick_paths`, which records
    /// what the person chose); every registered command is allowed by name.
    #[test]
    fn capabilities_allow_exactly_kea_commands() {
        let capability: serde_json::Value = serde_json::from_str(include_str!("../capabilities/default.json")).unwrap();
        let granted: Vec<&str> = capability["permissions"].as_array().unwrap().iter().map(|p| p.as_str().unwrap()).collect();
        let mut expected = vec!["core:event:default".to_string()];
        expected.extend(COMMANDS.iter().map(|c| format!("allow-{}", c.replace('_', "-"))));
        assert_eq!(granted, expected);

        let source = include_str!("commands.rs");
        let start = source.find("generate_handler![").expect("the handler list") + "generate_handler![".len();
        let registered: Vec<&str> = source[start..source[start..].find(']').unwrap() + start].split(',').map(str::trim).filter(|s| !s.is_empty()).collect();
        assert_eq!(registered, COMMANDS, "command_list.rs and the registered commands differ");
    }
}

#[cfg(test)]
mod naming_tests {
    /// A name nothing accepts (one `check_new_name` refuses) ends with an
    /// error instead of looping for ever.
    #[test]
    fn first_free_gives_up_on_a_name_nothing_accepts() {
        let never = super::first_free("all", |_| None::<String>);
        assert_eq!(never.unwrap_err().kind, kea_engine::ErrorKind::InvalidInput.code());
        let taken = ["Notes", "Notes (2)"];
        assert_eq!(super::first_free("Notes", |n| (!taken.contains(&n)).then(|| n.to_string())).unwrap(), "Notes (3)");
    }

    /// What the app calls the default collection, in every language, is a
    /// name the engine keeps from other collections.
    #[test]
    fn the_default_collection_labels_are_the_ones_the_engine_reserves() {
        let strings = include_str!("../../ui/src/i18n.ts");
        let key = "\"collections.default\": \"";
        let labels: Vec<&str> = strings.match_indices(key).map(|(at, _)| &strings[at + key.len()..]).map(|rest| &rest[..rest.find('"').unwrap()]).collect();
        assert!(labels.len() >= 2, "{labels:?}");
        assert_eq!(labels, kea_engine::collections::DEFAULT_COLLECTION_LABELS);
    }
}
