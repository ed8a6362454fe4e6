//! The JSON shapes that cross the IPC boundary. Only the shell knows them;
//! each converts from an engine type and nothing else. `ui/src/ipc.ts` is
//! generated from them (ts-rs): the test `the_typescript_contract_is_current`
//! fails when it is stale, and `make ipc` rewrites it.

use kea_engine::chat::{ChatAnswer, ChatEvent, Citation, DecidedBy, Route};
use kea_engine::eval::{EvalResult, Metrics, Miss, RefusalMetrics};
use kea_engine::identify::{Decision, Identification};
use kea_engine::import::ImportReport;
use kea_engine::model::catalog::Role;
use kea_engine::retrieve::calibration::{Outcome, OutcomeRates};
use kea_engine::retrieve::{Reason, Relevance, StageTrace, Trace};
use kea_engine::settings::{LlmPreferences, PhotoClassifier, Settings, Theme};
use kea_engine::store::{ChunkRow, Conversation, DocRecord, StoredMessage};
use kea_engine::{Error, ErrorKind, IndexEvent, Status, SyncReport};
use kea_llm::ProviderPreference;
use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// An error the UI branches on by `kind` (an [`ErrorKind`] code), never by message.
#[derive(Debug, Clone, Serialize, TS)]
pub struct ErrorDto {
    #[ts(type = "ErrorKind")]
    pub kind: &'static str,
    pub message: String,
}

impl From<&Error> for ErrorDto {
    fn from(e: &Error) -> Self {
        ErrorDto::new(e.kind(), e.to_string())
    }
}

impl From<Error> for ErrorDto {
    fn from(e: Error) -> Self {
        ErrorDto::from(&e)
    }
}

impl ErrorDto {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        ErrorDto { kind: kind.code(), message: message.into() }
    }

    /// The engine is still opening (loading the index) in the background.
    pub fn not_ready() -> Self {
        ErrorDto::new(ErrorKind::NotReady, "the index is still opening")
    }
}

/// Whether a document is searchable or failed to index.
#[derive(Debug, Clone, Copy, Serialize, TS)]
#[serde(rename_all = "lowercase")]
pub enum DocumentState {
    Indexed,
    Error,
}

#[derive(Debug, Serialize, TS)]
pub struct DocumentDto {
    pub path: String,
    pub kind: String,
    #[ts(type = "number")]
    pub size: u64,
    pub status: DocumentState,
    pub error: Option<String>,
    pub title: Option<String>,
    pub chunks: usize,
}

impl From<DocRecord> for DocumentDto {
    fn from(d: DocRecord) -> Self {
        DocumentDto {
            path: d.path,
            kind: d.kind,
            size: d.size,
            status: if d.error.is_some() { DocumentState::Error } else { DocumentState::Indexed },
            error: d.error,
            title: d.title,
            chunks: d.chunk_count,
        }
    }
}

#[derive(Debug, Serialize, TS)]
pub struct StatusDto {
    pub knowledge_dir: String,
    pub model_id: Option<String>,
    pub documents: Vec<DocumentDto>,
    pub chunks: usize,
    #[ts(type = "number")]
    pub index_bytes: u64,
    /// The team store the index is shared through, if any.
    pub team: Option<TeamDto>,
}

/// A shared index: where, under which namespace, how many passages of others.
#[derive(Debug, Serialize, TS)]
pub struct TeamDto {
    pub store: String,
    pub namespace: String,
    pub mirrored_chunks: usize,
    /// Why team sync is offline (searches use the last copy); null when online.
    pub offline: Option<String>,
}

impl From<Status> for StatusDto {
    fn from(s: Status) -> Self {
        StatusDto {
            knowledge_dir: s.knowledge_dir.display().to_string(),
            model_id: s.model_id,
            documents: s.documents.into_iter().map(DocumentDto::from).collect(),
            chunks: s.chunks,
            index_bytes: s.index_bytes,
            team: s.team.map(|t| TeamDto { store: t.store, namespace: t.namespace, mirrored_chunks: t.mirrored_chunks, offline: t.offline }),
        }
    }
}

