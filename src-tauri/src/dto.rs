//! The JSON shapes that cross the IPC boundary. Only the shell knows them;
//! each converts from an engine type and nothing else.

use kea_engine::chat::{ChatAnswer, ChatEvent, Citation};
use kea_engine::eval::EvalResult;
use kea_engine::identify::Identification;
use kea_engine::import::ImportReport;
use kea_engine::settings::{LlmPreferences, Settings, Theme};
use kea_engine::store::{ChunkRow, Conversation, DocRecord, StoredMessage};
use kea_engine::{Error, IndexEvent, Status, SyncReport};
use serde::{Deserialize, Serialize};

/// An error the UI branches on by `kind`, never by message.
#[derive(Debug, Clone, Serialize)]
pub struct ErrorDto {
    pub kind: &'static str,
    pub message: String,
}

impl From<&Error> for ErrorDto {
    fn from(e: &Error) -> Self {
        ErrorDto { kind: e.kind().code(), message: e.to_string() }
    }
}

impl From<Error> for ErrorDto {
    fn from(e: Error) -> Self {
        ErrorDto::from(&e)
    }
}

impl ErrorDto {
    pub fn new(kind: &'static str, message: impl Into<String>) -> Self {
        ErrorDto { kind, message: message.into() }
    }

    /// The engine is still opening (loading the index) in the background.
    pub fn not_ready() -> Self {
        ErrorDto { kind: "not_ready", message: "the index is still opening".into() }
    }
}

#[derive(Debug, Serialize)]
pub struct DocumentDto {
    pub path: String,
    pub kind: String,
    pub size: u64,
    pub status: &'static str,
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
            status: if d.error.is_some() { "error" } else { "indexed" },
            error: d.error,
            title: d.title,
            chunks: d.chunk_count,
        }
    }
}

#[derive(Debug, Serialize)]
pub struct StatusDto {
    pub knowledge_dir: String,
    pub model_id: Option<String>,
    pub documents: Vec<DocumentDto>,
    pub chunks: usize,
    pub index_bytes: u64,
}

impl From<Status> for StatusDto {
    fn from(s: Status) -> Self {
        StatusDto {
            knowledge_dir: s.knowledge_dir.display().to_string(),
            model_id: s.model_id,
            documents: s.documents.into_iter().map(DocumentDto::from).collect(),
            chunks: s.chunks,
            index_bytes: s.index_bytes,
        }
    }
}

/// Index progress, broadcast to the UI as the `index-progress` event.
#[derive(Debug, Clone, Serialize)]
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

#[derive(Debug, Clone, Serialize)]
pub struct CitationDto {
    pub id: String,
    pub source: String,
    pub heading_path: String,
    pub page: Option<u32>,
    pub chunk_id: i64,
    /// Every chunk of the cited block.
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

#[derive(Debug, Clone, Serialize)]
pub struct AnswerDto {
    pub chat_id: i64,
    pub answer: String,
    pub citations: Vec<CitationDto>,
    pub notice: Option<String>,
    pub refused: bool,
    pub provider: String,
    /// The route and the retrieval trace, for "how this was answered".
    pub route: serde_json::Value,
    pub trace: serde_json::Value,
    /// Per-passage summaries (the opt-in summary step), shown with the sources.
    pub summaries: Vec<kea_engine::chat::enhance::PassageSummary>,
}

impl From<&ChatAnswer> for AnswerDto {
    fn from(a: &ChatAnswer) -> Self {
        AnswerDto {
            chat_id: a.chat_id,
            answer: a.answer.clone(),
            citations: a.citations.iter().map(CitationDto::from).collect(),
            notice: a.notice.clone(),
            refused: a.refused,
            provider: a.provider_detail.clone(),
            route: serde_json::to_value(&a.route).unwrap_or_default(),
            trace: serde_json::to_value(&a.retrieval).unwrap_or_default(),
            summaries: a.summaries.clone(),
        }
    }
}

/// One streamed event of an answer or identification (sent over a Channel).
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum StreamDto {
    Token { text: String },
    Stage { name: String, ms: Option<f64>, detail: serde_json::Value },
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

#[derive(Debug, Clone, Serialize)]
pub struct IdentificationDto {
    pub candidates: Vec<(String, Option<String>, f32)>,
    pub level: String,
    pub visual_description: String,
    pub used_retrieval: bool,
    pub evidence: Vec<CitationDto>,
    pub decision: serde_json::Value,
    pub reply: String,
    /// The conversation the photo and reply were saved in.
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
            decision: serde_json::to_value(&r.decision).unwrap_or_default(),
            reply: r.reply.clone(),
            chat_id: r.chat_id,
        }
    }
}

#[derive(Debug, Serialize)]
pub struct ImportDto {
    pub imported: Vec<String>,
    pub rejected: Vec<(String, String)>,
}

impl From<ImportReport> for ImportDto {
    fn from(r: ImportReport) -> Self {
        ImportDto { imported: r.imported, rejected: r.rejected }
    }
}

