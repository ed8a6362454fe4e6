//! `kea bench ingest`: generates a corpus, indexes it with the real model and
//! prints figures from one run, as ratios against the raw model time (the
//! physical limit on this machine), so results compare across machines.

use std::path::Path;
use std::time::Instant;

use anyhow::Context;
use clap::Subcommand;

#[path = "bench_corpus.rs"]
mod corpus_bench;
#[path = "bench_hashing.rs"]
mod hashing;
#[path = "bench_peer.rs"]
mod peer_bench;
#[path = "bench_query.rs"]
mod query_bench;
#[path = "bench_scale.rs"]
mod scale_bench;
#[path = "bench_scale_corpus.rs"]
mod scale_corpus;
#[path = "bench_storm.rs"]
mod storm_bench;
use kea_engine::chunk::chunk_document;
use kea_engine::extract::{extract, DocKind};
use kea_engine::model::ModelPaths;
use kea_engine::remote_embed::RemoteEmbedConfig;
use kea_engine::{CancelToken, Engine, EngineConfig};

#[derive(Subcommand)]
pub enum BenchCommand {
    /// Ingest a generated corpus; print ingest vs raw model time, RSS, edit latency.
    Ingest {
        /// Documents to generate (about 3 chunks each).
        #[arg(long, default_value_t = 1000)]
        docs: usize,
        #[arg(long)]
        json: bool,
    },
    /// A mixed corpus (md/txt/docx/PDF, zh and en, some scanned pages): files/s, wall vs model time, slowest files.
    Corpus {
        #[arg(long, default_value_t = 2000)]
        files: usize,
        /// One file in this many is a scanned page (read by OCR; 0: none).
        #[arg(long, default_value_t = 50)]
        scanned_every: usize,
        /// Where the scanned fixtures are (scan-en.pdf, scan-zh.png).
        #[arg(long, default_value = "tests/fixtures/scanned")]
        scans: std::path::PathBuf,
        #[arg(long)]
        json: bool,
    },
    /// Embedded LLM speed: first-token latency and tokens/s for a fixed prompt.
    Llm {
        /// The installed embedded model id.
        #[arg(long, default_value = crate::chat::DEFAULT_EMBEDDED_MODEL)]
        model: String,
        #[arg(long)]
        threads: Option<usize>,
        #[arg(long)]
        json: bool,
    },
    /// Kea vs a Python peer (chromadb, rebuilding everything on any change) on one corpus.
    Peer {
        #[arg(long, default_value_t = 500)]
        docs: usize,
        /// The peer's Python (a venv with chromadb, onnxruntime, tokenizers).
        #[arg(long, env = "KEA_PEER_PYTHON")]
        python: std::path::PathBuf,
        #[arg(long)]
        json: bool,
    },
    /// Watcher storm: create/modify/rename/delete files while querying; settle time and query p99.
    Storm {
        #[arg(long, default_value_t = 10_000)]
        files: usize,
        /// How long the storm lasts.
        #[arg(long, default_value_t = 10.0)]
        seconds: f64,
        #[arg(long)]
        json: bool,
    },
    /// A large index, kept in DIR: cold start, memory, disk, dense/BM25/hybrid latency, an edit searchable.
    Scale {
        /// Files in the corpus (about 2.65 chunks each: 37,500 make ~100k chunks, 377,000 ~1M).
        #[arg(long, default_value_t = 37_500)]
        files: usize,
        /// Where the vectors come from: the default local model, or a
        /// deterministic hashed bag of words (fast; not a language model).
        #[arg(long, value_enum, default_value_t = scale_bench::Vectors::Model)]
        embedder: scale_bench::Vectors,
        /// Where the corpus and its index are kept between runs.
        #[arg(long, default_value = "bench-scale")]
        dir: std::path::PathBuf,
        #[arg(long, default_value_t = 200)]
        queries: usize,
        #[arg(long)]
        json: bool,
    },
    /// Query latency on a synthetic index (generated text, random unit vectors).
    Query {
        #[arg(long, default_value_t = 100_000)]
        chunks: usize,
        /// Queries to time.
        #[arg(long, default_value_t = 200)]
        queries: usize,
        /// A team store to benchmark instead of usearch (an empty collection,
        /// e.g. milvus://127.0.0.1:19530/bench): upload, queries, and a second
        /// instance joining it.
        #[arg(long, value_name = "URL")]
        store: Option<String>,
        #[arg(long)]
        json: bool,
    },
}

