//! Files the command line writes where the person says (`chat export
//! --out`, `eval --signals-out`, `eval --calibrate --out`): an existing
//! file is replaced only with `--force`, a link is never written through,
//! nothing is written inside Kea's data folder (its index, conversations
//! and decision are not output files), and the bytes go to a temporary file beside the target that is then
//! renamed over it, so a failed write leaves what was there.

use std::io::Write;
use std::path::Path;

use anyhow::{bail, Context};

/// `text` with its control characters (terminal escape sequences among
/// them) dropped, for printing what a file or a peer gave.
pub fn printable(text: &str) -> String {
    text.chars().filter(|c| !c.is_control()).collect()
}

/// `text` for a terminal: its control characters dropped but line breaks
/// and tabs (a document's or a model's text, printed as it streams).
pub fn terminal(text: &str) -> String {
    text.chars().filter(|&c| !c.is_control() || c == '\n' || c == '\t').collect()
}

/// Writes `bytes` to `path` (see the module docs); `force` replaces a file.
pub fn write_file(path: &Path, bytes: &[u8], force: bool, data_dir: &Path) -> anyhow::Result<()> {
    let folder = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    if let (Ok(folder), Ok(data)) = (folder.canonicalize(), data_dir.canonicalize()) {
        if folder.starts_with(&data) {
            bail!("{} is inside Kea's data folder ({}), which holds the index and conversations: name a file elsewhere", path.display(), data.display());
        }
    }
    let replaced = match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => bail!("{} is a link: Kea does not write through links; name a file", path.display()),
        Ok(meta) if !meta.is_file() => bail!("{} exists and is not a file", path.display()),
        Ok(_) if !force => bail!("{} exists already: choose another file, or pass --force to replace it", path.display()),
        Ok(meta) => Some(meta.permissions()),
        Err(_) => None,
    };
    let mut staged = staged_beside(folder).with_context(|| format!("writing beside {}", path.display()))?;
    if let Some(permissions) = replaced {
        staged.as_file().set_permissions(permissions).with_context(|| format!("writing {}", path.display()))?;
    }
    staged.write_all(bytes).and_then(|()| staged.as_file().sync_all()).with_context(|| format!("writing {}", path.display()))?;
    staged.persist(path).with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

/// A file to stage the new one in, in `folder`: made as any new file is
/// (its mode from the user's umask), not owner-only as temporary files are.
fn staged_beside(folder: &Path) -> std::io::Result<tempfile::NamedTempFile> {
    let mut builder = tempfile::Builder::new();
    #[cfg(unix)]
    builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
    builder.tempfile_in(folder)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn a_file_is_replaced_only_when_asked_and_a_link_never_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let data = tempfile::tempdir().unwrap();
        let write_file = |path: &Path, bytes: &[u8], force: bool| super::write_file(path, bytes, force, data.path());
        let target = dir.path().join("report.md");
        write_file(&target, b"first", false).unwrap();
        let again = write_file(&target, b"second", false).unwrap_err().to_string();
        assert!(again.contains("--force") && std::fs::read(&target).unwrap() == b"first", "{again}");
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        let plain = data.path().join("made-plainly");
        std::fs::write(&plain, b"").unwrap();
        assert_eq!(mode(&target), mode(&plain), "a new file is made as any other (the umask), not owner-only");
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o640)).unwrap();
        write_file(&target, b"second", true).unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"second");
        assert_eq!(mode(&target), 0o640, "a replaced file keeps its mode");

        let precious = dir.path().join("kea.sqlite3");
        std::fs::write(&precious, b"the user's conversations").unwrap();
        let link = dir.path().join("link.md");
        std::os::unix::fs::symlink(&precious, &link).unwrap();
        for force in [false, true] {
            assert!(write_file(&link, b"overwritten", force).unwrap_err().to_string().contains("is a link"));
        }
        assert_eq!(std::fs::read(&precious).unwrap(), b"the user's conversations");
        assert!(write_file(dir.path(), b"x", true).unwrap_err().to_string().contains("not a file"));
        assert_eq!(printable("kettle\u{1b}[2J/en\r\n"), "kettle[2J/en");
        assert_eq!(terminal("a\u{1b}]0;title\u{7}\tb\r\nc"), "a]0;title\tb\nc");
        let leftovers = std::fs::read_dir(dir.path()).unwrap().count();
        assert_eq!(leftovers, 3, "no temporary file is left behind");
    }

    #[test]
    fn nothing_is_written_inside_the_data_folder_even_when_forced() {
        let data = tempfile::tempdir().unwrap();
        let index = data.path().join("kea.sqlite3");
        std::fs::write(&index, b"the index and conversations").unwrap();
        let nested = data.path().join("collections");
        std::fs::create_dir_all(&nested).unwrap();
        for target in [index.clone(), nested.join("report.md"), data.path().join("collections/../relevance-calibration.json")] {
            let refused = write_file(&target, b"fit", true, data.path()).unwrap_err().to_string();
            assert!(refused.contains("inside Kea's data folder"), "{refused}");
        }
        assert_eq!(std::fs::read(&index).unwrap(), b"the index and conversations");
        assert!(!data.path().join("relevance-calibration.json").exists() && std::fs::read_dir(&nested).unwrap().count() == 0);
    }
}
