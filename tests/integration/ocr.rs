//! Reading what has no text layer, and files that take too long: scanned
//! PDF pages and pictures go through the real Tesseract (installed by
//! `make`) in Chinese and English with their page numbers kept; without an
//! engine each such file says so; a file whose reading never finishes is
//! recorded as timed out while the others are indexed.

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::util::{repo_root, Sandbox};

fn scanned(name: &str) -> PathBuf {
    repo_root().join("tests/fixtures/scanned").join(name)
}

/// A sandbox holding the scanned fixtures: `scan-en.pdf` (two scanned pages,
/// English) and `notes/scan-zh.png` (a photographed page, Chinese).
fn sandbox_with_scans() -> Sandbox {
    let sandbox = Sandbox::empty();
    std::fs::create_dir_all(sandbox.path("notes")).unwrap();
    std::fs::copy(scanned("scan-en.pdf"), sandbox.path("scan-en.pdf")).unwrap();
    std::fs::copy(scanned("scan-zh.png"), sandbox.path("notes/scan-zh.png")).unwrap();
    sandbox
}

fn run_json(sandbox: &Sandbox, args: &[&str], env: &[(&str, &std::ffi::OsStr)]) -> Value {
    let mut command = sandbox.command(args);
    for (key, value) in env {
        command.env(key, value);
    }
    let out = command.output().unwrap();
    assert!(out.status.success(), "kea {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn scanned_pages_and_pictures_are_read_by_ocr_in_chinese_and_english() {
    let sandbox = sandbox_with_scans();
    let report = sandbox.index();
    assert_eq!(report["errors"], serde_json::json!([]), "{report}");

    let english = sandbox.search("blue-throated macaw nests in palm trees", 1);
    assert_eq!(english[0]["source"], "scan-en.pdf");
    assert_eq!(english[0]["page"], 2, "the scanned page keeps its number: {}", english[0]);
    assert!(english[0]["text"].as_str().unwrap().contains("savannas of Bolivia"), "{}", english[0]);

    let chinese = sandbox.search("玻利维亚的热带草原", 1);
    assert_eq!(chinese[0]["source"], "notes/scan-zh.png");
    let text = chinese[0]["text"].as_str().unwrap();
    for words in ["蓝喉金刚鹦鹉", "玻利维亚", "棕榈树"] {
        assert!(text.contains(words), "{words} missing from the OCR text {text:?}");
    }
}

#[test]
fn without_an_ocr_engine_each_scanned_file_says_what_to_install() {
    let sandbox = sandbox_with_scans();
    std::fs::write(sandbox.path("typed.md"), "# Typed\n\nA note with a text layer of its own.\n").unwrap();
    let report = run_json(&sandbox, &["index", "--json"], &[("KEA_TESSERACT", "/nonexistent/tesseract".as_ref())]);
    assert_eq!(report["errors"].as_array().unwrap().len(), 2, "{report}");
    for path in ["scan-en.pdf", "notes/scan-zh.png"] {
        let error = sandbox.error_of(path).unwrap_or_default();
        assert!(error.contains("no OCR engine") && error.contains("tesseract-ocr"), "{path}: {error}");
    }
    assert_eq!(sandbox.error_of("typed.md"), None);
}

#[test]
fn a_file_whose_reading_never_finishes_times_out_and_the_rest_are_indexed() {
    let sandbox = sandbox_with_scans();
    std::fs::write(sandbox.path("typed.md"), "# Typed\n\nA note with a text layer of its own.\n").unwrap();
    // An OCR engine that never answers (it knows English, so it is used).
    let tools = tempfile::tempdir().unwrap();
    // It also leaves a process of its own behind, which only killing the
    // reader's whole process group ends (issue 24).
    let stuck = tools.path().join("tesseract");
    let pids = tools.path().join("pids");
    let script = format!(
        "#!/bin/sh\nif [ \"$1\" = --list-langs ]; then printf 'List of available languages (1):\\neng\\n'; exit 0; fi\nsleep 600 &\necho $! >> {}\nexec sleep 600\n",
        pids.display()
    );
    std::fs::write(&stuck, script).unwrap();
    std::fs::set_permissions(&stuck, std::fs::Permissions::from_mode(0o755)).unwrap();

    let started = Instant::now();
    let report = run_json(&sandbox, &["index", "--json", "--file-timeout", "1"], &[("KEA_TESSERACT", stuck.as_os_str())]);
    assert!(started.elapsed() < Duration::from_secs(60), "the stuck files held the run for {:?}", started.elapsed());
    assert_eq!(report["errors"].as_array().unwrap().len(), 2, "{report}");
    for path in ["scan-en.pdf", "notes/scan-zh.png"] {
        let error = sandbox.error_of(path).unwrap_or_default();
        assert!(error.starts_with("timed out"), "{path}: {error}");
    }
    assert_eq!(sandbox.error_of("typed.md"), None);
    assert_eq!(sandbox.search("a text layer of its own", 1)[0]["source"], "typed.md");
    let left: Vec<String> = std::fs::read_to_string(&pids).unwrap().lines().map(str::to_string).collect();
    assert!(left.len() >= 2, "each stuck file started its OCR tool: {left:?}");
    for pid in &left {
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let alive = state.rsplit(") ").next().is_some_and(|rest| !rest.starts_with('Z') && !rest.is_empty());
        assert!(!alive, "an OCR tool's process {pid} outlived its reader: {state}");
    }
    // A timed-out file is not retried until it changes or is re-indexed.
    let again = run_json(&sandbox, &["index", "--json", "--file-timeout", "1"], &[("KEA_TESSERACT", stuck.as_os_str())]);
    assert_eq!(again["processed"], 0, "{again}");
}
