//! Importing dropped or picked files into the knowledge folder: files are
//! copied (never moved) under sanitised, unique names; folders are imported
//! recursively; symbolic links, device files and unsupported types are
//! refused with a reason. The watcher (or a sync) indexes what arrives.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::extract::DocKind;

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ImportReport {
    /// Paths of the copies, relative to the knowledge folder.
    pub imported: Vec<String>,
    /// `(source path, reason)` for everything refused.
    pub rejected: Vec<(String, String)>,
}

/// A safe file name: no separators, control characters or leading dots and
/// dashes; never empty.
pub fn sanitise_file_name(name: &str) -> String {
    let cleaned: String = name.chars().map(|c| if c == '/' || c == '\\' || c == ':' || c.is_control() { '_' } else { c }).collect();
    let trimmed = cleaned.trim().trim_start_matches(['.', '-', ' ']).to_string();
    if trimmed.is_empty() || trimmed.chars().all(|c| c == '_' || c == '.') {
        "document".into()
    } else {
        trimmed
    }
}

/// `dir/name`, or `dir/stem (2).ext`, … when taken.
fn unique_target(dir: &Path, name: &str) -> PathBuf {
    let candidate = dir.join(name);
    if !candidate.exists() {
        return candidate;
    }
    let path = Path::new(name);
    let stem = path.file_stem().map_or_else(|| name.to_string(), |s| s.to_string_lossy().into_owned());
    let ext = path.extension().map(|e| format!(".{}", e.to_string_lossy())).unwrap_or_default();
    (2..).map(|n| dir.join(format!("{stem} ({n}){ext}"))).find(|p| !p.exists()).expect("some name is free")
}

fn import_one(source: &Path, target_dir: &Path, knowledge: &Path, report: &mut ImportReport) -> Result<()> {
    let shown = source.display().to_string();
    let meta = match std::fs::symlink_metadata(source) {
        Ok(meta) => meta,
        Err(e) => {
            report.rejected.push((shown, format!("cannot read: {e}")));
            return Ok(());
        }
    };
    if meta.file_type().is_symlink() {
        report.rejected.push((shown, "symbolic links are not followed".into()));
    } else if meta.is_dir() {
        let name = sanitise_file_name(&source.file_name().map_or_else(|| "folder".into(), |n| n.to_string_lossy().into_owned()));
        let sub = unique_target(target_dir, &name);
        std::fs::create_dir_all(&sub).map_err(|e| Error::io(format!("creating {}", sub.display()), e))?;
        let mut entries: Vec<PathBuf> =
            std::fs::read_dir(source).map_err(|e| Error::io(format!("reading {}", source.display()), e))?.filter_map(|e| e.ok().map(|e| e.path())).collect();
        entries.sort();
        for entry in entries {
            import_one(&entry, &sub, knowledge, report)?;
        }
        if std::fs::read_dir(&sub).map(|mut d| d.next().is_none()).unwrap_or(false) {
            let _ = std::fs::remove_dir(&sub);
        }
    } else if !meta.is_file() {
        report.rejected.push((shown, "not a regular file (device, socket or pipe)".into()));
    } else if DocKind::from_path(source).is_none() {
        report.rejected.push((shown, "unsupported type (Kea reads .md, .txt, .pdf and .docx)".into()));
    } else {
        let name = sanitise_file_name(&source.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default());
        let target = unique_target(target_dir, &name);
        std::fs::copy(source, &target).map_err(|e| Error::io(format!("copying {shown}"), e))?;
        let rel = target.strip_prefix(knowledge).unwrap_or(&target);
        report.imported.push(crate::scan::relative_key(rel));
    }
    Ok(())
}

