//! `kea`: the headless command line over the engine. Index a knowledge
//! folder (once or watching), show its status, search it, and benchmark
//! ingest. `--json` output is the contract the integration tests use.

mod bench;
mod chat;
mod kb;
mod keys;
mod mcp;
mod models;
mod output;
mod progress;
#[cfg(test)]
mod reference;
mod search;
mod setup;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::{Parser, Subcommand};
use kea_engine::collections::Library;
use kea_engine::model::ModelPaths;
use kea_engine::remote_embed::{RemoteApi, RemoteEmbedConfig};
use kea_engine::settings::{Overrides, Settings};
use kea_engine::{CancelToken, Engine, EngineConfig, RetrievalConfig, SearchMode};

#[derive(Parser)]
#[command(name = "kea", version, about = "Chat with your documents: index and search a knowledge folder")]
struct Cli {
    /// Where the index lives (default: the platform's app-data folder).
    #[arg(long, global = true, value_name = "DIR")]
    data_dir: Option<PathBuf>,
    /// The knowledge folder to index (default: the one chosen in the app, else ~/Documents/Kea).
    #[arg(long, global = true, value_name = "DIR")]
    knowledge: Option<PathBuf>,
    /// The collection to work on (repeatable: search and ask across several;
    /// "all": every one); default: the knowledge folder's own collection.
    #[arg(long = "kb", global = true, value_name = "NAME")]
    kb: Vec<String>,
    /// Where model folders are looked for first (also $KEA_MODELS_DIR).
    #[arg(long, global = true, value_name = "DIR")]
    models_dir: Option<PathBuf>,
    /// The text embedding model id (default: the one the index was built with).
    #[arg(long, global = true, value_name = "ID")]
    embedding_model: Option<String>,
    /// Allow a different embedding model to re-embed the whole index.
    #[arg(long, global = true)]
    reembed: bool,
    /// A remote embedding server: OpenAI-compatible `.../v1` or Ollama's root URL.
    #[arg(long, global = true, value_name = "URL", env = "KEA_EMBED_BASE_URL")]
    embed_url: Option<String>,
    /// The model name at --embed-url.
    #[arg(long, global = true, value_name = "NAME", env = "KEA_EMBED_MODEL")]
    embed_model: Option<String>,
    /// The API key --embed-url needs, if any.
    #[arg(long, global = true, value_name = "KEY", env = "KEA_EMBED_API_KEY", hide_env_values = true)]
    embed_api_key: Option<String>,
    /// openai or ollama.
    #[arg(long, global = true, value_enum, default_value = "openai", env = "KEA_EMBED_API")]
    embed_api: EmbedApi,
    /// Languages the remote model understands, e.g. zh,en (default: many).
    #[arg(long, global = true, value_delimiter = ',', env = "KEA_EMBED_LANGUAGES")]
    embed_languages: Vec<String>,
    /// The cross-encoder reranker model id (also $KEA_RERANKER); none skips reranking.
    #[arg(long, global = true, value_name = "ID", env = "KEA_RERANKER")]
    reranker: Option<String>,
    /// The vector index behind dense search: usearch (HNSW, saved) or exact (in RAM, rebuilt at start).
    #[arg(long, global = true, value_enum, default_value = "usearch", env = "KEA_VECTOR_INDEX")]
    vector_index: VectorIndexArg,
    /// A team store shared with other Kea instances: milvus://HOST:PORT/COLLECTION,
    /// or milvus+https://… (also the settings' team store); "local" uses this machine's own index.
    #[arg(long, global = true, value_name = "URL", env = "KEA_STORE")]
    store: Option<String>,
    /// This folder's namespace in the team store (default: host:folder).
    #[arg(long, global = true, value_name = "NAME", env = "KEA_NAMESPACE")]
    namespace: Option<String>,
    /// The team store's credentials, sent with every request: user:password or an API key.
    #[arg(long, global = true, value_name = "TOKEN", env = "KEA_STORE_TOKEN", hide_env_values = true)]
    store_token: Option<String>,
    /// Seconds reading one file may take (plus 15 s per MB) before it is recorded as timed out.
    #[arg(long, global = true, value_name = "SECS", env = "KEA_FILE_TIMEOUT")]
    file_timeout: Option<f64>,
    /// Megabytes of memory reading one PDF, Word file or picture may use
    /// (it is read in a child process) before it is recorded as out of memory.
    #[arg(long, global = true, value_name = "MB", env = "KEA_FILE_MEMORY", default_value_t = kea_engine::reader::DEFAULT_MEMORY_MB)]
    file_memory: u64,
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum VectorIndexArg {
    Usearch,
    Exact,
}

#[derive(Subcommand)]
enum Command {
    /// Bring the index in step with the knowledge folder.
    Index {
        /// Keep watching the folder and re-index on every change.
        #[arg(long)]
        watch: bool,
        /// Print a JSON summary (one line per sync with --watch).
        #[arg(long)]
        json: bool,
    },
    /// Delete one document's file from the knowledge folder and drop it from the index.
    Remove {
        /// The file (a path, or its key relative to the knowledge folder).
        path: PathBuf,
        #[arg(long)]
        json: bool,
    },
    /// Read one document again and re-index it, even if unchanged (also retries a file that failed).
    Reindex {
        /// The file (a path, or its key relative to the knowledge folder).
        path: PathBuf,
        #[arg(long)]
        json: bool,
    },
    /// Show the indexed documents, their state and the model in use.
    Status {
        #[arg(long)]
        json: bool,
    },
    /// Search the index.
    Search {
        #[arg(required_unless_present = "queries")]
        query: Option<String>,
        /// Search every question of a file instead (a golden set's JSONL, or
        /// one question a line); --json prints [{query, hits}].
        #[arg(long, value_name = "FILE", conflicts_with = "query")]
        queries: Option<PathBuf>,
        #[arg(long, default_value_t = 5)]
        top_k: usize,
        /// dense (embeddings), fts (BM25), or hybrid (the full pipeline).
        #[arg(long, value_enum, default_value = "hybrid")]
        mode: Mode,
        /// A retrieval config JSON file (any subset of the settings; hybrid mode).
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
        /// Show every stage's candidates, scores, timings and fallbacks.
        #[arg(long)]
        trace: bool,
        /// Print JSON: the hits, or with --trace {hits, context, trace}.
        #[arg(long)]
        json: bool,
    },
    /// Evaluate retrieval on a golden set (JSONL), one column per configuration.
    Eval {
        /// Golden sets (JSONL), read as one; unanswerable questions add the refusal metrics.
        #[arg(required_unless_present = "reset_calibration")]
        golden: Vec<PathBuf>,
        /// NAME=FILE: a retrieval config to compare (repeatable); default: each stage in turn.
        #[arg(long = "config", value_name = "NAME=FILE")]
        configs: Vec<String>,
        /// Only the questions marked "split": "test" (held out from calibration), or only the others ("fit").
        /// Not with --calibrate (it fits on the others and reports on the test ones) or --signals-out (rows keep their split).
        #[arg(long, value_parser = ["test", "fit"], conflicts_with_all = ["calibrate", "signals_out"])]
        split: Option<String>,
        /// Fit the answer / unsure / refuse decision on the questions not marked
        /// "split": "test" (k-fold cross-validated), report it on the test ones,
        /// and, with --install, use it from now on with this index's embedder.
        #[arg(long)]
        calibrate: bool,
        /// With --calibrate: fit without the embedder's similarity (for any embedder).
        #[arg(long, requires = "calibrate")]
        lexical: bool,
        /// With --calibrate: how many folds.
        #[arg(long, default_value_t = 5, requires = "calibrate")]
        folds: usize,
        /// With --calibrate: fit only the questions none of whose passages is in their
        /// language (index a folder written in another one), as the
        /// cross-lingual part of this embedder's decision.
        #[arg(long, requires = "calibrate")]
        cross_lingual: bool,
        /// With --calibrate: write the calibration to this file.
        #[arg(long, value_name = "FILE", requires = "calibrate")]
        out: Option<PathBuf>,
        /// With --calibrate: decide this index's questions with the fit from now on
        /// (written to the data folder once its figures are printed).
        #[arg(long, requires = "calibrate", conflicts_with = "out")]
        install: bool,
        /// Decide this index's questions with the fit Kea ships again (removes the
        /// data folder's own fit).
        #[arg(long, conflicts_with_all = ["golden", "calibrate", "signals_out", "model_answers"])]
        reset_calibration: bool,
        /// With --calibrate: the files given are signal rows written by --signals-out
        /// (questions asked of several collections, fitted and reported together).
        #[arg(long, requires = "calibrate")]
        from_signals: bool,
        /// Write each question's decision signals (JSON lines) to FILE, for a
        /// later `--calibrate --from-signals` over several collections.
        #[arg(long, value_name = "FILE", conflicts_with = "calibrate")]
        signals_out: Option<PathBuf>,
        /// Replace the file --out or --signals-out names if it exists (a link is never written through).
        #[arg(long)]
        force: bool,
        /// With --signals-out: the collection's name in the report.
        #[arg(long, value_name = "NAME", requires = "signals_out")]
        label: Option<String>,
        /// Evaluate the answers a language model writes (the chat path, as the app
        /// asks: outcome, right page cited, the evidence's fact held, unsupported
        /// sentences, language, time to first token and to the whole answer).
        #[arg(long, conflicts_with_all = ["calibrate", "signals_out"])]
        model_answers: bool,
        #[command(flatten)]
        llm: chat::LlmArgs,
        #[arg(long)]
        json: bool,
    },
    /// Ask a question: routed, retrieved, answered with citations (streamed).
    Ask {
        question: String,
        /// Continue conversation ID (printed by an earlier `kea ask`).
        #[arg(long)]
        chat: Option<i64>,
        #[command(flatten)]
        llm: chat::LlmArgs,
        /// Longest answer, in tokens.
        #[arg(long, default_value_t = 384)]
        max_tokens: usize,
        /// Print only the final JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Identify what a photo shows against the labels of the knowledge base.
    Identify {
        image: PathBuf,
        /// Continue conversation ID: the identified label becomes its subject.
        #[arg(long)]
        chat: Option<i64>,
        /// The CLIP image model id (its manifest names the text model; default:
        /// `kea models use image`'s choice, else clip-vit-b-32-vision).
        #[arg(long, env = "KEA_IMAGE_MODEL")]
        image_model: Option<String>,
        /// Language of the evidence queries and the reply: en or zh.
        #[arg(long, default_value = "en", value_parser = parse_language)]
        lang: kea_engine::language::Language,
        /// clip (zero-shot with --image-model) or vision-llm (the --provider openai
        /// endpoint's vision model).
        #[arg(long, value_enum, default_value = "clip")]
        classifier: chat::ClassifierKind,
        #[command(flatten)]
        llm: chat::LlmArgs,
        #[arg(long)]
        json: bool,
    },
    /// Measure the router on a labelled question set (JSONL).
    EvalRouter {
        questions: PathBuf,
        #[command(flatten)]
        llm: chat::LlmArgs,
        #[arg(long)]
        json: bool,
    },
    /// First run: propose models for the folder's languages and this machine
    /// (--plan prints it, --yes installs and uses them).
    Setup(setup::SetupArgs),
    /// The model manager: list, install, import, remove, use.
    Models {
        #[command(subcommand)]
        which: models::ModelsCommand,
    },
    /// Conversations: export one as Markdown (citations as footnotes).
    Chat {
        #[command(subcommand)]
        which: chat::ChatCommand,
    },
    /// Serve the collections to other assistants over the Model Context
    /// Protocol (stdio): tools search, ask and list_documents, and each
    /// document as a kea:// resource. Read-only: the app may index meanwhile.
    /// Without --kb, a call without its own `kb` uses the default collection.
    Mcp {
        #[command(flatten)]
        llm: chat::LlmArgs,
    },
    /// Collections: list, create, set, rename, remove.
    Kb {
        #[command(subcommand)]
        which: kb::KbCommand,
    },
    /// API keys and tokens: set (from standard input), clear, status.
    Keys {
        #[command(subcommand)]
        which: keys::KeysCommand,
    },
    /// Benchmarks (print figures; not tests).
    Bench {
        #[command(subcommand)]
        which: bench::BenchCommand,
    },
}

#[derive(Clone, Copy, PartialEq, clap::ValueEnum)]
enum EmbedApi {
    Openai,
    Ollama,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum Mode {
    Dense,
    Fts,
    Hybrid,
}

/// `--lang`: zh or en.
fn parse_language(code: &str) -> Result<kea_engine::language::Language, String> {
    kea_engine::language::Language::from_code(code).ok_or_else(|| format!("'{code}' is not zh or en"))
}

/// Output the reader stopped reading (`kea … | head`) ends the command
/// quietly, as it ends other Unix tools (exit 141, as by SIGPIPE); any other
/// failure to print (a full disk) is one line, not a panic's backtrace.
fn stop_quietly_when_output_fails() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info.payload().downcast_ref::<String>().map(String::as_str).unwrap_or_default();
        if !message.starts_with("failed printing to std") {
            return default(info);
        }
        let closed = message.contains("Broken pipe");
        if !closed && message.starts_with("failed printing to stdout") {
            eprintln!("kea: error: {message}");
        }
        std::process::exit(if closed { 141 } else { 1 });
    }));
}

