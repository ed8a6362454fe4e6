//! The commands the webview calls. Each converts its arguments, makes one
//! engine call off the async runtime's worker threads, and converts the
//! result to a DTO; answers and identifications stream over a Channel.

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use kea_engine::chat::{ChatOptions, RouterMode};
use kea_engine::identify::{IdentifyOptions, Photo};
use kea_engine::web::FetchLimits;
use tauri::ipc::Channel;
use tauri::{AppHandle, Manager, State};
use tauri_plugin_dialog::DialogExt;
use tauri_plugin_opener::OpenerExt;

use crate::dto::{
    AnswerDto, CollectionDto, CollectionFileDto, CollectionSettingsDto, ConversationDto, DownloadDto, ErrorDto, EvalDto, IdentificationDto, ImportDto,
    ImportProgressDto, LlmInfoDto, McpConfigDto, MessageDto, ModelDto, ModelRoleDto, PassageDto, PickDto, PlanDto, ReembedCostDto, RemoteEmbedderDto,
    SettingsDto, StatusDto, StreamDto, WebPageDto,
};
use crate::{apply_model_choice, progress_sink, select_llm, AppState};
use kea_engine::{CancelToken, Engine, ErrorKind};

/// The handler for every command in `command_list.rs`, in the same order.
pub fn handler() -> impl Fn(tauri::ipc::Invoke) -> bool + Send + Sync + 'static {
    tauri::generate_handler![
        status,
        reindex,
        cancel_indexing,
        reindex_document,
        delete_document,
        import_files,
        add_web_page,
        refetch_document,
        pick_paths,
        set_knowledge_dir,
        open_document,
        document_bytes,
        open_link,
        ask,
        stop_generation,
        identify,
        passage,
        conversations,
        conversation_messages,
        rename_conversation,
        delete_conversation,
        llm_info,
        get_settings,
        save_settings,
        mcp_config,
        run_eval,
        models_list,
        setup_plan,
        setup_done,
        model_install,
        model_cancel,
        model_remove,
        reembed_cost,
        model_use,
        use_remote_embedder,
        collections,
        create_collection,
        select_collection,
        update_collection,
        remove_collection,
        export_conversation,
        pause_indexing,
        resume_indexing,
        export_collection,
        inspect_collection_file,
        import_collection
    ]
}

/// Runs a blocking engine call off the async runtime's worker threads. A
/// panic in it (a defect) is answered as an error the window shows, never
/// a request left waiting.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T, ErrorDto> + Send + 'static) -> Result<T, ErrorDto> {
    tauri::async_runtime::spawn_blocking(f).await.unwrap_or_else(|e| Err(panicked(e)))
}

