//! `kea models`: the model manager on the command line — list the catalog
//! with what is installed and active, download (progress bar, Ctrl+C
//! cancels, the next install resumes), import from a folder or file, remove,
//! and choose the model per role (a new embedder re-embeds only with --reembed).

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Subcommand;
use indicatif::{ProgressBar, ProgressStyle};
use kea_engine::model::catalog::Role;
use kea_engine::model::download::DownloadProgress;
use kea_engine::settings::Settings;
use kea_engine::{CancelToken, Engine, EngineConfig};

#[derive(Subcommand)]
pub enum ModelsCommand {
    /// The catalog: every model per role, installed or not, and the active ones.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Download and install a catalog model (resumes an interrupted download).
    Install { id: String },
    /// Install a model from a local folder (with kea-model.json, or a catalog
    /// model's hub files with --id) or a .gguf file.
    Import {
        path: PathBuf,
        #[arg(long)]
        id: Option<String>,
    },
    /// Delete an installed model.
    Remove { id: String },
    /// Use model ID for ROLE (embedder, reranker, image, llm).
    Use {
        role: String,
        id: String,
        /// Embedder only: confirm re-embedding every chunk of the index.
        #[arg(long)]
        reembed: bool,
    },
}

/// `install_dir`: the `--models-dir` flag, which also receives installs.
pub fn run(command: &ModelsCommand, config: EngineConfig, install_dir: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    let settings_path = config.data_dir.join(Settings::FILE_NAME);
    let mut settings = Settings::load(&settings_path)?;
    let mut manager = settings.model_manager(&config);
    if let Some(dir) = install_dir {
        manager.install_dir = dir;
    }
    match command {
        ModelsCommand::List { json } => list(&settings, &manager, &config, *json),
        ModelsCommand::Install { id } => {
            install(&manager, std::slice::from_ref(id))?;
            let path = manager.installed_dir(id).unwrap_or_default();
            println!("installed {id} in {}", path.display());
            Ok(ExitCode::SUCCESS)
        }
        ModelsCommand::Import { path, id } => {
            let id = manager.import(path, id.as_deref())?;
            println!("imported {id} into {}", manager.install_dir.display());
            Ok(ExitCode::SUCCESS)
        }
        ModelsCommand::Remove { id } => {
            settings.remove_model(&config, id)?;
            settings.save(&settings_path)?;
            println!("removed {id}");
            Ok(ExitCode::SUCCESS)
        }
        ModelsCommand::Use { role, id, reembed } => {
            let role = Role::parse(role).with_context(|| format!("unknown role {role:?} (embedder, reranker, image or llm)"))?;
            kea_engine::model::ModelId::parse(id)?;
            anyhow::ensure!(manager.installed_dir(id).is_some(), "{id} is not installed: kea models install {id} (or kea models import)");
            if role == Role::Embedder {
                return use_embedder(config, &mut settings, &settings_path, id, *reembed);
            }
            settings.choose(role, Some(id.clone()));
            settings.save(&settings_path)?;
            println!("{} is now {id}", role.as_str());
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn list(settings: &Settings, manager: &kea_engine::model::manager::ModelManager, config: &EngineConfig, json: bool) -> anyhow::Result<ExitCode> {
    let active = settings.active_models(Engine::indexed_model(&config.data_dir)?);
    let rows = manager.list(&active);
    if json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!("endpoint: {}   install folder: {}", manager.endpoint, manager.install_dir.display());
    for role in Role::ALL {
        println!("{}:", role.as_str());
        for row in rows.iter().filter(|r| r.role == role) {
            let state = match (row.active, row.installed) {
                (true, _) => "● active",
                (false, true) => "✓ installed",
                (false, false) if row.downloadable => "  download",
                _ => "  make models",
            };
            let languages = if row.languages.is_empty() { "?".to_string() } else { row.languages.join(",") };
            let unpinned =
                if row.downloadable && !row.installed && !row.pinned { "  (hashes not known ahead: the hub's are checked and recorded)" } else { "" };
            println!("  {state:<13} {:<36} {:>9}  {languages:<16} {}{unpinned}", row.id, human_bytes(row.size_bytes), row.license);
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Downloads `ids` one after another with one progress bar on a terminal
/// across all of them; Ctrl+C cancels (resumable).
pub fn install(manager: &kea_engine::model::manager::ModelManager, ids: &[String]) -> anyhow::Result<()> {
    let cancel = CancelToken::new();
    let interrupted = cancel.clone();
    let _ = ctrlc::set_handler(move || interrupted.cancel());
    let bar = if std::io::stderr().is_terminal() { ProgressBar::new(0) } else { ProgressBar::hidden() };
    bar.set_style(
        ProgressStyle::with_template("{msg} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} ETA {eta}").unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let mut on_progress = |p: &DownloadProgress| {
        bar.set_length(p.total_bytes);
        bar.set_position(p.done_bytes);
        let step = if p.models > 1 { format!("({}/{}) ", p.models_done + 1, p.models) } else { String::new() };
        bar.set_message(format!("{step}{} {}", p.model, p.file));
    };
    let result = manager.install_all(ids, &mut on_progress, &cancel);
    bar.finish_and_clear();
    match result {
        Err(kea_engine::Error::Cancelled) => anyhow::bail!("download cancelled; the same command resumes it"),
        other => Ok(other?),
    }
}

/// Switches the index to another embedder: shows the cost, and re-embeds
/// only with `--reembed`.
fn use_embedder(config: EngineConfig, settings: &mut Settings, settings_path: &std::path::Path, id: &str, reembed: bool) -> anyhow::Result<ExitCode> {
    let indexed = Engine::indexed_model(&config.data_dir)?;
    if indexed.as_deref() != Some(id) {
        let cost = Engine::open(config.clone())?.indexer().reembed_cost()?;
        if cost.chunks > 0 && !reembed {
            eprintln!(
                "the index holds {} chunks of {} documents embedded with {}; switching to {id} re-embeds all of them (about {:.0} s at the current model's speed). Add --reembed to go ahead.",
                cost.chunks,
                cost.documents,
                cost.indexed_model.as_deref().unwrap_or("?"),
                cost.estimated_seconds
            );
            return Ok(ExitCode::from(2));
        }
    }
    switch_embedder(config, settings, settings_path, id)
}

/// Re-embeds the index with `id` and makes it the embedder.
pub fn switch_embedder(mut config: EngineConfig, settings: &mut Settings, settings_path: &std::path::Path, id: &str) -> anyhow::Result<ExitCode> {
    config.use_model(id);
    config.reembed = true;
    let engine = Engine::open(config)?;
    settings.choose(Role::Embedder, Some(id.to_string()));
    settings.save(settings_path)?;
    let report = engine.indexer().sync(crate::progress::sink_for(false).as_ref(), &CancelToken::new())?;
    crate::progress::print_report(&report, false);
    println!("embedder is now {id}");
    Ok(ExitCode::SUCCESS)
}

fn human_bytes(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 30 => format!("{:.1} GB", b as f64 / (1u64 << 30) as f64),
        b if b >= 1 << 20 => format!("{:.0} MB", b as f64 / (1u64 << 20) as f64),
        b => format!("{} kB", b / 1024),
    }
}
