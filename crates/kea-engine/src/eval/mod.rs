//! Retrieval evaluation against a golden set: JSONL lines
//! `{"query": "...", "relevant": ["path" | "path#heading", ...], "lang": "zh|en"}`,
//! and unanswerable questions `{"query": "...", "answerable": false, "lang": ...}`.
//! Metrics per configuration: Recall@1/3/5/10, Hit@1/3, MRR@10, nDCG@10,
//! overall and per language, with the queries that missed; and the refusal
//! decision's precision and recall (unanswerable refused, answerable answered).

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::retrieve::calibration::{Calibration, Outcome, OutcomeRates};
use crate::retrieve::RetrievalConfig;

pub mod answers;
pub mod signals;
pub mod written;

/// One golden question.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GoldenItem {
    pub query: String,
    pub relevant: Vec<String>,
    #[serde(default)]
    pub lang: Option<String>,
    /// False for a question the documents cannot answer (it should be refused).
    #[serde(default = "answerable_default")]
    pub answerable: bool,
    /// `"test"`: held out, never used to calibrate (its figures are the ones reported).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub split: Option<String>,
    /// The question in the documents' language, as a router that
    /// translates would give it (searched and judged as in a chat).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub translated: Option<String>,
    /// A phrase of the relevant document that holds the answer (an
    /// extractive answer that answers should quote it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<String>,
}

impl GoldenItem {
    pub fn is_test(&self) -> bool {
        self.split.as_deref() == Some("test")
    }
}

fn answerable_default() -> bool {
    true
}

/// Reads a golden set; errors name the line.
pub fn load_golden(path: &Path) -> Result<Vec<GoldenItem>> {
    parse_golden(&read_json_lines(path)?, &path.display().to_string())
}

/// The longest line a JSON-lines file given to an evaluation may have.
pub const MAX_LINE_BYTES: usize = 64 * 1024;
/// The most lines (blank ones too) such a file may have.
pub const MAX_ROWS: usize = 200_000;
/// The most bytes such a file may have (every line at its longest would
/// be 12 GiB, more than a laptop holds).
pub const MAX_FILE_BYTES: usize = 64 << 20;

/// The text of a JSON-lines file, read a line at a time and refused, with
/// the limit and the line named, past [`MAX_LINE_BYTES`] in a line,
/// [`MAX_ROWS`] lines or [`MAX_FILE_BYTES`] in all: `/dev/zero` or a huge
/// file is refused at once.
pub fn read_json_lines(path: &Path) -> Result<String> {
    use std::io::{BufRead, Read};
    let file = std::fs::File::open(path).map_err(|e| Error::io(format!("reading {}", path.display()), e))?;
    let mut reader = std::io::BufReader::new(file);
    let refused = |line: usize, why: String| Error::InvalidInput(format!("{}:{line}: {why}", path.display()));
    let (mut text, mut line, mut rows) = (String::new(), 0usize, 0usize);
    loop {
        let mut bytes = Vec::new();
        let read =
            (&mut reader).take(MAX_LINE_BYTES as u64 + 1).read_until(b'\n', &mut bytes).map_err(|e| Error::io(format!("reading {}", path.display()), e))?;
        if read == 0 {
            return Ok(text);
        }
        line += 1;
        if bytes.len() > MAX_LINE_BYTES {
            return Err(refused(line, format!("the line is longer than {} KiB", MAX_LINE_BYTES / 1024)));
        }
        let decoded = String::from_utf8(bytes).map_err(|_| refused(line, "the line is not UTF-8 text".into()))?;
        // Blank lines count too: an endless stream of them is no file.
        rows += 1;
        if rows > MAX_ROWS {
            return Err(refused(line, format!("more than {MAX_ROWS} lines")));
        }
        if text.len() + decoded.len() > MAX_FILE_BYTES {
            return Err(refused(line, format!("the file is larger than {} MiB", MAX_FILE_BYTES >> 20)));
        }
        // A byte-order mark (editors on Windows write one) is not text.
        text.push_str(if line == 1 { decoded.trim_start_matches('\u{feff}') } else { &decoded });
    }
}

