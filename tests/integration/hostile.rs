//! Hostile files: a generated corpus of over 50 bad inputs (broken,
//! encrypted and truncated PDFs, zip-bomb and broken-XML docx, binary and
//! mis-encoded text, huge and empty files, symlink tricks, odd names) next
//! to good files. `kea index` must not crash, must give every file a clear
//! status, must index every good file, and must stay within bounded memory
//! (peak RSS is printed: run with `-- --nocapture`).
//!
//! Run alone: `cargo test -p kea-cli --test integration hostile -- --nocapture`.

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use super::util::{docx_with, paragraph_docx, repo_root, Sandbox};

/// A deflated XML part of ~200 MB that compresses to well under 1 MB.
fn zip_bomb_docx() -> Vec<u8> {
    let mut out = std::io::Cursor::new(Vec::new());
    let mut zip = zip::ZipWriter::new(&mut out);
    let options = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated).large_file(true);
    zip.start_file("word/document.xml", options).unwrap();
    zip.write_all(br#"<?xml version="1.0"?><w:document xmlns:w="x"><w:body><w:p><w:r><w:t>"#).unwrap();
    let block = vec![b'A'; 1 << 20];
    for _ in 0..200 {
        zip.write_all(&block).unwrap();
    }
    zip.write_all(b"</w:t></w:r></w:p></w:body></w:document>").unwrap();
    zip.finish().unwrap();
    out.into_inner()
}

fn pseudo_random(n: usize, seed: u32) -> Vec<u8> {
    (0..n as u32).map(|i| (i.wrapping_add(seed).wrapping_mul(2654435761) >> 24) as u8).collect()
}