/// Index progress, broadcast to the UI as the `index-progress` event.
#[derive(Debug, Clone, Serialize, TS)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ProgressDto {
    Started { files_to_index: usize },
    FileDone { path: String, error: Option<String>, files_done: usize, files_total: usize },
    Finished { documents: usize, chunks: usize, embedded: usize, errors: usize },
}

impl ProgressDto {
    /// The UI-relevant part of an engine event (`None` for internal detail).
    pub fn from_event(event: &IndexEvent) -> Option<Self> {
        Some(match event {
            IndexEvent::Started { files_to_index, .. } => ProgressDto::Started { files_to_index: *files_to_index },
            IndexEvent::FileDone { path, error, files_done, files_total, .. } => {
                ProgressDto::FileDone { path: path.clone(), error: error.clone(), files_done: *files_done, files_total: *files_total }
            }
            IndexEvent::Finished { report } => Self::finished(report),
            IndexEvent::ChunksEmbedded { .. } | IndexEvent::Removed { .. } => return None,
        })
    }

    fn finished(r: &SyncReport) -> Self {
        ProgressDto::Finished { documents: r.documents, chunks: r.chunks, embedded: r.embedded, errors: r.errors.len() }
    }
}

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

#[derive(Debug, Clone, Serialize, TS)]
pub struct AnswerDto {
    #[ts(type = "number")]
    pub chat_id: i64,
    pub answer: String,
    pub citations: Vec<CitationDto>,
    pub notice: Option<String>,
    /// "answered", "unsure" (no direct answer: see `related`) or "refused".
    pub outcome: String,
    /// The closest passages when no direct answer was found.
    pub related: Vec<RelatedDto>,
    /// Sentences of the model's answer that its passages do not support,
    /// taken out of `answer`.
    pub unsupported: Vec<String>,
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
            notice: a.notice.clone(),
            outcome: outcome_name(a.outcome),
            related: a.related.iter().map(|r| RelatedDto { passage: CitationDto::from(&r.passage), snippet: r.snippet.clone() }).collect(),
            unsupported: a.unsupported.clone(),
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
    /// A stage started (`ms` null) or ended; `detail` is that stage's own
    /// diagnostic output, shown as JSON in the stage list.
    Stage {
        name: String,
        ms: Option<f64>,
        #[ts(type = "unknown")]
        detail: serde_json::Value,
    },
}

impl StreamDto {
    pub fn from_event(event: &ChatEvent) -> Option<Self> {
        Some(match event {
            ChatEvent::Token { text } => StreamDto::Token { text: text.clone() },
            ChatEvent::ToolStart { tool } => StreamDto::Stage { name: tool.to_string(), ms: None, detail: serde_json::Value::Null },
            ChatEvent::ToolEnd { tool, ms, output } => StreamDto::Stage { name: tool.to_string(), ms: Some(*ms), detail: output.clone() },
            ChatEvent::Status { .. } | ChatEvent::Final { .. } => return None,
        })
    }
}

/// The language model's decision over the evidence for a doubtful photo.
#[derive(Debug, Clone, Serialize, TS)]
pub struct DecisionDto {
    pub final_name: String,
    pub reasoning: String,
    pub followup: String,
}

impl From<&Decision> for DecisionDto {
    fn from(d: &Decision) -> Self {
        DecisionDto { final_name: d.final_name.clone(), reasoning: d.reasoning.clone(), followup: d.followup.clone() }
    }
}

#[derive(Debug, Clone, Serialize, TS)]
pub struct IdentificationDto {
    /// `[name, Chinese name, probability]`, best first.
    pub candidates: Vec<(String, Option<String>, f32)>,
    /// `High`, `Medium` or `Low`.
    pub level: String,
    pub visual_description: String,
    pub used_retrieval: bool,
    pub evidence: Vec<CitationDto>,
    pub decision: Option<DecisionDto>,
    pub reply: String,
    /// The conversation the photo and reply were saved in.
    #[ts(type = "number | null")]
    pub chat_id: Option<i64>,
}

