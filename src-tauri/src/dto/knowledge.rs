//! IPC shapes for documents, index status and progress, imports, passages, and
//! what the file dialog asks for.

use kea_engine::import::ImportReport;
use kea_engine::store::{ChunkRow, DocRecord};
use kea_engine::{IndexEvent, Status, SyncReport};
use serde::{Deserialize, Serialize};
use ts_rs::TS;

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
    /// When it was last read (Unix seconds).
    #[ts(type = "number")]
    pub indexed_at: i64,
    /// Its web address (a saved web page's): it opens there and can be fetched again.
    pub link: Option<String>,
}

impl From<DocRecord> for DocumentDto {
    fn from(d: DocRecord) -> Self {
        let link = d.link();
        DocumentDto {
            path: d.path,
            kind: d.kind.map_or(kea_engine::store::MIRRORED_KIND, |k| k.as_str()).to_string(),
            size: d.size,
            status: if d.error.is_some() { DocumentState::Error } else { DocumentState::Indexed },
            error: d.error,
            title: d.title,
            chunks: d.chunk_count,
            indexed_at: d.indexed_at,
            link,
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
    /// `[path, why]` of what the last full sync left out on purpose.
    pub skipped: Vec<(String, String)>,
    /// Indexing is paused (searches go on).
    pub paused: bool,
    /// The files the last run has yet to read (running, paused or cancelled).
    pub queued: Vec<String>,
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
            skipped: s.skipped.into_iter().map(|f| (f.path, f.message)).collect(),
            paused: s.paused,
            queued: s.queued,
        }
    }
}

/// Index progress, broadcast to the UI as the `index-progress` event.
#[derive(Debug, Clone, Serialize, TS)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ProgressDto {
    /// `queued`: the first files the run will read, in order.
    Started {
        files_to_index: usize,
        queued: Vec<String>,
    },
    FileDone {
        path: String,
        error: Option<String>,
        files_done: usize,
        files_total: usize,
    },
    Finished {
        documents: usize,
        chunks: usize,
        embedded: usize,
        errors: usize,
    },
}

impl ProgressDto {
    /// The UI-relevant part of an engine event (`None` for internal detail).
    pub fn from_event(event: &IndexEvent) -> Option<Self> {
        Some(match event {
            IndexEvent::Started { files_to_index, queued, .. } => ProgressDto::Started { files_to_index: *files_to_index, queued: queued.clone() },
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

/// A web page added to the collection, or fetched again.
#[derive(Debug, Serialize, TS)]
pub struct WebPageDto {
    /// The document's key.
    pub path: String,
    pub url: String,
    pub title: Option<String>,
    /// It replaced an earlier copy of the same address.
    pub refetched: bool,
}

impl From<kea_engine::WebPageAdded> for WebPageDto {
    fn from(w: kea_engine::WebPageAdded) -> Self {
        WebPageDto { path: w.key, url: w.url, title: w.title, refetched: w.refetched }
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