fn main() -> ExitCode {
    kea_engine::reader::serve_if_asked();
    stop_quietly_when_output_fails();
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(err) => {
            // An error may quote a file or a peer: printed without terminal escapes.
            match err.downcast_ref::<kea_engine::Error>() {
                Some(e) => eprintln!("kea: error [{}]: {}", e.kind().code(), output::one_line(&e.to_string())),
                None => eprintln!("kea: error: {}", output::one_line(&format!("{err:#}"))),
            }
            ExitCode::FAILURE
        }
    }
}

/// The settings file of the data folder (shared with the desktop app).
fn settings(cli: &Cli) -> Settings {
    let (settings, warning) = Settings::load_or_default(&app_data_dir(cli));
    if let Some(warning) = warning {
        eprintln!("kea: {warning}");
    }
    settings
}

fn app_data_dir(cli: &Cli) -> PathBuf {
    cli.data_dir.clone().unwrap_or_else(EngineConfig::default_data_dir)
}

/// What the environment and the flags set over the settings file (clap
/// reads each flag's variable).
fn overrides(cli: &Cli) -> Overrides {
    Overrides {
        models_dir: cli.models_dir.clone(),
        embedding_model: cli.embedding_model.clone(),
        remote_embedder: remote_embedder(cli),
        reranker: cli.reranker.clone(),
        vector_backend: Some(match cli.vector_index {
            VectorIndexArg::Usearch => kea_engine::vectors::VectorBackend::Usearch,
            VectorIndexArg::Exact => kea_engine::vectors::VectorBackend::Exact,
        }),
        store: cli.store.clone(),
        namespace: cli.namespace.clone(),
        store_token: cli.store_token.clone(),
        file_timeout: cli.file_timeout,
        file_memory_mb: Some(cli.file_memory),
    }
}