impl From<&Identification> for IdentificationDto {
    fn from(r: &Identification) -> Self {
        IdentificationDto {
            candidates: r.candidates.iter().map(|c| (c.name.clone(), c.zh.clone(), c.probability)).collect(),
            level: format!("{:?}", r.level),
            visual_description: r.visual_description.clone(),
            used_retrieval: r.used_retrieval,
            evidence: r.evidence.iter().map(CitationDto::from).collect(),
            decision: r.decision.as_ref().map(DecisionDto::from),
            reply: r.reply.clone(),
            chat_id: r.chat_id,
        }
    }
}

#[derive(Debug, Serialize, TS)]
pub struct ImportDto {
    pub imported: Vec<String>,
    /// `[file, reason]` for each file not imported.
    pub rejected: Vec<(String, String)>,
}

impl From<ImportReport> for ImportDto {
    fn from(r: ImportReport) -> Self {
        ImportDto { imported: r.imported, rejected: r.rejected }
    }
}

/// Copy progress of an import (after each file).
#[derive(Debug, Serialize, TS)]
pub struct ImportProgressDto {
    pub path: String,
    pub files_done: usize,
    pub files_total: usize,
    #[ts(type = "number")]
    pub bytes_done: u64,
    #[ts(type = "number")]
    pub bytes_total: u64,
}

impl From<&kea_engine::import::ImportProgress> for ImportProgressDto {
    fn from(p: &kea_engine::import::ImportProgress) -> Self {
        ImportProgressDto { path: p.path.clone(), files_done: p.files_done, files_total: p.files_total, bytes_done: p.bytes_done, bytes_total: p.bytes_total }
    }
}

#[derive(Debug, Serialize, TS)]
pub struct PassageDto {
    #[ts(type = "number")]
    pub chunk_id: i64,
    pub source: String,
    pub heading_path: String,
    pub page: Option<u32>,
    pub text: String,
}

impl From<ChunkRow> for PassageDto {
    fn from(c: ChunkRow) -> Self {
        PassageDto { chunk_id: c.id, source: c.source, heading_path: c.heading_path, page: c.page, text: c.text }
    }
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
}

impl From<StoredMessage> for MessageDto {
    fn from(m: StoredMessage) -> Self {
        let role = if m.role == "user" { MessageRole::User } else { MessageRole::Assistant };
        // Stored as the answer's citations; anything else (older rows) shows none.
        let citations = serde_json::from_value(m.citations).unwrap_or_default();
        MessageDto { role, content: m.content, citations }
    }
}

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
        }
    }
}

/// The language model in use and why it was chosen.
#[derive(Debug, Clone, Serialize, TS)]
pub struct LlmInfoDto {
    pub provider: String,
    pub reason: String,
}

/// Which language model the user prefers (the settings' provider).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "lowercase")]
pub enum ProviderDto {
    Auto,
    Embedded,
    Openai,
    None,
}

impl From<ProviderPreference> for ProviderDto {
    fn from(p: ProviderPreference) -> Self {
        match p {
            ProviderPreference::Auto => ProviderDto::Auto,
            ProviderPreference::Embedded => ProviderDto::Embedded,
            ProviderPreference::Openai => ProviderDto::Openai,
            ProviderPreference::None => ProviderDto::None,
        }
    }
}

impl From<ProviderDto> for ProviderPreference {
    fn from(p: ProviderDto) -> Self {
        match p {
            ProviderDto::Auto => ProviderPreference::Auto,
            ProviderDto::Embedded => ProviderPreference::Embedded,
            ProviderDto::Openai => ProviderPreference::Openai,
            ProviderDto::None => ProviderPreference::None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "lowercase")]
pub enum ThemeDto {
    System,
    Light,
    Dark,
}

impl From<Theme> for ThemeDto {
    fn from(t: Theme) -> Self {
        match t {
            Theme::System => ThemeDto::System,
            Theme::Light => ThemeDto::Light,
            Theme::Dark => ThemeDto::Dark,
        }
    }
}

impl From<ThemeDto> for Theme {
    fn from(t: ThemeDto) -> Self {
        match t {
            ThemeDto::System => Theme::System,
            ThemeDto::Light => Theme::Light,
            ThemeDto::Dark => Theme::Dark,
        }
    }
}

/// The classifier behind photo identification.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum PhotoClassifierDto {
    Clip,
    VisionLlm,
}

