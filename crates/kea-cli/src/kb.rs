//! `kea kb`: named collections — list, create, rename, re-point and
//! configure, remove — over the engine's [`Library`].

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Subcommand};
use kea_engine::collections::{embedder_state, Collection, CollectionSettings, Library, Strictness};
use kea_engine::keakb::{Destination, DocumentsFolder, ImportTarget};
use kea_engine::settings::{Overrides, Settings};
use kea_engine::shell;

#[derive(Subcommand)]
pub enum KbCommand {
    /// The collections, their folders, index and settings.
    List {
        #[arg(long)]
        json: bool,
    },
    /// A new collection over one or more folders (index it with `kea index --kb NAME`).
    Create {
        name: String,
        /// A folder it reads (repeatable).
        #[arg(long = "folder", value_name = "PATH", required = true)]
        folders: Vec<PathBuf>,
        #[command(flatten)]
        settings: SettingsArgs,
        #[arg(long)]
        json: bool,
    },
    /// Change a collection's folders or settings (what is not named stays).
    Set {
        name: String,
        /// Its folders instead of the current ones (repeatable); documents are re-read.
        #[arg(long = "folder", value_name = "PATH")]
        folders: Vec<PathBuf>,
        #[command(flatten)]
        settings: SettingsArgs,
    },
    /// Write a collection to one .keakb file (its index, settings and, with
    /// --with-files, its documents) to move or share it.
    Export {
        name: String,
        file: PathBuf,
        /// Include the source documents.
        #[arg(long)]
        with_files: bool,
        #[arg(long)]
        json: bool,
    },
    /// Add the collection in a .keakb file (checked before anything is written).
    Import {
        file: PathBuf,
        /// Its name here (default: the one it was exported with).
        #[arg(long)]
        name: Option<String>,
        /// Where its documents go, when the file holds them (a new or empty
        /// folder; default: a new folder named after it in Documents).
        #[arg(long, value_name = "DIR")]
        folder: Option<PathBuf>,
        /// The address of the remote embedder the file names, in full, to
        /// confirm you trust it with every question asked of the collection
        /// (a file that names one is refused without it).
        #[arg(long, value_name = "URL")]
        trust_embedder: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Fetch a web page (http or https) into a collection's first folder
    /// (under "Web pages/") and index it; adding the same address again
    /// fetches it again. Citations of it link to the address.
    AddUrl {
        name: String,
        url: String,
        /// Also fetch from this computer or the local network (localhost,
        /// 192.168.x.x, …), which is refused otherwise.
        #[arg(long)]
        allow_local: bool,
        #[arg(long)]
        json: bool,
    },
    /// Rename a collection.
    Rename { name: String, new_name: String },
    /// Forget a collection; its folders are never touched. Its index is kept
    /// (re-creating the collection reuses it) unless --delete-index.
    Remove {
        name: String,
        /// Also delete the collection's index (the documents stay).
        #[arg(long)]
        delete_index: bool,
        #[arg(long)]
        json: bool,
    },
}

/// A collection's own settings, as flags.
#[derive(Args)]
pub struct SettingsArgs {
    /// The embedding model for its index (a local model id; a remote one
    /// through --embed-url and --embed-model).
    #[arg(long, value_name = "ID")]
    embedder: Option<String>,
    /// Chunk size in characters.
    #[arg(long, value_name = "CHARS")]
    chunk_chars: Option<usize>,
    /// Characters repeated from one chunk into the next.
    #[arg(long, value_name = "CHARS")]
    chunk_overlap: Option<usize>,
    /// The languages its documents are written in: zh, en.
    #[arg(long, value_delimiter = ',', value_name = "CODES")]
    languages: Option<Vec<String>>,
    /// Rerank with the cross-encoder: on or off.
    #[arg(long, value_parser = ["on", "off"])]
    rerank: Option<String>,
    /// How readily it answers: lenient, balanced or strict.
    #[arg(long, value_parser = ["lenient", "balanced", "strict"])]
    strictness: Option<String>,
}

impl SettingsArgs {
    /// `base` with what these flags name.
    fn apply(&self, mut base: CollectionSettings, overrides: &Overrides) -> CollectionSettings {
        if let Some(remote) = &overrides.remote_embedder {
            base.remote_embedder = Some(remote.clone());
            base.embedder = Some(remote.model_id());
        } else if let Some(id) = &self.embedder {
            base.embedder = Some(id.clone());
            base.remote_embedder = None;
        }
        base.chunk_chars = self.chunk_chars.or(base.chunk_chars);
        base.chunk_overlap = self.chunk_overlap.or(base.chunk_overlap);
        if let Some(languages) = &self.languages {
            base.languages = languages.iter().map(|l| l.trim().to_ascii_lowercase()).filter(|l| !l.is_empty()).collect();
        }
        if let Some(rerank) = &self.rerank {
            base.rerank = Some(rerank == "on");
        }
        if let Some(strictness) = self.strictness.as_deref().and_then(Strictness::parse) {
            base.strictness = strictness;
        }
        base
    }
}

/// Runs a `kea kb` command over the collections of `data_dir`.
pub fn run(which: &KbCommand, data_dir: &std::path::Path, settings: &Settings, overrides: &Overrides, knowledge: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    let mut library = Library::load(data_dir)?;
    match which {
        KbCommand::List { json } => list(&library, settings, overrides, knowledge, *json),
        KbCommand::Create { name, folders, settings: args, json } => {
            let collection = library.create(name, folders, args.apply(CollectionSettings::default(), overrides))?;
            warn_about_languages(&library, &collection, settings, overrides);
            let names = |c: &Collection| format!("created '{}' over {} (index it: kea index --kb={})", c.name, folder_list(c), shell::word(&c.name));
            print(&described(&library, &collection, settings, overrides), *json, || names(&collection))
        }
        KbCommand::Set { name, folders, settings: args } => {
            if !folders.is_empty() {
                library.set_folders(name, folders)?;
            }
            let current = library.resolve(std::slice::from_ref(name), settings, None)?.remove(0);
            library.set_settings(&current.name, args.apply(current.settings.clone(), overrides))?;
            let updated = library.resolve(std::slice::from_ref(name), settings, None)?.remove(0);
            warn_about_languages(&library, &updated, settings, overrides);
            say(format!("updated '{}'", updated.name))
        }
        KbCommand::Export { name, file, with_files, json } => {
            let collection = library.resolve(std::slice::from_ref(name), settings, knowledge)?.remove(0);
            let engine = crate::open_engine(library.engine_config(&collection, settings, overrides))?;
            let exported = kea_engine::keakb::export(&engine, &collection, &Destination { file, replace: false, data_folder: data_dir }, *with_files)?;
            print(&exported, *json, || {
                format!("wrote {} ({} documents, {} files, {:.1} MB)", exported.file.display(), exported.documents, exported.files, exported.bytes as f64 / 1e6)
            })
        }
        KbCommand::Import { file, name, folder, trust_embedder, json } => {
            let read: Vec<PathBuf> = library.list(settings, knowledge.clone()).into_iter().flat_map(|c| c.folders).collect();
            let config = settings.engine_config_with(settings.knowledge_dir(knowledge), data_dir.to_path_buf(), overrides);
            let documents = kea_engine::settings::default_knowledge_dir().parent().map(Path::to_path_buf).unwrap_or_else(std::env::temp_dir);
            let folder = folder.as_deref().map_or(DocumentsFolder::Inside(&documents), DocumentsFolder::Exactly);
            let trust_embedder = trust_embedder.as_deref();
            let target = ImportTarget { name: name.as_deref(), folder, model_paths: &config.model_paths, trust_embedder, collection_folders: &read };
            import(&mut library, file, &target, *json)
        }
        KbCommand::AddUrl { name, url, allow_local, json } => {
            let collection = library.resolve(std::slice::from_ref(name), settings, knowledge)?.remove(0);
            add_url(&crate::open_engine(library.engine_config(&collection, settings, overrides))?, url, *allow_local, *json)
        }
        KbCommand::Rename { name, new_name } => {
            library.rename(name, new_name)?;
            say(format!("renamed '{name}' to '{}'", new_name.trim()))
        }
        KbCommand::Remove { name, delete_index, json } => {
            let removed = library.remove(name, *delete_index)?;
            print(&removed, *json, || match removed.index_deleted {
                true => format!("removed '{}' and deleted its index; its folders are untouched", removed.name),
                false => format!("removed '{}'; its folders are untouched and its index stays in {}", removed.name, removed.index_dir.display()),
            })
        }
    }
}

/// `kea kb add-url`: fetches the page into the collection and indexes it.
fn add_url(engine: &kea_engine::Engine, url: &str, allow_local: bool, json: bool) -> anyhow::Result<ExitCode> {
    let limits = kea_engine::web::FetchLimits { allow_local, ..Default::default() };
    let added = engine.documents().add_web_page(url, &limits, &(), &kea_engine::CancelToken::new())?;
    print(&added, json, || {
        let verb = if added.refetched { "fetched again" } else { "added" };
        format!("{verb} {} as {} ({} passages embedded)", added.url, added.key, added.report.embedded)
    })
}

/// `kea kb import`: adds the collection in `file` as `target` says.
fn import(library: &mut Library, file: &Path, target: &ImportTarget, json: bool) -> anyhow::Result<ExitCode> {
    let imported = kea_engine::keakb::import(library, file, target)?;
    if !imported.embedder_available {
        let notice = format!(
            "kea: its embedder {} is not installed here: install it (kea models install {}), or re-embed it with one you have: kea --kb={} index --embedding-model ID --reembed",
            imported.embedder,
            shell::word(&imported.embedder),
            shell::word(&imported.name)
        );
        eprintln!("{}", crate::output::one_line(&notice));
    }
    print(&imported, json, || {
        let folder = imported.folder.as_ref().map(|f| format!("; its documents are in {}", f.display())).unwrap_or_default();
        format!("imported '{}' ({} documents) into {}{folder}", imported.name, imported.documents, imported.index_dir.display())
    })
}

/// Prints `text` (without escapes: it holds names and paths).
fn say(text: String) -> anyhow::Result<ExitCode> {
    println!("{}", crate::output::printable(&text));
    Ok(ExitCode::SUCCESS)
}

/// Prints `value` as JSON, or the sentence `text` makes (without escapes).
fn print(value: &impl serde::Serialize, json: bool, text: impl FnOnce() -> String) -> anyhow::Result<ExitCode> {
    if json {
        println!("{}", serde_json::to_string_pretty(value)?);
        Ok(ExitCode::SUCCESS)
    } else {
        say(text())
    }
}

fn folder_list(collection: &Collection) -> String {
    collection.folders.iter().map(|f| f.display().to_string()).collect::<Vec<_>>().join(", ")
}

/// A collection as `kea kb list --json` shows it.
fn described(library: &Library, collection: &Collection, settings: &Settings, overrides: &Overrides) -> serde_json::Value {
    let config = library.engine_config(collection, settings, overrides);
    let state = embedder_state(collection, &config);
    serde_json::json!({
        "name": collection.name,
        "default": collection.is_default(),
        "folders": collection.folders,
        "index_dir": config.data_dir,
        "indexed_model": state.indexed.then_some(&state.embedder),
        "embedder": state.embedder,
        "settings": collection.settings,
        "warning": state.warning,
    })
}

fn warn_about_languages(library: &Library, collection: &Collection, settings: &Settings, overrides: &Overrides) {
    if let Some(warning) = embedder_state(collection, &library.engine_config(collection, settings, overrides)).warning {
        eprintln!("kea: warning: {warning}");
    }
}

fn list(library: &Library, settings: &Settings, overrides: &Overrides, knowledge: Option<PathBuf>, json: bool) -> anyhow::Result<ExitCode> {
    let all: Vec<serde_json::Value> = library.list(settings, knowledge).iter().map(|c| described(library, c, settings, overrides)).collect();
    if json {
        println!("{}", serde_json::to_string_pretty(&all)?);
        return Ok(ExitCode::SUCCESS);
    }
    for c in &all {
        let folders: Vec<&str> = c["folders"].as_array().into_iter().flatten().filter_map(|f| f.as_str()).collect();
        let field = |key: &str| crate::output::printable(c[key].as_str().unwrap_or_default());
        println!("{}  ({})  {}", field("name"), field("embedder"), crate::output::printable(&folders.join(", ")));
        if c["warning"].is_string() {
            println!("    warning: {}", field("warning"));
        }
    }
    Ok(ExitCode::SUCCESS)
}
