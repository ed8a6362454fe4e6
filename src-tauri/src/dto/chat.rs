//! IPC shapes for answers: citations, the route, the retrieval trace and
//! relevance decision, related reading, streamed events, conversations.

use kea_engine::chat::{ChatAnswer, ChatEvent, Citation, DecidedBy, Route, Shown};
use kea_engine::retrieve::calibration::Outcome;
use kea_engine::retrieve::{Reason, Relevance, StageTrace, Trace};
use kea_engine::store::{Conversation, StoredMessage};
use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// A cited block. Also the shape citations are stored in with a message.
#[derive(Debug, Clone, Serialize, Deserialize, TS)]
pub struct CitationDto {
    pub id: String,
    pub source: String,
    pub heading_path: String,
    pub page: Option<u32>,
    #[ts(type = "number")]
    pub chunk_id: i64,
    /// Every chunk of the cited block.
    #[ts(type = "number[]")]
    pub chunk_ids: Vec<i64>,
    /// The collection, when the question went to several.
    #[serde(default)]
    pub collection: Option<String>,
    /// A hash of the cited passage's text (what showing it checks).
    #[serde(default)]
    pub fingerprint: Option<String>,
    /// The document's web address (a saved web page's).
    #[serde(default)]
    pub url: Option<String>,
}

impl From<&Citation> for CitationDto {
    fn from(c: &Citation) -> Self {
        CitationDto {
            id: c.id.clone(),
            source: c.source.clone(),
            heading_path: c.heading_path.clone(),
            page: c.page,
            chunk_id: c.chunk_id,
            chunk_ids: c.chunk_ids.clone(),
            collection: c.collection.clone(),
            fingerprint: c.fingerprint.clone(),
            url: c.url.clone(),
        }
    }
}

/// How the router sent the question.
#[derive(Debug, Clone, Serialize, TS)]
pub struct RouteDto {
    pub use_rag: bool,
    pub is_followup: bool,
    pub search_query: String,
    /// `llm` or `keywords`.
    pub decided_by: String,
}

impl From<&Route> for RouteDto {
    fn from(r: &Route) -> Self {
        let decided_by = match r.decided_by {
            DecidedBy::Llm => "llm",
            DecidedBy::Keywords => "keywords",
        }
        .to_string();
        RouteDto { use_rag: r.use_rag, is_followup: r.is_followup, search_query: r.search_query.clone(), decided_by }
    }
}

/// One stage of the retrieval pipeline: its time and `[chunk id, score]` candidates.
#[derive(Debug, Clone, Serialize, TS)]
pub struct StageDto {
    pub stage: String,
    pub ms: f64,
    #[ts(type = "[number, number][]")]
    pub candidates: Vec<(u64, f32)>,
}

impl From<&StageTrace> for StageDto {
    fn from(s: &StageTrace) -> Self {
        StageDto { stage: s.stage.to_string(), ms: s.ms, candidates: s.candidates.clone() }
    }
}

/// The relevance decision (answer or refuse) with its figures.
#[derive(Debug, Clone, Serialize, TS)]
pub struct RelevanceDto {
    pub relevant: bool,
    /// "answered", "unsure" or "refused".
    pub outcome: String,
    pub probability: f32,
    pub coverage: f32,
    pub best_dense: Option<f32>,
    pub best_rerank: Option<f32>,
    /// Why, in English (`reasons` says it as data, for the user's language).
    pub reason: String,
    pub reasons: Vec<ReasonDto>,
    /// The signals the decision weighed, by name (`coverage`, `dense`…).
    pub signals: Vec<(String, f32)>,
}

impl From<&Relevance> for RelevanceDto {
    fn from(r: &Relevance) -> Self {
        RelevanceDto {
            relevant: r.relevant,
            outcome: outcome_name(r.outcome),
            probability: r.probability,
            coverage: r.coverage,
            best_dense: r.best_dense,
            best_rerank: r.best_rerank,
            reason: r.reason.clone(),
            reasons: r.reasons.iter().map(ReasonDto::from).collect(),
            signals: r.signals.clone(),
        }
    }
}

/// One reason for the relevance decision (the app words it in the user's language).
#[derive(Debug, Clone, Serialize, TS)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ReasonDto {
    NothingFound,
    Coverage {
        share: f32,
    },
    NotInAnyDocument {
        terms: Vec<String>,
    },
    /// `asked`: weight, temperature, price, size, duration, frequency or count.
    AnswerTypeMissing {
        asked: String,
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
    NoSharedWords,
    OtherLanguage,
    ModelFoundNoAnswer,
    ModelAnswered,
    JudgedInTranslation {
        query: String,
    },
    CrossedWordForWord,
}

