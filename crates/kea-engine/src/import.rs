//! Importing dropped or picked files into the knowledge folder: files are
//! copied (never moved) under sanitised, unique names; folders are imported
//! recursively; symbolic links, device files and unsupported types are
//! refused with a reason, and so are files over the size Kea reads and a
//! folder that holds the knowledge folder (it would copy itself for ever).
//! Each copy is written under a hidden name and renamed into place, so
//! the watcher never sees half a file. Copy progress (files and bytes of
//! the total) is reported after each file. The watcher (or a sync) indexes
//! what arrives.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::error::{Error, Result};
use crate::extract::DocKind;

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ImportReport {
    /// Paths of the copies, relative to the knowledge folder.
    pub imported: Vec<String>,
    /// `(source path, reason)` for everything refused.
    pub rejected: Vec<(String, String)>,
}

/// How far an import has got, after each copied file.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ImportProgress {
    /// The copy just made, relative to the knowledge folder.
    pub path: String,
    pub files_done: usize,
    pub files_total: usize,
    pub bytes_done: u64,
    pub bytes_total: u64,
}

/// The name [`sanitise_file_name`] gives a name with nothing left.
pub const NO_NAME: &str = "document";

/// Characters that change the direction text is shown in: in a file name
/// they disguise its end (`Invoice \u{202e}lmth.exe` shows as `Invoice exe.html`).
pub fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' | '\u{061c}')
}

/// Names Windows keeps for devices, whatever the extension (`CON.md` too).
fn is_reserved_on_windows(name: &str) -> bool {
    let stem = name.split('.').next().unwrap_or_default().trim_end().to_ascii_uppercase();
    matches!(stem.as_str(), "CON" | "PRN" | "AUX" | "NUL" | "CONIN$" | "CONOUT$")
        || ((stem.starts_with("COM") || stem.starts_with("LPT")) && stem.len() == 4 && stem[3..].chars().all(|c| c.is_ascii_digit()))
}

/// A safe file name on every system: no separators, characters Windows
/// reserves (`<>:"/\|?*`) or control characters (each made `_`), no
/// direction controls, no leading dots, dashes or spaces, no trailing dots
/// or spaces, never a device name Windows reserves (`CON`, `COM1`…: made
/// `_CON`); never empty.
pub fn sanitise_file_name(name: &str) -> String {
    let cleaned: String = name
        .chars()
        .filter(|c| !is_bidi_control(*c))
        .map(|c| if matches!(c, '/' | '\\' | ':' | '<' | '>' | '"' | '|' | '?' | '*') || c.is_control() { '_' } else { c })
        .collect();
    let trimmed = cleaned.trim().trim_start_matches(['.', '-', ' ']).trim_end_matches(['.', ' ']).to_string();
    if trimmed.is_empty() || trimmed.chars().all(|c| c == '_' || c == '.') {
        NO_NAME.into()
    } else if is_reserved_on_windows(&trimmed) {
        format!("_{trimmed}")
    } else {
        trimmed
    }
}

/// `dir/name`, or `dir/stem (2).ext`, … when taken.
pub(crate) fn unique_target(dir: &Path, name: &str) -> PathBuf {
    let candidate = dir.join(name);
    if !candidate.exists() {
        return candidate;
    }
    let path = Path::new(name);
    let stem = path.file_stem().map_or_else(|| name.to_string(), |s| s.to_string_lossy().into_owned());
    let ext = path.extension().map(|e| format!(".{}", e.to_string_lossy())).unwrap_or_default();
    (2..).map(|n| dir.join(format!("{stem} ({n}){ext}"))).find(|p| !p.exists()).expect("some name is free")
}

/// Renames the written file `part` into `dir` as `name`, or the next free
/// `stem (2).ext`… (never over a file, even one made in the meantime).
pub(crate) fn persist_unique(mut part: tempfile::NamedTempFile, dir: &Path, name: &str) -> std::io::Result<PathBuf> {
    loop {
        let target = unique_target(dir, name);
        match part.persist_noclobber(&target) {
            Ok(_) => return Ok(target),
            // Taken in the meantime: the next free name.
            Err(e) if e.error.kind() == std::io::ErrorKind::AlreadyExists => part = e.file,
            Err(e) => return Err(e.error),
        }
    }
}

