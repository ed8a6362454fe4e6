//! Listing the knowledge folder: the supported files (recursively) with
//! their size and modification time, skipping hidden files (so `.git/`,
//! Obsidian's `.obsidian/` and `.trash/`), editor temp files, the folder's
//! own README.md, what its `.gitignore` and `.keaignore` files ignore
//! (gitignore syntax, in any folder; one that cannot be used — over 1 MB,
//! patterns that cannot be built — is listed as skipped with why, and the
//! documents below it are indexed), and symbolic links (never followed,
//! also when a changed path names one or passes through one).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use ignore::gitignore::{Gitignore, GitignoreBuilder};

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
    /// Files and folders left out on purpose, with why (ignored by a rule,
    /// not a kind Kea reads), at most [`MAX_SKIPPED`].
    pub skipped: Vec<(String, String)>,
}

/// How many skipped files a listing names (a folder of build output would
/// otherwise list thousands).
pub const MAX_SKIPPED: usize = 1000;
/// Why a file or folder a rule ignores is not indexed.
pub const IGNORED: &str = "ignored by a .gitignore or .keaignore rule";
/// Why a file of another kind is not indexed.
pub const NOT_A_DOCUMENT: &str = "not a kind of document Kea reads";

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
    let mut rules = IgnoreRules::new(root);
    if rules.ignores_or_above(rel, path.is_dir()) {
        listing.unreadable = rules.unreadable;
        listing.skipped = rules.unusable;
        return listing;
    }
    let ignored = std::cell::RefCell::new(Vec::new());
    let walker = walkdir::WalkDir::new(path)
        .follow_links(false)
        // The knowledge folder itself may be a link; nothing below it is followed.
        .follow_root_links(path == root)
        .into_iter()
        .filter_entry(|e| {
            if e.depth() == 0 || is_hidden_or_temp(&e.file_name().to_string_lossy()) {
                return e.depth() == 0;
            }
            let Ok(rel) = e.path().strip_prefix(root) else { return true };
            let ignore = rules.ignores(rel, e.file_type().is_dir());
            if ignore && ignored.borrow().len() < MAX_SKIPPED {
                ignored.borrow_mut().push((relative_key(rel), IGNORED.to_string()));
            }
            !ignore
        });
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
        if entry.file_type().is_file() {
            list_file(&mut listing, root, &entry);
        }
    }
    listing.unreadable.append(&mut rules.unreadable);
    listing.skipped.append(&mut rules.unusable);
    listing.skipped.extend(ignored.into_inner());
    listing.skipped.truncate(MAX_SKIPPED);
    listing.skipped.sort();
    listing.files.sort_by(|a, b| a.rel.cmp(&b.rel));
    listing
}

/// Adds a regular file the walk met: a document, a file of another kind
/// (skipped, with why), or one whose details cannot be read.
fn list_file(listing: &mut Listing, root: &Path, entry: &walkdir::DirEntry) {
    let Ok(rel_path) = entry.path().strip_prefix(root) else { return };
    let rel = relative_key(rel_path);
    if rel.eq_ignore_ascii_case("README.md") {
        return;
    }
    let Some(kind) = DocKind::from_path(entry.path()) else {
        if listing.skipped.len() < MAX_SKIPPED {
            listing.skipped.push((rel, NOT_A_DOCUMENT.to_string()));
        }
        return;
    };
    match entry.metadata() {
        Ok(meta) => listing.files.push(DiskFile { rel, abs: entry.path().to_path_buf(), kind, size: meta.len(), mtime_ns: mtime_ns(&meta) }),
        Err(e) => listing.unreadable.push((rel, format!("cannot read this file's details: {e}; it is kept"))),
    }
}

/// The files of gitignore-syntax patterns a folder may hold; in one folder
/// `.keaignore` comes last, so its patterns (`!` included) have the last word.
pub const IGNORE_FILES: [&str; 2] = [".gitignore", ".keaignore"];

/// The largest ignore file read.
const IGNORE_FILE_LIMIT: u64 = 1_000_000;

