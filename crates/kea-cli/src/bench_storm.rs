//! `kea bench storm`: creates, modifies, renames and deletes `files` files in
//! about `seconds` while the watcher runs and a second thread keeps querying
//! (hybrid, no rerank); then waits until the index equals the disk (same
//! paths, sizes and modification times) and prints the settle time and the
//! query latencies measured during the storm.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use kea_engine::model::ModelPaths;
use kea_engine::{CancelToken, Engine, EngineConfig, RetrievalConfig};

use super::percentile;

#[derive(serde::Serialize)]
pub struct StormFigures {
    pub files: usize,
    pub operations: usize,
    pub storm_ms: u64,
    pub settle_ms: u64,
    pub queries: usize,
    pub query_errors: usize,
    pub query_p50_ms: f64,
    pub query_p99_ms: f64,
    pub watcher_errors: usize,
    pub documents: usize,
    pub disk_files: usize,
    pub index_equals_disk: bool,
}

fn note(i: usize, version: usize) -> String {
    format!("# Storm note {i}\n\n## Sighting\n\nVersion {version}: a flock of parrots fed on seeds near water {i}.\n")
}

/// `(path, size, mtime)`.
type FileState = (String, u64, i64);

/// `(path, size, mtime)` of every file the storm left (from its own
/// bookkeeping, read with `std::fs`, not with Kea's scanner), and of every
/// indexed document.
fn disk_and_index(engine: &Engine, root: &Path, expected: &[String]) -> anyhow::Result<(Vec<FileState>, Vec<FileState>)> {
    let mut disk = Vec::with_capacity(expected.len());
    for rel in expected {
        let meta = std::fs::metadata(root.join(rel)).with_context(|| format!("the storm left {rel}"))?;
        let mtime_ns = meta.modified()?.duration_since(std::time::UNIX_EPOCH)?.as_nanos() as i64;
        disk.push((rel.clone(), meta.len(), mtime_ns));
    }
    let mut index: Vec<_> = engine.status()?.documents.into_iter().map(|d| (d.path, d.size, d.mtime_ns)).collect();
    disk.sort();
    index.sort();
    Ok((disk, index))
}

// A benchmark script: set-up, then each timed phase in order, read top to bottom.
#[allow(clippy::too_many_lines)]
pub fn run(files: usize, seconds: f64, paths: Option<ModelPaths>) -> anyhow::Result<StormFigures> {
    let tmp = tempfile::tempdir()?;
    let knowledge = tmp.path().join("knowledge");
    let storm = knowledge.join("storm");
    std::fs::create_dir_all(&storm)?;
    for i in 0..20 {
        std::fs::write(knowledge.join(format!("seed-{i}.md")), note(i, 0))?;
    }
    let mut config = EngineConfig::new(&knowledge, tmp.path().join("data"));
    if let Some(paths) = paths {
        config.model_paths = paths;
    }
    let engine = Arc::new(Engine::open(config)?);
    engine.indexer().sync(&|_: &kea_engine::IndexEvent| {}, &CancelToken::new())?;
    let watcher_errors = Arc::new(AtomicUsize::new(0));
    let counted = watcher_errors.clone();
    let _watch = kea_engine::watch(engine.clone(), Arc::new(|_: &kea_engine::IndexEvent| {}), Duration::from_millis(300), move |_| {
        counted.fetch_add(1, Ordering::Relaxed);
    })?;

    // Queries keep running through the storm.
    let stop = Arc::new(AtomicBool::new(false));
    let (querier, stop_queries) = (engine.clone(), stop.clone());
    let queries = std::thread::spawn(move || {
        let config = RetrievalConfig { rerank: false, ..Default::default() };
        let (mut latencies, mut errors) = (Vec::new(), 0);
        while !stop_queries.load(Ordering::Relaxed) {
            let started = Instant::now();
            match querier.retriever().retrieve("parrots fed on seeds near water", &config) {
                Ok(_) => latencies.push(started.elapsed().as_secs_f64() * 1000.0),
                Err(_) => errors += 1,
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        (latencies, errors)
    });

    // The storm: every file is created; some are then modified, renamed or deleted.
    let started = Instant::now();
    let per_file = Duration::from_secs_f64(seconds / files.max(1) as f64);
    let mut operations = 0;
    let mut live: Vec<usize> = Vec::new();
    let path = |i: usize, renamed: bool| storm.join(format!("{}-{i:05}.md", if renamed { "moved" } else { "note" }));
    let mut renamed = std::collections::HashSet::new();
    for i in 0..files {
        std::fs::write(path(i, false), note(i, 1)).context("storm write")?;
        live.push(i);
        operations += 1;
        let earlier = live[(i * 7919) % live.len()];
        let current = |j: usize, r: &std::collections::HashSet<usize>| path(j, r.contains(&j));
        if i % 4 == 1 {
            std::fs::write(current(earlier, &renamed), note(earlier, 2))?;
            operations += 1;
        }
        if i % 5 == 2 && !renamed.contains(&earlier) {
            std::fs::rename(path(earlier, false), path(earlier, true))?;
            renamed.insert(earlier);
            operations += 1;
        }
        if i % 7 == 3 && live.len() > 1 {
            let victim = live.swap_remove((i * 31) % live.len());
            std::fs::remove_file(current(victim, &renamed))?;
            operations += 1;
        }
        let due = per_file * (i as u32 + 1);
        if let Some(wait) = due.checked_sub(started.elapsed()) {
            std::thread::sleep(wait);
        }
    }
    let storm_ms = started.elapsed().as_millis() as u64;

    // Settled: index == disk on two polls in a row.
    let name = |j: usize| format!("storm/{}-{j:05}.md", if renamed.contains(&j) { "moved" } else { "note" });
    let expected: Vec<String> = (0..20).map(|i| format!("seed-{i}.md")).chain(live.iter().map(|&j| name(j))).collect();
    let settle_start = Instant::now();
    let mut equal_polls = 0;
    let (mut disk, mut index) = (Vec::new(), Vec::new());
    while settle_start.elapsed() < Duration::from_secs(900) && equal_polls < 2 {
        std::thread::sleep(Duration::from_millis(250));
        (disk, index) = disk_and_index(&engine, &knowledge, &expected)?;
        equal_polls = if disk == index { equal_polls + 1 } else { 0 };
    }
    let settle_ms = settle_start.elapsed().as_millis() as u64;
    stop.store(true, Ordering::Relaxed);
    let (mut latencies, query_errors) = queries.join().map_err(|_| anyhow::anyhow!("the query thread panicked"))?;
    latencies.sort_by(f64::total_cmp);
    Ok(StormFigures {
        files,
        operations,
        storm_ms,
        settle_ms,
        queries: latencies.len(),
        query_errors,
        query_p50_ms: percentile(&latencies, 0.5),
        query_p99_ms: percentile(&latencies, 0.99),
        watcher_errors: watcher_errors.load(Ordering::Relaxed),
        documents: index.len(),
        disk_files: disk.len(),
        index_equals_disk: disk == index && equal_polls >= 2,
    })
}