/// The engine configurations of the collections `--kb` names (none: the
/// default collection): the shared settings file, the environment and the
/// flags, then each collection's own folders, index and settings.
fn configs(cli: &Cli, settings: &Settings) -> anyhow::Result<Vec<EngineConfig>> {
    let data_dir = app_data_dir(cli);
    let library = match Library::load(&data_dir) {
        Ok(library) => library,
        // A damaged registry never locks the user out of the default collection.
        Err(e) if cli.kb.is_empty() => {
            eprintln!("kea: {e}");
            Library::empty(&data_dir)
        }
        Err(e) => return Err(e.into()),
    };
    let overrides = overrides(cli);
    let collections = library.resolve(&cli.kb, settings, cli.knowledge.clone())?;
    Ok(collections
        .iter()
        .map(|c| {
            let mut config = library.engine_config(c, settings, &overrides);
            config.reembed = cli.reembed;
            config
        })
        .collect())
}

/// The configuration of the one collection a command works on.
fn config(cli: &Cli, settings: &Settings) -> anyhow::Result<EngineConfig> {
    let mut all = configs(cli, settings)?;
    anyhow::ensure!(all.len() == 1, "this command works on one collection at a time: name one with --kb");
    Ok(all.remove(0))
}

fn remote_embedder(cli: &Cli) -> Option<RemoteEmbedConfig> {
    let (base_url, model) = (cli.embed_url.clone()?, cli.embed_model.clone()?);
    Some(RemoteEmbedConfig {
        base_url,
        model,
        api_key: cli.embed_api_key.clone(),
        api: if cli.embed_api == EmbedApi::Ollama { RemoteApi::Ollama } else { RemoteApi::Openai },
        languages: cli.embed_languages.clone(),
        ..Default::default()
    })
}