impl From<PhotoClassifier> for PhotoClassifierDto {
    fn from(c: PhotoClassifier) -> Self {
        match c {
            PhotoClassifier::Clip => PhotoClassifierDto::Clip,
            PhotoClassifier::VisionLlm => PhotoClassifierDto::VisionLlm,
        }
    }
}

impl From<PhotoClassifierDto> for PhotoClassifier {
    fn from(c: PhotoClassifierDto) -> Self {
        match c {
            PhotoClassifierDto::Clip => PhotoClassifier::Clip,
            PhotoClassifierDto::VisionLlm => PhotoClassifier::VisionLlm,
        }
    }
}

/// What the system's file dialog asks the person for (`pick_paths`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum PickDto {
    /// Documents to import (Kea's file types).
    Documents,
    /// Folders to import.
    Folder,
    /// One golden set (JSONL) to evaluate.
    GoldenSet,
    /// A GGUF language model file (the settings' embedded model).
    Gguf,
}

/// What a model is for (the Models page's sections).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "lowercase")]
pub enum ModelRoleDto {
    Embedder,
    Reranker,
    Image,
    Llm,
}

impl From<Role> for ModelRoleDto {
    fn from(r: Role) -> Self {
        match r {
            Role::Embedder => ModelRoleDto::Embedder,
            Role::Reranker => ModelRoleDto::Reranker,
            Role::Image => ModelRoleDto::Image,
            Role::Llm => ModelRoleDto::Llm,
        }
    }
}

impl From<ModelRoleDto> for Role {
    fn from(r: ModelRoleDto) -> Self {
        match r {
            ModelRoleDto::Embedder => Role::Embedder,
            ModelRoleDto::Reranker => Role::Reranker,
            ModelRoleDto::Image => Role::Image,
            ModelRoleDto::Llm => Role::Llm,
        }
    }
}

/// The settings screen's fields. The API key never goes to the webview:
/// it reports `api_key_set`, and a new key is sent only when typed
/// (`api_key: ""` clears it, absent keeps it).
#[derive(Debug, Serialize, Deserialize, TS)]
pub struct SettingsDto {
    pub provider: ProviderDto,
    pub gguf: Option<String>,
    pub base_url: Option<String>,
    pub model: Option<String>,
    /// Sent only when typed: `""` clears the key, absent keeps it.
    #[serde(default, skip_serializing)]
    #[ts(optional)]
    pub api_key: Option<String>,
    #[serde(default)]
    pub api_key_set: bool,
    pub models_dir: Option<String>,
    /// `milvus://HOST:PORT/COLLECTION`: a team store (used at next start).
    pub team_store: Option<String>,
    /// This folder's namespace in the team store (default: host:folder).
    pub team_namespace: Option<String>,
    /// The team store's credentials (user:password or an API key), like the
    /// API key: sent only when typed, never shown back.
    #[serde(default, skip_serializing)]
    #[ts(optional)]
    pub team_token: Option<String>,
    #[serde(default)]
    pub team_token_set: bool,
    /// Where the secrets are kept: the system keyring, or (none answered) a
    /// file only the user can read.
    #[serde(default)]
    pub secrets_in_keyring: bool,
    pub rerank: bool,
    pub mmr: bool,
    pub mmr_lambda: f32,
    pub filter: bool,
    pub min_score: f32,
    pub llm_rerank: bool,
    pub summary: bool,
    pub query_expansion: bool,
    /// The interface language; none follows the system.
    #[ts(type = "\"zh\" | \"en\" | null")]
    pub language: Option<String>,
    pub theme: ThemeDto,
    pub photo_classifier: PhotoClassifierDto,
}

impl SettingsDto {
    /// The same, saying where the secrets are kept.
    pub fn kept_in(self, kind: kea_engine::secrets::SecretStoreKind) -> SettingsDto {
        SettingsDto { secrets_in_keyring: kind == kea_engine::secrets::SecretStoreKind::Keyring, ..self }
    }
}

