//! `kea`: the headless command line over the engine. Index a knowledge
//! folder (once or watching), show its status, search it, and benchmark
//! ingest. `--json` output is the contract the integration tests use.

mod bench;
mod progress;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::{Parser, Subcommand};
use kea_engine::model::ModelPaths;
use kea_engine::{CancelToken, Engine, EngineConfig, SearchMode};

#[derive(Parser)]
#[command(name = "kea", version, about = "Chat with your documents: index and search a knowledge folder")]
struct Cli {
    /// Where the index lives (default: the platform's app-data folder).
    #[arg(long, global = true, value_name = "DIR")]
    data_dir: Option<PathBuf>,
    /// The knowledge folder to index.
    #[arg(long, global = true, value_name = "DIR", default_value = "knowledge")]
    knowledge: PathBuf,
    /// Where model folders are looked for first (also $KEA_MODELS_DIR).
    #[arg(long, global = true, value_name = "DIR")]
    models_dir: Option<PathBuf>,
    /// The text embedding model id.
    #[arg(long, global = true, value_name = "ID")]
    model: Option<String>,
    #[command(subcommand)]
    command: Command,
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
    /// Show the indexed documents, their state and the model in use.
    Status {
        #[arg(long)]
        json: bool,
    },
    /// Search the index.
    Search {
        query: String,
        #[arg(long, default_value_t = 5)]
        top_k: usize,
        #[arg(long, value_enum, default_value = "dense")]
        mode: Mode,
        #[arg(long)]
        json: bool,
    },
    /// Benchmarks (print figures; not tests).
    Bench {
        #[command(subcommand)]
        which: bench::BenchCommand,
    },
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum Mode {
    Dense,
    Fts,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(err) => {
            match err.downcast_ref::<kea_engine::Error>() {
                Some(e) => eprintln!("kea: error [{}]: {e}", e.kind().code()),
                None => eprintln!("kea: error: {err:#}"),
            }
            ExitCode::FAILURE
        }
    }
}

fn config(cli: &Cli) -> EngineConfig {
    let data_dir = cli.data_dir.clone().unwrap_or_else(EngineConfig::default_data_dir);
    let mut config = EngineConfig::new(cli.knowledge.clone(), data_dir);
    if let Some(dir) = &cli.models_dir {
        config.model_paths.dirs.insert(0, dir.clone());
    }
    if let Some(model) = &cli.model {
        config.model_id = model.clone();
    }
    config
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match &cli.command {
        Command::Index { watch, json } => index(config(&cli), *watch, *json),
        Command::Status { json } => status(config(&cli), *json),
        Command::Search { query, top_k, mode, json } => {
            let mode = match mode {
                Mode::Dense => SearchMode::Dense,
                Mode::Fts => SearchMode::Fts,
            };
            search(config(&cli), query, *top_k, mode, *json)
        }
        Command::Bench { which } => {
            let paths = cli.models_dir.clone().map(|d| ModelPaths { dirs: vec![d] });
            bench::run(which, paths, cli.model.clone())
        }
    }
}

fn index(config: EngineConfig, watch: bool, json: bool) -> anyhow::Result<ExitCode> {
    let engine = Arc::new(Engine::open(config)?);
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
    let report = engine.sync(sink.as_ref(), &cancel)?;
    progress::print_report(&report, json);
    if !watch {
        return Ok(if report.cancelled { ExitCode::from(130) } else { ExitCode::SUCCESS });
    }
    let watch_sink = progress::watch_sink(json);
    let handle = kea_engine::watch(engine.clone(), watch_sink, Duration::from_millis(300), |e| {
        eprintln!("kea: sync failed [{}]: {e}", e.kind().code())
    })?;
    if !json {
        eprintln!("watching {} (Ctrl+C to stop)", engine.knowledge_dir().display());
    }
    while !cancel.is_cancelled() {
        std::thread::sleep(Duration::from_millis(100));
    }
    handle.stop();
    Ok(ExitCode::SUCCESS)
}

fn status(config: EngineConfig, json: bool) -> anyhow::Result<ExitCode> {
    let engine = Engine::open(config)?;
    let status = engine.status()?;
    if json {
        let problems = engine.integrity_problems()?;
        let mut value = serde_json::to_value(&status)?;
        value["integrity_problems"] = serde_json::json!(problems);
        println!("{}", serde_json::to_string_pretty(&value)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!("knowledge: {}", status.knowledge_dir.display());
    println!("index:     {} ({:.1} MB)", status.data_dir.display(), status.index_bytes as f64 / 1e6);
    println!("model:     {} ({} dimensions)", status.model_id.as_deref().unwrap_or("none"), status.dim.unwrap_or(0));
    println!("documents: {}   chunks: {}   vectors: {}", status.documents.len(), status.chunks, status.vectors);
    for doc in &status.documents {
        match &doc.error {
            Some(error) => println!("  ✗ {}  — {error}", doc.path),
            None => println!("  ✓ {}  ({} chunks)", doc.path, doc.chunk_count),
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn search(config: EngineConfig, query: &str, top_k: usize, mode: SearchMode, json: bool) -> anyhow::Result<ExitCode> {
    let engine = Engine::open(config)?;
    let hits = engine.search(query, top_k, mode)?;
    if json {
        let rows: Vec<serde_json::Value> = hits
            .iter()
            .map(|h| {
                serde_json::json!({
                    "source": h.chunk.source, "heading_path": h.chunk.heading_path, "chunk_index": h.chunk.chunk_index,
                    "chunk_id": h.chunk.id, "page": h.chunk.page, "score": h.score, "text": h.chunk.text,
                })
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(ExitCode::SUCCESS);
    }
    if hits.is_empty() {
        println!("no results");
    }
    for (rank, hit) in hits.iter().enumerate() {
        let page = hit.chunk.page.map(|p| format!(" p.{p}")).unwrap_or_default();
        println!("{}. [{:.3}] {} | {}{page}", rank + 1, hit.score, hit.chunk.source, hit.chunk.heading_path);
        for line in hit.chunk.text.lines().take(4) {
            println!("     {line}");
        }
    }
    Ok(ExitCode::SUCCESS)
}