/// Opens the engine; an explicitly chosen embedder that opened becomes the
/// saved choice (the app's, or the collection's), so later runs without flags keep using it.
pub fn open_engine(config: EngineConfig) -> anyhow::Result<Engine> {
    let engine = Engine::open(config.clone())?;
    kea_engine::collections::remember_explicit_embedder(&config)?;
    Ok(engine)
}

/// What `kea mcp` serves: every collection, the global `--kb` ones by default.
fn mcp_scope(cli: &Cli, settings: &Settings, llm: &chat::LlmArgs) -> mcp::Scope {
    mcp::Scope {
        data_dir: app_data_dir(cli),
        settings: settings.clone(),
        overrides: overrides(cli),
        knowledge: cli.knowledge.clone(),
        default_kb: cli.kb.clone(),
        llm: llm.clone(),
    }
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let settings = settings(&cli);
    let config = || config(&cli, &settings);
    // The app's own folders (models, keys) whatever collection is named.
    let app_config = || settings.engine_config_with(settings.knowledge_dir(cli.knowledge.clone()), app_data_dir(&cli), &overrides(&cli));
    match &cli.command {
        Command::Index { watch, json } => index(configs(&cli, &settings)?, *watch, *json),
        Command::Status { json } => status(configs(&cli, &settings)?, *json),
        Command::Remove { path, json } => manage_document(config()?, path, *json, |d, key, sink, cancel| d.delete(key, sink, cancel)),
        Command::Reindex { path, json } => manage_document(config()?, path, *json, |d, key, sink, cancel| d.reindex(key, sink, cancel)),
        Command::Search { query, queries, top_k, mode, config: file, trace, json } => {
            let retrieval = search_config(*mode, *top_k, file.as_deref(), &settings)?;
            match (query, queries) {
                (Some(query), _) => search::run(configs(&cli, &settings)?, query, &retrieval, *trace, *json),
                (None, Some(file)) => search::run_file(configs(&cli, &settings)?, file, &retrieval, *json),
                (None, None) => anyhow::bail!("name a query or --queries FILE"),
            }
        }
        Command::Eval { reset_calibration: true, .. } => search::reset_calibration(config()?),
        Command::Eval { golden, calibrate: true, lexical, folds, cross_lingual, out, from_signals, force, install, json, .. } => {
            let fit =
                search::Fit { lexical: *lexical, folds: *folds, cross_lingual: *cross_lingual, from_signals: *from_signals, force: *force, install: *install };
            let app_data = app_data_dir(&cli);
            if let Some(out) = out {
                output::check_writable(out, *force, &app_data)?;
            }
            search::calibrate(config()?, golden, &settings.retrieval, fit, out.as_deref().map(|o| (o, app_data.as_path())), *json)
        }
        Command::Eval { golden, model_answers: true, llm, split, json, .. } => chat::eval_written(config()?, &settings, llm, golden, split.as_deref(), *json),
        Command::Eval { golden, signals_out: Some(file), label, force, .. } => {
            let app_data = app_data_dir(&cli);
            output::check_writable(file, *force, &app_data)?;
            search::signals_out(config()?, golden, &settings.retrieval, (file, *force, &app_data), label.as_deref())
        }
        Command::Eval { golden, configs: named, split, json, .. } => {
            let named = if named.is_empty() {
                kea_engine::eval::default_configs()
            } else {
                named.iter().map(|c| parse_named_config(c)).collect::<anyhow::Result<_>>()?
            };
            search::eval(config()?, golden, &named, split.as_deref(), *json)
        }
        Command::Ask { question, chat: chat_id, llm, max_tokens, json } => {
            chat::ask(configs(&cli, &settings)?, &settings, llm, *chat_id, question, *max_tokens, *json)
        }
        Command::Identify { image, chat: chat_id, image_model, lang, classifier, llm, json } => {
            let image_model = image_model.clone().unwrap_or_else(|| settings.image_model());
            chat::identify(config()?, &settings, llm, image, *chat_id, (*classifier, &image_model), *lang, *json)
        }
        Command::EvalRouter { questions, llm, json } => chat::eval_router(config()?, &settings, llm, questions, *json),
        Command::Setup(args) => setup::run(args, config()?, cli.models_dir.clone()),
        Command::Models { which } => models::run(which, app_config(), cli.models_dir.clone()),
        Command::Chat { which } => chat::run(which, config()?, &app_data_dir(&cli)),
        Command::Mcp { llm } => mcp::run(mcp_scope(&cli, &settings, llm)),
        Command::Kb { which } => kb::run(which, &app_data_dir(&cli), &settings, &overrides(&cli), cli.knowledge.clone()),
        Command::Keys { which } => keys::run(which, &app_data_dir(&cli)),
        Command::Bench { which } => {
            let paths = cli.models_dir.clone().map(|d| ModelPaths { dirs: vec![d] });
            bench::run(which, paths, cli.embedding_model.clone(), remote_embedder(&cli))
        }
    }
}