/// Parses a golden set (JSON lines; `//` comments); `name` labels errors.
pub fn parse_golden(text: &str, name: &str) -> Result<Vec<GoldenItem>> {
    let mut items = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() || line.trim_start().starts_with("//") {
            continue;
        }
        let item: GoldenItem = serde_json::from_str(line).map_err(|e| Error::InvalidInput(format!("{name}:{}: not a golden item: {e}", n + 1)))?;
        if item.relevant.is_empty() && item.answerable {
            return Err(Error::InvalidInput(format!("{name}:{}: no relevant documents listed", n + 1)));
        }
        items.push(item);
    }
    if items.is_empty() {
        return Err(Error::InvalidInput(format!("{name}: no golden questions")));
    }
    Ok(items)
}

/// Mean metrics over a set of queries.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Metrics {
    pub queries: usize,
    pub recall_1: f64,
    pub recall_3: f64,
    pub recall_5: f64,
    pub recall_10: f64,
    /// Share of queries with at least one relevant hit in the top 1 / top 3.
    pub hit_1: f64,
    pub hit_3: f64,
    pub mrr_10: f64,
    pub ndcg_10: f64,
}

/// Whether a hit (source, heading path) is the relevant item `spec`.
fn matches(spec: &str, source: &str, heading_path: &str) -> bool {
    match spec.split_once('#') {
        Some((path, heading)) => path == source && heading_path.split(" > ").any(|h| h == heading),
        None => spec == source,
    }
}

/// Scores one ranked list (source, heading path) against the relevant items;
/// each relevant item counts once, at its first rank.
pub fn score_ranking(ranked: &[(String, String)], relevant: &[String]) -> Metrics {
    let mut found_at: Vec<Option<usize>> = vec![None; relevant.len()];
    for (rank, (source, heading)) in ranked.iter().take(10).enumerate() {
        if let Some(j) = (0..relevant.len()).find(|&j| found_at[j].is_none() && matches(&relevant[j], source, heading)) {
            found_at[j] = Some(rank + 1);
        }
    }
    let total = relevant.len() as f64;
    let recall = |k: usize| found_at.iter().filter(|r| r.is_some_and(|r| r <= k)).count() as f64 / total;
    let first = found_at.iter().flatten().min().copied();
    let dcg: f64 = found_at.iter().flatten().map(|&r| 1.0 / (r as f64 + 1.0).log2()).sum();
    let ideal: f64 = (1..=relevant.len().min(10)).map(|r| 1.0 / (r as f64 + 1.0).log2()).sum();
    Metrics {
        queries: 1,
        recall_1: recall(1),
        recall_3: recall(3),
        recall_5: recall(5),
        recall_10: recall(10),
        hit_1: f64::from(first.is_some_and(|r| r <= 1)),
        hit_3: f64::from(first.is_some_and(|r| r <= 3)),
        mrr_10: first.map_or(0.0, |r| 1.0 / r as f64),
        ndcg_10: if ideal > 0.0 { dcg / ideal } else { 0.0 },
    }
}

fn mean(all: &[Metrics]) -> Metrics {
    let n = all.len().max(1) as f64;
    let avg = |f: fn(&Metrics) -> f64| (all.iter().map(f).sum::<f64>() / n * 10000.0).round() / 10000.0;
    Metrics {
        queries: all.len(),
        recall_1: avg(|m| m.recall_1),
        recall_3: avg(|m| m.recall_3),
        recall_5: avg(|m| m.recall_5),
        recall_10: avg(|m| m.recall_10),
        hit_1: avg(|m| m.hit_1),
        hit_3: avg(|m| m.hit_3),
        mrr_10: avg(|m| m.mrr_10),
        ndcg_10: avg(|m| m.ndcg_10),
    }
}

/// A query whose relevant items were not all in the top 10.
#[derive(Debug, Clone, Serialize)]
pub struct Miss {
    pub query: String,
    pub relevant: Vec<String>,
    /// The top 5 hits as `source | heading path`.
    pub got: Vec<String>,
}

/// How the relevance decision did: answered / unsure / refused for the
/// answerable and the unanswerable questions, overall and per language.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RefusalMetrics {
    pub answerable: usize,
    pub unanswerable: usize,
    /// Share of answerable questions answered (not unsure, not refused).
    pub answered: f64,
    /// Share of unanswerable questions refused.
    pub refused: f64,
    /// Share of refusals that were of unanswerable questions.
    pub precision: f64,
    /// The outcomes of the answerable and of the unanswerable questions.
    pub outcomes: (OutcomeRates, OutcomeRates),
    pub by_lang: BTreeMap<String, (OutcomeRates, OutcomeRates)>,
    /// Answerable questions refused and unanswerable ones answered, with the decision's reason.
    pub wrong: Vec<String>,
}

