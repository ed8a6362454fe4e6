//! Managing what is indexed and said: one document (locate, delete,
//! re-index) and conversations (messages, rename, delete). Document paths
//! come from the UI as keys relative to the knowledge folder and are checked
//! to stay inside it.

use std::path::{Component, Path, PathBuf};

use crate::error::{Error, Result};
use crate::progress::{CancelToken, ProgressSink, SyncReport};
use crate::store::StoredMessage;
use crate::Engine;

/// Rejects keys that are absolute or climb out (`..`), and files of a kind
/// Kea does not index (a script is never opened or deleted through Kea),
/// before touching disk.
fn checked_key(key: &str) -> Result<&Path> {
    let path = Path::new(key);
    let plain = path.components().all(|c| matches!(c, Component::Normal(_)));
    if key.is_empty() || !plain {
        return Err(Error::InvalidInput(format!("'{key}' is not a path inside the knowledge folder")));
    }
    if crate::extract::DocKind::from_path(path).is_none() {
        return Err(Error::InvalidInput(format!("'{key}' is not a kind of document Kea reads")));
    }
    Ok(path)
}

impl Engine {
    /// The file on disk behind an indexed document key, which must resolve
    /// (after symlinks) inside the knowledge folder.
    pub fn document_path(&self, key: &str) -> Result<PathBuf> {
        let rel = checked_key(key)?;
        let root = self.knowledge_dir();
        let joined = root.join(rel);
        let missing = |e: std::io::Error| match e.kind() {
            std::io::ErrorKind::NotFound => Error::NotFound(format!("{key} is no longer in the knowledge folder")),
            _ => Error::io(format!("resolving {key}"), e),
        };
        let resolved = joined.canonicalize().map_err(missing)?;
        let root = root.canonicalize().map_err(|e| Error::io(format!("resolving {}", root.display()), e))?;
        if !resolved.starts_with(&root) {
            return Err(Error::InvalidInput(format!("{key} points outside the knowledge folder")));
        }
        Ok(joined)
    }

    /// A document's bytes (for showing a cited PDF page), read only inside
    /// the knowledge folder and up to the size limit of indexing.
    pub fn document_bytes(&self, key: &str) -> Result<Vec<u8>> {
        let path = self.document_path(key)?;
        let size = std::fs::metadata(&path).map_err(|e| Error::io(format!("reading {key}"), e))?.len();
        if size > self.config().max_file_bytes {
            return Err(Error::InvalidInput(format!("{key} is {} MB, over the {} MB limit", size / 1_000_000, self.config().max_file_bytes / 1_000_000)));
        }
        std::fs::read(&path).map_err(|e| Error::io(format!("reading {key}"), e))
    }

    /// Deletes a document's file and drops it from the index.
    pub fn delete_document(&self, key: &str, sink: &dyn ProgressSink, cancel: &CancelToken) -> Result<SyncReport> {
        let path = self.document_path(key)?;
        std::fs::remove_file(&path).map_err(|e| Error::io(format!("deleting {key}"), e))?;
        self.sync_paths(&[path], sink, cancel)
    }

    /// Extracts, chunks and indexes one document again even if unchanged
    /// (unchanged chunks keep their vectors).
    pub fn reindex_document(&self, key: &str, sink: &dyn ProgressSink, cancel: &CancelToken) -> Result<SyncReport> {
        let rel = checked_key(key)?;
        if !self.store().mark_stale(key)? {
            return Err(Error::NotFound(format!("{key} is not indexed")));
        }
        self.sync_paths(&[self.knowledge_dir().join(rel)], sink, cancel)
    }

    /// All messages of a conversation, oldest first.
    pub fn conversation_messages(&self, id: i64) -> Result<Vec<StoredMessage>> {
        let store = self.store();
        if store.conversation(id)?.is_none() {
            return Err(Error::NotFound(format!("conversation {id}")));
        }
        store.recent_messages(id, usize::MAX >> 1)
    }

    pub fn rename_conversation(&self, id: i64, title: &str) -> Result<()> {
        let title = title.trim();
        if title.is_empty() {
            return Err(Error::InvalidInput("a conversation needs a title".into()));
        }
        self.store().rename_conversation(id, title)
    }

    pub fn delete_conversation(&self, id: i64) -> Result<()> {
        self.store().delete_conversation(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_must_stay_inside_the_knowledge_folder() {
        for bad in ["", "../secret.md", "/etc/passwd", "a/../../b.md", "./a.md"] {
            assert_eq!(checked_key(bad).unwrap_err().kind(), crate::ErrorKind::InvalidInput, "{bad}");
        }
        for not_a_document in ["run.sh", "app.desktop", "tool.exe", "notes"] {
            assert_eq!(checked_key(not_a_document).unwrap_err().kind(), crate::ErrorKind::InvalidInput, "{not_a_document}");
        }
        assert!(checked_key("parrots/kea.md").is_ok());
        assert!(checked_key("鹦鹉/玄凤 鹦鹉.md").is_ok());
    }

    #[test]
    fn a_symlink_out_of_the_knowledge_folder_is_never_opened_or_deleted() {
        let tmp = tempfile::tempdir().unwrap();
        let (knowledge, outside) = (tmp.path().join("knowledge"), tmp.path().join("outside"));
        std::fs::create_dir_all(&knowledge).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("precious.md"), "keep me").unwrap();
        std::os::unix::fs::symlink(outside.join("precious.md"), knowledge.join("link.md")).unwrap();
        std::fs::write(knowledge.join("mine.md"), "# Mine").unwrap();
        let engine = Engine::open(crate::EngineConfig::new(&knowledge, tmp.path().join("data"))).unwrap();
        assert_eq!(engine.document_path("link.md").unwrap_err().kind(), crate::ErrorKind::InvalidInput);
        assert_eq!(engine.document_path("gone.md").unwrap_err().kind(), crate::ErrorKind::NotFound);
        assert_eq!(engine.document_path("mine.md").unwrap(), knowledge.join("mine.md"));
        assert!(engine.delete_document("link.md", &(), &CancelToken::new()).is_err());
        assert_eq!(std::fs::read_to_string(outside.join("precious.md")).unwrap(), "keep me");
    }

    #[test]
    fn conversations_are_listed_renamed_reopened_and_deleted() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join("k")).unwrap();
        let engine = Engine::open(crate::EngineConfig::new(tmp.path().join("k"), tmp.path().join("d"))).unwrap();
        let id = engine.store().create_conversation("What do cockatiels eat?").unwrap();
        engine.store().add_message(id, "user", "What do cockatiels eat?", &serde_json::json!([]), None).unwrap();
        engine.store().add_message(id, "assistant", "Seeds [S1].", &serde_json::json!([{"id": "S1"}]), None).unwrap();
        engine.rename_conversation(id, "  Cockatiel diet ").unwrap();
        assert_eq!(engine.conversations().unwrap()[0].title, "Cockatiel diet");
        assert_eq!(engine.rename_conversation(id, " ").unwrap_err().kind(), crate::ErrorKind::InvalidInput);
        let messages = engine.conversation_messages(id).unwrap();
        assert_eq!(messages.iter().map(|m| m.role.as_str()).collect::<Vec<_>>(), ["user", "assistant"]);
        engine.delete_conversation(id).unwrap();
        assert!(engine.conversations().unwrap().is_empty());
        assert_eq!(engine.conversation_messages(id).unwrap_err().kind(), crate::ErrorKind::NotFound);
    }
}