/// Whether `rel` (relative to the knowledge folder) names an ignore file
/// the scan reads: a change to one changes what belongs in the index.
pub fn is_ignore_file(rel: &Path) -> bool {
    let name = rel.file_name().map(|n| n.to_string_lossy());
    name.is_some_and(|n| IGNORE_FILES.contains(&n.as_ref()))
        && rel.parent().is_none_or(|p| !p.components().any(|c| is_hidden_or_temp(&c.as_os_str().to_string_lossy())))
}

/// The ignore rules of the folders a scan passes through, each folder's
/// read once. As in git, the deepest folder whose patterns match a path
/// decides, and nothing below an ignored folder is looked at.
struct IgnoreRules<'a> {
    root: &'a Path,
    /// Each folder's rules, by relative path.
    by_folder: HashMap<PathBuf, FolderRules>,
    /// Folders whose ignore file could not be read (nothing below them is
    /// listed, and their documents are kept), and ignore files with a bad line.
    unreadable: Vec<(String, String)>,
    /// Ignore files that were read but cannot be used (too large, patterns
    /// that cannot be built), with why: left out, and said so.
    unusable: Vec<(String, String)>,
}

/// One folder's rules: each of its ignore files' patterns, the one with
/// the last word ([`IGNORE_FILES`]' last) first.
enum FolderRules {
    Patterns(Vec<Gitignore>),
    /// An ignore file there cannot be read: everything below is left alone.
    Unreadable,
}

impl<'a> IgnoreRules<'a> {
    fn new(root: &'a Path) -> Self {
        IgnoreRules { root, by_folder: HashMap::new(), unreadable: Vec::new(), unusable: Vec::new() }
    }

    /// Whether the path `rel` (a folder when `is_dir`) is ignored by the
    /// rules of the folders above it.
    fn ignores(&mut self, rel: &Path, is_dir: bool) -> bool {
        for folder in rel.ancestors().skip(1) {
            let Ok(inside) = rel.strip_prefix(folder) else { continue };
            let matched = match self.folder(folder) {
                FolderRules::Unreadable => return true,
                FolderRules::Patterns(files) => files.iter().map(|rules| rules.matched(inside, is_dir)).find(|m| !m.is_none()),
            };
            match matched {
                Some(ignore::Match::Ignore(_)) => return true,
                Some(ignore::Match::Whitelist(_)) => return false,
                _ => {}
            }
        }
        false
    }

    /// Whether `rel` or a folder above it is ignored (a path named alone,
    /// as the watcher names them, is not reached by walking down).
    fn ignores_or_above(&mut self, rel: &Path, is_dir: bool) -> bool {
        let above: Vec<&Path> = rel.ancestors().skip(1).filter(|a| !a.as_os_str().is_empty()).collect();
        above.into_iter().rev().any(|folder| self.ignores(folder, true)) || (!rel.as_os_str().is_empty() && self.ignores(rel, is_dir))
    }

    /// The rules of `folder` (relative), read at the first ask.
    fn folder(&mut self, folder: &Path) -> &FolderRules {
        if !self.by_folder.contains_key(folder) {
            let rules = match read_ignore_files(self.root, folder, &mut self.unreadable, &mut self.unusable) {
                Ok(files) => FolderRules::Patterns(files),
                Err(message) => {
                    self.unreadable.push((relative_key(folder), message));
                    FolderRules::Unreadable
                }
            };
            self.by_folder.insert(folder.to_path_buf(), rules);
        }
        &self.by_folder[folder]
    }
}