/// One question's decision: answerable?, the outcome, its language, a line for the report.
struct Decision {
    answerable: bool,
    outcome: Outcome,
    lang: String,
    line: String,
}

fn rates(decisions: &[&Decision], answerable: bool) -> OutcomeRates {
    OutcomeRates::of(&decisions.iter().filter(|d| d.answerable == answerable).map(|d| d.outcome).collect::<Vec<_>>())
}

fn refusal_metrics(decisions: &[Decision]) -> RefusalMetrics {
    let all: Vec<&Decision> = decisions.iter().collect();
    let (answerable, unanswerable) = (rates(&all, true), rates(&all, false));
    let count = |a: bool, o: Outcome| decisions.iter().filter(|d| d.answerable == a && d.outcome == o).count();
    let ratio = |n: usize, d: usize| if d == 0 { 0.0 } else { (n as f64 / d as f64 * 10000.0).round() / 10000.0 };
    let mut by_lang: BTreeMap<String, (OutcomeRates, OutcomeRates)> = BTreeMap::new();
    for lang in decisions.iter().map(|d| d.lang.clone()).collect::<std::collections::BTreeSet<_>>() {
        let of_lang: Vec<&Decision> = decisions.iter().filter(|d| d.lang == lang).collect();
        by_lang.insert(lang, (rates(&of_lang, true), rates(&of_lang, false)));
    }
    RefusalMetrics {
        answerable: answerable.questions,
        unanswerable: unanswerable.questions,
        answered: ratio(count(true, Outcome::Answered), answerable.questions),
        refused: ratio(count(false, Outcome::Refused), unanswerable.questions),
        precision: ratio(count(false, Outcome::Refused), count(false, Outcome::Refused) + count(true, Outcome::Refused)),
        outcomes: (answerable, unanswerable),
        by_lang,
        wrong: decisions
            .iter()
            .filter(|d| (d.answerable && d.outcome == Outcome::Refused) || (!d.answerable && d.outcome == Outcome::Answered))
            .map(|d| d.line.clone())
            .collect(),
    }
}

/// One configuration's results.
#[derive(Debug, Clone, Serialize)]
pub struct EvalResult {
    pub name: String,
    pub metrics: Metrics,
    /// Present when the set has unanswerable questions.
    pub refusal: Option<RefusalMetrics>,
    pub by_lang: BTreeMap<String, Metrics>,
    pub misses: Vec<Miss>,
    /// Fallbacks that fired (e.g. no reranker), with how many queries hit each.
    pub fallbacks: BTreeMap<String, usize>,
    pub ms_per_query: f64,
    /// What a user without a language model sees for the answerable
    /// questions, overall ("all") and per language (see [`answers`]).
    pub answers: BTreeMap<String, answers::AnswerRates>,
}

/// The one eval runner (the CLI's `kea eval` and the app's Evaluate): each
/// configuration over every golden question.
pub fn run(engine: &Engine, items: &[GoldenItem], configs: &[(String, RetrievalConfig)]) -> Result<Vec<EvalResult>> {
    configs.iter().map(|(name, config)| evaluate(engine, name, items, config)).collect()
}

/// The golden questions in `path`, or the sample collection's shipped ones
/// (answerable and unanswerable) when `None`.
pub fn golden_or_sample(path: Option<&Path>) -> Result<Vec<GoldenItem>> {
    match path {
        Some(path) => load_golden(path),
        None => {
            let mut items = parse_golden(include_str!("../../../../tests/golden/sample-knowledge.jsonl"), "shipped golden set")?;
            items.extend(parse_golden(include_str!("../../../../tests/golden/unanswerable.jsonl"), "shipped unanswerable set")?);
            Ok(items)
        }
    }
}

/// The [`default_configs`] of these names, in this order; an unknown name is an error.
pub fn configs_named(names: &[String]) -> Result<Vec<(String, RetrievalConfig)>> {
    let known = default_configs();
    names
        .iter()
        .map(|name| known.iter().find(|(n, _)| n == name).cloned().ok_or_else(|| Error::InvalidInput(format!("unknown configuration '{name}'"))))
        .collect()
}

