//! A golden question's decision signals, saved as one JSON line, so that one
//! decision can be fitted on questions asked of several collections (each
//! indexed on its own) and reported, per language and per collection, on
//! the held-out ones (`"split": "test"`, whole held-out collections included).

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::{retrieve, FitScope, GoldenItem};
use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::retrieve::calibration::{self, Calibration, Outcome, OutcomeRates, Sample, Signals, Targets};
use crate::retrieve::RetrievalConfig;

/// One golden question's signals and labels.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SignalRow {
    pub query: String,
    pub lang: String,
    pub answerable: bool,
    /// Held out: never fitted on, reported.
    #[serde(default)]
    pub test: bool,
    /// The collection it was asked of (a label for the report).
    #[serde(default)]
    pub collection: String,
    /// The embedder whose index gave the signals (its similarity is on that
    /// embedder's scale: a fit for another embedder refuses the row), and
    /// the signal set's version.
    #[serde(default)]
    pub embedder: String,
    #[serde(default)]
    pub version: u32,
    pub signals: Signals,
}

/// The version of the signals [`rows`] writes; rows of another are refused.
pub const SIGNALS_VERSION: u32 = 1;

/// Refuses, naming one, rows whose signals came from another embedder than
/// `model` (any embedder for a lexical fit, `model` empty) or another
/// signal set.
pub fn check_rows(rows: &[SignalRow], model: &str) -> Result<()> {
    if let Some(row) = rows.iter().find(|r| r.version != SIGNALS_VERSION) {
        return Err(Error::InvalidInput(format!("the signals of {:?} are of another version ({}): write them again with this Kea", row.query, row.version)));
    }
    match rows.iter().find(|r| !model.is_empty() && r.embedder != model) {
        Some(row) => Err(Error::InvalidInput(format!(
            "the signals of {:?} came from the embedder {:?}, not this index's {model}: a fit mixes no scales (fit with --lexical to leave the similarity out)",
            row.query, row.embedder
        ))),
        None => Ok(()),
    }
}

/// The signals of every item of `items`, asked of `engine` (no reranker:
/// the calibrated decision is the one without one).
pub fn rows(engine: &Engine, items: &[GoldenItem], config: &RetrievalConfig, collection: &str) -> Result<Vec<SignalRow>> {
    let config = RetrievalConfig { rerank: false, ..config.clone() };
    let embedder = engine.status()?.model_id.unwrap_or_default();
    items
        .iter()
        .map(|item| {
            Ok(SignalRow {
                query: item.query.clone(),
                lang: item.lang.clone().unwrap_or_else(|| "-".into()),
                answerable: item.answerable,
                test: item.is_test(),
                collection: collection.to_string(),
                embedder: embedder.clone(),
                version: SIGNALS_VERSION,
                signals: retrieve(engine, item, &config)?.relevance.signals,
            })
        })
        .collect()
}

/// The rows as JSON lines, as [`read_rows`] reads them.
pub fn rows_text(rows: &[SignalRow]) -> Result<String> {
    rows.iter().map(|r| serde_json::to_string(r).map(|l| l + "\n")).collect::<std::result::Result<_, _>>().map_err(|e| Error::io("encoding signals", e.into()))
}

/// Reads rows written from [`rows_text`]; a line that is not one, or a
/// signal outside −1…1 (every signal is a share, a flag or a cosine), is an
/// error naming the line.
pub fn read_rows(path: &Path) -> Result<Vec<SignalRow>> {
    let text = super::read_json_lines(path)?;
    let row = |n: usize, line: &str| -> Result<SignalRow> {
        let refused = |why: String| Error::InvalidInput(format!("{}:{}: not a signal row: {why}", path.display(), n + 1));
        let row: SignalRow = serde_json::from_str(line).map_err(|e| refused(e.to_string()))?;
        // "all" and "collection/lang" name the report's groups: no row's language may look like one.
        if row.lang == "all" || row.lang.contains('/') {
            return Err(refused(format!("{:?} is not a language", row.lang)));
        }
        match row.signals.iter().find(|(_, v)| !(-1.0..=1.0).contains(v)) {
            Some((name, v)) => Err(refused(format!("signal {name} is {v}, outside -1 to 1"))),
            None => Ok(row),
        }
    };
    text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()).map(|(n, l)| row(n, l)).collect()
}

