//! `kea search` and `kea eval`: run the retrieval pipeline and print hits,
//! the stage-by-stage trace, or the evaluation table.

use std::path::PathBuf;
use std::process::ExitCode;

use kea_engine::eval::{evaluate, load_golden, EvalResult, Metrics};
use kea_engine::{Engine, EngineConfig, Retrieval, RetrievalConfig};

pub fn run(config: EngineConfig, query: &str, retrieval: &RetrievalConfig, trace: bool, json: bool) -> anyhow::Result<ExitCode> {
    let engine = crate::open_engine(config)?;
    let result = engine.retrieve(query, retrieval)?;
    if json {
        let hits: Vec<serde_json::Value> = result.hits.iter().map(hit_json).collect();
        let out = if trace { serde_json::json!({ "hits": hits, "context": result.context, "trace": result.trace }) } else { serde_json::json!(hits) };
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(ExitCode::SUCCESS);
    }
    if trace {
        print_trace(&engine, &result)?;
    }
    if result.hits.is_empty() {
        println!("no results");
    }
    for (rank, hit) in result.hits.iter().enumerate() {
        let page = hit.chunk.page.map(|p| format!(" p.{p}")).unwrap_or_default();
        println!("{}. [{:.3}] {} | {}{page}", rank + 1, hit.score, hit.chunk.source, hit.chunk.heading_path);
        for line in hit.chunk.text.lines().take(4) {
            println!("     {line}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The `kea search --json` hit shape (the contract tests and callers use).
fn hit_json(h: &kea_engine::Hit) -> serde_json::Value {
    serde_json::json!({
        "source": h.chunk.source, "heading_path": h.chunk.heading_path, "chunk_index": h.chunk.chunk_index,
        "chunk_id": h.chunk.id, "page": h.chunk.page, "score": h.score, "text": h.chunk.text,
        "scores": { "dense": h.dense, "sparse": h.sparse, "fused": h.fused, "rerank": h.rerank },
    })
}

fn print_trace(engine: &Engine, result: &Retrieval) -> anyhow::Result<()> {
    let t = &result.trace;
    println!("query: {:?} → {:?}   ({} ms)", t.query, t.prepared_query, t.total_ms);
    for stage in &t.stages {
        println!("  {:<8} {:>8.2} ms  {} candidates", stage.stage, stage.ms, stage.candidates.len());
        let ids: Vec<u64> = stage.candidates.iter().take(5).map(|c| c.0).collect();
        let rows = engine.chunk_rows(&ids)?;
        for ((id, score), row) in stage.candidates.iter().take(5).zip(rows) {
            println!("           #{id:<6} {score:>8.4}  {} | {}", row.source, row.heading_path);
        }
    }
    for fallback in &t.fallbacks {
        println!("  fallback: {fallback}");
    }
    println!();
    Ok(())
}

pub fn eval(config: EngineConfig, golden: &[PathBuf], configs: &[(String, RetrievalConfig)], json: bool) -> anyhow::Result<ExitCode> {
    let engine = crate::open_engine(config)?;
    let mut items = Vec::new();
    for path in golden {
        items.extend(load_golden(path)?);
    }
    let results: Vec<EvalResult> = configs.iter().map(|(name, c)| evaluate(&engine, name, &items, c)).collect::<Result<_, _>>()?;
    if json {
        println!("{}", serde_json::to_string_pretty(&serde_json::json!({ "golden": golden, "queries": items.len(), "results": results }))?);
        return Ok(ExitCode::SUCCESS);
    }
    let names: Vec<String> = golden.iter().map(|p| p.display().to_string()).collect();
    println!("{} queries from {}", items.len(), names.join(", "));
    println!(
        "{:<22} {:>6} {:>6} {:>6} {:>6} {:>6} {:>6} {:>7} {:>8} {:>9}",
        "config", "R@1", "R@3", "R@5", "R@10", "Hit@1", "Hit@3", "MRR@10", "nDCG@10", "ms/query"
    );
    let row = |name: &str, m: &Metrics, ms: Option<f64>| {
        let ms = ms.map(|ms| format!("{ms:>9.1}")).unwrap_or_default();
        println!(
            "{name:<22} {:>6.3} {:>6.3} {:>6.3} {:>6.3} {:>6.3} {:>6.3} {:>7.3} {:>8.3} {ms}",
            m.recall_1, m.recall_3, m.recall_5, m.recall_10, m.hit_1, m.hit_3, m.mrr_10, m.ndcg_10
        );
    };
    for r in &results {
        row(&r.name, &r.metrics, Some(r.ms_per_query));
        for (lang, m) in &r.by_lang {
            row(&format!("  {lang} ({})", m.queries), m, None);
        }
    }
    for r in results.iter().filter(|r| r.refusal.is_some()) {
        let f = r.refusal.as_ref().expect("filtered");
        println!(
            "{}: refused {:.3} of {} unanswerable, answered {:.3} of {} answerable, refusal precision {:.3}",
            r.name, f.refused, f.unanswerable, f.answered, f.answerable, f.precision
        );
        for wrong in &f.wrong {
            println!("  wrong: {wrong}");
        }
    }
    for r in &results {
        for (fallback, n) in &r.fallbacks {
            println!("{}: {n} × {fallback}", r.name);
        }
    }
    Ok(ExitCode::SUCCESS)
}
