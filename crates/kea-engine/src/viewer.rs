//! Opening a cited PDF at its page: the system's default PDF viewer (from
//! `xdg-mime` on Linux) is asked for the page when it is one whose command
//! line takes a page (Evince, Okular, Zathura, Atril, Xreader, MuPDF) or a
//! browser (`#page=N`). Any other viewer opens the file at its start, as
//! the caller's plain "open" does.

use std::path::Path;
use std::process::Command;

/// The command that opens `pdf` at `page` with the viewer whose desktop
/// entry is `desktop_id` (e.g. `org.gnome.Evince.desktop`), if it takes a page.
pub fn page_command(desktop_id: &str, pdf: &Path, page: u32) -> Option<Command> {
    let id = desktop_id.to_ascii_lowercase();
    let has = |name: &str| id.contains(name);
    let (program, args): (&str, Vec<String>) = if has("evince") {
        ("evince", vec![format!("--page-index={page}")])
    } else if has("okular") {
        ("okular", vec!["--page".into(), page.to_string()])
    } else if has("zathura") {
        ("zathura", vec![format!("--page={page}")])
    } else if has("atril") {
        ("atril", vec![format!("--page-index={page}")])
    } else if has("xreader") {
        ("xreader", vec![format!("--page-index={page}")])
    } else if has("mupdf") {
        ("mupdf", vec![])
    } else if let Some(browser) = [("firefox", "firefox"), ("chromium", "chromium"), ("chrome", "google-chrome")].into_iter().find(|(name, _)| has(name)) {
        (browser.1, vec![format!("file://{}#page={page}", pdf.display())])
    } else {
        return None;
    };
    let mut command = Command::new(program);
    command.args(args);
    match program {
        // A browser has the file in its URL; MuPDF takes the page after the file.
        "firefox" | "chromium" | "google-chrome" => {}
        "mupdf" => {
            command.arg(pdf).arg(page.to_string());
        }
        _ => {
            command.arg(pdf);
        }
    }
    Some(command)
}

/// The desktop entry of the default PDF viewer (`xdg-mime query default`).
pub fn default_pdf_viewer() -> Option<String> {
    let out = Command::new("xdg-mime").args(["query", "default", "application/pdf"]).output().ok()?;
    let id = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (out.status.success() && !id.is_empty()).then_some(id)
}

/// Starts the default viewer at `page` of `pdf`; `false` when the file is
/// not a PDF or the viewer cannot take a page (or is unknown), so the
/// caller opens the file plainly.
pub fn open_pdf_at_page(pdf: &Path, page: u32) -> bool {
    if !pdf.extension().is_some_and(|e| e.eq_ignore_ascii_case("pdf")) {
        return false;
    }
    let Some(mut command) = default_pdf_viewer().and_then(|id| page_command(&id, pdf, page)) else { return false };
    command.spawn().is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(id: &str) -> Option<Vec<String>> {
        page_command(id, Path::new("/k/guide.pdf"), 3)
            .map(|c| std::iter::once(c.get_program()).chain(c.get_args()).map(|a| a.to_string_lossy().into_owned()).collect())
    }

    #[test]
    fn viewers_that_take_a_page_get_it_and_others_do_not() {
        assert_eq!(args("org.gnome.Evince.desktop").unwrap(), ["evince", "--page-index=3", "/k/guide.pdf"]);
        assert_eq!(args("okularApplication_pdf.desktop").unwrap(), ["okular", "--page", "3", "/k/guide.pdf"]);
        assert_eq!(args("org.pwmt.zathura-pdf-mupdf.desktop").unwrap(), ["zathura", "--page=3", "/k/guide.pdf"]);
        assert_eq!(args("mupdf.desktop").unwrap(), ["mupdf", "/k/guide.pdf", "3"]);
        assert_eq!(args("firefox-esr.desktop").unwrap(), ["firefox", "file:///k/guide.pdf#page=3"]);
        assert_eq!(args("chromium.desktop").unwrap(), ["chromium", "file:///k/guide.pdf#page=3"]);
        assert_eq!(args("libreoffice-draw.desktop"), None);
    }
}
