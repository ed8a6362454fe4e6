//! `kea search` and `kea eval`: run the retrieval pipeline and print hits,
//! the stage-by-stage trace, or the evaluation table.

use std::path::PathBuf;
use std::process::ExitCode;

use kea_engine::eval::{load_golden, signals, EvalResult, FitScope, Metrics};
use kea_engine::retrieve::calibration::{Calibration, OutcomeRates};
use kea_engine::{EngineConfig, Retrieval, RetrievalConfig};

/// Retrieves `query` in one collection, or across several (merged).
pub(crate) fn retrieve(engines: &[&kea_engine::Engine], query: &str, retrieval: &RetrievalConfig) -> anyhow::Result<Retrieval> {
    Ok(match engines.split_first() {
        Some((only, [])) => only.retriever().retrieve(query, retrieval)?,
        Some((first, rest)) => first.across(rest).retrieve(query, retrieval)?,
        None => anyhow::bail!("no collection to search"),
    })
}

/// `kea search --queries FILE`: every question of a golden set (JSONL) or
/// of a plain list (a question a line), in one process.
pub fn run_file(configs: Vec<EngineConfig>, file: &std::path::Path, retrieval: &RetrievalConfig, json: bool) -> anyhow::Result<ExitCode> {
    // Bounded like every file an evaluation reads: a line, the lines and the bytes.
    let text = kea_engine::eval::read_json_lines(file)?;
    let questions: Vec<String> = match kea_engine::eval::parse_golden(&text, &file.display().to_string()) {
        Ok(items) => items.into_iter().map(|item| item.query).collect(),
        Err(_) => text.lines().map(str::trim).filter(|l| !l.is_empty()).map(str::to_string).collect(),
    };
    let engines = configs.into_iter().map(crate::open_engine).collect::<anyhow::Result<Vec<_>>>()?;
    let engines: Vec<&kea_engine::Engine> = engines.iter().collect();
    let mut results = Vec::with_capacity(questions.len());
    for question in &questions {
        let result = retrieve(&engines, question, retrieval)?;
        if !json {
            let top = result.hits.first().map_or_else(|| "no results".to_string(), |h| format!("{} | {}", h.chunk.source, h.chunk.heading_path));
            println!("{}\n  → {}", crate::output::printable(question), crate::output::printable(&top));
        }
        results.push(serde_json::json!({ "query": question, "hits": result.hits.iter().map(hit_json).collect::<Vec<_>>() }));
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&results)?);
    }
    Ok(ExitCode::SUCCESS)
}