/// What `kea search` retrieves with: the mode's stages (hybrid: the
/// settings'), or a config file's, asking for `top_k` hits.
fn search_config(mode: Mode, top_k: usize, file: Option<&Path>, settings: &Settings) -> anyhow::Result<RetrievalConfig> {
    if let Some(file) = file {
        return Ok(RetrievalConfig { top_k, ..read_config(file)? });
    }
    Ok(match mode {
        Mode::Dense => SearchMode::Dense.config(top_k),
        Mode::Fts => SearchMode::Fts.config(top_k),
        Mode::Hybrid => RetrievalConfig { top_k, ..settings.retrieval.clone() },
    })
}

/// Syncs each collection once, then (with `watch`) keeps them all in step.
fn index(configs: Vec<EngineConfig>, watch: bool, json: bool) -> anyhow::Result<ExitCode> {
    let engines = configs.into_iter().map(|c| open_engine(c).map(Arc::new)).collect::<anyhow::Result<Vec<_>>>()?;
    let cancel = CancelToken::new();
    let interrupted = cancel.clone();
    ctrlc::set_handler(move || {
        if interrupted.is_cancelled() {
            std::process::exit(130);
        }
        interrupted.cancel();
    })
    .context("installing the Ctrl+C handler")?;
    let sink = progress::sink_for(json);
    for engine in &engines {
        if engines.len() > 1 && !json {
            eprintln!("collection '{}'", output::printable(&engine.config().collection));
        }
        let report = engine.indexer().sync(sink.as_ref(), &cancel)?;
        progress::print_report(&report, json);
        if report.cancelled {
            return Ok(ExitCode::from(130));
        }
    }
    if !watch {
        return Ok(ExitCode::SUCCESS);
    }
    let mut handles = Vec::new();
    for engine in &engines {
        let watch_sink = progress::watch_sink(json);
        handles.push(kea_engine::watch(engine.clone(), watch_sink, Duration::from_millis(300), |e| eprintln!("kea: sync failed [{}]: {e}", e.kind().code()))?);
        if !json {
            let roots: Vec<String> = engine.folders().roots().map(|r| r.display().to_string()).collect();
            eprintln!("watching {} (Ctrl+C to stop)", roots.join(", "));
        }
    }
    while !cancel.is_cancelled() {
        std::thread::sleep(Duration::from_millis(100));
    }
    handles.into_iter().for_each(|h| h.stop());
    Ok(ExitCode::SUCCESS)
}