pub fn run(
    command: &BenchCommand,
    paths: Option<ModelPaths>,
    model: Option<String>,
    remote: Option<RemoteEmbedConfig>,
) -> anyhow::Result<std::process::ExitCode> {
    let (figures, json) = match command {
        BenchCommand::Ingest { docs, json } => (serde_json::to_value(ingest(*docs, paths, model, remote)?)?, *json),
        BenchCommand::Corpus { files, scanned_every, scans, json } => (serde_json::to_value(corpus_bench::run(*files, *scanned_every, scans, paths)?)?, *json),
        BenchCommand::Query { chunks, queries, store, json } => (serde_json::to_value(query_bench::run(*chunks, *queries, store.as_deref(), paths)?)?, *json),
        BenchCommand::Llm { model, threads, json } => (llm(model, *threads, paths)?, *json),
        BenchCommand::Peer { docs, python, json } => (peer_bench::run(*docs, python.clone(), paths)?, *json),
        BenchCommand::Scale { files, dir, embedder, queries, json } => {
            (serde_json::to_value(scale_bench::run(*files, dir, *embedder, *queries, paths)?)?, *json)
        }
        BenchCommand::Storm { files, seconds, json } => (serde_json::to_value(storm_bench::run(*files, *seconds, paths)?)?, *json),
    };
    if json {
        println!("{}", serde_json::to_string(&figures)?);
    } else {
        println!("{}", serde_json::to_string_pretty(&figures)?);
    }
    Ok(std::process::ExitCode::SUCCESS)
}

#[derive(serde::Serialize)]
struct IngestFigures {
    docs: usize,
    chunks: usize,
    ingest_ms: u64,
    model_ms: u64,
    ratio: f64,
    chunks_per_s: f64,
    peak_rss_mb: f64,
    edit_reindex_ms: u64,
    edit_embedded: usize,
}

fn ingest(docs: usize, paths: Option<ModelPaths>, model: Option<String>, remote: Option<RemoteEmbedConfig>) -> anyhow::Result<IngestFigures> {
    let tmp = tempfile::tempdir()?;
    let knowledge = tmp.path().join("knowledge");
    std::fs::create_dir_all(&knowledge)?;
    for i in 0..docs {
        std::fs::write(knowledge.join(format!("doc-{i:05}.md")), synthetic_doc(i))?;
    }
    let mut config = EngineConfig::new(&knowledge, tmp.path().join("data"));
    if let Some(paths) = paths {
        config.model_paths.dirs.splice(0..0, paths.dirs);
    }
    if let Some(remote) = remote {
        config.use_remote(remote);
    } else if let Some(model) = model {
        config.use_model(&model);
    }
    let chunking = config.chunking;
    let engine = Engine::open(config)?;
    // Load the model before timing, so both timings exclude it.
    engine.indexer().embed_passages(&["warm up".to_string()])?;

    let started = Instant::now();
    let report = engine.indexer().sync(&(), &CancelToken::new())?;
    let ingest_ms = started.elapsed().as_millis() as u64;
    anyhow::ensure!(report.errors.is_empty(), "bench corpus had errors: {:?}", report.errors);

    let texts = embedding_texts(&knowledge, &chunking)?;
    anyhow::ensure!(texts.len() == report.chunks, "bench chunking disagrees with ingest");
    let batch = engine.config().embed.batch_size;
    let started = Instant::now();
    for group in texts.chunks(batch) {
        engine.indexer().embed_passages(group)?;
    }
    let model_ms = started.elapsed().as_millis().max(1) as u64;

    let edited = knowledge.join("doc-00000.md");
    let text = std::fs::read_to_string(&edited)?;
    std::fs::write(&edited, text.replacen("Sentinel sentence zero.", "Sentinel sentence zero, edited for the benchmark.", 1))?;
    // As the watcher does: a sync of the edited file alone.
    let started = Instant::now();
    let edit = engine.indexer().sync_paths(&[edited], &(), &CancelToken::new())?;
    let edit_reindex_ms = started.elapsed().as_millis() as u64;

    Ok(IngestFigures {
        docs,
        chunks: report.chunks,
        ingest_ms,
        model_ms,
        ratio: round(ingest_ms as f64 / model_ms as f64),
        chunks_per_s: round(report.chunks as f64 / (ingest_ms.max(1) as f64 / 1000.0)),
        peak_rss_mb: peak_rss_mb().context("reading peak RSS")?,
        edit_reindex_ms,
        edit_embedded: edit.embedded,
    })
}