/// The error a panicked engine call answers with.
fn panicked(e: tauri::Error) -> ErrorDto {
    ErrorDto::new(ErrorKind::Internal, format!("Kea stopped this request on an internal error (please report it): {e}"))
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
async fn status(state: State<'_, AppState>) -> Result<StatusDto, ErrorDto> {
    let engine = state.engine()?;
    blocking(move || Ok(StatusDto::from(engine.status()?))).await
}

#[tauri::command]
async fn reindex(app: AppHandle, state: State<'_, AppState>) -> Result<(), ErrorDto> {
    let engine = state.engine()?;
    blocking(move || Ok(engine.indexer().sync(&progress_sink(app), &CancelToken::new()).map(drop)?)).await
}

/// Stops the indexing run in progress, whoever started it (the watcher, a
/// re-index), after the file or batch at hand.
#[tauri::command]
fn cancel_indexing(state: State<'_, AppState>) -> Result<(), ErrorDto> {
    state.engine()?.indexer().cancel();
    Ok(())
}

/// Pauses indexing (the run in progress stops after the file at hand; the
/// watcher reads nothing) until resumed.
#[tauri::command]
fn pause_indexing(state: State<'_, AppState>) -> Result<(), ErrorDto> {
    state.engine()?.indexer().pause();
    Ok(())
}

/// Resumes indexing: what the pause left unread is read now.
#[tauri::command]
async fn resume_indexing(app: AppHandle, state: State<'_, AppState>) -> Result<(), ErrorDto> {
    let engine = state.engine()?;
    blocking(move || Ok(engine.indexer().resume(&progress_sink(app), &CancelToken::new()).map(drop)?)).await
}

#[tauri::command]
async fn reindex_document(app: AppHandle, state: State<'_, AppState>, path: String) -> Result<(), ErrorDto> {
    let engine = state.engine()?;
    blocking(move || Ok(engine.documents().reindex(&path, &progress_sink(app), &CancelToken::new()).map(drop)?)).await
}

#[tauri::command]
async fn delete_document(app: AppHandle, state: State<'_, AppState>, path: String) -> Result<(), ErrorDto> {
    let engine = state.engine()?;
    blocking(move || Ok(engine.documents().delete(&path, &progress_sink(app), &CancelToken::new()).map(drop)?)).await
}

/// Copies dropped or picked files and folders into the knowledge folder
/// (the watcher then indexes them), reporting each copy.
/// Only paths the person picked or dropped are accepted.
#[tauri::command]
async fn import_files(state: State<'_, AppState>, paths: Vec<String>, on_progress: Channel<ImportProgressDto>) -> Result<ImportDto, ErrorDto> {
    let engine = state.engine()?;
    let sources = paths.iter().map(|p| state.chosen(p)).collect::<Result<Vec<PathBuf>, ErrorDto>>()?;
    blocking(move || {
        let mut send = |p: &kea_engine::import::ImportProgress| drop(on_progress.send(ImportProgressDto::from(p)));
        Ok(ImportDto::from(engine.documents().import(&sources, &mut send)?))
    })
    .await
}

/// Fetches a web page into the selected collection and indexes it
/// (`allow_local`: the person allowed addresses on this computer or network).
#[tauri::command]
async fn add_web_page(app: AppHandle, state: State<'_, AppState>, url: String, allow_local: bool) -> Result<WebPageDto, ErrorDto> {
    let engine = state.engine()?;
    let limits = FetchLimits { allow_local, ..FetchLimits::default() };
    blocking(move || Ok(WebPageDto::from(engine.documents().add_web_page(&url, &limits, &progress_sink(app), &CancelToken::new())?))).await
}

/// Fetches a kept web page again from its address.
#[tauri::command]
async fn refetch_document(app: AppHandle, state: State<'_, AppState>, path: String, allow_local: bool) -> Result<WebPageDto, ErrorDto> {
    let engine = state.engine()?;
    let limits = FetchLimits { allow_local, ..FetchLimits::default() };
    blocking(move || Ok(WebPageDto::from(engine.documents().refetch(&path, &limits, &progress_sink(app), &CancelToken::new())?))).await
}

/// Opens the system's file dialog (documents, a folder or a golden set) and
/// records what the person chose, so later commands may read it.
#[tauri::command]
async fn pick_paths(app: AppHandle, kind: PickDto) -> Result<Vec<String>, ErrorDto> {
    blocking(move || {
        let dialog = app.dialog().file();
        let picked = match kind {
            PickDto::Documents => dialog.add_filter("Documents", kea_engine::extract::DocKind::EXTENSIONS.map(|(ext, _)| ext).as_slice()).blocking_pick_files(),
            PickDto::Folder => dialog.blocking_pick_folders(),
            PickDto::GoldenSet => dialog.add_filter("Golden set", &["jsonl", "json"]).blocking_pick_file().map(|f| vec![f]),
            PickDto::Gguf => dialog.add_filter("GGUF model", &["gguf"]).blocking_pick_file().map(|f| vec![f]),
        };
        let paths: Vec<PathBuf> = picked.unwrap_or_default().into_iter().filter_map(|f| f.into_path().ok()).collect();
        app.state::<AppState>().grants.grant(paths.iter().cloned());
        Ok(paths.iter().map(|p| p.display().to_string()).collect())
    })
    .await
}

/// Opens an indexed document (only inside the knowledge folder) in the
/// system's default application; a PDF at `page` when its viewer takes one.
#[tauri::command]
async fn open_document(app: AppHandle, state: State<'_, AppState>, path: String, page: Option<u32>) -> Result<(), ErrorDto> {
    let engine = state.engine()?;
    blocking(move || {
        let file = engine.documents().path(&path)?;
        if page.is_some_and(|page| kea_engine::viewer::open_pdf_at_page(&file, page)) {
            return Ok(());
        }
        app.opener().open_path(file.display().to_string(), None::<&str>).map_err(|e| ErrorDto::new(ErrorKind::Io, e.to_string()))
    })
    .await
}

/// A document's bytes (inside the knowledge folder only), for showing a
/// cited PDF page in the passage panel; sent raw, not as JSON.
#[tauri::command]
async fn document_bytes(state: State<'_, AppState>, path: String) -> Result<tauri::ipc::Response, ErrorDto> {
    let engine = state.engine()?;
    blocking(move || Ok(tauri::ipc::Response::new(engine.documents().bytes(&path)?))).await
}

/// How other assistants start Kea's MCP server: the `kea` program beside
/// this one, over this app's data folder.
#[tauri::command]
fn mcp_config(state: State<'_, AppState>) -> Result<McpConfigDto, ErrorDto> {
    let (_, data_dir) = state.dirs()?;
    let app = std::env::current_exe().map_err(|e| ErrorDto::new(ErrorKind::Io, e.to_string()))?;
    Ok(McpConfigDto::new(&app.with_file_name(if cfg!(windows) { "kea.exe" } else { "kea" }), &data_dir))
}

/// Opens an http(s) link from an answer or passage in the browser.
#[tauri::command]
fn open_link(app: AppHandle, url: String) -> Result<(), ErrorDto> {
    if !(url.starts_with("https://") || url.starts_with("http://")) {
        return Err(ErrorDto::new(ErrorKind::InvalidInput, format!("only http(s) links open ({url})")));
    }
    app.opener().open_url(url, None::<&str>).map_err(|e| ErrorDto::new(ErrorKind::Io, e.to_string()))
}

/// Answers from the selected collection, or across the ones `collections`
/// names (`["all"]`: every one); the conversation is the selected one's.
#[tauri::command]
async fn ask(
    state: State<'_, AppState>,
    question: String,
    chat_id: Option<i64>,
    collections: Option<Vec<String>>,
    on_event: Channel<StreamDto>,
) -> Result<AnswerDto, ErrorDto> {
    let (engines, llm, settings) = (state.engines_named(&collections.unwrap_or_default())?, state.llm()?, state.settings());
    let epoch = state.stop_epoch.clone();
    let started_at = epoch.load(Ordering::SeqCst);
    blocking(move || {
        let options =
            ChatOptions { router: RouterMode::for_provider(llm.kind()), retrieval: settings.retrieval, enhance: settings.enhance, ..Default::default() };
        let stopped = move || epoch.load(Ordering::SeqCst) != started_at;
        let (engine, others) = engines.split_first().expect("the selected collection's engine");
        let answerer = match others {
            [] => engine.answerer(),
            _ => engine.answerer_over(Box::new(engine.across(&others.iter().map(Arc::as_ref).collect::<Vec<_>>()))),
        };
        let answer = answerer.ask(llm.as_ref(), chat_id, &question, &options, &mut forward(&on_event), &stopped)?;
        Ok(AnswerDto::from(&answer))
    })
    .await
}

/// Stops the answers being generated (they end with what they have).
#[tauri::command]
fn stop_generation(state: State<'_, AppState>) {
    state.stop_epoch.fetch_add(1, Ordering::SeqCst);
}

#[tauri::command]
async fn identify(
    state: State<'_, AppState>,
    path: Option<String>,
    bytes: Option<Vec<u8>>,
    chat_id: Option<i64>,
    lang: Option<String>,
    on_event: Channel<StreamDto>,
) -> Result<IdentificationDto, ErrorDto> {
    let (engine, llm, settings) = (state.engine()?, state.llm()?, state.settings());
    let photo = match (path.map(|p| state.chosen(&p)).transpose()?, bytes) {
        (Some(path), _) => Photo::File(path),
        (None, Some(bytes)) => Photo::Bytes(bytes),
        (None, None) => return Err(ErrorDto::new(ErrorKind::InvalidInput, "no image given")),
    };
    let options = IdentifyOptions {
        classifier: settings.models.photo_classifier,
        image_model: settings.image_model(),
        lang: lang.as_deref().and_then(kea_engine::language::Language::from_code).unwrap_or_default(),
        ..IdentifyOptions::default()
    };
    blocking(move || Ok(IdentificationDto::from(&engine.identifier().identify(llm.as_ref(), photo, chat_id, &options, &mut forward(&on_event))?))).await
}

#[tauri::command]
async fn passage(
    state: State<'_, AppState>,
    chunk_id: i64,
    collection: Option<String>,
    source: Option<String>,
    fingerprint: Option<String>,
) -> Result<PassageDto, ErrorDto> {
    // A citation of an answer across collections names its collection; every one its document and text.
    let engine = match collection {
        Some(name) => state.engine_of(&name)?,
        None => state.engine()?,
    };
    blocking(move || Ok(PassageDto::from(engine.retriever().cited_passage(chunk_id as u64, source.as_deref(), fingerprint.as_deref())?))).await
}

#[tauri::command]
async fn conversations(state: State<'_, AppState>) -> Result<Vec<ConversationDto>, ErrorDto> {
    let engine = state.engine()?;
    blocking(move || Ok(engine.conversations().list()?.into_iter().map(ConversationDto::from).collect())).await
}

#[tauri::command]
async fn conversation_messages(state: State<'_, AppState>, id: i64) -> Result<Vec<MessageDto>, ErrorDto> {
    let engine = state.engine()?;
    blocking(move || Ok(engine.conversations().messages(id)?.into_iter().map(MessageDto::from).collect())).await
}

#[tauri::command]
async fn rename_conversation(state: State<'_, AppState>, id: i64, title: String) -> Result<(), ErrorDto> {
    let engine = state.engine()?;
    blocking(move || Ok(engine.conversations().rename(id, &title)?)).await
}

#[tauri::command]
async fn delete_conversation(state: State<'_, AppState>, id: i64) -> Result<(), ErrorDto> {
    let engine = state.engine()?;
    blocking(move || Ok(engine.conversations().delete(id)?)).await
}

/// The language model in use and why (null until chosen).
#[tauri::command]
fn llm_info(state: State<'_, AppState>) -> Option<LlmInfoDto> {
    state.llm_info.read().unwrap_or_else(|p| p.into_inner()).clone()
}

/// The settings, with the API key reported only as set or not.
#[tauri::command]
fn get_settings(state: State<'_, AppState>) -> SettingsDto {
    SettingsDto::from(&state.settings()).kept_in(state.secrets_kind())
}

/// Validates, persists (0600) and applies the settings; the language model
/// is chosen again when its settings changed.
#[tauri::command]
async fn save_settings(app: AppHandle, state: State<'_, AppState>, settings: SettingsDto) -> Result<SettingsDto, ErrorDto> {
    let previous = state.settings();
    let next = settings.into_settings(&previous);
    state.check_chosen_paths(&previous, &next)?;
    let model_dirs = state.engine().ok().map(|e| e.config().model_paths.dirs.clone());
    blocking(move || {
        app.state::<AppState>().store_settings(next.clone())?;
        if let (true, Some(dirs)) = (next.llm != previous.llm, model_dirs) {
            select_llm(&app, dirs);
        }
        Ok(SettingsDto::from(&next).kept_in(app.state::<AppState>().secrets_kind()))
    })
    .await
}

/// Runs a golden set (the shipped one, or a JSONL file the user picked) for
/// each named retrieval configuration.
#[tauri::command]
async fn run_eval(state: State<'_, AppState>, golden: Option<String>, configs: Vec<String>) -> Result<Vec<EvalDto>, ErrorDto> {
    let engine = state.engine()?;
    let golden = golden.map(|p| state.chosen(&p)).transpose()?;
    blocking(move || {
        use kea_engine::eval;
        let results = eval::run(&engine, &eval::golden_or_sample(golden.as_deref())?, &eval::configs_named(&configs)?)?;
        Ok(results.iter().map(EvalDto::from).collect())
    })
    .await
}

/// The model catalog with what is installed and in use per role.
#[tauri::command]
async fn models_list(state: State<'_, AppState>) -> Result<Vec<ModelDto>, ErrorDto> {
    let (config, settings) = (state.engine_config()?, state.settings());
    blocking(move || {
        let active = settings.active_models(Engine::indexed_model(&config.data_dir)?);
        Ok(settings.model_manager(&config).list(&active).iter().map(ModelDto::from).collect())
    })
    .await
}

/// The first-run plan for the knowledge folder on this machine (`photos`:
/// propose an image model even without pictures in the folder).
#[tauri::command]
async fn setup_plan(state: State<'_, AppState>, photos: bool) -> Result<PlanDto, ErrorDto> {
    let (config, settings) = (state.engine_config()?, state.settings());
    blocking(move || Ok(PlanDto::new(&kea_engine::setup::plan_here(&config, &settings, &[], photos)?, !settings.setup_done, &config.knowledge_dir))).await
}

/// The first-run plan was applied, reviewed or skipped: not offered on launch again.
#[tauri::command]
fn setup_done(state: State<'_, AppState>) -> Result<(), ErrorDto> {
    let mut settings = state.settings();
    settings.setup_done = true;
    state.store_settings(settings)
}

/// Downloads models one after another with one progress across them;
/// `model_cancel` with any of their ids stops it (resumable).
#[tauri::command]
async fn model_install(state: State<'_, AppState>, ids: Vec<String>, on_progress: Channel<DownloadDto>) -> Result<(), ErrorDto> {
    let (config, settings, cancel) = (state.engine_config()?, state.settings(), CancelToken::new());
    let register = |add: bool| {
        let mut downloads = state.downloads.lock().unwrap_or_else(|p| p.into_inner());
        for id in &ids {
            match add {
                true => drop(downloads.insert(id.clone(), cancel.clone())),
                false => drop(downloads.remove(id)),
            }
        }
    };
    register(true);
    let (models, token) = (ids.clone(), cancel.clone());
    let result = blocking(move || {
        let mut send = |p: &kea_engine::model::download::DownloadProgress| drop(on_progress.send(DownloadDto::from(p)));
        Ok(settings.model_manager(&config).install_all(&models, &mut send, &token)?)
    })
    .await;
    register(false);
    result
}

#[tauri::command]
fn model_cancel(state: State<'_, AppState>, id: String) {
    if let Some(token) = state.downloads.lock().unwrap_or_else(|p| p.into_inner()).get(&id) {
        token.cancel();
    }
}

/// Deletes an installed model (never the index's embedder).
#[tauri::command]
async fn model_remove(app: AppHandle, id: String) -> Result<(), ErrorDto> {
    blocking(move || crate::remove_model(&app, &id)).await
}

/// What switching the embedder would cost (shown before asking to confirm).
#[tauri::command]
async fn reembed_cost(state: State<'_, AppState>) -> Result<ReembedCostDto, ErrorDto> {
    let engine = state.engine()?;
    blocking(move || Ok(ReembedCostDto::from(engine.indexer().reembed_cost()?))).await
}

/// Uses an installed model for a role; a new embedder re-embeds the index
/// (the UI has asked the user to confirm the cost).
#[tauri::command]
async fn model_use(app: AppHandle, role: ModelRoleDto, id: String) -> Result<(), ErrorDto> {
    blocking(move || apply_model_choice(&app, role.into(), &id)).await
}

/// Makes a folder the person picked the knowledge folder (the engine
/// reopens over it; files stay where they are).
#[tauri::command]
async fn set_knowledge_dir(app: AppHandle, state: State<'_, AppState>, path: String) -> Result<(), ErrorDto> {
    let folder = state.chosen(&path)?;
    blocking(move || crate::use_knowledge_dir(&app, folder)).await
}

/// Uses an OpenAI-compatible or Ollama embeddings endpoint (checked first).
#[tauri::command]
async fn use_remote_embedder(app: AppHandle, remote: RemoteEmbedderDto) -> Result<(), ErrorDto> {
    blocking(move || crate::use_remote_embedder(&app, remote.into_config())).await
}

/// Every collection, the selected one marked.
#[tauri::command]
async fn collections(state: State<'_, AppState>) -> Result<Vec<CollectionDto>, ErrorDto> {
    let ((library, all), selected, settings) = (state.collections()?, state.selected(), state.settings());
    blocking(move || {
        let dto = |c: &kea_engine::collections::Collection| {
            let config = library.engine_config(c, &settings, &kea_engine::settings::Overrides::from_env());
            CollectionDto::new(c, kea_engine::collections::same_name(&c.name, &selected), kea_engine::collections::embedder_state(c, &config))
        };
        Ok(all.iter().map(dto).collect())
    })
    .await
}

/// A new collection over a folder the person picked or dropped (`null`: a
/// new folder named after it), selected at once.
#[tauri::command]
async fn create_collection(app: AppHandle, state: State<'_, AppState>, name: String, folder: Option<String>) -> Result<String, ErrorDto> {
    let folder = folder.map(|f| state.chosen(&f)).transpose()?;
    blocking(move || Ok(crate::create_collection(&app, &name, folder)?.name)).await
}

#[tauri::command]
async fn select_collection(app: AppHandle, name: String) -> Result<(), ErrorDto> {
    blocking(move || crate::select_collection(&app, &name)).await
}

#[tauri::command]
async fn update_collection(app: AppHandle, name: String, settings: CollectionSettingsDto) -> Result<(), ErrorDto> {
    blocking(move || crate::update_collection(&app, &name, |current| settings.into_settings(&current.settings))).await
}

/// Removes a collection: never its folders; its index only with `delete_index`.
#[tauri::command]
async fn remove_collection(app: AppHandle, name: String, delete_index: bool) -> Result<(), ErrorDto> {
    blocking(move || crate::remove_collection(&app, &name, delete_index)).await
}

/// Saves a conversation as Markdown (citations as footnotes) where the
/// person chooses in the save dialog; the file written, or `null` if cancelled.
#[tauri::command]
async fn export_conversation(app: AppHandle, state: State<'_, AppState>, id: i64) -> Result<Option<String>, ErrorDto> {
    let engine = state.engine()?;
    let (_, data_folder) = state.dirs()?;
    blocking(move || {
        let markdown = engine.conversations().export_markdown(id)?;
        let Some(file) = app.dialog().file().add_filter("Markdown", &["md"]).set_file_name("conversation.md").blocking_save_file() else { return Ok(None) };
        let path = file.into_path().map_err(|e| ErrorDto::new(ErrorKind::InvalidInput, e.to_string()))?;
        // The save dialog asked before an existing file is replaced.
        kea_engine::output::write_file(&path, markdown.as_bytes(), true, &data_folder)?;
        Ok(Some(path.display().to_string()))
    })
    .await
}

/// Saves the collection `name` as one `.keakb` file where the person
/// chooses; the file, or `null` if cancelled.
#[tauri::command]
async fn export_collection(app: AppHandle, name: String, with_files: bool) -> Result<Option<String>, ErrorDto> {
    blocking(move || {
        let dialog = app.dialog().file().add_filter("Kea collection", &[kea_engine::keakb::EXTENSION]).set_file_name(format!("{name}.keakb"));
        let Some(file) = dialog.blocking_save_file() else { return Ok(None) };
        let path = file.into_path().map_err(|e| ErrorDto::new(ErrorKind::InvalidInput, e.to_string()))?;
        crate::export_collection(&app, &name, &path, with_files)?;
        Ok(Some(path.display().to_string()))
    })
    .await
}

/// Opens the file dialog for a `.keakb` file and describes the one the
/// person picks (recorded as chosen), or `null` if cancelled: the webview
/// shows it, and a remote embedder's address to confirm, before importing.
#[tauri::command]
async fn inspect_collection_file(app: AppHandle) -> Result<Option<CollectionFileDto>, ErrorDto> {
    blocking(move || {
        let Some(file) = app.dialog().file().add_filter("Kea collection", &[kea_engine::keakb::EXTENSION]).blocking_pick_file() else { return Ok(None) };
        let path = file.into_path().map_err(|e| ErrorDto::new(ErrorKind::InvalidInput, e.to_string()))?;
        app.state::<AppState>().grants.grant([path.clone()]);
        Ok(Some(CollectionFileDto::new(&path, kea_engine::keakb::inspect(&path)?)))
    })
    .await
}

/// Imports the `.keakb` file the person picked (`inspect_collection_file`),
/// with the remote embedder address they confirmed, if it names one; the
/// new collection's name.
#[tauri::command]
async fn import_collection(app: AppHandle, state: State<'_, AppState>, file: String, trust_embedder: Option<String>) -> Result<String, ErrorDto> {
    let path = state.chosen(&file)?;
    blocking(move || crate::import_collection(&app, &path, trust_embedder.as_deref())).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panicking_engine_call_answers_with_an_error() {
        let failed = tauri::async_runtime::block_on(blocking::<()>(|| panic!("no entry found for key")));
        let error = failed.unwrap_err();
        assert_eq!(error.kind, ErrorKind::Internal.code());
        assert!(error.message.contains("internal error"), "{}", error.message);
        let fine = tauri::async_runtime::block_on(blocking(|| Ok(7)));
        assert_eq!(fine.unwrap(), 7, "the runtime goes on after a panic");
    }
}
