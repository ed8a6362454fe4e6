//! `kea bench query`: builds a synthetic index of N chunks straight into the
//! store (Zipf-distributed generated words for BM25, random unit vectors for
//! the vector part: embedding 100k real chunks would take hours here), then
//! times the full pipeline without rerank (real query embedding included)
//! and the rerank stage on 20 candidates with the fixture reranker. With
//! `--store milvus://…` the same index is uploaded to a team store, queried
//! there, and joined by a second instance (which pulls the passages).

use std::collections::BTreeMap;
use std::time::Instant;

use kea_engine::model::ModelPaths;
use kea_engine::store::{DocChange, FileFacts, NewChunk, Store};
use kea_engine::team::TeamConfig;
use kea_engine::{Engine, EngineConfig, RetrievalConfig};

use super::{peak_rss_mb, percentile, Rng};

#[derive(serde::Serialize)]
pub struct QueryFigures {
    chunks: usize,
    vectors: &'static str,
    build_ms: u64,
    /// Reading the full-text postings into memory (in the background, from
    /// the first search on; searches use FTS5 until it ends).
    full_text_read_ms: f64,
    queries: usize,
    p50_ms: f64,
    p99_ms: f64,
    /// Median time of each stage (`embed`: the query embedding; `dense` and
    /// `sparse` run at the same time, so the total is less than their sum).
    stage_p50_ms: BTreeMap<&'static str, f64>,
    stage_p99_ms: BTreeMap<&'static str, f64>,
    rerank_model: Option<String>,
    rerank20_p50_ms: Option<f64>,
    peak_rss_mb: f64,
    /// With a team store: the first instance's upload and the second one's join.
    team: Option<TeamFigures>,
}

#[derive(serde::Serialize)]
pub struct TeamFigures {
    store: String,
    /// Opening the first instance: every chunk uploaded to the store.
    upload_ms: u64,
    upload_chunks_per_s: f64,
    /// A second instance (another data folder, empty knowledge folder) joining:
    /// it pulls every passage into its mirror.
    second_open_ms: u64,
    second_p50_ms: f64,
    second_p99_ms: f64,
}