#[derive(Debug, Serialize)]
pub struct PassageDto {
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

#[derive(Debug, Serialize)]
pub struct ConversationDto {
    pub id: i64,
    pub title: String,
}

impl From<Conversation> for ConversationDto {
    fn from(c: Conversation) -> Self {
        ConversationDto { id: c.id, title: c.title }
    }
}

/// One stored message of a conversation, for reopening it.
#[derive(Debug, Serialize)]
pub struct MessageDto {
    pub role: String,
    pub content: String,
    pub citations: serde_json::Value,
}

impl From<StoredMessage> for MessageDto {
    fn from(m: StoredMessage) -> Self {
        MessageDto { role: m.role, content: m.content, citations: m.citations }
    }
}

/// One configuration's evaluation: metrics, per language, and the misses.
#[derive(Debug, Serialize)]
pub struct EvalDto {
    pub name: String,
    pub metrics: serde_json::Value,
    pub by_lang: serde_json::Value,
    pub misses: serde_json::Value,
    pub ms_per_query: f64,
    /// Refusal metrics, when the set has unanswerable questions.
    pub refusal: Option<kea_engine::eval::RefusalMetrics>,
}

impl From<&EvalResult> for EvalDto {
    fn from(r: &EvalResult) -> Self {
        EvalDto {
            name: r.name.clone(),
            metrics: serde_json::to_value(&r.metrics).unwrap_or_default(),
            by_lang: serde_json::to_value(&r.by_lang).unwrap_or_default(),
            misses: serde_json::to_value(&r.misses).unwrap_or_default(),
            ms_per_query: r.ms_per_query,
            refusal: r.refusal.clone(),
        }
    }
}

/// The settings screen's fields. The API key never goes to the webview:
/// it reports `api_key_set`, and a new key is sent only when typed
/// (`api_key: ""` clears it, absent keeps it).
#[derive(Debug, Serialize, Deserialize)]
pub struct SettingsDto {
    pub provider: kea_llm::ProviderPreference,
    pub gguf: Option<String>,
    pub base_url: Option<String>,
    pub model: Option<String>,
    #[serde(default, skip_serializing)]
    pub api_key: Option<String>,
    #[serde(default)]
    pub api_key_set: bool,
    pub models_dir: Option<String>,
    pub rerank: bool,
    pub mmr: bool,
    pub mmr_lambda: f32,
    pub filter: bool,
    pub min_score: f32,
    pub llm_rerank: bool,
    pub summary: bool,
    pub query_expansion: bool,
    pub language: Option<String>,
    pub theme: Theme,
    pub photo_classifier: kea_engine::settings::PhotoClassifier,
}

impl From<&Settings> for SettingsDto {
    fn from(s: &Settings) -> Self {
        let shown = |p: &Option<std::path::PathBuf>| p.as_ref().map(|p| p.display().to_string());
        SettingsDto {
            provider: s.llm.provider,
            gguf: shown(&s.llm.gguf),
            base_url: s.llm.base_url.clone(),
            model: s.llm.model.clone(),
            api_key: None,
            api_key_set: s.llm.api_key.as_deref().is_some_and(|k| !k.is_empty()),
            models_dir: shown(&s.models_dir),
            rerank: s.retrieval.rerank,
            mmr: s.retrieval.mmr,
            mmr_lambda: s.retrieval.mmr_lambda,
            filter: s.retrieval.filter,
            min_score: s.retrieval.min_score,
            llm_rerank: s.enhance.llm_rerank,
            summary: s.enhance.summary,
            query_expansion: s.enhance.query_expansion,
            language: s.language.clone(),
            theme: s.theme,
            photo_classifier: s.models.photo_classifier,
        }
    }
}

/// One model of the catalog (the Models page).
#[derive(Debug, Serialize)]
pub struct ModelDto {
    pub id: String,
    pub role: &'static str,
    pub name: String,
    pub languages: Vec<String>,
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
            role: m.role.as_str(),
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

/// Download progress of a model (over the install command's Channel).
#[derive(Debug, Clone, Serialize)]
pub struct DownloadDto {
    pub model: String,
    pub file: String,
    pub done_bytes: u64,
    pub total_bytes: u64,
}

impl From<&kea_engine::model::download::DownloadProgress> for DownloadDto {
    fn from(p: &kea_engine::model::download::DownloadProgress) -> Self {
        DownloadDto { model: p.model.clone(), file: p.file.clone(), done_bytes: p.done_bytes, total_bytes: p.total_bytes }
    }
}

/// A remote embedder as the Models page enters it.
#[derive(Debug, Deserialize)]
pub struct RemoteEmbedderDto {
    pub base_url: String,
    pub model: String,
    pub api_key: Option<String>,
    /// `openai` or `ollama`.
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
#[derive(Debug, Serialize)]
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
        next.llm = LlmPreferences {
            provider: self.provider,
            gguf: path(self.gguf),
            base_url: text(self.base_url),
            model: text(self.model),
            api_key: match self.api_key {
                Some(key) => text(Some(key)),
                None => previous.llm.api_key.clone(),
            },
        };
        next.models_dir = path(self.models_dir);
        next.retrieval.rerank = self.rerank;
        next.retrieval.mmr = self.mmr;
        next.retrieval.mmr_lambda = self.mmr_lambda;
        next.retrieval.filter = self.filter;
        next.retrieval.min_score = self.min_score;
        next.enhance.llm_rerank = self.llm_rerank;
        next.enhance.summary = self.summary;
        next.enhance.query_expansion = self.query_expansion;
        next.language = text(self.language);
        next.theme = self.theme;
        next.models.photo_classifier = self.photo_classifier;
        next
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_cross_as_kind_and_message() {
        let dto = ErrorDto::from(Error::InvalidInput("empty query".into()));
        assert_eq!(serde_json::to_value(&dto).unwrap(), serde_json::json!({"kind": "invalid_input", "message": "invalid input: empty query"}));
    }

    #[test]
    fn progress_events_are_tagged() {
        let event = IndexEvent::FileDone { path: "a.md".into(), chunks: 2, embedded: 1, reused: 1, error: None, files_done: 1, files_total: 3 };
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
}
