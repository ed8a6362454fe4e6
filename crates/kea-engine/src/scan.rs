//! Listing the knowledge folder: the supported files (recursively) with
//! their size and modification time, skipping hidden files, editor temp
//! files, the folder's own README.md, and symbolic links (never followed,
//! also when a changed path names one or passes through one).

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::extract::DocKind;

/// A supported file on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiskFile {
    /// Path relative to the knowledge folder, `/`-separated: the document key.
    pub rel: String,
    pub abs: PathBuf,
    pub kind: DocKind,
    pub size: u64,
    pub mtime_ns: i64,
}

/// What a scan found: the supported files, and the places it could not
/// read (a folder without permission, a flaky network mount). Documents
/// under an unreadable place are kept, not taken for deleted.
#[derive(Debug, Default)]
pub struct Listing {
    pub files: Vec<DiskFile>,
    /// Relative key of each unreadable place, with the reason.
    pub unreadable: Vec<(String, String)>,
}

impl Listing {
    /// Whether the document `rel` is at or under an unreadable place.
    pub fn hides(&self, rel: &str) -> bool {
        self.unreadable.iter().any(|(place, _)| place.is_empty() || rel == place || rel.strip_prefix(place.as_str()).is_some_and(|r| r.starts_with('/')))
    }
}

/// Lists the supported files below `root`, sorted by relative path.
pub fn scan(root: &Path) -> Result<Listing> {
    if !root.is_dir() {
        return Err(Error::InvalidInput(format!("knowledge folder {} does not exist or is not a folder", root.display())));
    }
    Ok(scan_under(root, root))
}

/// The supported files at or below `path` (a file or a folder inside
/// `root`), sorted by relative path; nothing when it is gone or hidden.
pub fn scan_under(root: &Path, path: &Path) -> Listing {
    let mut listing = Listing::default();
    let Ok(rel) = path.strip_prefix(root) else { return listing };
    if rel.components().any(|c| is_hidden_or_temp(&c.as_os_str().to_string_lossy())) || passes_a_link(root, rel) {
        return listing;
    }
    let walker = walkdir::WalkDir::new(path)
        .follow_links(false)
        // The knowledge folder itself may be a link; nothing below it is followed.
        .follow_root_links(path == root)
        .into_iter()
        .filter_entry(|e| e.depth() == 0 || !is_hidden_or_temp(&e.file_name().to_string_lossy()));
    for entry in walker {
        let entry = match entry {
            Ok(entry) => entry,
            Err(e) => {
                let gone = e.io_error().is_some_and(|io| io.kind() == std::io::ErrorKind::NotFound);
                if let (false, Some(place)) = (gone, e.path().and_then(|p| p.strip_prefix(root).ok())) {
                    listing.unreadable.push((relative_key(place), format!("cannot read this folder: {e}; its documents are kept")));
                }
                continue;
            }
        };
        if !entry.file_type().is_file() {
            continue;
        }
        let Ok(rel_path) = entry.path().strip_prefix(root) else { continue };
        let rel = relative_key(rel_path);
        if rel.eq_ignore_ascii_case("README.md") {
            continue;
        }
        let Some(kind) = DocKind::from_path(entry.path()) else { continue };
        match entry.metadata() {
            Ok(meta) => listing.files.push(DiskFile { rel, abs: entry.path().to_path_buf(), kind, size: meta.len(), mtime_ns: mtime_ns(&meta) }),
            Err(e) => listing.unreadable.push((rel, format!("cannot read this file's details: {e}; it is kept"))),
        }
    }
    listing.files.sort_by(|a, b| a.rel.cmp(&b.rel));
    listing
}

/// Whether `rel` (inside `root`) is reached through a symbolic link: a
/// link is never followed, whether it names a file, a folder outside the
/// knowledge folder or a loop.
fn passes_a_link(root: &Path, rel: &Path) -> bool {
    let mut at = root.to_path_buf();
    rel.components().any(|c| {
        at.push(c);
        std::fs::symlink_metadata(&at).is_ok_and(|m| m.file_type().is_symlink())
    })
}

/// Whether a path (relative to the knowledge folder) is one the index keeps.
pub fn is_indexable(rel: &Path) -> bool {
    let hidden = rel.components().any(|c| is_hidden_or_temp(&c.as_os_str().to_string_lossy()));
    !hidden && DocKind::from_path(rel).is_some() && !relative_key(rel).eq_ignore_ascii_case("README.md")
}

