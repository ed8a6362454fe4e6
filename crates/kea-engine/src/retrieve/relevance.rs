//! Is the evidence good enough to answer from? With a reranker, its
//! probability decides. Without one, several signals go into a calibrated
//! logistic model (`calibration.rs`, fitted per embedder with k-fold
//! cross-validation by `kea eval --calibrate`): how much of the question's
//! terms the top passages and the best one cover, weighted by how rare each
//! term is in the collection (IDF); the share of its terms no document has;
//! the embedder's best similarity; whether dense and full-text search agree
//! on the top passages; and whether the question asks for a kind of answer
//! (a weight, a price, a duration…) that the top passages do not hold. Its
//! probability gives one of three outcomes: answered, unsure (no direct
//! answer is claimed; the closest passages are offered as related reading)
//! or refused. A question whose
//! passages are in the other language (BM25 cannot see those) is decided on
//! the similarity of a multilingual embedder, whose fit weighs it.

use crate::language::Language;
use std::collections::HashSet;

use serde::Serialize;

use super::answer_type::AnswerType;
use super::calibration::{Outcome, Signals, CROSS_LINGUAL};
use super::context::sentences;
use super::{Hit, RetrievalConfig, Retriever, Trace};
use crate::error::Result;
use crate::segment::{index_tokens, is_specific_chinese_noun, search_terms};
use crate::store::ChunkRow;

/// Passages whose words count towards coverage.
const TOP_PASSAGES: usize = 3;

/// The question in the documents' language, and whether it was crossed
/// word for word (the lexicon) rather than translated by a model.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Translation<'t> {
    pub text: &'t str,
    pub word_for_word: bool,
}

/// The relevance decision and the figures behind it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Relevance {
    /// Whether the passages are given (answered or unsure).
    pub relevant: bool,
    pub outcome: Outcome,
    /// The calibrated probability that the passages answer the question
    /// (the reranker's when one is installed).
    pub probability: f32,
    /// The signals the decision weighed, by name.
    pub signals: Signals,
    /// IDF-weighted share of the query's content terms found in the top passages.
    pub coverage: f32,
    pub best_dense: Option<f32>,
    pub best_rerank: Option<f32>,
    /// Query terms absent from the top passages, with how many chunks of
    /// the collection contain each.
    pub missing: Vec<(String, usize)>,
    /// The similarity at which a sentence speaks of the question (see
    /// [`super::calibration::Calibration::sentence_match`]).
    pub sentence_match: Option<f32>,
    /// Why, as data (the app says it in the user's language)…
    pub reasons: Vec<Reason>,
    /// …and in English, with the outcome.
    pub reason: String,
}

/// One reason for a relevance decision.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Reason {
    NothingFound,
    /// The IDF-weighted share of the question's terms the top passages hold.
    Coverage {
        share: f32,
    },
    /// Question terms no document has.
    NotInAnyDocument {
        terms: Vec<String>,
    },
    /// The question asks for this kind of answer and the passages hold none.
    AnswerTypeMissing {
        asked: AnswerType,
    },
    Similarity {
        value: f32,
    },
    Calibrated {
        probability: f32,
        refuse_below: f32,
        answer_at: f32,
    },
    Rerank {
        probability: f32,
        threshold: f32,
    },
    /// No question word in the passages, and an embedder that does not read its language.
    NoSharedWords,
    /// The passages found are all in another language than the question
    /// (decided by the cross-lingual fit when the embedder has one).
    OtherLanguage,
    /// A model that writes answers judged the passages (see `chat::answer`).
    ModelFoundNoAnswer,
    ModelAnswered,
    /// Judged on the question translated into the documents' language
    /// (the router's translation, or word for word), which the passages answer better.
    JudgedInTranslation {
        query: String,
    },
    /// Translated word for word (no model): at best unsure.
    CrossedWordForWord,
}

impl Reason {
    fn english(&self) -> String {
        match self {
            Reason::NothingFound => "nothing was found".into(),
            Reason::Coverage { share } => format!("the best passages cover {:.0}% of the question's terms", share * 100.0),
            Reason::NotInAnyDocument { terms } => format!("no document has “{}”", terms.join("”, “")),
            Reason::AnswerTypeMissing { asked } => format!("the question asks for a {} and they give none", format!("{asked:?}").to_lowercase()),
            Reason::Similarity { value } => format!("similarity {value:.2}"),
            Reason::Calibrated { probability, refuse_below, answer_at } => {
                format!("calibrated probability {probability:.2} (answered from {answer_at:.2}, refused below {refuse_below:.2})")
            }
            Reason::Rerank { probability, threshold } => format!("rerank probability {probability:.2} (threshold {threshold:.2})"),
            Reason::NoSharedWords => "none of the question's words is in the passages found, and the embedder does not read its language".into(),
            Reason::OtherLanguage => "the passages found are in another language than the question".into(),
            Reason::ModelFoundNoAnswer => "the language model found no answer in the passages".into(),
            Reason::ModelAnswered => "the language model answered from the passages, and its sentences hold".into(),
            Reason::JudgedInTranslation { query } => format!("judged on the question in the documents' language, “{query}”"),
            Reason::CrossedWordForWord => "translated word for word, which finds the page but cannot show that it answers".into(),
        }
    }
}

