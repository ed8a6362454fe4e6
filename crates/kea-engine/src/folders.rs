//! [`Folders`]: the folders one index reads. With one folder a document's
//! key is its path relative to it (as it always was); with several, each
//! folder is mounted under its own name and a key reads
//! `<folder name>/<relative path>`, so keys stay unique and readable. The
//! first folder is the primary one: its `kea.toml` describes the
//! collection and dropped files are copied into it. A collection imported
//! without its documents has no folder: it is searched as it is and never
//! synced (a sync of no folder would drop every document).

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Why a collection without a folder is not synced.
pub const NO_FOLDER: &str =
    "this collection has no folder (it was imported without its documents): it is searched as it is; give it one with `kea kb set NAME --folder DIR`";
use crate::scan::{relative_key, scan, scan_under, Listing};

/// The folders of one index, each with its mount name (empty when alone).
#[derive(Debug, Clone, PartialEq)]
pub struct Folders {
    mounts: Vec<(String, PathBuf)>,
}

impl Folders {
    /// `primary` and any `more` folders, mounted under their names
    /// (a repeated name gets ` (2)`, ` (3)`…).
    pub fn new(primary: &Path, more: &[PathBuf]) -> Folders {
        if primary.as_os_str().is_empty() && more.is_empty() {
            return Folders { mounts: Vec::new() };
        }
        if more.is_empty() {
            return Folders { mounts: vec![(String::new(), primary.to_path_buf())] };
        }
        let mut mounts: Vec<(String, PathBuf)> = Vec::new();
        for folder in std::iter::once(primary).chain(more.iter().map(PathBuf::as_path)) {
            let base = folder.file_name().map_or_else(|| "folder".to_string(), |n| n.to_string_lossy().into_owned());
            let mut name = base.clone();
            for n in 2.. {
                if !mounts.iter().any(|(taken, _)| *taken == name) {
                    break;
                }
                name = format!("{base} ({n})");
            }
            mounts.push((name, folder.to_path_buf()));
        }
        Folders { mounts }
    }

    /// The collection's first folder (`None`: it has none).
    pub fn primary(&self) -> Option<&Path> {
        self.mounts.first().map(|(_, root)| root.as_path())
    }

    pub fn roots(&self) -> impl Iterator<Item = &Path> {
        self.mounts.iter().map(|(_, root)| root.as_path())
    }

    /// Every supported file of every folder. A single folder that is missing
    /// is an error; one of several is listed as unreadable (its documents are kept).
    pub fn scan(&self) -> Result<Listing> {
        match self.mounts.as_slice() {
            [] => return Err(Error::InvalidInput(NO_FOLDER.into())),
            [(_, root)] => return scan(root),
            _ => {}
        }
        let mut all = Listing::default();
        for (mount, root) in &self.mounts {
            match scan(root) {
                Ok(listing) => {
                    let listing = mounted(mount, listing);
                    all.files.extend(listing.files);
                    all.unreadable.extend(listing.unreadable);
                    all.skipped.extend(listing.skipped);
                }
                Err(e) => all.unreadable.push((mount.clone(), e.to_string())),
            }
        }
        all.files.sort_by(|a, b| a.rel.cmp(&b.rel));
        Ok(all)
    }

    /// The files at or under `path`, and the key of `path` itself (empty:
    /// a whole folder); `None` when it is in none of the folders.
    pub fn scan_path(&self, path: &Path) -> Option<(Listing, String)> {
        let (mount, root, rel) = self.locate(path)?;
        Some((mounted(mount, scan_under(root, path)), join_key(mount, &relative_key(rel))))
    }

    /// The file behind a document key, with the folder it must stay in.
    pub fn path_of(&self, key: &str) -> Option<(&Path, PathBuf)> {
        if let [(_, root)] = self.mounts.as_slice() {
            return Some((root, root.join(key)));
        }
        let (mount, rel) = key.split_once('/')?;
        let (_, root) = self.mounts.iter().find(|(m, _)| m == mount)?;
        Some((root, root.join(rel)))
    }

    /// The document key of a file named by the user (resolved through links
    /// on both sides); `None` when it is in none of the folders.
    pub fn key_of(&self, path: &Path) -> Option<String> {
        let file = path.canonicalize().ok()?;
        self.mounts.iter().find_map(|(mount, root)| {
            let rel = file.strip_prefix(root.canonicalize().ok()?).ok()?;
            Some(join_key(mount, &relative_key(rel)))
        })
    }

