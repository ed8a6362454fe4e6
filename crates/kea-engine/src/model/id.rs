//! A model's id, checked where it enters the engine: it names exactly one
//! folder inside a models folder and can never be read as a path. Every
//! place that turns an id into a folder goes through [`ModelId::folder_in`],
//! so an id from the command line, the webview or a settings file cannot
//! reach outside Kea's model folders (`/home/me`, `../..`, `a/b`, `x\0y`).

use std::fmt;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// A valid model id: 1–128 ASCII letters, digits and `-` `_` `.` `+`,
/// starting with a letter or digit (so never `.`, `..` or a hidden name).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ModelId(String);

impl ModelId {
    pub const MAX_LEN: usize = 128;

    /// Checks an id given by a user or a file.
    pub fn parse(id: &str) -> Result<ModelId> {
        let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '+');
        let starts_well = id.chars().next().is_some_and(|c| c.is_ascii_alphanumeric());
        if starts_well && id.len() <= Self::MAX_LEN && id.chars().all(allowed) {
            return Ok(ModelId(id.to_string()));
        }
        let shown: String = id.escape_debug().take(80).collect();
        Err(Error::InvalidInput(format!(
            "'{shown}' is not a model id: ids are up to {} letters, digits, '-', '_', '.' or '+', starting with a letter or digit (no paths)",
            Self::MAX_LEN
        )))
    }

    /// An id made from a file or folder name (an import without `--id`):
    /// lower-cased, other characters turned into `-`; `None` when nothing usable is left.
    pub fn from_name(name: &str) -> Option<ModelId> {
        let mapped: String =
            name.to_lowercase().chars().map(|c| if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '+') { c } else { '-' }).collect();
        let trimmed = mapped.trim_start_matches(|c: char| !c.is_ascii_alphanumeric());
        let cut: String = trimmed.chars().take(Self::MAX_LEN).collect();
        ModelId::parse(&cut).ok()
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The model's folder inside `root` (always a direct child of it).
    pub fn folder_in(&self, root: &Path) -> PathBuf {
        root.join(&self.0)
    }
}

impl fmt::Display for ModelId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_that_are_paths_are_refused() {
        for bad in ["", "/home/me/Documents", "..", ".", "../models", "a/b", "a\\b", "x\0y", ".downloads", "-rf", "C:\\x", "ok id", "模型"] {
            let err = ModelId::parse(bad).unwrap_err();
            assert_eq!(err.kind(), crate::ErrorKind::InvalidInput, "{bad:?}");
        }
        assert!(ModelId::parse(&"a".repeat(129)).is_err());
        for good in ["all-minilm-l6-v2", "my-model.q4", "Qwen2.5-1.5B-Instruct", "bge_m3", "a", "x+y"] {
            assert_eq!(ModelId::parse(good).unwrap().as_str(), good);
        }
    }

    #[test]
    fn an_id_from_a_name_stays_one_folder() {
        let root = Path::new("/models");
        assert_eq!(ModelId::from_name("My Model.Q4").unwrap().as_str(), "my-model.q4");
        assert_eq!(ModelId::from_name("../../etc").unwrap().folder_in(root), root.join("etc"));
        assert_eq!(ModelId::from_name("..."), None);
        assert_eq!(ModelId::from_name("模型"), None);
        for name in ["a/b", "/abs", "x\0y"] {
            let folder = ModelId::from_name(name).unwrap().folder_in(root);
            assert_eq!(folder.parent(), Some(root), "{name:?}");
        }
    }
}