/// `kea search` over one collection, or several (`--kb`), merged.
pub fn run(configs: Vec<EngineConfig>, query: &str, retrieval: &RetrievalConfig, trace: bool, json: bool) -> anyhow::Result<ExitCode> {
    let engines = configs.into_iter().map(crate::open_engine).collect::<anyhow::Result<Vec<_>>>()?;
    let result = retrieve(&engines.iter().collect::<Vec<_>>(), query, retrieval)?;
    if json {
        let hits: Vec<serde_json::Value> = result.hits.iter().map(hit_json).collect();
        let out = if trace { serde_json::json!({ "hits": hits, "context": result.context, "trace": result.trace }) } else { serde_json::json!(hits) };
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(ExitCode::SUCCESS);
    }
    if trace {
        print_trace(&result);
    }
    if result.hits.is_empty() {
        println!("no results");
    }
    for (rank, hit) in result.hits.iter().enumerate() {
        let page = hit.chunk.page.map(|p| format!(" p.{p}")).unwrap_or_default();
        let collection = hit.chunk.collection.as_ref().map(|c| format!("{c} › ")).unwrap_or_default();
        let place = format!("{collection}{} | {}{page}", hit.chunk.source, hit.chunk.heading_path);
        println!("{}. [{:.3}] {}", rank + 1, hit.score, crate::output::printable(&place));
        for line in hit.chunk.text.lines().take(4) {
            println!("     {}", crate::output::printable(line));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The `kea search --json` hit shape (the contract tests and callers use).
pub(crate) fn hit_json(h: &kea_engine::Hit) -> serde_json::Value {
    serde_json::json!({
        "source": h.chunk.source, "heading_path": h.chunk.heading_path, "chunk_index": h.chunk.chunk_index,
        "chunk_id": h.chunk.id, "page": h.chunk.page, "score": h.score, "text": h.chunk.text, "collection": h.chunk.collection,
        "scores": { "dense": h.dense, "sparse": h.sparse, "fused": h.fused, "rerank": h.rerank },
    })
}

/// The pipeline's trace; what the question, documents or file names hold is
/// printed without terminal escapes.
fn print_trace(result: &Retrieval) {
    use crate::output::printable;
    let t = &result.trace;
    println!("query: {:?} → {:?}   ({} ms)", printable(&t.query), printable(&t.prepared_query), t.total_ms);
    for stage in &t.stages {
        println!("  {:<8} {:>8.2} ms  {} candidates", stage.stage, stage.ms, stage.candidates.len());
        for (id, score) in stage.candidates.iter().take(5) {
            let name = t.name_of(*id).map_or_else(String::new, |p| format!("{} | {}", p.source, p.heading_path));
            println!("           #{id:<6} {score:>8.4}  {}", printable(&name));
        }
    }
    for fallback in &t.fallbacks {
        println!("  fallback: {}", printable(fallback));
    }
    if let Some(r) = &t.relevance {
        println!("  decision: {}", printable(&r.reason));
    }
    println!();
}

/// Refuses JSON-lines inputs larger than one file may be, together (a file
/// named several times counts each time); each is also read within its own limits.
fn within_input_limit(files: &[PathBuf]) -> anyhow::Result<()> {
    let limit = kea_engine::eval::MAX_FILE_BYTES as u64;
    let total: u64 = files.iter().filter_map(|f| std::fs::metadata(f).ok()).filter(|m| m.is_file()).map(|m| m.len()).sum();
    anyhow::ensure!(total <= limit, "the files given hold {} MiB together, more than the {} MiB Kea reads at once", total >> 20, limit >> 20);
    Ok(())
}

/// Every question of the golden sets, read as one.
pub(crate) fn load_all(golden: &[PathBuf]) -> anyhow::Result<Vec<kea_engine::eval::GoldenItem>> {
    within_input_limit(golden)?;
    let mut items = Vec::new();
    for path in golden {
        items.extend(load_golden(path)?);
    }
    Ok(items)
}

/// How `kea eval --calibrate` fits: without the similarity (`lexical`),
/// with how many folds, only the cross-lingual part, from saved signal rows.
pub struct Fit {
    pub lexical: bool,
    pub folds: usize,
    pub cross_lingual: bool,
    pub from_signals: bool,
    /// Replace the `--out` file if it exists.
    pub force: bool,
    /// Decide this index's questions with the fit from now on (no `--out`).
    pub install: bool,
}

/// `kea eval --reset-calibration`: this index's questions are decided by
/// the fit Kea ships again (the data folder's own fit is removed).
pub fn reset_calibration(config: EngineConfig) -> anyhow::Result<ExitCode> {
    let path = Calibration::path(&config.data_dir);
    match std::fs::remove_file(&path) {
        Ok(()) => println!("removed {}: Kea's own decision is in use again", crate::output::printable_path(&path)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => println!("no fit of this index's own: Kea's own decision is in use"),
        Err(e) => return Err(anyhow::anyhow!("removing {}: {e}", path.display())),
    }
    Ok(ExitCode::SUCCESS)
}

/// `kea eval --calibrate`: fits the relevance decision and prints its
/// out-of-fold and held-out outcomes.
pub fn calibrate(
    config: EngineConfig,
    golden: &[PathBuf],
    retrieval: &RetrievalConfig,
    fit: Fit,
    out: Option<(&std::path::Path, &std::path::Path)>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let data_dir = config.data_dir.clone();
    let engine = crate::open_engine(config)?;
    let index_model = engine.status()?.model_id.unwrap_or_default();
    let model = if fit.lexical { String::new() } else { index_model.clone() };
    if fit.install && model != index_model {
        anyhow::bail!(
            "a lexical fit (--lexical) is not what this index decides with: it uses its embedder's similarity ({index_model}); write the fit with --out instead"
        );
    }
    let rows = if fit.from_signals {
        within_input_limit(golden)?;
        let rows = golden.iter().map(|p| signals::read_rows(p)).collect::<Result<Vec<_>, _>>()?.concat();
        signals::check_rows(&rows, &model)?;
        rows
    } else {
        signals::rows(&engine, &load_all(golden)?, retrieval, "")?
    };
    let scope = if fit.cross_lingual { FitScope::CrossLingual } else { FitScope::All };
    let mut fitted = signals::calibrate_rows(&rows, &model, fit.folds, scope)?;
    fitted.fitted.golden = golden.iter().map(|p| p.display().to_string()).collect();
    // The figures first: the data folder's decision changes only when asked, after them.
    if json {
        println!("{}", serde_json::to_string_pretty(&fitted)?);
    } else {
        print_fit(&fitted, &model, fit.cross_lingual);
    }
    let written = match out {
        Some((path, app_data)) => {
            crate::output::write_file(path, &serde_json::to_vec_pretty(&fitted)?, fit.force, app_data)?;
            Some(path.to_path_buf())
        }
        None if !fit.install => None,
        None => Some(Calibration::install(fitted, fit.cross_lingual, &data_dir)?),
    };
    match written {
        _ if json => {}
        Some(path) => println!("written to {}", crate::output::printable_path(&path)),
        None => println!("not in use: pass --install to decide this index's questions with it (--reset-calibration goes back to Kea's own)"),
    }
    Ok(ExitCode::SUCCESS)
}

/// The fit's thresholds and its out-of-fold and held-out outcomes.
fn print_fit(fitted: &Calibration, model: &str, cross_lingual: bool) {
    let report = &fitted.fitted;
    let line = |name: &str, (a, u): &(OutcomeRates, OutcomeRates)| {
        println!(
            "{name}: answerable ({}) answered {:.3} unsure {:.3} refused {:.3} | unanswerable ({}) answered {:.3} unsure {:.3} refused {:.3}",
            a.questions, a.answered, a.unsure, a.refused, u.questions, u.answered, u.unsure, u.refused
        );
    };
    let kind = match (model.is_empty(), cross_lingual) {
        (true, _) => "any embedder (lexical)".to_string(),
        (false, true) => format!("{model}, questions whose passages are in another language"),
        (false, false) => model.to_string(),
    };
    println!("calibrated for {kind}: answered at ≥ {:.3}, refused below {:.3}", fitted.answer_at, fitted.refuse_below);
    line(&format!("out of fold ({} folds)", report.folds), &report.out_of_fold);
    match &report.test {
        Some(_) => report.held_out.iter().for_each(|(group, rates)| line(&format!("held out, {}", crate::output::printable(group)), rates)),
        None => println!("no question is marked \"split\": \"test\": there is no held-out figure"),
    }
}

/// `kea eval --signals-out`: each golden question's decision signals, for a
/// fit over several collections.
pub fn signals_out(
    config: EngineConfig,
    golden: &[PathBuf],
    retrieval: &RetrievalConfig,
    (file, force, app_data): (&std::path::Path, bool, &std::path::Path),
    label: Option<&str>,
) -> anyhow::Result<ExitCode> {
    let engine = crate::open_engine(config)?;
    let rows = signals::rows(&engine, &load_all(golden)?, retrieval, label.unwrap_or_default())?;
    crate::output::write_file(file, signals::rows_text(&rows)?.as_bytes(), force, app_data)?;
    eprintln!("{} questions' signals written to {}", rows.len(), crate::output::printable_path(file));
    Ok(ExitCode::SUCCESS)
}

/// What a user without a language model sees of `result`'s answerable questions.
fn print_answers(result: &EvalResult) {
    println!("what a user without a language model sees ({}): answerable questions", result.name);
    for (group, a) in &result.answers {
        let group = crate::output::printable(group);
        println!(
            "  {group} ({}): answered {:.3} unsure {:.3} refused {:.3} | right document shown {:.3} | answered: answer quoted {:.3} (of {}), another document quoted {:.3} | unsure: answer shown as a related sentence {:.3} (of {}) | answer among a model's sentences {:.3} (of {})",
            a.questions,
            a.answered,
            a.unsure,
            a.refused,
            a.shown,
            a.quoted,
            a.quoted_of,
            a.other_document,
            a.related_quoted,
            a.related_quoted_of,
            a.read,
            a.read_of
        );
    }
}

pub fn eval(config: EngineConfig, golden: &[PathBuf], configs: &[(String, RetrievalConfig)], split: Option<&str>, json: bool) -> anyhow::Result<ExitCode> {
    let engine = crate::open_engine(config)?;
    let mut items = load_all(golden)?;
    if let Some(split) = split {
        items.retain(|i| i.is_test() == (split == "test"));
        anyhow::ensure!(!items.is_empty(), "no question of the golden sets is in the {split} split");
    }
    let results: Vec<EvalResult> = kea_engine::eval::run(&engine, &items, configs)?;
    if json {
        println!("{}", serde_json::to_string_pretty(&serde_json::json!({ "golden": golden, "queries": items.len(), "results": results }))?);
        return Ok(ExitCode::SUCCESS);
    }
    let names: Vec<String> = golden.iter().map(|p| crate::output::printable_path(p)).collect();
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
            row(&format!("  {} ({})", crate::output::printable(lang), m.queries), m, None);
        }
    }
    for r in results.iter().filter(|r| r.refusal.is_some()) {
        let f = r.refusal.as_ref().expect("filtered");
        let (a, u) = &f.outcomes;
        println!(
            "{}: answerable ({}) answered {:.3} unsure {:.3} refused {:.3} | unanswerable ({}) answered {:.3} unsure {:.3} refused {:.3} | refusal precision {:.3}",
            r.name, a.questions, a.answered, a.unsure, a.refused, u.questions, u.answered, u.unsure, u.refused, f.precision
        );
        for (lang, (a, u)) in &f.by_lang {
            let lang = crate::output::printable(lang);
            println!(
                "  {lang}: answerable answered {:.3} unsure {:.3} refused {:.3} | unanswerable answered {:.3} unsure {:.3} refused {:.3}",
                a.answered, a.unsure, a.refused, u.answered, u.unsure, u.refused
            );
        }
        for wrong in &f.wrong {
            println!("  wrong: {}", crate::output::printable(wrong));
        }
    }
    results.iter().filter(|r| r.name == "full").for_each(print_answers);
    for r in &results {
        for (fallback, n) in &r.fallbacks {
            println!("{}: {n} × {}", r.name, crate::output::printable(fallback));
        }
    }
    Ok(ExitCode::SUCCESS)
}
