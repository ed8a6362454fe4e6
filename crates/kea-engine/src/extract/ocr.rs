//! OCR through the Tesseract command (Debian `tesseract-ocr` with the
//! `chi-sim` and `eng` data) for pictures and for PDF pages with no text
//! layer, which poppler's `pdftoppm` renders first. Both run as child
//! processes that are killed at the file's deadline, so a page that makes
//! either loop costs its budget and no more.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The languages Kea asks Tesseract for, in order of preference.
const WANTED_LANGUAGES: [&str; 2] = ["chi_sim", "eng"];
/// Rendering resolution for scanned pages (Tesseract reads 300 dpi best).
const PAGE_DPI: &str = "300";

/// An OCR engine found on this machine.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Ocr {
    tesseract: PathBuf,
    /// `pdftoppm`, which scanned PDFs need; pictures do not.
    pdftoppm: Option<PathBuf>,
    /// Tesseract's `-l` argument, e.g. `chi_sim+eng`.
    languages: String,
}

/// Why a page or picture could not be read by OCR.
pub(crate) const NO_OCR_ENGINE: &str = "no OCR engine was found: install Tesseract (Debian: tesseract-ocr tesseract-ocr-chi-sim tesseract-ocr-eng) \
                                        and re-index this file";

impl Ocr {
    /// Tesseract (`$KEA_TESSERACT` or `tesseract` on the PATH) with the
    /// Chinese and English data it has; `None` when it is absent or has
    /// neither language.
    pub fn discover() -> Option<Ocr> {
        let tesseract = std::env::var_os("KEA_TESSERACT").map(PathBuf::from).or_else(|| on_path("tesseract"))?;
        let listed = Command::new(&tesseract).arg("--list-langs").stderr(Stdio::null()).output().ok()?;
        let listed = String::from_utf8_lossy(&listed.stdout);
        let available: Vec<&str> = listed.lines().map(str::trim).collect();
        let languages: Vec<&str> = WANTED_LANGUAGES.into_iter().filter(|l| available.contains(l)).collect();
        if languages.is_empty() {
            return None;
        }
        let pdftoppm = std::env::var_os("KEA_PDFTOPPM").map(PathBuf::from).or_else(|| on_path("pdftoppm"));
        Some(Ocr { tesseract, pdftoppm, languages: languages.join("+") })
    }

    /// The text in a picture (any format Tesseract's image library reads).
    pub(crate) fn picture_text(&self, bytes: &[u8], deadline: Instant) -> Result<String, String> {
        let dir = tempfile::tempdir().map_err(|e| format!("OCR: no temporary folder: {e}"))?;
        let picture = dir.path().join("picture");
        std::fs::write(&picture, bytes).map_err(|e| format!("OCR: cannot write a temporary file: {e}"))?;
        self.recognise(&picture, deadline)
    }

    /// The text of each of `pages` (1-based) of a PDF, rendered at 300 dpi.
    pub(crate) fn pdf_pages_text(&self, pdf: &[u8], pages: &[u32], deadline: Instant) -> Result<Vec<(u32, String)>, String> {
        let Some(pdftoppm) = &self.pdftoppm else {
            return Err("scanned pages need poppler's pdftoppm to render them for OCR (Debian: poppler-utils)".into());
        };
        let dir = tempfile::tempdir().map_err(|e| format!("OCR: no temporary folder: {e}"))?;
        let source = dir.path().join("document.pdf");
        std::fs::write(&source, pdf).map_err(|e| format!("OCR: cannot write a temporary file: {e}"))?;
        let mut texts = Vec::with_capacity(pages.len());
        for &page in pages {
            let stem = dir.path().join(format!("page-{page}"));
            let number = page.to_string();
            let mut render = Command::new(pdftoppm);
            render.args(["-r", PAGE_DPI, "-gray", "-png", "-singlefile", "-f", &number, "-l", &number]).arg(&source).arg(&stem);
            run(render, deadline, "rendering a scanned page")?;
            texts.push((page, self.recognise(&stem.with_extension("png"), deadline)?));
        }
        Ok(texts)
    }