impl From<&Settings> for SettingsDto {
    fn from(s: &Settings) -> Self {
        let shown = |p: &Option<std::path::PathBuf>| p.as_ref().map(|p| p.display().to_string());
        SettingsDto {
            provider: s.llm.provider.into(),
            gguf: shown(&s.llm.gguf),
            base_url: s.llm.base_url.clone(),
            model: s.llm.model.clone(),
            api_key: None,
            api_key_set: s.llm.api_key.as_deref().is_some_and(|k| !k.is_empty()),
            models_dir: shown(&s.models_dir),
            team_store: Some(s.team.store.clone()).filter(|t| !t.is_empty()),
            team_namespace: s.team.namespace.clone(),
            team_token: None,
            team_token_set: s.team.token.as_deref().is_some_and(|t| !t.is_empty()),
            secrets_in_keyring: false,
            rerank: s.retrieval.rerank,
            mmr: s.retrieval.mmr,
            mmr_lambda: s.retrieval.mmr_lambda,
            filter: s.retrieval.filter,
            min_score: s.retrieval.min_score,
            llm_rerank: s.enhance.llm_rerank,
            summary: s.enhance.summary,
            query_expansion: s.enhance.query_expansion,
            language: s.language.clone(),
            theme: s.theme.into(),
            photo_classifier: s.models.photo_classifier.into(),
        }
    }
}

/// One model of the catalog (the Models page).
#[derive(Debug, Serialize, TS)]
pub struct ModelDto {
    pub id: String,
    pub role: ModelRoleDto,
    pub name: String,
    pub languages: Vec<String>,
    #[ts(type = "number")]
    pub size_bytes: u64,
    pub license: String,
    pub description: String,
    pub installed: bool,
    pub active: bool,
    pub downloadable: bool,
}

impl From<&kea_engine::model::manager::ModelListing> for ModelDto {
    fn from(m: &kea_engine::model::manager::ModelListing) -> Self {
        ModelDto {
            id: m.id.clone(),
            role: m.role.into(),
            name: m.name.clone(),
            languages: m.languages.clone(),
            size_bytes: m.size_bytes,
            license: m.license.clone(),
            description: m.description.clone(),
            installed: m.installed,
            active: m.active,
            downloadable: m.downloadable,
        }
    }
}

/// One proposed model of the first-run plan.
#[derive(Debug, Serialize, TS)]
pub struct ProposalDto {
    pub role: ModelRoleDto,
    pub id: String,
    pub languages: Vec<String>,
    #[ts(type = "number")]
    pub bytes: u64,
    pub installed: bool,
    /// A running server's OpenAI-compatible base URL, for its model.
    pub base_url: Option<String>,
    #[ts(type = "number | null")]
    pub reembed_seconds: Option<u64>,
    pub reason: String,
}

/// The first-run plan: the folder's languages, the machine, the servers
/// found and one proposed model per role.
#[derive(Debug, Serialize, TS)]
pub struct PlanDto {
    /// Language code and share of the folder's text, largest first.
    pub languages: Vec<(String, f32)>,
    pub documents: usize,
    pub images: usize,
    #[ts(type = "number")]
    pub ram_bytes: u64,
    pub cores: usize,
    /// `kind at base URL` of each model server found on this machine.
    pub servers: Vec<String>,
    pub proposal: Vec<ProposalDto>,
    /// The folder's languages the embedder in use does not read.
    pub uncovered: Vec<String>,
    pub embedder: String,
    /// The languages the embedder reads (empty when many or not known).
    pub embedder_languages: Vec<String>,
    /// Not yet applied, reviewed or skipped for this data folder: the app offers it on launch.
    pub first_run: bool,
}