impl From<&Reason> for ReasonDto {
    fn from(r: &Reason) -> Self {
        match r {
            Reason::NothingFound => ReasonDto::NothingFound,
            Reason::Coverage { share } => ReasonDto::Coverage { share: *share },
            Reason::NotInAnyDocument { terms } => ReasonDto::NotInAnyDocument { terms: terms.clone() },
            Reason::AnswerTypeMissing { asked } => ReasonDto::AnswerTypeMissing { asked: format!("{asked:?}").to_lowercase() },
            Reason::Similarity { value } => ReasonDto::Similarity { value: *value },
            Reason::Calibrated { probability, refuse_below, answer_at } => {
                ReasonDto::Calibrated { probability: *probability, refuse_below: *refuse_below, answer_at: *answer_at }
            }
            Reason::Rerank { probability, threshold } => ReasonDto::Rerank { probability: *probability, threshold: *threshold },
            Reason::NoSharedWords => ReasonDto::NoSharedWords,
            Reason::OtherLanguage => ReasonDto::OtherLanguage,
            Reason::ModelFoundNoAnswer => ReasonDto::ModelFoundNoAnswer,
            Reason::ModelAnswered => ReasonDto::ModelAnswered,
            Reason::JudgedInTranslation { query } => ReasonDto::JudgedInTranslation { query: query.clone() },
            Reason::CrossedWordForWord => ReasonDto::CrossedWordForWord,
        }
    }
}

/// The retrieval pipeline's trace (the retrieval inspector).
#[derive(Debug, Clone, Serialize, TS)]
pub struct TraceDto {
    pub query: String,
    pub stages: Vec<StageDto>,
    pub fallbacks: Vec<String>,
    pub total_ms: f64,
    pub relevance: Option<RelevanceDto>,
    /// The document and heading of the passages the stages name.
    pub passages: Vec<PassageNameDto>,
}

/// A passage by document and heading (ids are never shown alone).
#[derive(Debug, Clone, Serialize, TS)]
pub struct PassageNameDto {
    #[ts(type = "number")]
    pub id: u64,
    pub source: String,
    pub heading_path: String,
}

impl From<&Trace> for TraceDto {
    fn from(t: &Trace) -> Self {
        TraceDto {
            query: t.query.clone(),
            stages: t.stages.iter().map(StageDto::from).collect(),
            fallbacks: t.fallbacks.clone(),
            total_ms: t.total_ms,
            relevance: t.relevance.as_ref().map(RelevanceDto::from),
            passages: t.passages.iter().map(|p| PassageNameDto { id: p.id, source: p.source.clone(), heading_path: p.heading_path.clone() }).collect(),
        }
    }
}

/// One passage's summary (the opt-in summary step), shown with the sources.
#[derive(Debug, Clone, Serialize, TS)]
pub struct SummaryDto {
    #[ts(type = "number")]
    pub chunk_id: i64,
    pub source: String,
    pub key_facts: Vec<String>,
    pub summary: String,
}

/// An outcome as the UI names it: "answered", "unsure" or "refused".
fn outcome_name(outcome: Outcome) -> String {
    format!("{outcome:?}").to_lowercase()
}

/// A passage offered as related reading: where it is and its closest sentence.
#[derive(Debug, Clone, Serialize, TS)]
pub struct RelatedDto {
    pub passage: CitationDto,
    pub snippet: String,
}

/// What an answer shows besides its text and citations: live, and again
/// when its conversation is reopened.
#[derive(Debug, Clone, Serialize, TS)]
pub struct ShownDto {
    /// "answered", "unsure" (no direct answer: see `related`) or "refused".
    pub outcome: String,
    pub notice: Option<String>,
    /// The closest passages when no direct answer was found.
    pub related: Vec<RelatedDto>,
    /// Sentences of the model's answer that its passages do not support,
    /// taken out of `answer`.
    pub unsupported: Vec<String>,
}

impl From<&Shown> for ShownDto {
    fn from(s: &Shown) -> Self {
        ShownDto {
            outcome: outcome_name(s.outcome),
            notice: s.notice.clone(),
            related: s.related.iter().map(|r| RelatedDto { passage: CitationDto::from(&r.passage), snippet: r.snippet.clone() }).collect(),
            unsupported: s.unsupported.clone(),
        }
    }
}