/// The files an import would copy and their bytes (what `Importer` copies).
fn measure(source: &Path) -> (usize, u64) {
    let Ok(meta) = std::fs::symlink_metadata(source) else { return (0, 0) };
    if meta.is_dir() {
        let entries = std::fs::read_dir(source).into_iter().flatten().flatten();
        entries.map(|e| measure(&e.path())).fold((0, 0), |(f, b), (f2, b2)| (f + f2, b + b2))
    } else if meta.is_file() && DocKind::from_path(source).is_some() {
        (1, meta.len())
    } else {
        (0, 0)
    }
}

/// One import in progress: where copies go, what was done, whom to tell.
struct Importer<'a> {
    knowledge: &'a Path,
    max_file_bytes: u64,
    report: ImportReport,
    progress: ImportProgress,
    on_copied: &'a mut dyn FnMut(&ImportProgress),
}

impl<'a> Importer<'a> {
    /// An importer of `sources` (its totals measured) into `knowledge`.
    fn new(knowledge: &'a Path, max_file_bytes: u64, sources: &[PathBuf], on_copied: &'a mut dyn FnMut(&ImportProgress)) -> Self {
        let (files_total, bytes_total) =
            sources.iter().filter(|s| overlap(s, knowledge).is_none()).map(|s| measure(s)).fold((0, 0), |(f, b), (f2, b2)| (f + f2, b + b2));
        let progress = ImportProgress { files_total, bytes_total, ..ImportProgress::default() };
        Importer { knowledge, max_file_bytes, report: ImportReport::default(), progress, on_copied }
    }

    fn import_one(&mut self, source: &Path, target_dir: &Path) -> Result<()> {
        let shown = source.display().to_string();
        let meta = match std::fs::symlink_metadata(source) {
            Ok(meta) => meta,
            Err(e) => {
                self.report.rejected.push((shown, format!("cannot read: {e}")));
                return Ok(());
            }
        };
        if meta.file_type().is_symlink() {
            self.report.rejected.push((shown, "symbolic links are not followed".into()));
        } else if meta.is_dir() {
            self.import_folder(source, target_dir)?;
        } else if !meta.is_file() {
            self.report.rejected.push((shown, "not a regular file (device, socket or pipe)".into()));
        } else if DocKind::from_path(source).is_none() {
            let known: Vec<String> = DocKind::EXTENSIONS.iter().map(|(ext, _)| format!(".{ext}")).collect();
            self.report.rejected.push((shown, format!("unsupported type (Kea reads {})", known.join(" "))));
        } else if meta.len() > self.max_file_bytes {
            self.report.rejected.push((shown, self.too_large()));
        } else {
            let name = sanitise_file_name(&source.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default());
            let Some(target) = self.copy_in(source, target_dir, &name)? else {
                self.report.rejected.push((shown, self.too_large()));
                return Ok(());
            };
            let rel = crate::scan::relative_key(target.strip_prefix(self.knowledge).unwrap_or(&target));
            self.progress.files_done += 1;
            self.progress.bytes_done += meta.len();
            self.progress.path = rel.clone();
            (self.on_copied)(&self.progress);
            self.report.imported.push(rel);
        }
        Ok(())
    }

    fn too_large(&self) -> String {
        format!("over the {} MB Kea reads", self.max_file_bytes / 1_000_000)
    }

