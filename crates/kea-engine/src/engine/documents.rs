//! [`Documents`]: the knowledge folder's documents one at a time — import
//! into it, add a web page to it (and fetch it again), locate and read
//! one, delete or re-index it. Document keys come
//! from the UI relative to the knowledge folder and are checked to stay
//! inside it.

use std::path::{Component, Path, PathBuf};

use super::Engine;
use crate::error::{Error, Result};
use crate::import::{ImportProgress, ImportReport};
use crate::progress::{CancelToken, ProgressSink, SyncReport};
use crate::web::FetchLimits;

/// A web page kept in the collection (see [`Documents::add_web_page`]).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct WebPageAdded {
    /// The document's key.
    pub key: String,
    pub url: String,
    pub title: Option<String>,
    /// It replaced an earlier copy of the same address.
    pub refetched: bool,
    pub report: SyncReport,
}

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

/// The documents of the knowledge folder (see [`Engine::documents`]).
pub struct Documents<'a> {
    pub(crate) engine: &'a Engine,
}

impl Documents<'_> {
    /// The file on disk behind an indexed document key, which must resolve
    /// (after symlinks) inside the knowledge folder.
    pub fn path(&self, key: &str) -> Result<PathBuf> {
        checked_key(key)?;
        let (root, joined) = self.engine.folders().path_of(key).ok_or_else(|| Error::NotFound(format!("{key} is in none of the collection's folders")))?;
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
    pub fn bytes(&self, key: &str) -> Result<Vec<u8>> {
        let path = self.path(key)?;
        let limit = self.engine.config().max_file_bytes;
        let size = std::fs::metadata(&path).map_err(|e| Error::io(format!("reading {key}"), e))?.len();
        if size > limit {
            return Err(Error::InvalidInput(format!("{key} is {} MB, over the {} MB limit", size / 1_000_000, limit / 1_000_000)));
        }
        std::fs::read(&path).map_err(|e| Error::io(format!("reading {key}"), e))
    }

    /// Deletes a document's file and drops it from the index.
    pub fn delete(&self, key: &str, sink: &dyn ProgressSink, cancel: &CancelToken) -> Result<SyncReport> {
        self.engine.writable()?;
        let path = self.path(key)?;
        std::fs::remove_file(&path).map_err(|e| Error::io(format!("deleting {key}"), e))?;
        self.engine.indexer().sync_paths(&[path], sink, cancel)
    }

    /// Extracts, chunks and indexes one document again even if unchanged
    /// (unchanged chunks keep their vectors).
    pub fn reindex(&self, key: &str, sink: &dyn ProgressSink, cancel: &CancelToken) -> Result<SyncReport> {
        self.engine.writable()?;
        checked_key(key)?;
        let Some((_, path)) = self.engine.folders().path_of(key) else { return Err(Error::NotFound(format!("{key} is not indexed"))) };
        if !self.engine.store().mark_stale(key)? {
            return Err(Error::NotFound(format!("{key} is not indexed")));
        }
        self.engine.indexer().sync_paths(&[path], sink, cancel)
    }

    /// Fetches the page at `url` (within `limits`, see [`crate::web`]), keeps
    /// it as an `.html` file in the collection's first folder and indexes
    /// it; a page Kea kept from the same address is replaced, so adding it
    /// again fetches it again. The page is read once, under the limits of
    /// every document (in the reader process, within its time budget): that
    /// reading names the file and is what the sync indexes.
    pub fn add_web_page(&self, url: &str, limits: &FetchLimits, sink: &dyn ProgressSink, cancel: &CancelToken) -> Result<WebPageAdded> {
        self.engine.writable()?;
        let folder = self.engine.folders().primary().ok_or_else(|| Error::InvalidInput(crate::folders::NO_FOLDER.into()))?.to_path_buf();
        crate::web::pages_folder(&folder)?;
        let page = crate::web::fetch_page(url, limits)?;
        let saved = crate::web::saved_page(&page).into_bytes();
        let doc = self.read_page(&saved).map_err(|e| Error::InvalidInput(format!("{}: {e}", page.url)))?;
        if doc.plain.trim().is_empty() {
            return Err(Error::InvalidInput(format!("{}: the page has no text to keep", page.url)));
        }
        // Only a page Kea kept is replaced: a note, clipping or page saved from a browser citing the same address is the user's.
        let earlier = self.engine.store().documents_saved_from(&page.url)?;
        let existing = earlier.iter().find_map(|key| self.kept_page(key));
        let refetched = existing.is_some();
        let title = doc.title.clone();
        self.engine.preread.keep(&saved, doc);
        let file = crate::web::keep_page(&folder, &page, &saved, title.as_deref(), existing)?;
        let report = self.engine.indexer().sync_paths(std::slice::from_ref(&file), sink, cancel)?;
        let key = self.engine.folders().key_of(&file).ok_or_else(|| Error::InvalidInput(format!("{} is outside the collection's folders", file.display())))?;
        Ok(WebPageAdded { key, url: page.url, title, refetched, report })
    }

    /// A page's bytes read as an HTML document under a file's limits (the
    /// reader process, the time budget of its size).
    fn read_page(&self, bytes: &[u8]) -> std::result::Result<crate::extract::Extracted, String> {
        let config = self.engine.config();
        let deadline = std::time::Instant::now() + config.file_budget.for_size(bytes.len() as u64);
        let context = crate::extract::ExtractContext { ocr: None, deadline };
        crate::ingest::read_document(crate::extract::DocKind::Html, bytes.to_vec(), config.reader.as_ref(), context)
    }

    /// Fetches a kept web page again from its address (see [`Self::add_web_page`]).
    pub fn refetch(&self, key: &str, limits: &FetchLimits, sink: &dyn ProgressSink, cancel: &CancelToken) -> Result<WebPageAdded> {
        checked_key(key)?;
        if self.kept_page(key).is_none() {
            return Err(Error::InvalidInput(format!("{key} is not a web page Kea keeps (those are in {}/)", crate::web::WEB_PAGES_FOLDER)));
        }
        let record = self.engine.store().document(key)?.ok_or_else(|| Error::NotFound(format!("{key} is not indexed")))?;
        let url = record.link().ok_or_else(|| Error::InvalidInput(format!("{key} has no web address to fetch it from")))?;
        self.add_web_page(&url, limits, sink, cancel)
    }

    /// How many documents the collection has, and `limit` of them from the
    /// `offset`-th in path order.
    pub fn page(&self, offset: usize, limit: usize) -> Result<(usize, Vec<crate::store::DocRecord>)> {
        self.engine.reader.lock().unwrap_or_else(|p| p.into_inner()).documents_page(offset, limit)
    }

    /// The file of `key` when it is a page Kea keeps: an HTML file directly
    /// in the first folder's [`crate::web::WEB_PAGES_FOLDER`] that begins
    /// with Kea's own mark (a page saved from a browser there is the user's).
    fn kept_page(&self, key: &str) -> Option<PathBuf> {
        let path = self.path(key).ok()?;
        let pages = self.engine.folders().primary()?.join(crate::web::WEB_PAGES_FOLDER);
        let html = path.extension().is_some_and(|e| e.eq_ignore_ascii_case("html"));
        (html && path.parent() == Some(pages.as_path()) && crate::web::is_kept_by_kea(&path)).then_some(path)
    }

    /// The document's indexed text, section by section (its passages in
    /// order, overlaps removed, each section under its heading path and a
    /// PDF's pages marked): what a client of Kea reads to open a citation.
    pub fn indexed_text(&self, key: &str) -> Result<String> {
        checked_key(key)?;
        let chunks = self.engine.reader.lock().unwrap_or_else(|p| p.into_inner()).document_chunks(key)?;
        if chunks.is_empty() {
            return Err(Error::NotFound(format!("{key} is not indexed (or has no text)")));
        }
        Ok(stitched(&chunks))
    }

    /// Copies `sources` (files or folders) into the knowledge folder,
    /// telling `on_copied` after each file (see [`crate::import`]).
    pub fn import(&self, sources: &[PathBuf], on_copied: &mut dyn FnMut(&ImportProgress)) -> Result<ImportReport> {
        self.engine.writable()?;
        let folder = self.engine.folders().primary().ok_or_else(|| Error::InvalidInput(crate::folders::NO_FOLDER.into()))?;
        crate::import::import_into(folder, self.engine.config().max_file_bytes, sources, on_copied)
    }
}

