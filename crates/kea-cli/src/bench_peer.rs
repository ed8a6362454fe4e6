//! `kea bench peer`: Kea against a Python peer of Parrot-Set's design
//! (`tests/bench/peer.py`: onnxruntime + tokenizers + chromadb, rebuilding
//! everything on any change) on the same generated corpus and the same
//! ONNX model, in one run. Kea is measured in this process first (fresh, so
//! its peak RSS is its own), then the peer in a child process; both print
//! full ingest, re-index after a one-file edit, query p50/p99 (dense for
//! the peer, hybrid without rerank for Kea) and peak RSS.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Context;
use kea_engine::model::ModelPaths;
use kea_engine::{CancelToken, Engine, EngineConfig, RetrievalConfig};
use serde_json::{json, Value};

use super::{peak_rss_mb, percentile, round};

const QUERIES: [&str; 10] = [
    "what do the birds eat at dawn",
    "where does the flock rest",
    "sentinel sentence zero",
    "nesting season behaviour",
    "calls and song at dusk",
    "feathers and moult",
    "water and bathing",
    "predators nearby",
    "flock size observed",
    "weather during the survey",
];

fn edit(path: &Path) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(path)?;
    Ok(std::fs::write(path, format!("{text}\nAn edited sentence about parrots.\n"))?)
}

fn kea(corpus: &Path, data: &Path, paths: ModelPaths, edited: &Path, rounds: usize) -> anyhow::Result<Value> {
    let mut config = EngineConfig::new(corpus, data);
    config.model_paths = paths;
    let engine = Engine::open(config)?;
    engine.indexer().embed_passages(&["warm up".to_string()])?;
    let started = Instant::now();
    let report = engine.indexer().sync(&(), &CancelToken::new())?;
    let ingest_ms = started.elapsed().as_millis();
    edit(edited)?;
    let started = Instant::now();
    engine.indexer().sync(&(), &CancelToken::new())?;
    let edit_ms = started.elapsed().as_secs_f64() * 1000.0;
    let config = RetrievalConfig { rerank: false, top_k: 5, ..Default::default() };
    let mut latencies = Vec::new();
    for query in QUERIES.iter().cycle().take(QUERIES.len() * rounds) {
        let started = Instant::now();
        engine.retriever().retrieve(query, &config)?;
        latencies.push(started.elapsed().as_secs_f64() * 1000.0);
    }
    latencies.sort_by(f64::total_cmp);
    Ok(json!({
        "chunks": report.chunks,
        "ingest_ms": ingest_ms,
        "edit_reindex_ms": round(edit_ms),
        "query_p50_ms": percentile(&latencies, 0.5),
        "query_p99_ms": percentile(&latencies, 0.99),
        "peak_rss_mb": peak_rss_mb()?,
    }))
}

fn peer(python: &Path, corpus: &Path, model: &Path, queries: &Path, edited: &Path, db: &Path) -> anyhow::Result<Value> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/bench/peer.py");
    let out = std::process::Command::new(python)
        .arg(&script)
        .args(["--corpus".as_ref(), corpus.as_os_str(), "--model".as_ref(), model.as_os_str()])
        .args(["--queries".as_ref(), queries.as_os_str(), "--edit".as_ref(), edited.as_os_str(), "--db".as_ref(), db.as_os_str()])
        .env("ANONYMIZED_TELEMETRY", "False")
        .output()
        .with_context(|| format!("running {} (make bench-peer installs it)", python.display()))?;
    anyhow::ensure!(out.status.success(), "the peer failed: {}", String::from_utf8_lossy(&out.stderr));
    let last = String::from_utf8_lossy(&out.stdout).lines().last().unwrap_or_default().to_string();
    serde_json::from_str(&last).with_context(|| format!("the peer printed {last}"))
}

/// Runs both on `docs` generated documents; `python` is the peer's venv.
pub fn run(docs: usize, python: PathBuf, paths: Option<ModelPaths>) -> anyhow::Result<Value> {
    let tmp = tempfile::tempdir()?;
    let (kea_corpus, peer_corpus) = (tmp.path().join("kea-corpus"), tmp.path().join("peer-corpus"));
    for dir in [&kea_corpus, &peer_corpus] {
        std::fs::create_dir_all(dir)?;
        for i in 0..docs {
            std::fs::write(dir.join(format!("doc-{i:05}.md")), super::synthetic_doc(i))?;
        }
    }
    let paths = paths.unwrap_or_else(|| ModelPaths::discover(tmp.path()));
    let model = paths
        .dirs
        .iter()
        .map(|d| d.join("all-minilm-l6-v2"))
        .find(|d| d.join("model.onnx").exists())
        .context("all-minilm-l6-v2 is not installed (make models)")?;
    let queries = tmp.path().join("queries.txt");
    std::fs::write(&queries, QUERIES.iter().cycle().take(QUERIES.len() * 10).copied().collect::<Vec<_>>().join("\n"))?;
    let edited = format!("doc-{:05}.md", docs / 2);
    let kea = kea(&kea_corpus, &tmp.path().join("kea-data"), paths, &kea_corpus.join(&edited), 10)?;
    let peer = peer(&python, &peer_corpus, &model, &queries, &peer_corpus.join(&edited), &tmp.path().join("peer-db"))?;
    let rows = ["chunks", "ingest_ms", "edit_reindex_ms", "query_p50_ms", "query_p99_ms", "peak_rss_mb"];
    eprintln!("{:<18} {:>12} {:>14}", "", "Kea", "Python peer");
    for row in rows {
        eprintln!("{row:<18} {:>12} {:>14}", kea[row].to_string(), peer[row].to_string());
    }
    Ok(json!({"docs": docs, "kea": kea, "peer": peer}))
}
