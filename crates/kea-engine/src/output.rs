//! Files Kea writes where the person says (a conversation's export, a
//! collection file, a fit, signal rows): an existing file is replaced only
//! when asked and never when it is a SQLite database (an index and its
//! conversations are nobody's output), a link is never written through,
//! nothing is written inside Kea's data folder, and the bytes go to a new
//! temporary file beside the target that is then renamed over it, so a
//! failed write leaves what was there.

use std::fs::Permissions;
use std::io::Write;
use std::path::Path;

use crate::error::{Error, Result};

/// The first bytes of every SQLite database file.
const SQLITE_HEADER: &[u8] = b"SQLite format 3\0";
/// The first bytes of a SQLite write-ahead log (either byte order).
const WAL_MAGIC: [[u8; 4]; 2] = [[0x37, 0x7f, 0x06, 0x82], [0x37, 0x7f, 0x06, 0x83]];
/// The names SQLite gives the files beside a database.
const SQLITE_SIDE_FILES: [&str; 3] = ["-wal", "-shm", "-journal"];

/// Writes `bytes` to `path` (see the module docs); `replace` replaces a file.
pub fn write_file(path: &Path, bytes: &[u8], replace: bool, data_folder: &Path) -> Result<()> {
    let written = |e| Error::io(format!("writing {}", path.display()), e);
    let mut staged = stage(path, replace, data_folder)?;
    staged.write_all(bytes).map_err(written)?;
    persist(staged, path, replace)
}

/// Puts `staged` (from [`stage`], written) in `path`'s place once it is on
/// disk; not asked to `replace`, a file made there meanwhile is kept.
pub fn persist(staged: tempfile::NamedTempFile, path: &Path, replace: bool) -> Result<()> {
    let written = |e| Error::io(format!("writing {}", path.display()), e);
    staged.as_file().sync_all().map_err(written)?;
    match replace {
        true => staged.persist(path).map(drop),
        false => staged.persist_noclobber(path).map(drop),
    }
    .map_err(|e| written(e.error))
}

/// A new temporary file beside `path` to write it in, once `path` is known
/// to be one Kea may write (see the module docs); it takes the mode of the
/// file it replaces, or the one the user's umask gives a new file.
pub fn stage(path: &Path, replace: bool, data_folder: &Path) -> Result<tempfile::NamedTempFile> {
    let kept_mode = check(path, replace, data_folder)?;
    let written = |e| Error::io(format!("writing beside {}", path.display()), e);
    let staged = staged_beside(folder_of(path)).map_err(written)?;
    if let Some(permissions) = kept_mode {
        staged.as_file().set_permissions(permissions).map_err(written)?;
    }
    Ok(staged)
}

/// Whether Kea may write `path` (see the module docs): the permissions of
/// the file it replaces, if any, or why not.
pub fn check(path: &Path, replace: bool, data_folder: &Path) -> Result<Option<Permissions>> {
    if let (Ok(folder), Ok(data)) = (folder_of(path).canonicalize(), data_folder.canonicalize()) {
        if folder.starts_with(&data) {
            return Err(refused(format!(
                "{} is inside Kea's data folder ({}), which holds the index and conversations: name a file elsewhere",
                path.display(),
                data.display()
            )));
        }
    }
    replaced_mode(path, replace)
}

fn folder_of(path: &Path) -> &Path {
    path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."))
}

/// The permissions of the file `path` replaces (`None`: there is none), or
/// why it may not be replaced.
fn replaced_mode(path: &Path, replace: bool) -> Result<Option<Permissions>> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => Err(refused(format!("{} is a link: Kea does not write through links; name a file", path.display()))),
        Ok(meta) if !meta.is_file() => Err(refused(format!("{} exists and is not a file", path.display()))),
        Ok(_) if !replace => Err(refused(format!("{} exists already: choose another file", path.display()))),
        Ok(_) if part_of_a_database(path) => {
            Err(refused(format!("{} is part of a database (an index and its conversations) or cannot be read: Kea does not replace it", path.display())))
        }
        Ok(meta) => Ok(Some(meta.permissions())),
        Err(_) => Ok(None),
    }
}

fn refused(why: String) -> Error {
    Error::InvalidInput(why)
}

/// Whether the file at `path` is a SQLite database, its write-ahead log,
/// shared memory or rollback journal (which hold committed rows the
/// database file may not have yet), or a file Kea cannot read to tell.
fn part_of_a_database(path: &Path) -> bool {
    let name = path.file_name().map(|n| n.to_string_lossy().to_lowercase()).unwrap_or_default();
    if SQLITE_SIDE_FILES.iter().any(|suffix| name.ends_with(suffix)) {
        return true;
    }
    let mut header = Vec::with_capacity(SQLITE_HEADER.len());
    match std::fs::File::open(path).and_then(|f| std::io::Read::read_to_end(&mut std::io::Read::take(f, SQLITE_HEADER.len() as u64), &mut header)) {
        Ok(_) => header == SQLITE_HEADER || WAL_MAGIC.iter().any(|magic| header.starts_with(magic)),
        Err(_) => true,
    }
}

/// A file to stage the new one in, in `folder`: created new (never an
/// existing file or link) and made as any new file is (its mode from the
/// user's umask), not owner-only as temporary files are.
fn staged_beside(folder: &Path) -> std::io::Result<tempfile::NamedTempFile> {
    let mut builder = tempfile::Builder::new();
    builder.prefix(".kea-partial-");
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
        let write_file = |path: &Path, bytes: &[u8], replace: bool| super::write_file(path, bytes, replace, data.path());
        let target = dir.path().join("report.md");
        write_file(&target, b"first", false).unwrap();
        let again = write_file(&target, b"second", false).unwrap_err().to_string();
        assert!(again.contains("exists already") && std::fs::read(&target).unwrap() == b"first", "{again}");
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
        for replace in [false, true] {
            assert!(write_file(&link, b"overwritten", replace).unwrap_err().to_string().contains("is a link"));
        }
        assert_eq!(std::fs::read(&precious).unwrap(), b"the user's conversations");
        assert!(write_file(dir.path(), b"x", true).unwrap_err().to_string().contains("not a file"));
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

    #[test]
    fn a_database_is_never_replaced_even_when_asked() {
        let (dir, data) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let copy = dir.path().join("backup-of-the-index.sqlite3");
        rusqlite::Connection::open(&copy).unwrap().execute_batch("CREATE TABLE kept (x); INSERT INTO kept VALUES (1);").unwrap();
        let before = std::fs::read(&copy).unwrap();
        let refused = write_file(&copy, b"{}", true, data.path()).unwrap_err().to_string();
        assert!(refused.contains("part of a database"), "{refused}");
        assert_eq!(std::fs::read(&copy).unwrap(), before);
        // Its write-ahead log, whatever it is called, and a file named as one.
        let log = dir.path().join("renamed.log");
        std::fs::write(&log, [0x37, 0x7f, 0x06, 0x82, 0, 0, 0, 1]).unwrap();
        let shm = dir.path().join("index.sqlite3-shm");
        std::fs::write(&shm, b"rows").unwrap();
        for side in [log, shm] {
            assert!(write_file(&side, b"{}", true, data.path()).unwrap_err().to_string().contains("part of a database"));
            assert_ne!(std::fs::read(&side).unwrap(), b"{}");
        }
    }
}