/// Passages of one document, in order, as one text (see [`Documents::indexed_text`]).
fn stitched(chunks: &[crate::store::ChunkRow]) -> String {
    let mut out = String::new();
    let (mut heading, mut page, mut end) = (None, None, 0);
    for chunk in chunks {
        if chunk.page.is_some() && chunk.page != page {
            page = chunk.page;
            out.push_str(&format!("\n[p. {}]\n", chunk.page.unwrap_or_default()));
        }
        if heading != Some(&chunk.heading_path) && !chunk.heading_path.is_empty() {
            heading = Some(&chunk.heading_path);
            out.push_str(&format!("\n## {}\n\n", chunk.heading_path));
        } else if chunk.byte_start > end {
            out.push_str("\n\n");
        }
        // Overlapping chunks repeat the end of the one before: only what is new.
        let skip = end.saturating_sub(chunk.byte_start).min(chunk.text.len());
        out.push_str(chunk.text.get(skip..).unwrap_or(&chunk.text));
        end = end.max(chunk.byte_end);
    }
    out.trim().to_string()
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
        assert_eq!(engine.documents().path("link.md").unwrap_err().kind(), crate::ErrorKind::InvalidInput);
        assert_eq!(engine.documents().path("gone.md").unwrap_err().kind(), crate::ErrorKind::NotFound);
        assert_eq!(engine.documents().path("mine.md").unwrap(), knowledge.join("mine.md"));
        assert!(engine.documents().delete("link.md", &(), &CancelToken::new()).is_err());
        assert_eq!(std::fs::read_to_string(outside.join("precious.md")).unwrap(), "keep me");
    }
}