    /// Runs Tesseract on one image file; its text with Chinese joined up.
    fn recognise(&self, image: &Path, deadline: Instant) -> Result<String, String> {
        let mut command = Command::new(&self.tesseract);
        // One thread: the embedding model has the other cores (Tesseract's
        // OpenMP threads would fight it for them).
        command.arg(image).arg("stdout").args(["-l", &self.languages, "--psm", "3"]).env("OMP_THREAD_LIMIT", "1");
        let text = run(command, deadline, "OCR")?;
        Ok(join_cjk(&text))
    }
}

/// Runs a command to completion or until `deadline` (then kills it),
/// returning its standard output.
fn run(mut command: Command, deadline: Instant, what: &str) -> Result<String, String> {
    let mut child = command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().map_err(|e| format!("{what}: cannot start: {e}"))?;
    let mut stdout = child.stdout.take().expect("stdout is piped");
    let reader = std::thread::spawn(move || {
        let mut out = Vec::new();
        let _ = stdout.read_to_end(&mut out);
        out
    });
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("timed out: {what} did not finish within the file's time budget"));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(format!("{what}: {e}")),
        }
    };
    let out = reader.join().unwrap_or_default();
    if !status.success() {
        let mut err = String::new();
        if let Some(mut stderr) = child.stderr.take() {
            let _ = stderr.read_to_string(&mut err);
        }
        return Err(format!("{what} failed: {}", err.lines().last().unwrap_or("no message").trim()));
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// Tesseract separates Chinese characters with spaces; a space between two
/// CJK characters (or a CJK character and CJK punctuation) is dropped.
fn join_cjk(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    // The first character that is not a space at or after each position
    // (one backward pass: a long run of spaces is not rescanned per space).
    let mut next_word = vec![None; chars.len() + 1];
    for i in (0..chars.len()).rev() {
        next_word[i] = if chars[i] == ' ' { next_word[i + 1] } else { Some(chars[i]) };
    }
    let mut out = String::with_capacity(text.len());
    for (i, &c) in chars.iter().enumerate() {
        if c == ' ' && out.chars().next_back().is_some_and(is_cjk) && next_word[i + 1].is_some_and(is_cjk) {
            continue;
        }
        out.push(c);
    }
    out
}

fn is_cjk(c: char) -> bool {
    matches!(c, '\u{3000}'..='\u{303F}' | '\u{3400}'..='\u{4DBF}' | '\u{4E00}'..='\u{9FFF}' | '\u{F900}'..='\u{FAFF}' | '\u{FF00}'..='\u{FFEF}')
}

fn on_path(name: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?).map(|dir| dir.join(name)).find(|p| p.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spaces_between_chinese_characters_are_dropped_and_others_kept() {
        assert_eq!(join_cjk("玄 凤 鹦 鹉 吃 种 子 。 Cockatiels eat seeds."), "玄凤鹦鹉吃种子。 Cockatiels eat seeds.");
        assert_eq!(join_cjk("鹦鹉 parrot 鹦鹉"), "鹦鹉 parrot 鹦鹉");
        // Issue 24: a long run of spaces was rescanned for every space (quadratic).
        let spaced = format!("鹦{}鹉 a{}b", " ".repeat(2 << 20), " ".repeat(2 << 20));
        assert_eq!(join_cjk(&spaced), format!("鹦鹉 a{}b", " ".repeat(2 << 20)));
    }

    #[test]
    fn a_command_past_its_deadline_is_killed() {
        let mut sleeper = Command::new("sleep");
        sleeper.arg("30");
        let started = Instant::now();
        let error = run(sleeper, Instant::now() + Duration::from_millis(200), "OCR").unwrap_err();
        assert!(error.starts_with("timed out"), "{error}");
        assert!(started.elapsed() < Duration::from_secs(10));
    }
}