/// One golden question through the pipeline, with its translation when it has one.
fn retrieve(engine: &Engine, item: &GoldenItem, config: &RetrievalConfig) -> Result<crate::Retrieval> {
    engine.retriever().retrieve_queries(std::slice::from_ref(&item.query), item.translated.as_deref(), config)
}

/// Runs every golden query through the pipeline with `config`, asking for
/// the top 10 (so Recall@10 is defined for every configuration).
pub fn evaluate(engine: &Engine, name: &str, items: &[GoldenItem], config: &RetrievalConfig) -> Result<EvalResult> {
    let config = RetrievalConfig { top_k: 10, mmr_select: config.mmr_select.max(10), rerank_keep: config.rerank_keep.max(10), ..config.clone() };
    let started = Instant::now();
    let mut all = Vec::with_capacity(items.len());
    let mut per_lang: BTreeMap<String, Vec<Metrics>> = BTreeMap::new();
    let mut misses = Vec::new();
    let mut fallbacks: BTreeMap<String, usize> = BTreeMap::new();
    let mut decisions = Vec::with_capacity(items.len());
    let mut seen = Vec::new();
    for item in items {
        let retrieval = retrieve(engine, item, &config)?;
        for fallback in &retrieval.trace.fallbacks {
            *fallbacks.entry(fallback.clone()).or_default() += 1;
        }
        let judged = &retrieval.relevance;
        decisions.push(Decision {
            answerable: item.answerable,
            outcome: judged.outcome,
            lang: item.lang.clone().unwrap_or_else(|| "-".into()),
            line: format!("{:?}: {} ({})", judged.outcome, item.query, judged.reason).to_lowercase(),
        });
        if !item.answerable {
            continue;
        }
        if config.compare_sentences {
            // What an answer would show: only where the sentences were compared, as in chat.
            seen.push(answers::seen(item, &retrieval));
        }
        let ranked: Vec<(String, String)> = retrieval.hits.iter().map(|h| (h.chunk.source.clone(), h.chunk.heading_path.clone())).collect();
        let metrics = score_ranking(&ranked, &item.relevant);
        if metrics.recall_10 < 1.0 {
            misses.push(Miss {
                query: item.query.clone(),
                relevant: item.relevant.clone(),
                got: ranked.iter().take(5).map(|(s, h)| format!("{s} | {h}")).collect(),
            });
        }
        per_lang.entry(item.lang.clone().unwrap_or_else(|| "-".into())).or_default().push(metrics.clone());
        all.push(metrics);
    }
    let ms = started.elapsed().as_secs_f64() * 1000.0 / items.len().max(1) as f64;
    Ok(EvalResult {
        name: name.to_string(),
        metrics: mean(&all),
        refusal: items.iter().any(|i| !i.answerable).then(|| refusal_metrics(&decisions)),
        by_lang: per_lang.into_iter().map(|(lang, m)| (lang, mean(&m))).collect(),
        misses,
        fallbacks,
        ms_per_query: (ms * 100.0).round() / 100.0,
        answers: answers::rates(&seen),
    })
}

/// The signals the shipped model weighs; `dense` only for the embedder it is fitted with.
pub fn calibration_features(with_dense: bool) -> Vec<String> {
    let all = ["coverage", "top_coverage", "sentence_coverage", "unknown", "specific", "unknown_noun", "dense", "agreement", "type_missing", "chinese"];
    all.iter().filter(|f| with_dense || **f != "dense").map(|f| f.to_string()).collect()
}

/// Which questions a fit is made on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FitScope {
    /// Every question (the main decision).
    All,
    /// Only questions none of whose passages is in their language (see
    /// `Calibration::cross_lingual`): fit it on an index whose folder lacks
    /// the questions' language for the topics they ask about.
    CrossLingual,
}

/// Fits the relevance decision on the golden questions not marked `test`
/// and reports it on the `test` ones (see [`signals::calibrate_rows`]).
/// `model` is the embedder it applies to (empty: any, without the dense signal).
pub fn calibrate(engine: &Engine, items: &[GoldenItem], config: &RetrievalConfig, model: &str, folds: usize, scope: FitScope) -> Result<Calibration> {
    signals::calibrate_rows(&signals::rows(engine, items, config, "")?, model, folds, scope)
}