impl Relevance {
    /// A decision with no figures behind it, for tests and fuzz targets of what uses one.
    pub fn stub(outcome: Outcome, probability: f32) -> Relevance {
        Relevance {
            relevant: outcome != Outcome::Refused,
            outcome,
            probability,
            signals: vec![],
            coverage: 1.0,
            best_dense: None,
            best_rerank: None,
            missing: vec![],
            sentence_match: None,
            reasons: vec![],
            reason: String::new(),
        }
    }
}

impl Relevance {
    /// The question in the documents' language when that decided the outcome.
    pub fn judged_in_translation(&self) -> Option<&str> {
        self.reasons.iter().find_map(|r| match r {
            Reason::JudgedInTranslation { query } => Some(query.as_str()),
            _ => None,
        })
    }

    /// Whether this decision is better than `other`: a better outcome, or
    /// of two alike, the likelier.
    pub(crate) fn beats(&self, other: &Relevance) -> bool {
        let rank = |o: Outcome| match o {
            Outcome::Answered => 2,
            Outcome::Unsure => 1,
            Outcome::Refused => 0,
        };
        (rank(self.outcome), self.probability) > (rank(other.outcome), other.probability)
    }

    /// Sets the outcome and why (both as data and in English).
    pub(crate) fn decide(&mut self, outcome: Outcome, reasons: Vec<Reason>) {
        self.outcome = outcome;
        self.relevant = outcome != Outcome::Refused;
        let words: Vec<String> = reasons.iter().map(Reason::english).collect();
        self.reason = format!("{} → {}", words.join("; "), format!("{outcome:?}").to_lowercase());
        self.reasons = reasons;
    }
}

/// The inverse document frequency of a term in `count` of `total` chunks.
/// A term no chunk has weighs as one in a single chunk: in a small folder
/// about something else, a question's everyday words are absent from every
/// document, and that says less about the question than its rare words.
fn idf(count: usize, total: usize) -> f32 {
    ((total as f32 + 1.0) / (count.max(1) as f32 + 0.5)).ln()
}

/// IDF-weighted coverage of `terms` by `found`; `counts` are the terms'
/// chunk frequencies among `total` chunks. Rare terms weigh the most.
pub fn weighted_coverage(terms: &[String], counts: &[usize], total: usize, found: &HashSet<&str>) -> f32 {
    let weights: Vec<f32> = counts.iter().map(|&c| idf(c, total).max(0.05)).collect();
    let sum: f32 = weights.iter().sum();
    if sum <= 0.0 {
        return 0.0;
    }
    // A fold from +0.0: an empty float sum is -0.0, shown as "-0%".
    let covered = terms.iter().zip(&weights).filter(|(t, _)| found.contains(t.as_str())).fold(0.0f32, |sum, (_, w)| sum + w);
    covered / sum
}

/// The top passages' words and their counts in the collection, for the lexical signals.
struct Lexical {
    /// IDF-weighted coverage by the top passages, by the best one, by the
    /// best two consecutive sentences of one of them (with its heading),
    /// and the share no chunk has.
    coverage: f32,
    top_coverage: f32,
    sentence_coverage: f32,
    unknown: f32,
    /// The IDF of the rarest question term the top passages hold, over the
    /// largest IDF a term found can have (whatever the collection's size):
    /// high when they share the question's specific subject, low when only
    /// common words match.
    specific: f32,
    /// Whether the question names a specific Chinese noun no document has
    /// (a subject the collection never mentions, not filler like 平时).
    unknown_noun: bool,
    missing: Vec<(String, usize)>,
}

