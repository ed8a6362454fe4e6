//! Opening a cited PDF at its page: the system's default PDF viewer is
//! asked for the page when it is one whose command line takes a page, or
//! a browser (`#page=N`). Any other viewer opens the file at its start, as
//! the caller's plain "open" does.
//! - Linux: the default from `xdg-mime`; Evince, Okular, Zathura, Atril,
//!   Xreader, MuPDF, Firefox, Chromium, Chrome.
//! - Windows: the `.pdf` handler's program from the registry (the user's
//!   choice, else the class); Adobe Acrobat and Reader, SumatraPDF, Edge,
//!   Chrome, Firefox.
//! - macOS: the handler of `com.adobe.pdf` in Launch Services' settings;
//!   Skim (by AppleScript), Chrome, Firefox, Edge. Preview takes no page.
//!
//! Only the Linux path is exercised on a real desktop here; the Windows
//! and macOS command lines and the parsing of what those systems report
//! are unit-tested.

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

/// The command that opens `pdf` at `page` with the Windows program `exe`
/// (the `.pdf` handler), if it takes a page.
pub fn windows_page_command(exe: &Path, pdf: &Path, page: u32) -> Option<Command> {
    // The file name whichever separator the path uses (the tests run on Linux).
    let text = exe.to_string_lossy().to_ascii_lowercase();
    let name = text.rsplit(['\\', '/']).next()?.trim_end_matches(".exe");
    let args: Vec<String> = match name {
        "acrord32" | "acrobat" => vec!["/A".into(), format!("page={page}"), pdf.display().to_string()],
        "sumatrapdf" => vec!["-page".into(), page.to_string(), pdf.display().to_string()],
        "msedge" | "chrome" | "firefox" => vec![format!("{}#page={page}", file_url(pdf))],
        _ => return None,
    };
    let mut command = Command::new(exe);
    command.args(args);
    Some(command)
}

/// The command that opens `pdf` at `page` with the macOS application
/// `bundle_id` (the `com.adobe.pdf` handler), if it takes a page.
pub fn macos_page_command(bundle_id: &str, pdf: &Path, page: u32) -> Option<Command> {
    let id = bundle_id.to_ascii_lowercase();
    let mut command;
    if id == "net.sourceforge.skim-app.skim" {
        let path = pdf.display().to_string().replace('\\', "\\\\").replace('"', "\\\"");
        command = Command::new("osascript");
        command.args([
            "-e".to_string(),
            format!("tell application id \"{bundle_id}\""),
            "-e".into(),
            format!("set opened to open POSIX file \"{path}\""),
            "-e".into(),
            format!("go opened to page {page} of opened"),
            "-e".into(),
            "activate".into(),
            "-e".into(),
            "end tell".into(),
        ]);
    } else if ["com.google.chrome", "org.mozilla.firefox", "com.microsoft.edgemac"].contains(&id.as_str()) {
        command = Command::new("open");
        command.args(["-b".to_string(), bundle_id.to_string(), format!("{}#page={page}", file_url(pdf))]);
    } else {
        return None;
    }
    Some(command)
}

/// A `file://` URL for an absolute path (Windows drive paths get a slash).
fn file_url(path: &Path) -> String {
    let text = path.display().to_string().replace('\\', "/").replace(' ', "%20").replace('#', "%23");
    if text.starts_with('/') {
        format!("file://{text}")
    } else {
        format!("file:///{text}")
    }
}

/// The program of a Windows open command (`"C:\…\x.exe" /flags "%1"`).
pub fn program_of_open_command(command: &str) -> Option<std::path::PathBuf> {
    let command = command.trim();
    let program = match command.strip_prefix('"') {
        Some(rest) => rest.split('"').next()?,
        None => command.split_whitespace().next()?,
    };
    (!program.is_empty()).then(|| std::path::PathBuf::from(program))
}

/// The bundle id handling `com.adobe.pdf` in Launch Services' settings (as
/// JSON, from `plutil`); `None` when the user never chose one (Preview).
pub fn pdf_handler_in_launch_services(settings_json: &str) -> Option<String> {
    let settings: serde_json::Value = serde_json::from_str(settings_json).ok()?;
    settings["LSHandlers"].as_array()?.iter().find(|h| h["LSHandlerContentType"] == "com.adobe.pdf").and_then(|h| {
        let role = |key: &str| h[key].as_str().filter(|id| *id != "-").map(str::to_string);
        role("LSHandlerRoleAll").or_else(|| role("LSHandlerRoleViewer"))
    })
}

/// The text a command prints, when it succeeds.
fn output_of(command: &mut Command) -> Option<String> {
    let out = command.output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string()).filter(|s| !s.is_empty())
}

/// The command opening `pdf` at `page` in this system's default viewer.
#[cfg(target_os = "linux")]
fn default_viewer_command(pdf: &Path, page: u32) -> Option<Command> {
    let id = output_of(Command::new("xdg-mime").args(["query", "default", "application/pdf"]))?;
    page_command(&id, pdf, page)
}