    /// Copies `source` to a hidden name in `dir`, then puts it in place
    /// under a free name (never replacing a file). `None`: it grew past
    /// the size limit while being copied (nothing is left behind).
    fn copy_in(&self, source: &Path, dir: &Path, name: &str) -> Result<Option<PathBuf>> {
        let io = |what: &str, e| Error::io(format!("{what} {}", source.display()), e);
        let mut from = std::fs::File::open(source).map_err(|e| io("opening", e))?;
        let mut part = tempfile::Builder::new().prefix(".kea-import-").suffix(".part").tempfile_in(dir).map_err(|e| io("copying", e))?;
        let copied = std::io::copy(&mut std::io::Read::take(&mut from, self.max_file_bytes + 1), &mut part).map_err(|e| io("copying", e))?;
        if copied > self.max_file_bytes {
            return Ok(None);
        }
        part.as_file().sync_all().map_err(|e| io("copying", e))?;
        persist_unique(part, dir, name).map(Some).map_err(|e| io("copying", e))
    }

    fn import_folder(&mut self, source: &Path, target_dir: &Path) -> Result<()> {
        let name = sanitise_file_name(&source.file_name().map_or_else(|| "folder".into(), |n| n.to_string_lossy().into_owned()));
        let sub = unique_target(target_dir, &name);
        std::fs::create_dir_all(&sub).map_err(|e| Error::io(format!("creating {}", sub.display()), e))?;
        let mut entries: Vec<PathBuf> =
            std::fs::read_dir(source).map_err(|e| Error::io(format!("reading {}", source.display()), e))?.filter_map(|e| e.ok().map(|e| e.path())).collect();
        entries.sort();
        for entry in entries {
            self.import_one(&entry, &sub)?;
        }
        if std::fs::read_dir(&sub).map(|mut d| d.next().is_none()).unwrap_or(false) {
            let _ = std::fs::remove_dir(&sub);
        }
        Ok(())
    }
}

/// Copies `sources` (files or folders) into `knowledge`, telling
/// `on_copied` after each file; files over `max_file_bytes` are refused.
pub(crate) fn import_into(knowledge: &Path, max_file_bytes: u64, sources: &[PathBuf], on_copied: &mut dyn FnMut(&ImportProgress)) -> Result<ImportReport> {
    std::fs::create_dir_all(knowledge).map_err(|e| Error::io(format!("creating {}", knowledge.display()), e))?;
    let mut importer = Importer::new(knowledge, max_file_bytes, sources, on_copied);
    for source in sources {
        match overlap(source, knowledge) {
            Some(reason) => importer.report.rejected.push((source.display().to_string(), reason.into())),
            None => importer.import_one(source, knowledge)?,
        }
    }
    Ok(importer.report)
}