impl Retriever<'_> {
    fn lexical(&self, terms: &[String], hits: &[Hit]) -> Result<Lexical> {
        let ids: Vec<u64> = hits.iter().take(TOP_PASSAGES).map(|h| h.chunk.id as u64).collect();
        let (counts, total) = self.passages().token_chunk_counts(terms)?;
        let tokens = self.passages().tokens_in_chunks(terms, &ids)?;
        let found: HashSet<&str> = tokens.iter().map(String::as_str).collect();
        let top_tokens = self.passages().tokens_in_chunks(terms, &ids[..ids.len().min(1)])?;
        let top_found: HashSet<&str> = top_tokens.iter().map(String::as_str).collect();
        let rarest_found = terms.iter().zip(&counts).filter(|(t, _)| found.contains(t.as_str())).map(|(_, &c)| idf(c, total)).fold(0.0f32, f32::max);
        let known: Vec<String> = terms.iter().zip(&counts).filter(|(_, &c)| c > 0).map(|(t, _)| t.clone()).collect();
        let known: HashSet<&str> = known.iter().map(String::as_str).collect();
        let sentence_coverage = hits
            .iter()
            .take(TOP_PASSAGES)
            .flat_map(|hit| sentence_windows(&hit.chunk))
            .map(|window| weighted_coverage(terms, &counts, total, &window.iter().map(String::as_str).collect()))
            .fold(0.0f32, f32::max);
        Ok(Lexical {
            coverage: weighted_coverage(terms, &counts, total, &found),
            top_coverage: weighted_coverage(terms, &counts, total, &top_found),
            sentence_coverage,
            unknown: 1.0 - weighted_coverage(terms, &counts, total, &known),
            specific: rarest_found / idf(1, total).max(1e-3),
            unknown_noun: terms.iter().zip(&counts).any(|(t, &c)| c == 0 && is_specific_chinese_noun(t)),
            missing: terms.iter().zip(&counts).filter(|(t, _)| !found.contains(t.as_str())).map(|(t, &c)| (t.clone(), c)).collect(),
        })
    }

    /// Like [`Retriever::judge_relevance`], also judging `translated` (the
    /// question in the documents' language) when `query` is not answered:
    /// the better outcome stands (of two alike, the likelier), saying so. A question crossed word for
    /// word (the lexicon, not a model) is at best unsure: its words can find
    /// the page, but not show that a sentence answers it.
    pub(crate) fn judge_relevance_translated(
        &self,
        (query, translated): (&str, Option<Translation>),
        hits: &[Hit],
        trace: &Trace,
        config: &RetrievalConfig,
    ) -> Result<Relevance> {
        let judged = self.judge_relevance(query, hits, trace, config)?;
        let Some(translated) = translated.filter(|_| judged.outcome != Outcome::Answered) else { return Ok(judged) };
        let mut other = self.judge_relevance(translated.text, hits, trace, config)?;
        let mut reasons = std::mem::take(&mut other.reasons);
        let mut outcome = other.outcome;
        if translated.word_for_word && outcome == Outcome::Answered {
            outcome = Outcome::Unsure;
            reasons.push(Reason::CrossedWordForWord);
        }
        reasons.insert(0, Reason::JudgedInTranslation { query: translated.text.to_string() });
        other.decide(outcome, reasons);
        Ok(if other.beats(&judged) { other } else { judged })
    }

    /// Decides whether `hits` answer `query` (see the module docs).
    pub(crate) fn judge_relevance(&self, query: &str, hits: &[Hit], trace: &Trace, config: &RetrievalConfig) -> Result<Relevance> {
        let best_dense = hits.iter().filter_map(|h| h.dense).reduce(f32::max);
        let best_rerank = hits.first().and_then(|h| h.rerank);
        let mut judged = Relevance {
            relevant: false,
            outcome: Outcome::Refused,
            probability: 0.0,
            signals: Vec::new(),
            coverage: 0.0,
            best_dense,
            best_rerank,
            missing: Vec::new(),
            sentence_match: None,
            reasons: Vec::new(),
            reason: String::new(),
        };
        if hits.is_empty() {
            judged.decide(Outcome::Refused, vec![Reason::NothingFound]);
            return Ok(judged);
        }
        let terms = search_terms(query, |t| self.passages().token_chunk_counts(t).map(|(c, _)| c))?;
        let lexical = if terms.is_empty() { None } else { Some(self.lexical(&terms, hits)?) };
        if let Some(l) = &lexical {
            (judged.coverage, judged.missing) = (l.coverage, l.missing.clone());
        }
        let asked = AnswerType::asked_by(query);
        let type_missing = asked.is_some_and(|t| !hits.iter().take(TOP_PASSAGES).any(|h| t.found_in(&h.chunk.text)));
        // The similarity of an embedder that does not read the question's language says nothing.
        let language = Language::of_query(query);
        let dense = best_dense.filter(|_| self.model_reads(language));
        // No passage found in the question's language (a folder written in
        // another one): word matches say little, the cross-lingual fit decides.
        let other_language = dense.is_some() && !hits.iter().any(|h| Language::of_text(&h.chunk.text) == language);
        judged.signals = signals(lexical.as_ref(), dense, agreement(trace), type_missing, language == Language::Chinese);
        judged.signals.push((CROSS_LINGUAL.into(), if other_language { 1.0 } else { 0.0 }));
        if let Some(p) = best_rerank {
            judged.probability = p;
            let outcome = if p >= config.min_score { Outcome::Answered } else { Outcome::Refused };
            judged.decide(outcome, vec![Reason::Rerank { probability: p, threshold: config.min_score }]);
        } else {
            let shipped = self.calibration();
            judged.sentence_match = shipped.sentence_match.filter(|_| dense.is_some());
            let calibration = shipped.for_signals(&judged.signals);
            judged.probability = calibration.probability(&judged.signals);
            if lexical.as_ref().is_some_and(|l| l.coverage <= 0.0) && dense.is_none() {
                judged.decide(Outcome::Refused, vec![Reason::NoSharedWords]);
                return Ok(judged);
            }
            let mut reasons = reasons(&judged, dense, asked.filter(|_| type_missing), (calibration.refuse_below, calibration.answer_at));
            if other_language {
                reasons.insert(0, Reason::OtherLanguage);
            }
            judged.decide(calibration.outcome(judged.probability), reasons);
        }
        Ok(judged)
    }
}