#[cfg(windows)]
fn default_viewer_command(pdf: &Path, page: u32) -> Option<Command> {
    let value = |key: &str, name: Option<&str>| {
        let mut command = Command::new("reg");
        command.args(["query", key]);
        match name {
            Some(name) => command.args(["/v", name]),
            None => command.arg("/ve"),
        };
        // The value is the line's text after its type (`REG_SZ`).
        output_of(&mut command)?.lines().find_map(|l| l.split_once("REG_SZ").map(|(_, v)| v.trim().to_string()))
    };
    let choice = r"HKCU\Software\Microsoft\Windows\CurrentVersion\Explorer\FileExts\.pdf\UserChoice";
    let prog_id = value(choice, Some("ProgId")).or_else(|| value(r"HKCR\.pdf", None))?;
    let open = value(&format!(r"HKCR\{prog_id}\shell\open\command"), None)?;
    windows_page_command(&program_of_open_command(&open)?, pdf, page)
}

#[cfg(target_os = "macos")]
fn default_viewer_command(pdf: &Path, page: u32) -> Option<Command> {
    let settings = dirs::home_dir()?.join("Library/Preferences/com.apple.LaunchServices/com.apple.launchservices.secure.plist");
    let json = output_of(Command::new("plutil").args(["-convert", "json", "-o", "-"]).arg(settings))?;
    macos_page_command(&pdf_handler_in_launch_services(&json)?, pdf, page)
}

#[cfg(not(any(target_os = "linux", target_os = "macos", windows)))]
fn default_viewer_command(_pdf: &Path, _page: u32) -> Option<Command> {
    None
}

/// Starts the default viewer at `page` of `pdf`; `false` when the file is
/// not a PDF or the viewer cannot take a page (or is unknown), so the
/// caller opens the file plainly.
pub fn open_pdf_at_page(pdf: &Path, page: u32) -> bool {
    if !pdf.extension().is_some_and(|e| e.eq_ignore_ascii_case("pdf")) {
        return false;
    }
    default_viewer_command(pdf, page).is_some_and(|mut command| command.spawn().is_ok())
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

    fn program_and_args(command: Option<Command>) -> Option<Vec<String>> {
        command.map(|c| std::iter::once(c.get_program()).chain(c.get_args()).map(|a| a.to_string_lossy().into_owned()).collect())
    }

    #[test]
    fn windows_viewers_that_take_a_page_get_it() {
        let pdf = Path::new(r"C:\Users\mei\Kea\guide.pdf");
        let run = |exe: &str| program_and_args(windows_page_command(Path::new(exe), pdf, 3));
        assert_eq!(run(r"C:\Program Files\Adobe\Acrobat DC\Acrobat\Acrobat.exe").unwrap()[1..], ["/A", "page=3", pdf.to_str().unwrap()]);
        assert_eq!(run(r"C:\Tools\SumatraPDF.exe").unwrap()[1..], ["-page", "3", pdf.to_str().unwrap()]);
        assert_eq!(run(r"C:\Program Files (x86)\Microsoft\Edge\Application\msedge.exe").unwrap()[1..], ["file:///C:/Users/mei/Kea/guide.pdf#page=3"]);
        assert_eq!(run(r"C:\Program Files\Foxit\FoxitPDFReader.exe"), None);
        assert_eq!(
            program_of_open_command(r#""C:\Program Files\SumatraPDF\SumatraPDF.exe" "%1""#).unwrap(),
            Path::new(r"C:\Program Files\SumatraPDF\SumatraPDF.exe")
        );
        assert_eq!(program_of_open_command(r"C:\Tools\viewer.exe %1").unwrap(), Path::new(r"C:\Tools\viewer.exe"));
    }

    #[test]
    fn macos_viewers_that_take_a_page_get_it_and_preview_does_not() {
        let pdf = Path::new("/Users/mei/Kea/cage guide.pdf");
        let skim = program_and_args(macos_page_command("net.sourceforge.skim-app.skim", pdf, 4)).unwrap();
        assert_eq!(skim[0], "osascript");
        assert!(skim.contains(&"set opened to open POSIX file \"/Users/mei/Kea/cage guide.pdf\"".to_string()), "{skim:?}");
        assert!(skim.contains(&"go opened to page 4 of opened".to_string()), "{skim:?}");
        let chrome = program_and_args(macos_page_command("com.google.Chrome", pdf, 4)).unwrap();
        assert_eq!(chrome, ["open", "-b", "com.google.Chrome", "file:///Users/mei/Kea/cage%20guide.pdf#page=4"]);
        assert_eq!(program_and_args(macos_page_command("com.apple.Preview", pdf, 4)), None);
        let settings = r#"{"LSHandlers":[{"LSHandlerURLScheme":"https","LSHandlerRoleAll":"com.google.chrome"},
            {"LSHandlerContentType":"com.adobe.pdf","LSHandlerRoleAll":"net.sourceforge.skim-app.skim"}]}"#;
        assert_eq!(pdf_handler_in_launch_services(settings).as_deref(), Some("net.sourceforge.skim-app.skim"));
        assert_eq!(pdf_handler_in_launch_services(r#"{"LSHandlers":[]}"#), None);
    }
}