impl PlanDto {
    /// `first_run`: the data folder's settings say the plan was never applied, reviewed or skipped.
    pub fn new(p: &kea_engine::setup::Plan, first_run: bool) -> Self {
        let mut languages: Vec<(String, f32)> = p.languages.iter().map(|(l, s)| (l.clone(), *s)).collect();
        languages.sort_by(|a, b| b.1.total_cmp(&a.1));
        PlanDto {
            languages,
            documents: p.documents,
            images: p.images,
            ram_bytes: p.machine.ram_bytes,
            cores: p.machine.cores,
            servers: p.servers.iter().map(|s| format!("{} at {}", s.kind, s.base_url)).collect(),
            proposal: p
                .proposal
                .iter()
                .map(|m| ProposalDto {
                    role: m.role.into(),
                    id: m.id.clone(),
                    languages: m.languages.clone(),
                    bytes: m.bytes,
                    installed: m.installed,
                    base_url: m.base_url.clone(),
                    reembed_seconds: m.reembed_seconds,
                    reason: m.reason.clone(),
                })
                .collect(),
            uncovered: p.uncovered.clone(),
            embedder: p.embedder.clone(),
            embedder_languages: p.embedder_languages.clone(),
            first_run,
        }
    }
}

/// Download progress of one model or several installed together (over the
/// install command's Channel): bytes across all of them, `models_done` of
/// `models` finished, the model and file being fetched now.
#[derive(Debug, Clone, Serialize, TS)]
pub struct DownloadDto {
    pub model: String,
    pub file: String,
    #[ts(type = "number")]
    pub done_bytes: u64,
    #[ts(type = "number")]
    pub total_bytes: u64,
    pub models_done: usize,
    pub models: usize,
}

impl From<&kea_engine::model::download::DownloadProgress> for DownloadDto {
    fn from(p: &kea_engine::model::download::DownloadProgress) -> Self {
        DownloadDto {
            model: p.model.clone(),
            file: p.file.clone(),
            done_bytes: p.done_bytes,
            total_bytes: p.total_bytes,
            models_done: p.models_done,
            models: p.models,
        }
    }
}

/// A remote embedder as the Models page enters it.
#[derive(Debug, Deserialize, TS)]
pub struct RemoteEmbedderDto {
    pub base_url: String,
    pub model: String,
    pub api_key: Option<String>,
    #[ts(type = "\"openai\" | \"ollama\"")]
    pub api: String,
    /// Comma-separated, e.g. `zh,en`; empty means many.
    pub languages: String,
}

impl RemoteEmbedderDto {
    pub fn into_config(self) -> kea_engine::remote_embed::RemoteEmbedConfig {
        use kea_engine::remote_embed::{RemoteApi, RemoteEmbedConfig};
        RemoteEmbedConfig {
            base_url: self.base_url.trim().to_string(),
            model: self.model.trim().to_string(),
            api_key: self.api_key.map(|k| k.trim().to_string()).filter(|k| !k.is_empty()),
            api: if self.api == "ollama" { RemoteApi::Ollama } else { RemoteApi::Openai },
            languages: self.languages.split(',').map(|l| l.trim().to_string()).filter(|l| !l.is_empty()).collect(),
            ..Default::default()
        }
    }
}

/// What switching the embedder would cost.
#[derive(Debug, Serialize, TS)]
pub struct ReembedCostDto {
    pub indexed_model: Option<String>,
    pub documents: usize,
    pub chunks: usize,
    pub estimated_seconds: f64,
}

impl From<kea_engine::ReembedCost> for ReembedCostDto {
    fn from(c: kea_engine::ReembedCost) -> Self {
        ReembedCostDto { indexed_model: c.indexed_model, documents: c.documents, chunks: c.chunks, estimated_seconds: c.estimated_seconds }
    }
}