/// The words of each two consecutive sentences of `chunk`, with its heading's.
fn sentence_windows(chunk: &ChunkRow) -> Vec<HashSet<String>> {
    let heading = index_tokens(&chunk.heading_path);
    let sentences: Vec<Vec<String>> = sentences(&chunk.text).into_iter().map(index_tokens).collect();
    (0..sentences.len().max(1)).map(|i| sentences.iter().skip(i).take(2).flatten().chain(&heading).cloned().collect()).collect()
}

/// The share of the dense search's top passages that full-text search also ranks at the top.
fn agreement(trace: &Trace) -> f32 {
    let top = |stage: &str| -> HashSet<u64> {
        trace.stages.iter().find(|s| s.stage == stage).map(|s| s.candidates.iter().take(TOP_PASSAGES).map(|c| c.0).collect()).unwrap_or_default()
    };
    top("dense").intersection(&top("sparse")).count() as f32 / TOP_PASSAGES as f32
}

fn signals(lexical: Option<&Lexical>, best_dense: Option<f32>, agreement: f32, type_missing: bool, chinese: bool) -> Signals {
    let flag = |b: bool| if b { 1.0 } else { 0.0 };
    vec![
        ("coverage".into(), lexical.map_or(0.0, |l| l.coverage)),
        ("top_coverage".into(), lexical.map_or(0.0, |l| l.top_coverage)),
        ("sentence_coverage".into(), lexical.map_or(0.0, |l| l.sentence_coverage)),
        ("unknown".into(), lexical.map_or(0.0, |l| l.unknown)),
        ("specific".into(), lexical.map_or(0.0, |l| l.specific)),
        ("unknown_noun".into(), flag(lexical.is_some_and(|l| l.unknown_noun))),
        ("dense".into(), best_dense.unwrap_or(0.0)),
        ("agreement".into(), agreement),
        ("type_missing".into(), flag(type_missing)),
        ("chinese".into(), flag(chinese)),
    ]
}

/// The reasons for a calibrated decision: what the passages cover and
/// lack, the similarity, and the probability.
fn reasons(judged: &Relevance, dense: Option<f32>, missing_type: Option<AnswerType>, (refuse_below, answer_at): (f32, f32)) -> Vec<Reason> {
    let mut reasons = vec![Reason::Coverage { share: judged.coverage }];
    let unknown: Vec<String> = judged.missing.iter().filter(|(_, c)| *c == 0).map(|(t, _)| t.clone()).take(3).collect();
    if !unknown.is_empty() {
        reasons.push(Reason::NotInAnyDocument { terms: unknown });
    }
    reasons.extend(missing_type.map(|asked| Reason::AnswerTypeMissing { asked }));
    reasons.extend(dense.map(|value| Reason::Similarity { value }));
    reasons.push(Reason::Calibrated { probability: judged.probability, refuse_below, answer_at });
    reasons
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rare_missing_term_outweighs_a_common_match() {
        let terms = vec!["penguin".to_string(), "eat".to_string()];
        // "penguin" is in no chunk, "eat" in 40 of 130.
        let found: HashSet<&str> = ["eat", "seed"].into_iter().collect();
        let coverage = weighted_coverage(&terms, &[0, 40], 130, &found);
        assert!(coverage < 0.3, "{coverage}");
        let found: HashSet<&str> = ["penguin", "krill"].into_iter().collect();
        assert!(weighted_coverage(&terms, &[3, 40], 130, &found) > 0.7);
        assert_eq!(weighted_coverage(&[], &[], 10, &found), 0.0);
        let none = weighted_coverage(&terms, &[3, 40], 130, &HashSet::new());
        assert!(none.is_sign_positive(), "no term found is 0, not -0: {none}");
        assert_eq!(Reason::Coverage { share: none }.english(), "the best passages cover 0% of the question's terms");
    }
}