/// Fits the decision on the rows not held out (`folds`-fold, folds drawn
/// from a hash of each question) and reports it on the held-out ones,
/// overall, per language and per collection and language. The main fit
/// leaves out the questions it does not decide: those whose passages are
/// all in another language (the cross-lingual fit's) and those refused by
/// rule (no shared word, no similarity).
pub fn calibrate_rows(rows: &[SignalRow], model: &str, folds: usize, scope: FitScope) -> Result<Calibration> {
    let value = |row: &SignalRow, name: &str| row.signals.iter().find(|(n, _)| n == name).map_or(0.0, |(_, v)| *v);
    let cross_lingual = |row: &SignalRow| value(row, calibration::CROSS_LINGUAL) > 0.5;
    // Nothing shared and no similarity: refused by rule, whatever a fit says.
    let by_rule = |row: &SignalRow| value(row, "coverage") <= 0.0 && value(row, "dense") <= 0.0;
    let in_scope = |row: &&SignalRow| match scope {
        FitScope::All => !cross_lingual(row) && !by_rule(row),
        FitScope::CrossLingual => cross_lingual(row),
    };
    let (test, train): (Vec<&SignalRow>, Vec<&SignalRow>) = rows.iter().filter(in_scope).partition(|r| r.test);
    let samples: Vec<Sample> = train.iter().map(|r| Sample { signals: r.signals.clone(), answerable: r.answerable }).collect();
    let fold_keys: Vec<usize> = train.iter().map(|r| blake3::hash(r.query.as_bytes()).as_bytes()[0] as usize % folds.max(1)).collect();
    let mut fitted = calibration::fit(&samples, &super::calibration_features(!model.is_empty()), model, folds, &|i| fold_keys[i], &Targets::SHIPPED)?;
    let held_out = held_out_rates(&fitted, &test);
    fitted.fitted.test = held_out.get("all").cloned();
    fitted.fitted.held_out = held_out;
    Ok(fitted)
}

/// Outcome rates (answerable, unanswerable) of `rows` under `decision`:
/// `"all"`, each language, and each `collection/language`.
fn held_out_rates(decision: &Calibration, rows: &[&SignalRow]) -> BTreeMap<String, (OutcomeRates, OutcomeRates)> {
    let mut groups: BTreeMap<String, Vec<&SignalRow>> = BTreeMap::new();
    for row in rows {
        groups.entry("all".into()).or_default().push(row);
        groups.entry(row.lang.clone()).or_default().push(row);
        if !row.collection.is_empty() {
            groups.entry(format!("{}/{}", row.collection, row.lang)).or_default().push(row);
        }
    }
    let rates = |group: &[&SignalRow], answerable: bool| {
        let outcomes: Vec<Outcome> = group.iter().filter(|r| r.answerable == answerable).map(|r| decision.outcome(decision.probability(&r.signals))).collect();
        OutcomeRates::of(&outcomes)
    };
    groups.into_iter().map(|(key, group)| (key, (rates(&group, true), rates(&group, false)))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_with_a_signal_out_of_range_is_refused_naming_its_line() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("rows.jsonl");
        let good = r#"{"query":"q","lang":"en","answerable":true,"embedder":"e","version":1,"signals":[["dense",0.8],["coverage",0.5]]}"#;
        std::fs::write(&file, format!("{good}\n")).unwrap();
        assert_eq!(read_rows(&file).unwrap()[0].signals[0].1, 0.8);
        std::fs::write(&file, format!("{good}\n{}\n", good.replace("\"en\"", "\"all\""))).unwrap();
        assert!(read_rows(&file).unwrap_err().to_string().contains("rows.jsonl:2"), "a language named like the report's whole");
        std::fs::write(&file, format!("{good}\n{}\n", good.replace("0.8", "3e38"))).unwrap();
        let error = read_rows(&file).unwrap_err().to_string();
        assert!(error.contains("rows.jsonl:2") && error.contains("dense"), "{error}");
        let row = |embedder: &str, version: u32| SignalRow { embedder: embedder.into(), version, ..serde_json::from_str(good).unwrap() };
        assert!(check_rows(&[row("e", 1)], "e").is_ok() && check_rows(&[row("other", 1)], "").is_ok(), "a lexical fit takes any embedder's rows");
        assert!(check_rows(&[row("e", 1), row("other", 1)], "e").unwrap_err().to_string().contains("embedder \"other\""));
        assert!(check_rows(&[row("e", 0)], "e").unwrap_err().to_string().contains("another version"));
    }
}
