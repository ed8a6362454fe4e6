//! The JSON shapes that cross the IPC boundary. Only the shell knows them;
//! each converts from an engine type and nothing else.

use kea_engine::store::DocRecord;
use kea_engine::{Error, Hit, IndexEvent, Status, SyncReport};
use serde::Serialize;

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

#[derive(Debug, Serialize)]
pub struct HitDto {
    pub chunk_id: i64,
    pub source: String,
    pub heading_path: String,
    pub page: Option<u32>,
    pub score: f32,
    pub text: String,
}

impl From<Hit> for HitDto {
    fn from(h: Hit) -> Self {
        HitDto {
            chunk_id: h.chunk.id,
            source: h.chunk.source,
            heading_path: h.chunk.heading_path,
            page: h.chunk.page,
            score: h.score,
            text: h.chunk.text,
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
            IndexEvent::FileDone { path, error, files_done, files_total, .. } => ProgressDto::FileDone {
                path: path.clone(),
                error: error.clone(),
                files_done: *files_done,
                files_total: *files_total,
            },
            IndexEvent::Finished { report } => Self::finished(report),
            IndexEvent::ChunksEmbedded { .. } | IndexEvent::Removed { .. } => return None,
        })
    }

    fn finished(r: &SyncReport) -> Self {
        ProgressDto::Finished { documents: r.documents, chunks: r.chunks, embedded: r.embedded, errors: r.errors.len() }
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
}