/// Writes the hostile corpus under `dir`; returns how many entries it made.
// The hostile corpus: one short case after another.
#[allow(clippy::too_many_lines)]
fn write_hostile(dir: &Path, outside: &Path) -> usize {
    std::fs::create_dir_all(dir).unwrap();
    let pdf = std::fs::read(repo_root().join("knowledge/guides/cage-setup.pdf")).unwrap();
    let docx = std::fs::read(repo_root().join("knowledge/guides/鹦鹉新手饲养指南.docx")).unwrap();
    let mut files: Vec<(String, Vec<u8>)> = Vec::new();
    // PDFs: truncated at several points, garbage bodies, a fake encryption dictionary, cut xref.
    for (i, cut) in [1, 8, 64, 256, pdf.len() / 4, pdf.len() / 2, pdf.len() - 10].into_iter().enumerate() {
        files.push((format!("pdf/truncated-{i}.pdf"), pdf[..cut.min(pdf.len())].to_vec()));
    }
    files.push(("pdf/garbage.pdf".into(), pseudo_random(50_000, 1)));
    files.push(("pdf/header-only.pdf".into(), b"%PDF-1.7\n".to_vec()));
    let mut encrypted = pdf.clone();
    let trailer = String::from_utf8_lossy(&pdf).rfind("trailer").unwrap_or(pdf.len() / 2);
    encrypted.splice(trailer..trailer, b"trailer\n<< /Encrypt << /Filter /Standard /V 2 /R 3 /O <00> /U <00> /P -4 >> >>\n".iter().copied());
    files.push(("pdf/encrypted.pdf".into(), encrypted));
    let mut flipped = pdf.clone();
    for i in (100..flipped.len()).step_by(97) {
        flipped[i] ^= 0x5a;
    }
    files.push(("pdf/bit-flipped.pdf".into(), flipped));
    files.push(("pdf/no-xref.pdf".into(), String::from_utf8_lossy(&pdf).replace("xref", "xxxx").into_bytes()));
    // docx: zip bomb, broken XML, not a zip, truncated zip, missing part, nested garbage.
    files.push(("docx/zip-bomb.docx".into(), zip_bomb_docx()));
    files.push(("docx/broken-xml.docx".into(), docx_with(b"<w:document><w:body><w:p><w:t>unclosed", zip::CompressionMethod::Deflated)));
    files.push(("docx/not-xml.docx".into(), docx_with(&pseudo_random(10_000, 2), zip::CompressionMethod::Stored)));
    files.push(("docx/not-a-zip.docx".into(), b"this is plain text pretending to be a docx".to_vec()));
    files.push(("docx/truncated.docx".into(), docx[..docx.len() / 2].to_vec()));
    files.push(("docx/empty.docx".into(), Vec::new()));
    files.push((
        "docx/deep-nesting.docx".into(),
        docx_with(format!("{}{}", "<a>".repeat(100_000), "</a>".repeat(100_000)).as_bytes(), zip::CompressionMethod::Deflated),
    ));
    files.push(("docx/entity-expansion.docx".into(), docx_with(br#"<?xml version="1.0"?><!DOCTYPE l [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;"><!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">]><w:document><w:t>&c;&c;&c;</w:t></w:document>"#, zip::CompressionMethod::Deflated)));
    // Text: binary, invalid UTF-8, UTF-16 with and without BOM, NULs, control characters, huge lines.
    files.push(("text/binary.md".into(), pseudo_random(20_000, 3)));
    files.push(("text/elf.txt".into(), [b"\x7fELF\x02\x01\x01".as_slice(), &pseudo_random(4000, 4)].concat()));
    files.push(("text/invalid-utf8.md".into(), b"# Title\n\nvalid start \xff\xfe\xc3\x28 broken \xe2\x82 end\n".to_vec()));
    let utf16: Vec<u8> = "# UTF-16 notes\n\nCockatiels whistle.\n".encode_utf16().flat_map(|u| u.to_le_bytes()).collect();
    files.push(("text/utf16-bom.txt".into(), [[0xFF, 0xFE].as_slice(), &utf16].concat()));
    files.push(("text/utf16-no-bom.txt".into(), utf16));
    files.push(("text/nul-bytes.md".into(), b"# Nul\n\nbefore\0\0\0after\n".to_vec()));
    files.push(("text/control-chars.txt".into(), (0u8..32).cycle().take(5000).collect()));
    files.push(("text/zero.md".into(), Vec::new()));
    files.push(("text/whitespace-only.txt".into(), b" \n\t\n   \n".to_vec()));
    files.push(("text/one-long-line.md".into(), "word ".repeat(1_000_000).into_bytes()));
    files.push(("text/million-lines.txt".into(), "a line\n".repeat(1_000_000).into_bytes()));
    files.push(("text/deep-headings.md".into(), (1..2000).map(|i| format!("{} h{i}\n\ntext {i}\n\n", "#".repeat(1 + i % 6))).collect::<String>().into_bytes()));
    files.push(("text/unclosed-front-matter.md".into(), b"---\ntitle: [unclosed\ntags: {a: \n# Body\n\ntext\n".to_vec()));
    files.push(("text/huge-front-matter.md".into(), format!("---\n{}---\n# Body\n", "key: value\n".repeat(100_000)).into_bytes()));
    files.push(("text/markup.md".into(), b"<script>alert(1)</script>\n\n# Heading <img src=x onerror=alert(1)>\n".to_vec()));
    files.push(("text/rtl-and-zero-width.md".into(), "# \u{202e}txt.exe\n\n\u{200b}\u{200b}zero\u{feff}width\n".as_bytes().to_vec()));
    files.push(("text/fenced-forever.md".into(), format!("# Code\n\n```\n{}", "let x = 1;\n".repeat(10_000)).into_bytes()));
    // Names: spaces, emoji, Chinese, leading dashes, very long, dots.
    for name in [
        "names/with spaces.md",
        "names/🦜 emoji.md",
        "names/鹦鹉笔记.md",
        "names/-leading-dash.md",
        "names/--help.md",
        "names/...dots.md",
        "names/semi;colon&amp.md",
        "names/quote'\"s.md",
    ] {
        files.push((name.into(), format!("# {name}\n\nA note about parrots named {name}.\n").into_bytes()));
    }
    files.push((format!("names/{}.md", "long".repeat(60)), b"# Long name\n\ntext\n".to_vec()));
    files.push(("names/UPPER.MD".into(), b"# Upper case extension\n\ntext\n".to_vec()));
    files.push(("names/docx-named.md".into(), paragraph_docx("a docx wearing a .md name")));
    files.push(("names/pdf-named.txt".into(), pdf.clone()));

    for (rel, bytes) in &files {
        let path = dir.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, bytes).unwrap();
    }
    let mut count = files.len();
    // Over the size limit without using the disk (sparse).
    let big = std::fs::File::create(dir.join("text/half-gigabyte.txt")).unwrap();
    big.set_len(500 << 20).unwrap();
    count += 1;
    // Unreadable (still readable by root, so either status is accepted).
    let unreadable = dir.join("text/unreadable.md");
    std::fs::write(&unreadable, "# Secret\n\nno read permission\n").unwrap();
    std::os::unix::fs::PermissionsExt::set_mode(&mut std::fs::metadata(&unreadable).unwrap().permissions(), 0o000);
    std::fs::set_permissions(&unreadable, std::os::unix::fs::PermissionsExt::from_mode(0o000)).unwrap();
    count += 1;
    // Symlinks: a loop, one pointing outside the knowledge folder, one dangling, a dir loop.
    std::fs::create_dir_all(dir.join("links")).unwrap();
    std::os::unix::fs::symlink("loop-b.md", dir.join("links/loop-a.md")).unwrap();
    std::os::unix::fs::symlink("loop-a.md", dir.join("links/loop-b.md")).unwrap();
    std::fs::write(outside.join("secret.md"), "# Outside\n\nThis must never be indexed: SECRET-OUTSIDE-TOKEN.\n").unwrap();
    std::os::unix::fs::symlink(outside.join("secret.md"), dir.join("links/outside.md")).unwrap();
    std::os::unix::fs::symlink(outside, dir.join("links/outside-dir")).unwrap();
    std::os::unix::fs::symlink("missing.md", dir.join("links/dangling.md")).unwrap();
    std::os::unix::fs::symlink("..", dir.join("links/parent-loop")).unwrap();
    count + 6
}

/// Peak resident memory (KiB) of a running process, polled until it exits.
fn run_with_peak_rss(mut child: std::process::Child) -> (std::process::Output, u64) {
    let status_path = format!("/proc/{}/status", child.id());
    let mut peak = 0;
    loop {
        if let Ok(status) = std::fs::read_to_string(&status_path) {
            if let Some(hwm) = status.lines().find_map(|l| l.strip_prefix("VmHWM:")) {
                peak = peak.max(hwm.split_whitespace().next().and_then(|v| v.parse().ok()).unwrap_or(0));
            }
        }
        if child.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    (child.wait_with_output().unwrap(), peak)
}

/// PDF, Word and pictures are read in a child process with a memory limit
/// (`--file-memory`): a file needing more fails alone, with the reason, and
/// the PDF, Word file and notes beside it are indexed.
#[test]
fn a_file_over_its_memory_budget_fails_alone() {
    let sandbox = Sandbox::empty();
    let mut xml = br#"<?xml version="1.0"?><w:document xmlns:w="x"><w:body><w:p><w:r><w:t>"#.to_vec();
    xml.extend(std::iter::repeat_n(b'A', 60 << 20));
    xml.extend_from_slice(b"</w:t></w:r></w:p></w:body></w:document>");
    std::fs::write(sandbox.path("large.docx"), docx_with(&xml, zip::CompressionMethod::Deflated)).unwrap();
    std::fs::write(sandbox.path("small.docx"), paragraph_docx("Budgies chatter at dawn.")).unwrap();
    std::fs::copy(repo_root().join("knowledge/guides/cage-setup.pdf"), sandbox.path("cage-setup.pdf")).unwrap();
    std::fs::write(sandbox.path("notes.md"), "# Notes\n\nLovebirds need a mate.\n").unwrap();
    let report = sandbox.json(&["index", "--json", "--file-memory", "40"]);
    assert_eq!(report["errors"].as_array().unwrap().len(), 1, "{report}");
    let error = sandbox.error_of("large.docx").unwrap_or_default();
    assert!(error.starts_with("out of memory: reading this file needed over 40 MB"), "{error}");
    for path in ["small.docx", "cage-setup.pdf", "notes.md"] {
        assert_eq!(sandbox.error_of(path), None, "{path}");
    }
    assert_eq!(sandbox.search("budgies chatter at dawn", 1)[0]["source"], "small.docx");
    let again = sandbox.json(&["index", "--json", "--file-memory", "40"]);
    assert_eq!(again["processed"], 0, "a file out of memory is not retried until it changes: {again}");
}

#[test]
fn hostile_files_each_get_a_status_and_the_good_files_are_all_indexed() {
    let sandbox = Sandbox::with_samples();
    let outside = tempfile::tempdir().unwrap();
    let good_before: Vec<String> = super::util::files_on_disk(&sandbox.knowledge);
    let made = write_hostile(&sandbox.path("hostile"), outside.path());
    assert!(made >= 50, "only {made} hostile inputs");

    let child = sandbox.command(&["index", "--json"]).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().unwrap();
    let (out, peak_kib) = run_with_peak_rss(child);
    assert!(out.status.success(), "kea index failed: {}", String::from_utf8_lossy(&out.stderr));
    eprintln!("hostile corpus: {made} inputs, peak RSS {} MiB", peak_kib / 1024);
    assert!(peak_kib < 1536 * 1024, "memory is not bounded: peak RSS {} MiB", peak_kib / 1024);

    let docs = sandbox.documents();
    let by_path: std::collections::HashMap<&str, &serde_json::Value> = docs.iter().map(|(p, d)| (p.as_str(), d)).collect();
    for good in &good_before {
        assert_eq!(by_path.get(good.as_str()).map(|d| d["status"].as_str()), Some(Some("indexed")), "good file {good} not indexed");
    }
    for (path, doc) in &docs {
        match doc["status"].as_str() {
            Some("indexed") => {}
            Some("error") => assert!(doc["error"].as_str().is_some_and(|m| m.len() > 5), "{path}: an error needs a message: {doc}"),
            other => panic!("{path}: unexpected status {other:?}"),
        }
    }
    let errors = docs.iter().filter(|(_, d)| d["status"] == "error").count();
    eprintln!("hostile corpus: {} documents with a status, {errors} errors", docs.len());
    for expected_error in ["hostile/docx/zip-bomb.docx", "hostile/pdf/garbage.pdf", "hostile/text/binary.md", "hostile/text/half-gigabyte.txt"] {
        assert_eq!(by_path.get(expected_error).map(|d| d["status"].as_str()), Some(Some("error")), "{expected_error}");
    }
    for odd_name in ["hostile/names/with spaces.md", "hostile/names/🦜 emoji.md", "hostile/names/鹦鹉笔记.md", "hostile/names/-leading-dash.md"] {
        assert_eq!(by_path.get(odd_name).map(|d| d["status"].as_str()), Some(Some("indexed")), "{odd_name}");
    }
    assert!(!docs.iter().any(|(p, _)| p.starts_with("hostile/links/outside")), "a symlink out of the knowledge folder was followed");
    let leaked = sandbox.search("SECRET-OUTSIDE-TOKEN", 5);
    assert!(leaked.iter().all(|h| !h["text"].as_str().unwrap_or("").contains("SECRET-OUTSIDE-TOKEN")), "{leaked:?}");
    assert_eq!(sandbox.status()["integrity_problems"], serde_json::json!([]));

    // A second run changes nothing and crashes on nothing.
    let again = sandbox.index();
    assert_eq!(again["embedded"], 0, "{again}");
}

/// The bytes of the files in a folder and its subfolders.
fn folder_bytes(dir: &Path) -> u64 {
    let entries = std::fs::read_dir(dir).into_iter().flatten().flatten();
    entries.map(|e| if e.path().is_dir() { folder_bytes(&e.path()) } else { e.metadata().map_or(0, |m| m.len()) }).sum()
}

/// Regression (issue 24): a heading's text was copied into every chunk of
/// its section, so a 2 MB Markdown file with a 1 MB heading grew to
/// gigabytes in memory and in SQLite. Headings and titles are now cut.
#[test]
fn a_megabyte_heading_is_not_copied_into_every_chunk() {
    let sandbox = Sandbox::empty();
    std::fs::write(sandbox.path("note.md"), "# Note\n\nA small note so the index exists.\n").unwrap();
    sandbox.index();
    let before = folder_bytes(&sandbox.data);
    let paragraph = "Every paragraph of this long file says the same thing about watering the garden in the evening, \
                     when the soil is cool and the water soaks in instead of evaporating in the heat of the afternoon sun. "
        .repeat(2);
    let body = format!("{paragraph}\n\n").repeat((1 << 20) / (paragraph.len() + 2));
    let heading = "Garden".repeat((1 << 20) / 6);
    std::fs::write(sandbox.path("huge-heading.md"), format!("# {heading}\n\n{body}")).unwrap();

    let child = sandbox.command(&["index", "--json"]).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().unwrap();
    let (out, peak_kib) = run_with_peak_rss(child);
    assert!(out.status.success(), "kea index failed: {}", String::from_utf8_lossy(&out.stderr));
    let added = folder_bytes(&sandbox.data).saturating_sub(before);
    eprintln!("a 2 MB file with a 1 MB heading: peak RSS {} MiB, store grew by {} KiB", peak_kib / 1024, added / 1024);
    assert_eq!(sandbox.error_of("huge-heading.md"), None);
    assert!(peak_kib < 600 * 1024, "peak RSS {} MiB", peak_kib / 1024);
    assert!(added < 20 << 20, "the store grew by {} MiB", added >> 20);
    let hit = &sandbox.search("watering the garden in the evening", 1)[0];
    assert_eq!(hit["source"], "huge-heading.md");
    assert!(hit["heading_path"].as_str().unwrap().chars().count() <= 600, "{}", hit["heading_path"].as_str().unwrap().len());
}

/// `kea` without root's power to read anything (`setpriv` drops the DAC
/// override capabilities when the tests run as root, as in CI), so a folder
/// with no read permission really cannot be read.
fn without_read_override(sandbox: &Sandbox, args: &[&str]) -> std::process::Output {
    let kea = sandbox.command(args);
    let root = std::process::Command::new("id").arg("-u").output().is_ok_and(|o| o.stdout.starts_with(b"0\n"));
    let mut cmd = if root {
        let mut c = std::process::Command::new("setpriv");
        c.args(["--bounding-set", "-dac_override,-dac_read_search", "--"]).arg(kea.get_program()).args(kea.get_args());
        c
    } else {
        kea
    };
    cmd.env("KEA_MODELS_DIR", super::util::models_dirs()).output().unwrap()
}

/// Regression (issue 24): a folder the walker could not read was taken for
/// deleted, and its documents were dropped from the index.
#[test]
fn an_unreadable_folder_keeps_its_documents_and_says_why() {
    use std::os::unix::fs::PermissionsExt;
    let sandbox = Sandbox::empty();
    std::fs::create_dir_all(sandbox.path("shared")).unwrap();
    std::fs::write(sandbox.path("shared/minutes.md"), "# Minutes\n\nThe committee chose a blue roof.\n").unwrap();
    std::fs::write(sandbox.path("home.md"), "# Home\n\nThe kitchen faces east.\n").unwrap();
    sandbox.index();
    std::fs::set_permissions(sandbox.path("shared"), std::fs::Permissions::from_mode(0o000)).unwrap();
    std::fs::write(sandbox.path("home.md"), "# Home\n\nThe kitchen faces west now.\n").unwrap();
    let out = without_read_override(&sandbox, &["index", "--json"]);
    std::fs::set_permissions(sandbox.path("shared"), std::fs::Permissions::from_mode(0o755)).unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["removed"], 0, "{report}");
    let errors = report["errors"].as_array().unwrap();
    assert!(errors.iter().any(|e| e["path"] == "shared" && e["message"].as_str().unwrap().contains("cannot read this folder")), "{report}");
    assert_eq!(sandbox.error_of("shared/minutes.md"), None, "kept as indexed");
    assert_eq!(sandbox.search("committee blue roof", 1)[0]["source"], "shared/minutes.md");
}

/// Issue 24: a symlink to a folder outside the knowledge folder is never
/// indexed, also when the watcher names it or a path through it; a loop of
/// links finishes.
#[test]
fn links_to_folders_outside_and_loops_are_not_followed() {
    let sandbox = Sandbox::empty();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.md"), "# Outside\n\nSECRET-OUTSIDE-TOKEN lives here.\n").unwrap();
    std::fs::write(sandbox.path("mine.md"), "# Mine\n\nA note of my own.\n").unwrap();
    std::os::unix::fs::symlink(outside.path(), sandbox.path("outside-dir")).unwrap();
    std::os::unix::fs::symlink(&sandbox.knowledge, sandbox.path("loop")).unwrap();
    let mut config = kea_engine::EngineConfig::new(&sandbox.knowledge, &sandbox.data);
    config.model_paths.dirs.insert(0, repo_root().join("models"));
    let engine = kea_engine::Engine::open(config).unwrap();
    let cancel = kea_engine::CancelToken::new();
    engine.indexer().sync(&(), &cancel).unwrap();
    let named = [sandbox.path("outside-dir"), sandbox.path("outside-dir/secret.md"), sandbox.path("loop"), sandbox.path("loop/mine.md")];
    engine.indexer().sync_paths(&named, &(), &cancel).unwrap();
    let paths: Vec<String> = engine.status().unwrap().documents.into_iter().map(|d| d.path).collect();
    assert_eq!(paths, ["mine.md"]);
}

/// Issue 24: a FIFO (or any file that is not a regular file) is skipped,
/// and reading never blocks the sync.
#[test]
fn a_fifo_named_like_a_document_is_skipped() {
    let sandbox = Sandbox::empty();
    std::fs::write(sandbox.path("real.md"), "# Real\n\nA real note about ferns.\n").unwrap();
    let made = std::process::Command::new("mkfifo").arg(sandbox.path("pipe.md")).status().unwrap();
    assert!(made.success());
    let started = std::time::Instant::now();
    let report = sandbox.index();
    assert!(started.elapsed() < Duration::from_secs(60), "the sync waited on the FIFO");
    assert_eq!(report["documents"], 1, "{report}");
    assert_eq!(sandbox.search("ferns", 1)[0]["source"], "real.md");
}

/// Every file a command reads is bounded (issue 62): an endless
/// `/dev/zero` or a line of hundreds of megabytes given as questions, a
/// retrieval config or a router's question set is refused, naming the
/// limit, without reading it whole.
#[test]
fn endless_or_huge_files_given_to_a_command_are_refused_at_their_limit() {
    let sandbox = Sandbox::with_samples();
    sandbox.index();
    let scratch = tempfile::tempdir().unwrap();
    let one_line = scratch.path().join("one-line.txt");
    std::fs::write(&one_line, "x".repeat(8 << 20)).unwrap();
    let one_line = one_line.to_str().unwrap();
    let golden = crate::util::repo_root().join("tests/golden/sample-knowledge.jsonl");
    for args in [
        vec!["search", "--queries", "/dev/zero"],
        vec!["search", "--queries", one_line],
        vec!["search", "seeds", "--config", "/dev/zero"],
        vec!["eval", golden.to_str().unwrap(), "--config", "a=/dev/zero"],
        vec!["eval-router", "/dev/zero"],
    ] {
        let child = sandbox.command(&args).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().unwrap();
        let (out, peak_kib) = run_with_peak_rss(child);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && stderr.contains("longer than 64 KiB"), "kea {args:?}: {stderr}");
        assert!(peak_kib < 400 * 1024, "kea {args:?} held {} MiB", peak_kib / 1024);
    }
}