/// Removes or re-indexes one document, named by path or by key.
fn manage_document(
    config: EngineConfig,
    path: &std::path::Path,
    json: bool,
    action: fn(&kea_engine::Documents, &str, &dyn kea_engine::ProgressSink, &CancelToken) -> kea_engine::Result<kea_engine::SyncReport>,
) -> anyhow::Result<ExitCode> {
    let engine = open_engine(config)?;
    let key = engine.folders().key_of(path).unwrap_or_else(|| path.to_string_lossy().into_owned());
    let sink = progress::sink_for(json);
    let report = action(&engine.documents(), &key, sink.as_ref(), &CancelToken::new())?;
    // A sync of one file saves the vector file on a debounce; this process ends now.
    engine.indexer().save_pending_vectors()?;
    progress::print_report(&report, json);
    Ok(ExitCode::SUCCESS)
}

/// Each collection's status (`--json`: one object, or an array for several).
fn status(configs: Vec<EngineConfig>, json: bool) -> anyhow::Result<ExitCode> {
    let several = configs.len() > 1;
    let mut values = Vec::new();
    for config in configs {
        let engine = open_engine(config)?;
        if json {
            let mut value = serde_json::to_value(engine.status()?)?;
            value["integrity_problems"] = serde_json::json!(engine.indexer().integrity_problems()?);
            value["collection"] = serde_json::json!(engine.config().collection);
            values.push(value);
        } else {
            print_status(&engine)?;
        }
    }
    if json {
        let out = if several { serde_json::Value::Array(values) } else { values.remove(0) };
        println!("{}", serde_json::to_string_pretty(&out)?);
    }
    Ok(ExitCode::SUCCESS)
}