/// The patterns of `folder`'s ignore files, the last word first; a file
/// that is a link is not followed (nor read), a bad pattern is reported
/// and the others apply. A file that cannot be used — over
/// [`IGNORE_FILE_LIMIT`], or patterns that cannot be built — is reported in
/// `unusable` and left out: the documents below its folder are indexed as
/// if it were not there (the safest clear choice: a tree is never dropped
/// from the index without a word, and the problem shows in the status).
/// `Err`: one could not be read (a transient I/O problem): the folder is left as it is.
fn read_ignore_files(
    root: &Path,
    folder: &Path,
    problems: &mut Vec<(String, String)>,
    unusable: &mut Vec<(String, String)>,
) -> std::result::Result<Vec<Gitignore>, String> {
    let abs = root.join(folder);
    let mut files = Vec::new();
    for name in IGNORE_FILES.iter().rev() {
        let path = abs.join(name);
        let key = relative_key(&folder.join(name));
        match std::fs::symlink_metadata(&path) {
            Ok(meta) if meta.file_type().is_symlink() => continue,
            Ok(meta) if meta.len() > IGNORE_FILE_LIMIT => {
                unusable.push((key, format!("over {} MB: its patterns are not used (the documents below it are indexed)", IGNORE_FILE_LIMIT / 1_000_000)));
                continue;
            }
            Ok(_) => {}
            Err(_) => continue,
        }
        let Some(bytes) = read_regular(&path, IGNORE_FILE_LIMIT).map_err(|e| format!("cannot read its {name} ({e}); its documents are kept"))? else {
            continue;
        };
        let mut builder = GitignoreBuilder::new(&abs);
        for (number, line) in String::from_utf8_lossy(&bytes).lines().enumerate() {
            if let Err(e) = builder.add_line(None, line) {
                problems.push((key.clone(), format!("line {} is not a valid pattern ({e}); the other lines apply", number + 1)));
            }
        }
        match builder.build() {
            Ok(rules) => files.push(rules),
            Err(e) => unusable.push((key, format!("its patterns cannot be used ({e}): they are not (the documents below it are indexed)"))),
        }
    }
    Ok(files)
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

/// Hidden files and folders (Obsidian's settings and trash named too, in
/// case the dot rule ever changes), Office lock files (`~$x.docx`),
/// vim/emacs temp files.
fn is_hidden_or_temp(name: &str) -> bool {
    name.starts_with('.')
        || matches!(name, ".obsidian" | ".trash")
        || name.starts_with("~$")
        || name.starts_with('#')
        || name.ends_with('~')
        || [".swp", ".swo", ".tmp", ".part", ".crdownload"].iter().any(|s| name.ends_with(s))
}

/// Opens a regular file for reading, never through a link and without
/// waiting (a FIFO put in a file's place answers at once); returns it with
/// its size, `None` when it no longer exists, and refuses anything else.
pub(crate) fn open_regular(path: &Path) -> std::result::Result<Option<(std::fs::File, u64)>, String> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, libc::O_NONBLOCK | libc::O_NOFOLLOW);
    let handle = match options.open(path) {
        Ok(handle) => handle,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot open: {e}")),
    };
    match handle.metadata() {
        Ok(meta) if meta.is_file() => Ok(Some((handle, meta.len()))),
        _ => Err("not a regular file (a pipe, a device or a link): skipped".into()),
    }
}

