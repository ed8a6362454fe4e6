//! The JSON shapes that cross the IPC boundary, one file per feature. Only
//! the shell knows them; each converts from an engine type and nothing
//! else. `ui/src/ipc.ts` is generated from them (ts-rs): the test
//! `the_typescript_contract_is_current` fails when it is stale, and `make
//! ipc` rewrites it.

mod chat;
mod collections;
mod eval;
mod identify;
mod knowledge;
mod models;
mod settings;

pub use chat::*;
pub use collections::*;
pub use eval::*;
pub use identify::*;
pub use knowledge::*;
pub use models::*;
pub use settings::*;

use kea_engine::{Error, ErrorKind};
use serde::Serialize;
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

/// Every DTO as a TypeScript declaration, in the contract's order.
#[cfg(test)]
fn declarations() -> Vec<String> {
    vec![
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
        ShownDto::decl(),
        AnswerDto::decl(),
        StreamDto::decl(),
        DecisionDto::decl(),
        IdentificationDto::decl(),
        ImportDto::decl(),
        ImportProgressDto::decl(),
        WebPageDto::decl(),
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
        AnswersDto::decl(),
        EvalDto::decl(),
        LlmInfoDto::decl(),
        ProviderDto::decl(),
        ThemeDto::decl(),
        PhotoClassifierDto::decl(),
        ModelRoleDto::decl(),
        SettingsDto::decl(),
        McpConfigDto::decl(),
        ModelDto::decl(),
        DownloadDto::decl(),
        RemoteEmbedderDto::decl(),
        ReembedCostDto::decl(),
        StrictnessDto::decl(),
        CollectionSettingsDto::decl(),
        CollectionDto::decl(),
        CollectionFileDto::decl(),
    ]
}

/// `ui/src/ipc.ts`: every DTO as a TypeScript declaration, and the union of error kinds.
#[cfg(test)]
fn typescript_contract() -> String {
    let kinds: Vec<String> = ErrorKind::ALL.iter().map(|k| format!("\"{}\"", k.code())).collect();
    let mut out = String::from("// Generated from src-tauri/src/dto/ (ts-rs) by `make ipc`; do not edit.\n\n");
    out.push_str(&format!("export type ErrorKind = {};\n", kinds.join(" | ")));
    let extensions: Vec<String> = kea_engine::extract::DocKind::EXTENSIONS.iter().map(|(ext, _)| format!("\"{ext}\"")).collect();
    out.push_str(&format!("/** The file extensions Kea indexes. */\nexport const DOCUMENT_EXTENSIONS = [{}];\n", extensions.join(", ")));
    for declaration in declarations() {
        out.push_str(&format!("export {declaration}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use kea_engine::chat::ChatEvent;
    use kea_engine::settings::Settings;
    use kea_engine::store::StoredMessage;
    use kea_engine::IndexEvent;

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
        assert!(current == generated, "ui/src/ipc.ts is stale: run `make ipc` (it regenerates it from src-tauri/src/dto/)");
        assert!(!generated.contains("unknown") && !generated.contains(": any"), "every IPC field is typed");
    }

    #[test]
    fn stored_citations_come_back_typed() {
        let citations = serde_json::json!([{"id": "S1", "source": "a.md", "heading_path": "A", "page": null, "chunk_id": 3, "chunk_ids": [3, 4]}]);
        let related = serde_json::json!([{"id": "R1", "source": "b.md", "heading_path": "B", "page": 2, "chunk_id": 5, "chunk_ids": [5], "snippet": "Close."}]);
        let shown = serde_json::json!({"outcome": "unsure", "notice": null, "related": related, "unsupported": []});
        let message = StoredMessage { id: 1, role: kea_llm::Role::Assistant, content: "x".into(), citations, route: None, shown: Some(shown) };
        let dto = MessageDto::from(message);
        assert_eq!((dto.role, dto.citations.len(), dto.citations[0].chunk_ids.clone()), (MessageRole::Assistant, 1, vec![3, 4]));
        let shown = dto.shown.expect("what the answer showed");
        assert_eq!((shown.outcome.as_str(), shown.related[0].passage.page, shown.related[0].snippet.as_str()), ("unsure", Some(2), "Close."));
        let odd = StoredMessage {
            id: 2,
            role: kea_llm::Role::User,
            content: "y".into(),
            citations: serde_json::json!({"not": "a list"}),
            route: None,
            shown: Some(serde_json::json!({"outcome": "maybe"})),
        };
        let odd = MessageDto::from(odd);
        assert!(odd.citations.is_empty() && odd.shown.is_none(), "an unexpected stored shape shows nothing of it");
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
        let output = serde_json::json!({"hits": 2, "best_score": 0.8312, "query": "a b", "blocks": ["S1 a.md"]});
        let stage = StreamDto::from_event(&ChatEvent::ToolEnd { tool: "retrieval", ms: 3.5, output }).unwrap();
        let sent = serde_json::to_value(stage).unwrap();
        assert_eq!(sent["name"], "retrieval");
        let fields: Vec<(String, String)> = serde_json::from_value(sent["fields"].clone()).unwrap();
        let expected = [("best score", "0.83"), ("hits", "2"), ("query", "a b")].map(|(n, v)| (n.to_string(), v.to_string()));
        assert_eq!(fields, expected, "plain values by name; a list is only in the raw text");
        assert!(sent["raw"].as_str().unwrap().contains("\"S1 a.md\""));
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