#[derive(Debug, Clone, Serialize, TS)]
pub struct AnswerDto {
    #[ts(type = "number")]
    pub chat_id: i64,
    pub answer: String,
    pub citations: Vec<CitationDto>,
    pub shown: ShownDto,
    pub provider: String,
    /// The route and the retrieval trace, for "how this was answered".
    pub route: RouteDto,
    pub trace: Option<TraceDto>,
    pub summaries: Vec<SummaryDto>,
}

impl From<&ChatAnswer> for AnswerDto {
    fn from(a: &ChatAnswer) -> Self {
        AnswerDto {
            chat_id: a.chat_id,
            answer: a.answer.clone(),
            citations: a.citations.iter().map(CitationDto::from).collect(),
            shown: ShownDto::from(&a.shown),
            provider: a.provider_detail.clone(),
            route: RouteDto::from(&a.route),
            trace: a.retrieval.as_ref().map(TraceDto::from),
            summaries: a
                .summaries
                .iter()
                .map(|s| SummaryDto { chunk_id: s.chunk_id, source: s.source.clone(), key_facts: s.key_facts.clone(), summary: s.summary.clone() })
                .collect(),
        }
    }
}

/// One streamed event of an answer or identification (sent over a Channel).
#[derive(Debug, Clone, Serialize, TS)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum StreamDto {
    Token {
        text: String,
    },
    /// A stage started (`ms` null) or ended, with that stage's own
    /// diagnostic output: its plain values as (name, value) `fields`, and
    /// the whole of it as indented JSON text in `raw` (empty when none).
    Stage {
        name: String,
        ms: Option<f64>,
        fields: Vec<(String, String)>,
        raw: String,
    },
}

impl StreamDto {
    pub fn from_event(event: &ChatEvent) -> Option<Self> {
        Some(match event {
            ChatEvent::Token { text } => StreamDto::Token { text: text.clone() },
            ChatEvent::ToolStart { tool } => StreamDto::Stage { name: tool.to_string(), ms: None, fields: Vec::new(), raw: String::new() },
            ChatEvent::ToolEnd { tool, ms, output } => StreamDto::Stage {
                name: tool.to_string(),
                ms: Some(*ms),
                fields: plain_fields(output),
                raw: serde_json::to_string_pretty(output).unwrap_or_default(),
            },
            ChatEvent::Status { .. } | ChatEvent::Final { .. } => return None,
        })
    }
}

/// The top-level strings, numbers (to two decimals) and booleans of a
/// stage's output, named with spaces for underscores.
fn plain_fields(output: &serde_json::Value) -> Vec<(String, String)> {
    let Some(object) = output.as_object() else { return Vec::new() };
    let value = |v: &serde_json::Value| match v {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Bool(b) => Some(b.to_string()),
        serde_json::Value::Number(n) => n.as_f64().map(|f| format!("{f:.2}").trim_end_matches('0').trim_end_matches('.').to_string()),
        _ => None,
    };
    object.iter().filter_map(|(name, v)| Some((name.replace('_', " "), value(v)?))).collect()
}

#[derive(Debug, Serialize, TS)]
pub struct ConversationDto {
    #[ts(type = "number")]
    pub id: i64,
    pub title: String,
}

impl From<Conversation> for ConversationDto {
    fn from(c: Conversation) -> Self {
        ConversationDto { id: c.id, title: c.title }
    }
}

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "lowercase")]
pub enum MessageRole {
    User,
    Assistant,
}

/// One stored message of a conversation, for reopening it.
#[derive(Debug, Serialize, TS)]
pub struct MessageDto {
    pub role: MessageRole,
    pub content: String,
    pub citations: Vec<CitationDto>,
    /// What an answer showed (none for a question, a photo's identification
    /// or an answer saved by an earlier Kea).
    pub shown: Option<ShownDto>,
}

impl From<StoredMessage> for MessageDto {
    fn from(m: StoredMessage) -> Self {
        let role = if m.role == kea_llm::Role::User { MessageRole::User } else { MessageRole::Assistant };
        // Stored as the answer's citations; anything else (older rows) shows none.
        let citations = serde_json::from_value(m.citations).unwrap_or_default();
        let shown = m.shown.and_then(|s| serde_json::from_value::<Shown>(s).ok()).map(|s| ShownDto::from(&s));
        MessageDto { role, content: m.content, citations, shown }
    }
}