/// The document key of a relative path.
pub fn relative_key(rel: &Path) -> String {
    rel.components().map(|c| c.as_os_str().to_string_lossy()).collect::<Vec<_>>().join("/")
}

/// Hidden files, Office lock files (`~$x.docx`), vim/emacs temp files.
fn is_hidden_or_temp(name: &str) -> bool {
    name.starts_with('.')
        || name.starts_with("~$")
        || name.starts_with('#')
        || name.ends_with('~')
        || [".swp", ".swo", ".tmp", ".part", ".crdownload"].iter().any(|s| name.ends_with(s))
}

/// Modification time in nanoseconds since the epoch (0 when unknown).
/// Reads a file up to `limit` bytes; `None` when it no longer exists. Only
/// a regular file is read, never through a link: the open does not wait (a
/// FIFO put in a file's place answers at once), and anything else is refused.
pub(crate) fn read_regular(path: &Path, limit: u64) -> std::result::Result<Option<Vec<u8>>, String> {
    use std::io::Read;
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, libc::O_NONBLOCK | libc::O_NOFOLLOW);
    let handle = match options.open(path) {
        Ok(handle) => handle,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot open: {e}")),
    };
    let size = match handle.metadata() {
        Ok(meta) if meta.is_file() => meta.len(),
        _ => return Err("not a regular file (a pipe, a device or a link): skipped".into()),
    };
    let mut bytes = Vec::with_capacity(size.min(limit) as usize);
    handle.take(limit + 1).read_to_end(&mut bytes).map_err(|e| format!("cannot read: {e}"))?;
    if bytes.len() as u64 > limit {
        return Err(format!("file is over the {} MB limit", limit / 1_000_000));
    }
    Ok(Some(bytes))
}

pub fn mtime_ns(meta: &std::fs::Metadata) -> i64 {
    meta.modified().ok().and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok()).map_or(0, |d| d.as_nanos() as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_supported_files_and_skips_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for name in ["README.md", "a.md", "sub/b.TXT", "sub/c.pdf", "d.docx", "e.png", "i.gif", ".hidden.md", "f.md~", "~$g.docx", ".git/h.md", "x.md.swp"] {
            let path = root.join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "x").unwrap();
        }
        #[cfg(unix)]
        std::os::unix::fs::symlink(root.join("a.md"), root.join("link.md")).unwrap();
        let got: Vec<String> = scan(root).unwrap().files.into_iter().map(|f| f.rel).collect();
        assert_eq!(got, ["a.md", "d.docx", "e.png", "sub/b.TXT", "sub/c.pdf"]);
        let under: Vec<String> = scan_under(root, &root.join("sub")).files.into_iter().map(|f| f.rel).collect();
        assert_eq!(under, ["sub/b.TXT", "sub/c.pdf"]);
        assert_eq!(scan_under(root, &root.join("a.md")).files.len(), 1);
        assert!(scan_under(root, &root.join(".git/h.md")).files.is_empty() && scan_under(root, &root.join("gone.md")).files.is_empty());
        assert!(is_indexable(Path::new("sub/b.TXT")));
        assert!(!is_indexable(Path::new(".git/h.md")));
        assert!(!is_indexable(Path::new("README.md")));
    }

    /// Issue 24: the watcher's paths were walked through a symlinked folder.
    #[cfg(unix)]
    #[test]
    fn a_linked_folder_or_a_loop_is_never_walked_into() {
        let dir = tempfile::tempdir().unwrap();
        let (root, outside) = (dir.path().join("k"), dir.path().join("outside"));
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("secret.md"), "x").unwrap();
        std::fs::write(root.join("sub/mine.md"), "x").unwrap();
        std::os::unix::fs::symlink(&outside, root.join("out")).unwrap();
        std::os::unix::fs::symlink(&root, root.join("sub/loop")).unwrap();
        for named in [root.join("out"), root.join("out/secret.md"), root.join("sub/loop"), root.join("sub/loop/sub/mine.md")] {
            assert!(scan_under(&root, &named).files.is_empty(), "{}", named.display());
        }
        let all: Vec<String> = scan(&root).unwrap().files.into_iter().map(|f| f.rel).collect();
        assert_eq!(all, ["sub/mine.md"]);
    }

    #[test]
    fn missing_folder_is_a_clear_error() {
        let err = scan(Path::new("/nonexistent/knowledge")).unwrap_err();
        assert_eq!(err.kind(), crate::ErrorKind::InvalidInput);
    }
}
