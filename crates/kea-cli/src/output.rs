//! What the command line prints and writes where the person says (`chat
//! export --out`, `eval --signals-out`, `eval --calibrate --out`): files as
//! [`kea_engine::output`] writes them (an existing one replaced only with
//! `--force`), and text from files or peers without terminal escapes.

use std::path::Path;

use anyhow::bail;
use kea_engine::import::is_bidi_control;

/// `text` with its control characters (terminal escape sequences among
/// them, 8-bit ones too) and direction overrides dropped, for printing what
/// a file or a peer gave.
pub fn printable(text: &str) -> String {
    text.chars().filter(|&c| !c.is_control() && !redraws(c)).collect()
}

/// A path as [`printable`] text.
pub fn printable_path(path: &Path) -> String {
    printable(&path.display().to_string())
}

/// Direction overrides and Unicode's own line and paragraph separators
/// (some terminals and every text view break the line there).
fn redraws(c: char) -> bool {
    is_bidi_control(c) || matches!(c, '\u{2028}' | '\u{2029}')
}

/// `text` for a terminal: as [`printable`] but line breaks and tabs kept
/// (a document's or a model's text, printed as it streams).
pub fn terminal(text: &str) -> String {
    text.chars().filter(|&c| (!c.is_control() || c == '\n' || c == '\t') && !redraws(c)).collect()
}

/// `text` on one line, as [`printable`] but with line breaks and tabs as
/// spaces (a name, a heading or a snippet listed under an answer: a line
/// break in a file's name must not start a line of its own).
pub fn one_line(text: &str) -> String {
    printable(&text.replace(['\n', '\r', '\t', '\u{2028}', '\u{2029}'], " "))
}

/// Writes `bytes` to `path` (see [`kea_engine::output`]); `force` replaces a file.
pub fn write_file(path: &Path, bytes: &[u8], force: bool, data_dir: &Path) -> anyhow::Result<()> {
    with_hint(kea_engine::output::write_file(path, bytes, force, data_dir), path, force, data_dir)
}

/// Whether `path` may be written (as [`write_file`] would), asked before a
/// long run so it does not fail at the end.
pub fn check_writable(path: &Path, force: bool, data_dir: &Path) -> anyhow::Result<()> {
    with_hint(kea_engine::output::check(path, force, data_dir).map(drop), path, force, data_dir)
}

/// `result`, its error with the `--force` hint where --force would write
/// (not a link, a database or the data folder).
fn with_hint(result: kea_engine::Result<()>, path: &Path, force: bool, data_dir: &Path) -> anyhow::Result<()> {
    match result {
        Err(e) if !force && kea_engine::output::check(path, true, data_dir).is_ok_and(|replaced| replaced.is_some()) => {
            bail!("{e}, or pass --force to replace it")
        }
        done => Ok(done?),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_existing_file_is_replaced_with_force_and_printed_text_has_no_escapes() {
        let (dir, data) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let target = dir.path().join("report.md");
        write_file(&target, b"first", false, data.path()).unwrap();
        let again = write_file(&target, b"second", false, data.path()).unwrap_err().to_string();
        assert!(again.contains("--force") && std::fs::read(&target).unwrap() == b"first", "{again}");
        write_file(&target, b"second", true, data.path()).unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"second");
        assert_eq!(printable("kettle\u{1b}[2J/en\r\n\u{9b}31m"), "kettle[2J/en31m");
        assert_eq!(printable("report\u{202e}gpj.md"), "reportgpj.md");
        assert_eq!(terminal("a\u{1b}]0;title\u{7}\tb\r\nc"), "a]0;title\tb\nc");
        // A file name that would start a forged citation line of its own.
        assert_eq!(one_line("note\n  [S9] fake.md\u{1b}[0m"), "note   [S9] fake.md[0m");
        assert_eq!((one_line("a\u{2028}b"), printable("a\u{2029}b")), ("a b".to_string(), "ab".to_string()));
    }
}
