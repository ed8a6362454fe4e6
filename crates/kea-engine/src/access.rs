//! Which files outside Kea's own folders a caller may hand to the engine.
//! The command line passes what its user typed; the desktop's webview is
//! not trusted with paths: it may name only files and folders the person
//! chose themselves (in a native dialog, or by dropping them on the
//! window), which the shell records here as they happen, plus the
//! knowledge and data folders.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::error::{Error, Result};

/// Paths a person handed to Kea in this session (canonical).
#[derive(Debug, Default)]
pub struct Grants(Mutex<Vec<PathBuf>>);

/// How many grants are kept (the oldest are forgotten first).
const MAX_GRANTS: usize = 1024;

impl Grants {
    /// Records paths the person chose (a dialog's answer, a drop).
    pub fn grant(&self, paths: impl IntoIterator<Item = PathBuf>) {
        let mut granted = self.0.lock().unwrap_or_else(|p| p.into_inner());
        granted.extend(paths.into_iter().filter_map(|p| p.canonicalize().ok()));
        let excess = granted.len().saturating_sub(MAX_GRANTS);
        granted.drain(..excess);
    }

    /// `path` if it is a granted path, inside a granted folder, or inside
    /// one of `own` (Kea's folders); links are resolved before the check.
    pub fn check(&self, path: &Path, own: &[&Path]) -> Result<PathBuf> {
        let refused = || Error::InvalidInput(format!("{} was not chosen in Kea (pick it or drop it on the window)", path.display()));
        let real = path.canonicalize().map_err(|_| refused())?;
        let granted = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let inside_own = own.iter().filter_map(|dir| dir.canonicalize().ok()).any(|dir| real.starts_with(dir));
        if inside_own || granted.iter().any(|g| real.starts_with(g)) {
            Ok(real)
        } else {
            Err(refused())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_chosen_paths_and_kea_folders_pass() {
        let tmp = tempfile::tempdir().unwrap();
        let (picked, own, other) = (tmp.path().join("picked"), tmp.path().join("own"), tmp.path().join("other"));
        for dir in [&picked, &own, &other] {
            std::fs::create_dir_all(dir).unwrap();
            std::fs::write(dir.join("f.md"), "x").unwrap();
        }
        #[cfg(unix)]
        std::os::unix::fs::symlink(other.join("f.md"), picked.join("link.md")).unwrap();
        let grants = Grants::default();
        grants.grant([picked.clone()]);
        assert!(grants.check(&picked.join("f.md"), &[&own]).is_ok());
        assert!(grants.check(&own.join("f.md"), &[&own]).is_ok());
        for refused in [other.join("f.md"), picked.join("../other/f.md"), PathBuf::from("/etc/passwd"), picked.join("missing.md")] {
            let err = grants.check(&refused, &[&own]).unwrap_err();
            assert_eq!(err.kind(), crate::ErrorKind::InvalidInput, "{}", refused.display());
        }
        #[cfg(unix)]
        assert!(grants.check(&picked.join("link.md"), &[&own]).is_err(), "a link out of a granted folder is refused");
    }
}