/// The configurations compared when none are given: each stage added in turn.
pub fn default_configs() -> Vec<(String, RetrievalConfig)> {
    let base = RetrievalConfig::default();
    vec![
        ("dense".into(), RetrievalConfig::dense_only(10)),
        ("bm25".into(), RetrievalConfig::sparse_only(10)),
        ("hybrid".into(), RetrievalConfig { mmr: false, rerank: false, filter: false, ..base.clone() }),
        ("hybrid+mmr".into(), RetrievalConfig { rerank: false, filter: false, ..base.clone() }),
        ("hybrid+mmr+rerank".into(), RetrievalConfig { filter: false, ..base.clone() }),
        ("full".into(), base.for_answers()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_golden_file_is_read_a_line_at_a_time_within_its_limits() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("golden.jsonl");
        let item = r#"{"query": "q", "relevant": ["a.md"]}"#;
        std::fs::write(&file, format!("\u{feff}{item}\n\n{item}\n")).unwrap();
        assert_eq!(load_golden(&file).unwrap().len(), 2, "a byte-order mark and a blank line are no question");
        std::fs::write(&file, format!("{item}\n{}\n", "x".repeat(MAX_LINE_BYTES + 1))).unwrap();
        let long = load_golden(&file).unwrap_err().to_string();
        assert!(long.contains("golden.jsonl:2") && long.contains("64 KiB"), "{long}");
        std::fs::write(&file, format!("{item}\n").repeat(MAX_ROWS + 1)).unwrap();
        let many = load_golden(&file).unwrap_err().to_string();
        assert!(many.contains(&format!("more than {MAX_ROWS} lines")), "{many}");
        std::fs::write(&file, "\n".repeat(MAX_ROWS + 1)).unwrap();
        assert!(load_golden(&file).unwrap_err().to_string().contains("more than"), "blank lines count");
        let wide = format!("{{\"query\": \"{}\", \"relevant\": [\"a.md\"]}}\n", "q".repeat(MAX_LINE_BYTES - 100));
        std::fs::write(&file, wide.repeat(MAX_FILE_BYTES / wide.len() + 1)).unwrap();
        let large = load_golden(&file).unwrap_err().to_string();
        assert!(large.contains("larger than 64 MiB"), "{large}");
        let zero = read_json_lines(Path::new("/dev/zero")).unwrap_err().to_string();
        assert!(zero.contains(":1:") && zero.contains("64 KiB"), "endless input is refused at its first line: {zero}");
    }

    fn ranked(items: &[(&str, &str)]) -> Vec<(String, String)> {
        items.iter().map(|(s, h)| (s.to_string(), h.to_string())).collect()
    }

    #[test]
    fn metrics_of_a_ranking() {
        let list = ranked(&[("x.md", "X"), ("a.md", "A > Diet"), ("a.md", "A > Care"), ("b.md", "B")]);
        let m = score_ranking(&list, &["a.md".into(), "b.md".into()]);
        assert_eq!((m.recall_1, m.recall_3, m.recall_5), (0.0, 0.5, 1.0));
        assert_eq!((m.hit_1, m.hit_3), (0.0, 1.0));
        assert_eq!(m.mrr_10, 0.5);
        let ideal = 1.0 + 1.0 / 3f64.log2();
        let dcg = 1.0 / 3f64.log2() + 1.0 / 5f64.log2();
        assert!((m.ndcg_10 - dcg / ideal).abs() < 1e-9, "a second chunk of a.md does not count twice");
    }

    #[test]
    fn heading_specs_match_a_heading_in_the_path() {
        let list = ranked(&[("a.md", "Cockatiel > Care"), ("a.md", "Cockatiel > Diet")]);
        let m = score_ranking(&list, &["a.md#Diet".into()]);
        assert_eq!((m.recall_1, m.recall_3, m.mrr_10), (0.0, 1.0, 0.5));
    }

    #[test]
    fn golden_files_report_bad_lines() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("g.jsonl");
        std::fs::write(&path, "{\"query\": \"q\", \"relevant\": [\"a.md\"], \"lang\": \"en\"}\n\n{\"query\": 3}\n").unwrap();
        let err = load_golden(&path).unwrap_err().to_string();
        assert!(err.contains("g.jsonl:3"), "{err}");
    }
}