    /// The folder `path` is in, its mount name and the path relative to it.
    fn locate<'p>(&self, path: &'p Path) -> Option<(&str, &Path, &'p Path)> {
        self.mounts.iter().find_map(|(mount, root)| path.strip_prefix(root).ok().map(|rel| (mount.as_str(), root.as_path(), rel)))
    }

    /// Whether `path` is in one of the folders, and its path relative to that folder.
    pub fn relative<'p>(&self, path: &'p Path) -> Option<&'p Path> {
        self.locate(path).map(|(_, _, rel)| rel)
    }
}

/// `rel` under `mount` (unchanged for a single folder's empty mount).
fn join_key(mount: &str, rel: &str) -> String {
    match (mount.is_empty(), rel.is_empty()) {
        (true, _) => rel.to_string(),
        (false, true) => mount.to_string(),
        (false, false) => format!("{mount}/{rel}"),
    }
}

/// A folder's listing with its keys under `mount`.
fn mounted(mount: &str, mut listing: Listing) -> Listing {
    if !mount.is_empty() {
        listing.files.iter_mut().for_each(|f| f.rel = join_key(mount, &f.rel));
        listing.unreadable.iter_mut().for_each(|(place, _)| *place = join_key(mount, place));
        listing.skipped.iter_mut().for_each(|(place, _)| *place = join_key(mount, place));
    }
    listing
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_folder_keeps_plain_keys_and_several_are_mounted_by_name() {
        let tmp = tempfile::tempdir().unwrap();
        let (a, b, c) = (tmp.path().join("notes"), tmp.path().join("x/papers"), tmp.path().join("y/papers"));
        for (dir, file) in [(&a, "one.md"), (&b, "sub/two.md"), (&c, "three.txt")] {
            std::fs::create_dir_all(dir.join(file).parent().unwrap()).unwrap();
            std::fs::write(dir.join(file), "# Text").unwrap();
        }
        let single = Folders::new(&a, &[]);
        assert_eq!(single.scan().unwrap().files.iter().map(|f| f.rel.as_str()).collect::<Vec<_>>(), ["one.md"]);
        assert_eq!(single.path_of("one.md").unwrap().1, a.join("one.md"));

        let many = Folders::new(&a, &[b.clone(), c.clone()]);
        let keys: Vec<String> = many.scan().unwrap().files.into_iter().map(|f| f.rel).collect();
        assert_eq!(keys, ["notes/one.md", "papers (2)/three.txt", "papers/sub/two.md"]);
        assert_eq!(many.path_of("papers (2)/three.txt").unwrap(), (c.as_path(), c.join("three.txt")));
        assert!(many.path_of("elsewhere/one.md").is_none() && many.path_of("one.md").is_none());
        let (listing, key) = many.scan_path(&b.join("sub")).unwrap();
        assert_eq!((listing.files.len(), key.as_str()), (1, "papers/sub"));
        assert_eq!(many.scan_path(&b).unwrap().1, "papers");
        assert!(many.scan_path(tmp.path()).is_none());
        assert_eq!(many.key_of(&b.join("sub/two.md")).as_deref(), Some("papers/sub/two.md"));
        assert_eq!(many.key_of(&tmp.path().join("x")), None);
    }

    #[test]
    fn a_missing_folder_among_several_is_unreadable_not_fatal() {
        let tmp = tempfile::tempdir().unwrap();
        let (here, gone) = (tmp.path().join("here"), tmp.path().join("gone"));
        std::fs::create_dir_all(&here).unwrap();
        std::fs::write(here.join("a.md"), "# A").unwrap();
        let listing = Folders::new(&here, std::slice::from_ref(&gone)).scan().unwrap();
        assert_eq!(listing.files.len(), 1);
        assert!(listing.hides("gone/old.md") && !listing.hides("here/a.md"));
        assert!(Folders::new(&gone, &[]).scan().is_err());
        let none = Folders::new(Path::new(""), &[]);
        assert!(none.primary().is_none() && none.scan().unwrap_err().to_string().contains("no folder"));
    }
}