const SYLLABLES: &[&str] = &["ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "pe", "zu", "ha", "ki", "mo", "da", "ri", "yo"];

fn vocabulary(n: usize) -> Vec<String> {
    (0..n)
        .map(|i| {
            let mut word = String::new();
            let mut k = i + SYLLABLES.len();
            while k > 0 {
                word.push_str(SYLLABLES[k % SYLLABLES.len()]);
                k /= SYLLABLES.len();
            }
            word
        })
        .collect()
}

fn random_unit_vector(rng: &mut Rng, dim: usize) -> Vec<f32> {
    let v: Vec<f32> = (0..dim).map(|_| rng.unit() * 2.0 - 1.0).collect();
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.into_iter().map(|x| x / norm).collect()
}

// A benchmark script: set-up, then each timed phase in order, read top to bottom.
#[allow(clippy::too_many_lines)]
pub fn run(chunks: usize, queries: usize, store: Option<&str>, paths: Option<ModelPaths>) -> anyhow::Result<QueryFigures> {
    let tmp = tempfile::tempdir()?;
    let knowledge = tmp.path().join("knowledge");
    std::fs::create_dir_all(&knowledge)?;
    let mut config = EngineConfig::new(&knowledge, tmp.path().join("data"));
    if let Some(paths) = paths {
        config.model_paths.dirs.splice(0..0, paths.dirs);
    }
    let model = config.model_paths.resolve(&config.model_id)?;
    let reranker = config.model_paths.resolve("fixture-reranker").ok().map(|m| m.manifest.id);
    config.reranker_id = reranker.clone();
    std::fs::create_dir_all(&config.data_dir)?;

    let started = Instant::now();
    let words = vocabulary(20_000);
    let mut rng = Rng(0x9E3779B97F4A7C15);
    {
        let mut store = Store::open(&config.data_dir.join("kea.sqlite3"))?;
        store.switch_model(&model.manifest.id, model.manifest.dim)?;
        let per_doc = 100;
        for doc in 0..chunks.div_ceil(per_doc) {
            let n = per_doc.min(chunks - doc * per_doc);
            let new_chunks: Vec<NewChunk> = (0..n)
                .map(|i| {
                    let text: Vec<&str> = (0..60).map(|_| words[rng.zipf(words.len())].as_str()).collect();
                    let text = text.join(" ");
                    NewChunk {
                        index: i,
                        heading_path: format!("Section {}", i % 7),
                        page: None,
                        byte_start: 0,
                        byte_end: text.len(),
                        hash: format!("{doc}-{i}"),
                        text,
                        names: String::new(),
                        embedding: random_unit_vector(&mut rng, model.manifest.dim),
                    }
                })
                .collect();
            let file = FileFacts { path: format!("doc-{doc:05}.md"), kind: Some(kea_engine::extract::DocKind::Markdown), size: 1, mtime_ns: 1 };
            store.apply(&[DocChange::Replace { file, content_hash: doc.to_string(), title: None, front_matter: "{}".into(), chunks: new_chunks }])?;
        }
    }
    // Opening builds the usearch index from the stored vectors (or uploads them to the team store).
    let second_config = store.map(|url| team_instance(&config, url, tmp.path()));
    if let Some(url) = store {
        config.team = Some(TeamConfig { store: url.to_string(), namespace: Some("bench-first".into()), token: None });
    }
    let opening = Instant::now();
    let engine = Engine::open(config)?;
    let upload_ms = opening.elapsed().as_millis() as u64;
    let build_ms = started.elapsed().as_millis() as u64;

    let reading = Instant::now();
    anyhow::ensure!(engine.hold_full_text(std::time::Duration::from_secs(600))?, "the full-text postings were not read into memory");
    let full_text_read_ms = super::round(reading.elapsed().as_secs_f64() * 1000.0);
    let (times, (stage_p50_ms, stage_p99_ms)) = time_queries(&engine, &mut rng, &words, queries)?;

    let rerank20_p50_ms = match &reranker {
        None => None,
        Some(_) => {
            let with_rerank = RetrievalConfig { mmr_select: 20, rerank_keep: 20, filter: false, ..Default::default() };
            let mut rerank_times = Vec::new();
            for i in 0..20 {
                let query: Vec<&str> = (0..3).map(|_| words[50 + rng.zipf(2000)].as_str()).collect();
                let trace = engine.retriever().retrieve(&query.join(" "), &with_rerank)?.trace;
                anyhow::ensure!(trace.fallbacks.iter().all(|f| !f.starts_with("rerank")), "rerank fell back: {:?}", trace.fallbacks);
                if i > 0 {
                    rerank_times.extend(trace.stages.iter().filter(|s| s.stage == "rerank").map(|s| s.ms));
                }
            }
            rerank_times.sort_by(f64::total_cmp);
            Some(percentile(&rerank_times, 0.5))
        }
    };
    Ok(QueryFigures {
        chunks,
        vectors: "random unit vectors (384-d); query embedding is the real model",
        build_ms,
        full_text_read_ms,
        queries,
        p50_ms: percentile(&times, 0.5),
        p99_ms: percentile(&times, 0.99),
        stage_p50_ms,
        stage_p99_ms,
        rerank_model: reranker,
        rerank20_p50_ms,
        peak_rss_mb: peak_rss_mb()?,
        team: match (store, second_config) {
            (Some(url), Some(second)) => {
                let opening = Instant::now();
                let engine = Engine::open(second)?;
                let second_open_ms = opening.elapsed().as_millis() as u64;
                let (second_times, _) = time_queries(&engine, &mut rng, &words, queries)?;
                Some(TeamFigures {
                    store: url.to_string(),
                    upload_ms,
                    upload_chunks_per_s: super::round(chunks as f64 / (upload_ms.max(1) as f64 / 1000.0)),
                    second_open_ms,
                    second_p50_ms: percentile(&second_times, 0.5),
                    second_p99_ms: percentile(&second_times, 0.99),
                })
            }
            _ => None,
        },
    })
}

/// A second instance of the team: its own data and (empty) knowledge folder.
fn team_instance(first: &EngineConfig, url: &str, root: &std::path::Path) -> EngineConfig {
    let knowledge = root.join("second-knowledge");
    let _ = std::fs::create_dir_all(&knowledge);
    let mut config = EngineConfig::new(&knowledge, root.join("second-data"));
    config.model_paths = first.model_paths.clone();
    config.team = Some(TeamConfig { store: url.to_string(), namespace: Some("bench-second".into()), token: None });
    config
}

/// Each stage's median and 99th percentile.
type StagePercentiles = (BTreeMap<&'static str, f64>, BTreeMap<&'static str, f64>);

/// Times `queries` retrievals without rerank (after one warm-up): sorted
/// times and each stage's median and 99th percentile.
fn time_queries(engine: &Engine, rng: &mut Rng, words: &[String], queries: usize) -> anyhow::Result<(Vec<f64>, StagePercentiles)> {
    let no_rerank = RetrievalConfig { rerank: false, filter: false, ..Default::default() };
    engine.retriever().retrieve("warm up the model", &no_rerank)?;
    let mut times = Vec::with_capacity(queries);
    let mut stages: BTreeMap<&'static str, Vec<f64>> = BTreeMap::new();
    for _ in 0..queries {
        let query: Vec<&str> = (0..3).map(|_| words[50 + rng.zipf(2000)].as_str()).collect();
        let t = Instant::now();
        let trace = engine.retriever().retrieve(&query.join(" "), &no_rerank)?.trace;
        times.push(t.elapsed().as_secs_f64() * 1000.0);
        for stage in trace.stages {
            stages.entry(stage.stage).or_default().push(stage.ms);
        }
    }
    times.sort_by(f64::total_cmp);
    stages.values_mut().for_each(|ms| ms.sort_by(f64::total_cmp));
    let at = |p: f64| stages.iter().map(|(&name, ms)| (name, percentile(ms, p))).collect();
    Ok((times, (at(0.5), at(0.99))))
}