impl Engine {
    /// Copies `sources` (files or folders) into the knowledge folder.
    pub fn import(&self, sources: &[PathBuf]) -> Result<ImportReport> {
        let knowledge = self.knowledge_dir().to_path_buf();
        std::fs::create_dir_all(&knowledge).map_err(|e| Error::io(format!("creating {}", knowledge.display()), e))?;
        let mut report = ImportReport::default();
        for source in sources {
            if source.starts_with(&knowledge) {
                report.rejected.push((source.display().to_string(), "already in the knowledge folder".into()));
                continue;
            }
            import_one(source, &knowledge, &knowledge, &mut report)?;
        }
        Ok(report)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_sanitised() {
        assert_eq!(sanitise_file_name("../../etc/passwd.md"), "_.._etc_passwd.md");
        assert_eq!(sanitise_file_name("--help.md"), "help.md");
        assert_eq!(sanitise_file_name(".hidden.txt"), "hidden.txt");
        assert_eq!(sanitise_file_name("鹦鹉 🦜 notes.md"), "鹦鹉 🦜 notes.md");
        assert_eq!(sanitise_file_name("a\u{0}b.md"), "a_b.md");
        assert_eq!(sanitise_file_name(".."), "document");
    }

    #[test]
    fn files_and_folders_are_copied_and_the_rest_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let (src, knowledge) = (tmp.path().join("src"), tmp.path().join("knowledge"));
        std::fs::create_dir_all(src.join("sub")).unwrap();
        std::fs::create_dir_all(&knowledge).unwrap();
        std::fs::write(src.join("a.md"), "# A").unwrap();
        std::fs::write(src.join("sub/b.txt"), "B").unwrap();
        std::fs::write(src.join("sub/c.exe"), "C").unwrap();
        std::fs::write(knowledge.join("a.md"), "existing").unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink("/etc/passwd", src.join("sub/link.md")).unwrap();
        let mut report = ImportReport::default();
        for source in [src.join("a.md"), src.join("sub")] {
            import_one(&source, &knowledge, &knowledge, &mut report).unwrap();
        }
        assert_eq!(report.imported, ["a (2).md", "sub/b.txt"]);
        let reasons: Vec<&str> = report.rejected.iter().map(|r| r.1.as_str()).collect();
        assert!(reasons.iter().any(|r| r.contains("unsupported")));
        #[cfg(unix)]
        assert!(reasons.iter().any(|r| r.contains("symbolic links")));
        assert_eq!(std::fs::read_to_string(knowledge.join("a.md")).unwrap(), "existing", "nothing is overwritten");
        assert!(src.join("a.md").exists(), "sources are copied, not moved");
    }

    #[test]
    fn traversal_absolute_paths_symlink_escapes_and_devices_are_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let (drop, knowledge, outside) = (tmp.path().join("drop"), tmp.path().join("knowledge"), tmp.path().join("outside"));
        for dir in [&drop, &knowledge, &outside] {
            std::fs::create_dir_all(dir).unwrap();
        }
        std::fs::write(outside.join("secret.md"), "secret").unwrap();
        std::fs::write(drop.join("note.md"), "# Note").unwrap();
        std::os::unix::fs::symlink(&outside, drop.join("escape-dir")).unwrap();
        std::os::unix::fs::symlink(outside.join("secret.md"), drop.join("escape.md")).unwrap();
        let mut report = ImportReport::default();
        let sources = [
            drop.clone(),                                 // a folder holding two symlink escapes
            drop.join("..").join("drop").join("note.md"), // `..` in the source path: the file itself is fine
            PathBuf::from("/dev/null"),                   // a device
            PathBuf::from("/dev/zero"),
            PathBuf::from("/etc/passwd"), // absolute path to something unsupported
        ];
        for source in &sources {
            import_one(source, &knowledge, &knowledge, &mut report).unwrap();
        }
        assert_eq!(report.imported, ["drop/note.md", "note.md"], "{report:?}");
        let reasons: Vec<&str> = report.rejected.iter().map(|(_, why)| why.as_str()).collect();
        assert_eq!(reasons.iter().filter(|r| r.contains("symbolic links")).count(), 2, "{reasons:?}");
        assert_eq!(reasons.iter().filter(|r| r.contains("not a regular file")).count(), 2, "{reasons:?}");
        assert!(reasons.iter().any(|r| r.contains("unsupported")), "{reasons:?}");
        // Everything landed inside the knowledge folder, and nothing from outside.
        let mut landed = Vec::new();
        for entry in walk(&knowledge) {
            assert!(entry.starts_with(&knowledge));
            assert!(!std::fs::symlink_metadata(&entry).unwrap().file_type().is_symlink());
            landed.push(std::fs::read_to_string(&entry).unwrap());
        }
        assert!(!landed.iter().any(|t| t.contains("secret")));
    }

    fn walk(dir: &Path) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                out.extend(walk(&path))
            } else {
                out.push(path)
            }
        }
        out
    }
}