impl SettingsDto {
    /// The settings with these fields applied over `previous` (which keeps
    /// every knob the screen does not show, and the key unless replaced).
    pub fn into_settings(self, previous: &Settings) -> Settings {
        let path = |p: Option<String>| p.filter(|p| !p.trim().is_empty()).map(std::path::PathBuf::from);
        let text = |t: Option<String>| t.map(|t| t.trim().to_string()).filter(|t| !t.is_empty());
        let mut next = previous.clone();
        let key_typed = self.api_key.is_some();
        next.llm = LlmPreferences {
            provider: self.provider.into(),
            gguf: path(self.gguf),
            base_url: text(self.base_url),
            model: text(self.model),
            api_key: text(self.api_key),
        };
        if !key_typed {
            next.llm.carry_key_from(&previous.llm);
        }
        next.models_dir = path(self.models_dir);
        let store = text(self.team_store).unwrap_or_default();
        // Like the API key: a token is kept only for the store it was typed for.
        let token = match self.team_token {
            Some(typed) => text(Some(typed)),
            None => previous.team.token.clone().filter(|_| previous.team.store == store),
        };
        next.team = kea_engine::team::TeamConfig { store, namespace: text(self.team_namespace), token };
        next.retrieval.rerank = self.rerank;
        next.retrieval.mmr = self.mmr;
        next.retrieval.mmr_lambda = self.mmr_lambda;
        next.retrieval.filter = self.filter;
        next.retrieval.min_score = self.min_score;
        next.enhance.llm_rerank = self.llm_rerank;
        next.enhance.summary = self.summary;
        next.enhance.query_expansion = self.query_expansion;
        next.language = text(self.language);
        next.theme = self.theme.into();
        next.models.photo_classifier = self.photo_classifier.into();
        next
    }
}