/// Reads a file up to `limit` bytes; `None` when it no longer exists. Only
/// a regular file is read, never through a link: the open does not wait (a
/// FIFO put in a file's place answers at once), and anything else is refused.
pub(crate) fn read_regular(path: &Path, limit: u64) -> std::result::Result<Option<Vec<u8>>, String> {
    use std::io::Read;
    let Some((handle, size)) = open_regular(path)? else { return Ok(None) };
    let mut bytes = Vec::with_capacity(size.min(limit) as usize);
    handle.take(limit + 1).read_to_end(&mut bytes).map_err(|e| format!("cannot read: {e}"))?;
    if bytes.len() as u64 > limit {
        return Err(format!("file is over the {} MB limit", limit / 1_000_000));
    }
    Ok(Some(bytes))
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
        let skipped = [".hidden.md", "f.md~", "~$g.docx", ".git/h.md", "x.md.swp", ".trash/old.md", ".obsidian/workspace.md"];
        for name in ["README.md", "a.md", "sub/b.TXT", "sub/c.pdf", "d.docx", "e.png", "i.gif"].into_iter().chain(skipped) {
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
        assert!(!is_indexable(Path::new(".trash/old.md")) && scan_under(root, &root.join(".trash")).files.is_empty());
    }

    fn write_files(root: &Path, files: &[(&str, &str)]) {
        for (name, content) in files {
            let path = root.join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, content).unwrap();
        }
    }

    fn keys(listing: Listing) -> Vec<String> {
        listing.files.into_iter().map(|f| f.rel).collect()
    }

    #[test]
    fn gitignore_and_keaignore_patterns_leave_paths_out() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write_files(
            root,
            &[
                (".gitignore", "# notes\nbuild/\nnotes-*.md\n!notes-keep.md\ndraft.md\n"),
                // The folder's .keaignore has the last word over its .gitignore.
                (".keaignore", "private/\n!draft.md\n"),
                ("sub/.gitignore", "*.txt\n!important.txt\n!notes-sub.md\n"),
            ],
        );
        let docs = ["a.md", "build/b.md", "sub/build/deep.md", "build.md", "notes-1.md", "notes-keep.md", "draft.md", "private/p.md"];
        let more = ["sub/c.txt", "sub/important.txt", "sub/notes-sub.md", "sub/notes-2.md", "other/c.txt"];
        write_files(root, &docs.iter().chain(&more).map(|d| (*d, "x")).collect::<Vec<_>>());
        let listing = scan(root).unwrap();
        assert!(listing.unreadable.is_empty(), "{:?}", listing.unreadable);
        let expected = ["a.md", "build.md", "draft.md", "notes-keep.md", "other/c.txt", "sub/important.txt", "sub/notes-sub.md"];
        assert_eq!(keys(listing), expected);
        for ignored in ["build/b.md", "build", "sub/build/deep.md", "sub/c.txt", "private", "private/p.md", "notes-1.md", "sub/notes-2.md"] {
            assert!(scan_under(root, &root.join(ignored)).files.is_empty(), "{ignored}");
        }
        assert_eq!(keys(scan_under(root, &root.join("sub"))), ["sub/important.txt", "sub/notes-sub.md"]);
        assert_eq!(keys(scan_under(root, &root.join("sub/important.txt"))), ["sub/important.txt"]);
        assert!(is_ignore_file(Path::new(".keaignore")) && is_ignore_file(Path::new("sub/.gitignore")));
        assert!(!is_ignore_file(Path::new(".git/.gitignore")) && !is_ignore_file(Path::new("a.md")));
    }

    #[test]
    fn a_bad_pattern_is_reported_and_the_others_apply() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write_files(root, &[(".keaignore", "[z-a].md\nb.md\n"), ("a.md", "x"), ("b.md", "x"), ("c.md", "x")]);
        let listing = scan(root).unwrap();
        assert_eq!(listing.unreadable.len(), 1);
        assert_eq!(listing.unreadable[0].0, ".keaignore");
        assert!(listing.unreadable[0].1.contains("line 1"), "{:?}", listing.unreadable);
        assert_eq!(keys(listing), ["a.md", "c.md"]);
    }

    /// An ignore file that cannot be read leaves its folder as it is: nothing
    /// new is listed there (it might be ignored), and its documents are kept.
    #[cfg(unix)]
    #[test]
    fn an_unreadable_ignore_file_keeps_its_folder_as_it_is() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write_files(root, &[("a.md", "x"), ("sub/b.md", "x")]);
        assert!(std::process::Command::new("mkfifo").arg(root.join("sub/.gitignore")).status().unwrap().success());
        let listing = scan(root).unwrap();
        assert_eq!(listing.unreadable.iter().map(|(p, _)| p.as_str()).collect::<Vec<_>>(), ["sub"]);
        assert!(listing.hides("sub/b.md") && !listing.hides("a.md"));
        assert_eq!(keys(listing), ["a.md"]);
        let under = scan_under(root, &root.join("sub/b.md"));
        assert!(under.files.is_empty() && under.hides("sub/b.md"));
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