/// Times one ~600-token prompt and 64 generated tokens, twice (the second
/// run reuses the cached prompt prefix, as chat does for its instructions).
fn llm(model: &str, threads: Option<usize>, paths: Option<ModelPaths>) -> anyhow::Result<serde_json::Value> {
    use kea_llm::{Message, Provider, Request, Role};
    let mut dirs = paths.map(|p| p.dirs).unwrap_or_default();
    dirs.extend(kea_engine::model::ModelPaths::discover(&EngineConfig::default_data_dir()).dirs);
    let settings = kea_llm::LlmSettings { embedded_model: model.to_string(), model_dirs: dirs, threads, ..Default::default() };
    let gguf = kea_llm::select::find_gguf(&settings).with_context(|| format!("embedded model {model} is not installed"))?;
    let started = Instant::now();
    let provider = kea_llm::llama::LlamaProvider::load(&gguf, threads)?;
    let load_ms = started.elapsed().as_millis() as u64;
    let context = "Parrots need a varied diet of pellets, vegetables and some seed. ".repeat(40);
    let mut runs = Vec::new();
    for question in ["Summarise the advice in one sentence.", "What should they eat?"] {
        let mut request = Request::new(vec![Message::new(Role::System, context.clone()), Message::new(Role::User, question)]);
        request.max_tokens = 64;
        let done = provider.complete(&request, &mut |_| {}, &|| false)?;
        let first = done.first_token_ms.unwrap_or(done.total_ms);
        let gen_s = (done.total_ms - first) / 1000.0;
        runs.push(serde_json::json!({
            "prompt_tokens": done.prompt_tokens,
            "first_token_ms": round(first),
            "generated_tokens": done.tokens,
            "tokens_per_s": round((done.tokens.saturating_sub(1)) as f64 / gen_s.max(1e-3)),
        }));
    }
    Ok(serde_json::json!({
        "model": gguf.id, "threads": provider.describe(), "load_ms": load_ms,
        "cold": runs[0], "warm_prefix": runs[1], "peak_rss_mb": peak_rss_mb()?,
    }))
}

/// The texts ingest gives the model, computed the same way.
fn embedding_texts(knowledge: &Path, chunking: &kea_engine::chunk::ChunkConfig) -> anyhow::Result<Vec<String>> {
    let mut files: Vec<_> = std::fs::read_dir(knowledge)?.map(|e| e.map(|e| e.path())).collect::<Result<_, _>>()?;
    files.sort();
    let mut texts = Vec::new();
    for path in files {
        let doc = extract(DocKind::Markdown, &std::fs::read(&path)?).map_err(anyhow::Error::msg)?;
        texts.extend(chunk_document(&doc, chunking).iter().map(|c| c.embedding_text(doc.title.as_deref(), &[])));
    }
    Ok(texts)
}

const SUBJECTS: &[&str] = &["The cockatiel", "A young budgerigar", "The African grey", "This macaw", "A sun conure", "The lovebird pair"];
const VERBS: &[&str] = &["prefers", "needs", "enjoys", "avoids", "searches for", "remembers"];
const OBJECTS: &[&str] = &[
    "fresh greens in the morning",
    "a wide cage with horizontal bars",
    "millet sprays as a treat",
    "quiet hours after sunset",
    "perches of different widths",
    "daily baths in shallow water",
    "puzzle toys that hide seeds",
    "company from its flock",
];
const SECTIONS: &[&str] = &["Diet", "Behaviour", "Care"];

/// A deterministic xorshift generator for the benchmarks' generated data.
pub(crate) struct Rng(pub u64);

impl Rng {
    /// A generator for item `seed` of a generated collection.
    pub fn seeded(seed: usize, salt: u64) -> Rng {
        Rng(seed as u64 * 2_654_435_761 + salt)
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A number in 0..n.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// A number in [0, 1).
    pub fn unit(&mut self) -> f32 {
        (self.next() % 1_000_000) as f32 / 1_000_000.0
    }

    /// A rank in 0..n, Zipf-like (probability ~ 1/(rank+1)).
    pub fn zipf(&mut self, n: usize) -> usize {
        let u = (self.below(1 << 30) as f64 + 0.5) / (1u64 << 30) as f64;
        (((n as f64 + 1.0).powf(u)) as usize).saturating_sub(1).min(n - 1)
    }
}

/// A deterministic markdown document of three sections (~3 chunks).
pub(crate) fn synthetic_doc(seed: usize) -> String {
    let mut rng = Rng::seeded(seed, 1);
    let mut next = |n: usize| rng.below(n);
    let mut doc = format!("# Field notes {seed}\n\n");
    for (s, section) in SECTIONS.iter().enumerate() {
        doc.push_str(&format!("## {section}\n\n"));
        if s == 0 {
            doc.push_str("Sentinel sentence zero. ");
        }
        for k in 0..6 {
            let sentence = format!("{} {} {} (note {seed}.{s}.{k}). ", SUBJECTS[next(SUBJECTS.len())], VERBS[next(VERBS.len())], OBJECTS[next(OBJECTS.len())]);
            doc.push_str(&sentence);
        }
        doc.push_str("\n\n");
    }
    doc
}

pub(crate) fn peak_rss_mb() -> anyhow::Result<f64> {
    memory_mb("VmHWM:")
}

/// This process's resident memory now (VmRSS), in MB.
pub(crate) fn current_rss_mb() -> anyhow::Result<f64> {
    memory_mb("VmRSS:")
}

/// A memory line of `/proc/self/status`, in MB.
fn memory_mb(key: &str) -> anyhow::Result<f64> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    let kb: f64 =
        status.lines().find_map(|l| l.strip_prefix(key)).and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok()).context(format!("no {key} line"))?;
    Ok(round(kb / 1024.0))
}

/// The `p` quantile of sorted latencies, rounded to 0.01 (0 when empty).
pub(crate) fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    round(sorted[((sorted.len() - 1) as f64 * p).round() as usize])
}

pub(crate) fn round(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}