/// `ui/src/ipc.ts`: every DTO as a TypeScript declaration, and the union of error kinds.
#[cfg(test)]
fn typescript_contract() -> String {
    let kinds: Vec<String> = ErrorKind::ALL.iter().map(|k| format!("\"{}\"", k.code())).collect();
    let declarations = [
        ErrorDto::decl(),
        DocumentState::decl(),
        ReasonDto::decl(),
        ProposalDto::decl(),
        PlanDto::decl(),
        DocumentDto::decl(),
        StatusDto::decl(),
        TeamDto::decl(),
        ProgressDto::decl(),
        CitationDto::decl(),
        RouteDto::decl(),
        StageDto::decl(),
        RelevanceDto::decl(),
        TraceDto::decl(),
        SummaryDto::decl(),
        RelatedDto::decl(),
        AnswerDto::decl(),
        StreamDto::decl(),
        DecisionDto::decl(),
        IdentificationDto::decl(),
        ImportDto::decl(),
        ImportProgressDto::decl(),
        PickDto::decl(),
        PassageDto::decl(),
        PassageNameDto::decl(),
        OutcomesDto::decl(),
        ConversationDto::decl(),
        MessageRole::decl(),
        MessageDto::decl(),
        MetricsDto::decl(),
        MissDto::decl(),
        RefusalDto::decl(),
        EvalDto::decl(),
        LlmInfoDto::decl(),
        ProviderDto::decl(),
        ThemeDto::decl(),
        PhotoClassifierDto::decl(),
        ModelRoleDto::decl(),
        SettingsDto::decl(),
        ModelDto::decl(),
        DownloadDto::decl(),
        RemoteEmbedderDto::decl(),
        ReembedCostDto::decl(),
    ];
    let mut out = String::from("// Generated from src-tauri/src/dto.rs (ts-rs) by `make ipc`; do not edit.\n\n");
    out.push_str(&format!("export type ErrorKind = {};\n", kinds.join(" | ")));
    let extensions: Vec<String> = kea_engine::extract::DocKind::EXTENSIONS.iter().map(|(ext, _)| format!("\"{ext}\"")).collect();
    out.push_str(&format!("/** The file extensions Kea indexes. */\nexport const DOCUMENT_EXTENSIONS = [{}];\n", extensions.join(", ")));
    for declaration in declarations {
        out.push_str(&format!("export {declaration}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The UI's types are generated from these DTOs: a DTO change without
    /// `make ipc` (KEA_UPDATE_IPC=1) fails here, and a UI that no longer
    /// fits the new types fails `tsc` in `npm run build`.
    #[test]
    fn the_typescript_contract_is_current() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("ui/src/ipc.ts");
        let generated = typescript_contract();
        if std::env::var_os("KEA_UPDATE_IPC").is_some() {
            std::fs::write(&path, &generated).unwrap();
        }
        let current = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(current == generated, "ui/src/ipc.ts is stale: run `make ipc` (it regenerates it from src-tauri/src/dto.rs)");
    }

    #[test]
    fn stored_citations_come_back_typed() {
        let citations = serde_json::json!([{"id": "S1", "source": "a.md", "heading_path": "A", "page": null, "chunk_id": 3, "chunk_ids": [3, 4]}]);
        let message = StoredMessage { id: 1, role: "assistant".into(), content: "x".into(), citations, route: None };
        let dto = MessageDto::from(message);
        assert_eq!((dto.role, dto.citations.len(), dto.citations[0].chunk_ids.clone()), (MessageRole::Assistant, 1, vec![3, 4]));
        let odd = StoredMessage { id: 2, role: "user".into(), content: "y".into(), citations: serde_json::json!({"not": "a list"}), route: None };
        assert!(MessageDto::from(odd).citations.is_empty(), "an unexpected stored shape shows no citations");
    }

    #[test]
    fn errors_cross_as_kind_and_message() {
        let dto = ErrorDto::from(Error::InvalidInput("empty query".into()));
        assert_eq!(serde_json::to_value(&dto).unwrap(), serde_json::json!({"kind": "invalid_input", "message": "invalid input: empty query"}));
    }

    #[test]
    fn progress_events_are_tagged() {
        let event = IndexEvent::FileDone { path: "a.md".into(), chunks: 2, embedded: 1, reused: 1, error: None, read_ms: 4, files_done: 1, files_total: 3 };
        let dto = ProgressDto::from_event(&event).unwrap();
        assert_eq!(serde_json::to_value(&dto).unwrap()["type"], "file_done");
        assert!(ProgressDto::from_event(&IndexEvent::ChunksEmbedded { count: 4 }).is_none());
    }

    #[test]
    fn stream_events_keep_tokens_and_stages() {
        let token = StreamDto::from_event(&ChatEvent::Token { text: "Hi".into() }).unwrap();
        assert_eq!(serde_json::to_value(token).unwrap(), serde_json::json!({"type": "token", "text": "Hi"}));
        let stage = StreamDto::from_event(&ChatEvent::ToolEnd { tool: "retrieval", ms: 3.5, output: serde_json::json!({"hits": 2}) }).unwrap();
        assert_eq!(serde_json::to_value(stage).unwrap()["name"], "retrieval");
        assert!(StreamDto::from_event(&ChatEvent::Status { message: "x".into() }).is_none());
    }

    #[test]
    fn the_api_key_never_reaches_the_webview_and_survives_a_save() {
        let mut settings = Settings::default();
        settings.llm.api_key = Some("sk-secret".into());
        let dto = SettingsDto::from(&settings);
        let json = serde_json::to_string(&dto).unwrap();
        assert!(!json.contains("sk-secret") && json.contains("\"api_key_set\":true"), "{json}");
        let back: SettingsDto = serde_json::from_str(&json).unwrap();
        assert_eq!(back.into_settings(&settings).llm.api_key.as_deref(), Some("sk-secret"));
        let mut cleared: SettingsDto = serde_json::from_str(&json).unwrap();
        cleared.api_key = Some(String::new());
        assert_eq!(cleared.into_settings(&settings).llm.api_key, None);
    }

    /// Issue 24: the webview changes the endpoint without typing a key:
    /// the old key is dropped, never sent to the new host.
    #[test]
    fn a_new_base_url_from_the_webview_drops_the_old_key() {
        let mut settings = Settings::default();
        settings.llm.base_url = Some("https://api.example.com/v1".into());
        settings.llm.api_key = Some("sk-secret".into());
        let mut moved = SettingsDto::from(&settings);
        moved.base_url = Some("https://collector.example.net/v1".into());
        assert_eq!(moved.into_settings(&settings).llm.api_key, None);
        let mut same = SettingsDto::from(&settings);
        same.model = Some("another-model".into());
        assert_eq!(same.into_settings(&settings).llm.api_key.as_deref(), Some("sk-secret"));
    }
}
