//! IPC shapes for evaluation: ranking metrics, misses and refusal rates per
//! configuration.

use kea_engine::eval::answers::AnswerRates;
use kea_engine::eval::{EvalResult, Metrics, Miss, RefusalMetrics};
use kea_engine::retrieve::calibration::OutcomeRates;
use serde::Serialize;
use ts_rs::TS;

/// Ranking metrics of one configuration (or one language).
#[derive(Debug, Clone, Serialize, TS)]
pub struct MetricsDto {
    pub queries: usize,
    pub recall_1: f64,
    pub recall_3: f64,
    pub recall_5: f64,
    pub recall_10: f64,
    pub hit_1: f64,
    pub hit_3: f64,
    pub mrr_10: f64,
    pub ndcg_10: f64,
}

impl From<&Metrics> for MetricsDto {
    fn from(m: &Metrics) -> Self {
        MetricsDto {
            queries: m.queries,
            recall_1: m.recall_1,
            recall_3: m.recall_3,
            recall_5: m.recall_5,
            recall_10: m.recall_10,
            hit_1: m.hit_1,
            hit_3: m.hit_3,
            mrr_10: m.mrr_10,
            ndcg_10: m.ndcg_10,
        }
    }
}

/// A golden question whose relevant document was not in the top hits.
#[derive(Debug, Clone, Serialize, TS)]
pub struct MissDto {
    pub query: String,
    pub relevant: Vec<String>,
    pub got: Vec<String>,
}

impl From<&Miss> for MissDto {
    fn from(m: &Miss) -> Self {
        MissDto { query: m.query.clone(), relevant: m.relevant.clone(), got: m.got.clone() }
    }
}

/// How well the relevance decision refuses what the documents cannot answer.
#[derive(Debug, Clone, Serialize, TS)]
pub struct RefusalDto {
    pub answerable: usize,
    pub unanswerable: usize,
    pub answered: f64,
    pub refused: f64,
    pub precision: f64,
    pub wrong: Vec<String>,
    /// Shares answered / unsure / refused of the answerable questions...
    pub answerable_outcomes: OutcomesDto,
    /// ...and of the unanswerable ones.
    pub unanswerable_outcomes: OutcomesDto,
}

/// Shares of a class of questions per outcome.
#[derive(Debug, Clone, Serialize, TS)]
pub struct OutcomesDto {
    pub answered: f32,
    pub unsure: f32,
    pub refused: f32,
}

impl From<&OutcomeRates> for OutcomesDto {
    fn from(r: &OutcomeRates) -> Self {
        OutcomesDto { answered: r.answered, unsure: r.unsure, refused: r.refused }
    }
}

impl From<&RefusalMetrics> for RefusalDto {
    fn from(r: &RefusalMetrics) -> Self {
        RefusalDto {
            answerable: r.answerable,
            unanswerable: r.unanswerable,
            answered: r.answered,
            refused: r.refused,
            precision: r.precision,
            wrong: r.wrong.clone(),
            answerable_outcomes: OutcomesDto::from(&r.outcomes.0),
            unanswerable_outcomes: OutcomesDto::from(&r.outcomes.1),
        }
    }
}

/// What a user without a language model sees for the answerable questions.
#[derive(Debug, Clone, Serialize, TS)]
pub struct AnswersDto {
    pub questions: usize,
    pub answered: f64,
    pub unsure: f64,
    pub refused: f64,
    /// A relevant document answered from or offered as related reading.
    pub shown: f64,
    /// Of the answered questions with an evidence phrase (`quoted_of`), the share quoting it.
    pub quoted: f64,
    pub quoted_of: usize,
    /// Of the answered questions, the share quoting a document that is not relevant.
    pub other_document: f64,
    /// Of the unsure questions with an evidence phrase (`related_quoted_of`),
    /// the share showing it as a related passage's sentence.
    pub related_quoted: f64,
    pub related_quoted_of: usize,
}

impl From<&AnswerRates> for AnswersDto {
    fn from(a: &AnswerRates) -> Self {
        AnswersDto {
            questions: a.questions,
            answered: a.answered,
            unsure: a.unsure,
            refused: a.refused,
            shown: a.shown,
            quoted: a.quoted,
            quoted_of: a.quoted_of,
            other_document: a.other_document,
            related_quoted: a.related_quoted,
            related_quoted_of: a.related_quoted_of,
        }
    }
}

/// One configuration's evaluation: metrics, per language, and the misses.
#[derive(Debug, Serialize, TS)]
pub struct EvalDto {
    pub name: String,
    pub metrics: MetricsDto,
    pub by_lang: std::collections::BTreeMap<String, MetricsDto>,
    pub misses: Vec<MissDto>,
    pub ms_per_query: f64,
    /// Present when the set has unanswerable questions.
    pub refusal: Option<RefusalDto>,
    /// By "all" and by language.
    pub answers: std::collections::BTreeMap<String, AnswersDto>,
}

impl From<&EvalResult> for EvalDto {
    fn from(r: &EvalResult) -> Self {
        EvalDto {
            name: r.name.clone(),
            metrics: MetricsDto::from(&r.metrics),
            by_lang: r.by_lang.iter().map(|(lang, m)| (lang.clone(), MetricsDto::from(m))).collect(),
            misses: r.misses.iter().map(MissDto::from).collect(),
            ms_per_query: r.ms_per_query,
            refusal: r.refusal.as_ref().map(RefusalDto::from),
            answers: r.answers.iter().map(|(group, a)| (group.clone(), AnswersDto::from(a))).collect(),
        }
    }
}