/// Why `source` cannot be imported into `knowledge` as a whole: it is
/// inside it, or it holds it (links and `..` resolved first).
fn overlap(source: &Path, knowledge: &Path) -> Option<&'static str> {
    let real = |p: &Path| match (p.parent(), p.file_name()) {
        // The last part stays as it is: a link is refused, not followed.
        (Some(parent), Some(name)) => parent.canonicalize().map(|dir| dir.join(name)).unwrap_or_else(|_| p.to_path_buf()),
        _ => p.canonicalize().unwrap_or_else(|_| p.to_path_buf()),
    };
    let (source, knowledge) = (real(source), knowledge.canonicalize().unwrap_or_else(|_| knowledge.to_path_buf()));
    if source.starts_with(&knowledge) {
        Some("already in the knowledge folder")
    } else if knowledge.starts_with(&source) {
        Some("it holds the knowledge folder (it would be copied into itself)")
    } else {
        None
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

    /// Issue 41: a title kept its direction controls (saved as "Invoice
    /// \u{202e}gnp.html.html", shown as "Invoice lmth.html.png") and names
    /// and characters Windows reserves.
    #[test]
    fn names_lose_direction_controls_and_what_windows_reserves() {
        assert_eq!(sanitise_file_name("Invoice \u{202e}gnp.html"), "Invoice gnp.html");
        let controls = "a\u{202a}\u{202b}\u{202c}\u{202d}\u{202e}\u{2066}\u{2067}\u{2068}\u{2069}\u{200e}\u{200f}\u{061c}b.md";
        assert_eq!(sanitise_file_name(controls), "ab.md");
        assert_eq!(sanitise_file_name("a<b>c:d\"e/f\\g|h?i*j.md"), "a_b_c_d_e_f_g_h_i_j.md");
        assert_eq!(sanitise_file_name("tab\there\u{7f}.md"), "tab_here_.md");
        for reserved in ["CON", "con.md", "PRN.html", "aux", "NUL.txt", "COM1.md", "lpt9", "Com3.tar.gz"] {
            assert_eq!(sanitise_file_name(reserved), format!("_{reserved}"), "{reserved}");
        }
        for fine in ["CONTACT.md", "COM10.md", "console.md", "LPT.md", "nullable.md"] {
            assert_eq!(sanitise_file_name(fine), fine);
        }
        assert_eq!(sanitise_file_name("Trailing dots... "), "Trailing dots");
        assert_eq!(sanitise_file_name("\u{202e}\u{202e}"), NO_NAME);
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
        let (report, progress) = import_all(&[src.join("a.md"), src.join("sub")], &knowledge);
        assert_eq!(report.imported, ["a (2).md", "sub/b.txt"]);
        let counted: Vec<(usize, usize, u64, u64)> = progress.iter().map(|p| (p.files_done, p.files_total, p.bytes_done, p.bytes_total)).collect();
        assert_eq!(counted, [(1, 2, 3, 4), (2, 2, 4, 4)], "progress after each copy, of the supported files' total");
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
        let sources = [
            drop.clone(),                                 // a folder holding two symlink escapes
            drop.join("..").join("drop").join("note.md"), // `..` in the source path: the file itself is fine
            PathBuf::from("/dev/null"),                   // a device
            PathBuf::from("/dev/zero"),
            PathBuf::from("/etc/passwd"), // absolute path to something unsupported
        ];
        let (report, _) = import_all(&sources, &knowledge);
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

    /// Issue 24: a folder holding the knowledge folder was copied into
    /// itself, a copy appeared half-written, and no file was too large.
    #[test]
    fn a_parent_folder_is_refused_and_large_files_are_not_copied() {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        let knowledge = home.join("Documents/Kea");
        std::fs::create_dir_all(&knowledge).unwrap();
        std::fs::write(home.join("Documents/letter.md"), "# Letter").unwrap();
        std::fs::write(home.join("big.txt"), vec![b'x'; (1 << 20) + 1]).unwrap();
        std::fs::write(home.join("small.md"), "# Small").unwrap();
        let engine_like = |sources: &[PathBuf]| {
            let mut ignore = |_: &ImportProgress| {};
            let mut importer = Importer::new(&knowledge, 1 << 20, sources, &mut ignore);
            for source in sources {
                match overlap(source, &knowledge) {
                    Some(reason) => importer.report.rejected.push((source.display().to_string(), reason.into())),
                    None => importer.import_one(source, &knowledge).unwrap(),
                }
            }
            importer.report
        };
        let through_dots = knowledge.join("..").join("..");
        let report = engine_like(&[home.clone(), home.join("Documents"), through_dots, knowledge.join("x.md"), home.join("big.txt"), home.join("small.md")]);
        assert_eq!(report.imported, ["small.md"]);
        let reasons: Vec<&str> = report.rejected.iter().map(|(_, why)| why.as_str()).collect();
        assert_eq!(reasons.iter().filter(|r| r.contains("holds the knowledge folder")).count(), 3, "{reasons:?}");
        assert!(reasons.iter().any(|r| r.contains("already in")) && reasons.iter().any(|r| r.contains("over the 1 MB")), "{reasons:?}");
        let left: Vec<PathBuf> = walk(&knowledge);
        assert_eq!(left, [knowledge.join("small.md")], "no partial or hidden copy is left");
    }

    /// Imports `sources` one by one into `knowledge`, keeping every progress report.
    fn import_all(sources: &[PathBuf], knowledge: &Path) -> (ImportReport, Vec<ImportProgress>) {
        let mut seen = Vec::new();
        let mut record = |p: &ImportProgress| seen.push(p.clone());
        let mut importer = Importer::new(knowledge, 1 << 20, sources, &mut record);
        for source in sources {
            importer.import_one(source, knowledge).unwrap();
        }
        let report = importer.report;
        (report, seen)
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