fn print_status(engine: &Engine) -> anyhow::Result<()> {
    let status = engine.status()?;
    println!("collection: {}", output::printable(&engine.config().collection));
    let folders: Vec<String> = engine.folders().roots().map(|r| r.display().to_string()).collect();
    println!("knowledge: {}", output::printable(&folders.join(", ")));
    println!("index:     {} ({:.1} MB)", status.data_dir.display(), status.index_bytes as f64 / 1e6);
    println!("model:     {} ({} dimensions)", output::printable(status.model_id.as_deref().unwrap_or("none")), status.dim.unwrap_or(0));
    println!("documents: {}   chunks: {}   vectors: {}", status.documents.len(), status.chunks, status.vectors);
    if let Some(team) = &status.team {
        println!("team:      {} as “{}” ({} passages of other folders mirrored)", team.store, team.namespace, team.mirrored_chunks);
        if let Some(why) = &team.offline {
            println!("           team sync offline: {why}");
        }
    }
    for doc in &status.documents {
        match &doc.error {
            // A file's name is the user's (or an archive's): printed without terminal escapes.
            Some(error) => println!("  ✗ {}  — {}", output::printable(&doc.path), output::printable(error)),
            None => println!("  ✓ {}  ({} chunks)", output::printable(&doc.path), doc.chunk_count),
        }
    }
    println!();
    Ok(())
}

/// Reads a retrieval config JSON file (any subset of the settings).
fn read_config(path: &std::path::Path) -> anyhow::Result<RetrievalConfig> {
    let text = kea_engine::eval::read_json_lines(path)?;
    if text.trim().is_empty() {
        // An empty file (e.g. /dev/null) is the default configuration.
        return Ok(RetrievalConfig::default());
    }
    RetrievalConfig::from_json_strict(&text).with_context(|| format!("{} is not a retrieval config", path.display()))
}

fn parse_named_config(spec: &str) -> anyhow::Result<(String, RetrievalConfig)> {
    let (name, file) = spec.split_once('=').with_context(|| format!("--config takes NAME=FILE, got {spec:?}"))?;
    Ok((name.to_string(), read_config(std::path::Path::new(file))?))
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// docs/cli.md is the reference written from these definitions: a flag
    /// changed without it fails here (`KEA_UPDATE_DOCS=1` rewrites it).
    #[test]
    fn the_cli_reference_is_current() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/cli.md");
        let written = super::reference::markdown(&super::Cli::command());
        if std::env::var_os("KEA_UPDATE_DOCS").is_some() {
            std::fs::write(&path, &written).unwrap();
        }
        let current = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(current == written, "docs/cli.md is stale: run `make docs` (it rewrites it from the clap definitions)");
        assert!(written.contains("## `kea index`") && written.contains("`--knowledge <DIR>`"), "{written}");
    }
}
