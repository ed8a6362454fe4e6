//! Listing the knowledge folder: the supported files (recursively) with
//! their size and modification time, skipping hidden files, editor temp
//! files, the folder's own README.md, and symbolic links.

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

/// Lists the supported files below `root`, sorted by relative path.
pub fn scan(root: &Path) -> Result<Vec<DiskFile>> {
    if !root.is_dir() {
        return Err(Error::InvalidInput(format!("knowledge folder {} does not exist or is not a folder", root.display())));
    }
    Ok(scan_under(root, root))
}

/// The supported files at or below `path` (a file or a folder inside
/// `root`), sorted by relative path; nothing when it is gone or hidden.
pub fn scan_under(root: &Path, path: &Path) -> Vec<DiskFile> {
    let Ok(rel) = path.strip_prefix(root) else { return Vec::new() };
    if rel.components().any(|c| is_hidden_or_temp(&c.as_os_str().to_string_lossy())) {
        return Vec::new();
    }
    let mut files = Vec::new();
    let walker =
        walkdir::WalkDir::new(path).follow_links(false).into_iter().filter_entry(|e| e.depth() == 0 || !is_hidden_or_temp(&e.file_name().to_string_lossy()));
    for entry in walker.flatten() {
        if !entry.file_type().is_file() {
            continue;
        }
        let Ok(rel_path) = entry.path().strip_prefix(root) else { continue };
        let rel = relative_key(rel_path);
        if rel.eq_ignore_ascii_case("README.md") {
            continue;
        }
        let Some(kind) = DocKind::from_path(entry.path()) else { continue };
        let Ok(meta) = entry.metadata() else { continue };
        files.push(DiskFile { rel, abs: entry.path().to_path_buf(), kind, size: meta.len(), mtime_ns: mtime_ns(&meta) });
    }
    files.sort_by(|a, b| a.rel.cmp(&b.rel));
    files
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
        let got: Vec<String> = scan(root).unwrap().into_iter().map(|f| f.rel).collect();
        assert_eq!(got, ["a.md", "d.docx", "e.png", "sub/b.TXT", "sub/c.pdf"]);
        let under: Vec<String> = scan_under(root, &root.join("sub")).into_iter().map(|f| f.rel).collect();
        assert_eq!(under, ["sub/b.TXT", "sub/c.pdf"]);
        assert_eq!(scan_under(root, &root.join("a.md")).len(), 1);
        assert!(scan_under(root, &root.join(".git/h.md")).is_empty() && scan_under(root, &root.join("gone.md")).is_empty());
        assert!(is_indexable(Path::new("sub/b.TXT")));
        assert!(!is_indexable(Path::new(".git/h.md")));
        assert!(!is_indexable(Path::new("README.md")));
    }

    #[test]
    fn missing_folder_is_a_clear_error() {
        let err = scan(Path::new("/nonexistent/knowledge")).unwrap_err();
        assert_eq!(err.kind(), crate::ErrorKind::InvalidInput);
    }
}
