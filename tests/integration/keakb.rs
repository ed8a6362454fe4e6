//! Exporting a collection to one `.keakb` file and importing it: the
//! imported collection returns the same top-5 passages for every golden
//! question and the same citations; without its documents it is searched
//! as it is and never synced away; a truncated archive, a path-traversal
//! entry, a 10 GB-declared entry and a damaged entry are each refused with
//! nothing written.

use std::io::{Read, Write};
use std::path::Path;

use serde_json::Value;

use super::util::{count, repo_root, Sandbox};

/// (query, [(source, chunk id)]) for every golden question.
fn top5(sandbox: &Sandbox, kb: &str, golden: &Path) -> Vec<(String, Vec<(String, i64)>)> {
    let results = sandbox.json(&["--kb", kb, "search", "--queries", golden.to_str().unwrap(), "--top-k", "5", "--json"]);
    let passages =
        |hits: &Value| hits.as_array().unwrap().iter().map(|h| (h["source"].as_str().unwrap().to_string(), h["chunk_id"].as_i64().unwrap())).collect();
    results.as_array().unwrap().iter().map(|r| (r["query"].as_str().unwrap().to_string(), passages(&r["hits"]))).collect()
}

fn citations(answer: &Value) -> Vec<(String, String)> {
    answer["citations"].as_array().unwrap().iter().map(|c| (c["source"].as_str().unwrap().into(), c["heading_path"].as_str().unwrap().into())).collect()
}

#[test]
fn an_exported_collection_imports_and_answers_every_golden_question_with_the_same_passages() {
    let sandbox = Sandbox::with_samples();
    sandbox.index();
    let file = sandbox.data.with_file_name("samples.keakb");
    let exported = sandbox.json(&["kb", "export", "default", file.to_str().unwrap(), "--with-files", "--json"]);
    assert!(exported["files"].as_u64().unwrap() >= 10, "{exported}");
    let folder = sandbox.data.with_file_name("shared documents");
    let imported = sandbox.json(&["kb", "import", file.to_str().unwrap(), "--name", "Shared", "--folder", folder.to_str().unwrap(), "--json"]);
    assert_eq!((imported["embedder_available"].as_bool(), imported["documents"].as_u64()), (Some(true), exported["documents"].as_u64()), "{imported}");
    assert!(folder.join("parrots/cockatiel.md").is_file(), "the documents are unpacked into the folder");

    for golden in ["sample-knowledge.jsonl", "zh-paraphrases.jsonl"] {
        let golden = repo_root().join("tests/golden").join(golden);
        let (original, copy) = (top5(&sandbox, "default", &golden), top5(&sandbox, "Shared", &golden));
        assert!(original.len() >= 40 && original.iter().all(|(_, hits)| !hits.is_empty()));
        assert_eq!(original, copy, "the same top-5 passages for every question of {}", golden.display());
    }
    for question in ["What do cockatiels eat?", "玄凤鹦鹉平时吃什么？"] {
        let ask = |kb: &str| sandbox.json(&["--kb", kb, "ask", question, "--provider", "none", "--json"]);
        let (original, copy) = (ask("default"), ask("Shared"));
        assert!(!citations(&original).is_empty());
        assert_eq!((citations(&original), &original["outcome"]), (citations(&copy), &copy["outcome"]), "{question}");
    }
    // Its documents are its own folder's now: a sync re-reads them and embeds nothing.
    let synced = sandbox.json(&["--kb", "Shared", "index", "--json"]);
    assert_eq!((count(&synced, "embedded"), count(&synced, "removed")), (0, 0), "{synced}");
    // Never over an existing collection.
    let again = sandbox.run(&["kb", "import", file.to_str().unwrap(), "--name", "Shared", "--folder", folder.with_file_name("other").to_str().unwrap()]);
    assert!(!again.status.success() && String::from_utf8_lossy(&again.stderr).contains("exists already"));
}

#[test]
fn a_collection_imported_without_its_documents_is_searched_as_it_is_and_never_synced_away() {
    let sandbox = Sandbox::with_samples();
    sandbox.index();
    let file = sandbox.data.with_file_name("index-only.keakb");
    sandbox.json(&["kb", "export", "default", file.to_str().unwrap(), "--json"]);
    let imported = sandbox.json(&["kb", "import", file.to_str().unwrap(), "--name", "Reference", "--json"]);
    assert_eq!(imported["folder"], Value::Null);
    let hits = sandbox.json(&["--kb", "Reference", "search", "What do cockatiels eat?", "--top-k", "1", "--json"]);
    assert_eq!(hits[0]["source"], "parrots/cockatiel.md");
    let out = sandbox.run(&["--kb", "Reference", "index", "--json"]);
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("no folder"), "{}", String::from_utf8_lossy(&out.stderr));
    let status = sandbox.json(&["--kb", "Reference", "status", "--json"]);
    assert_eq!(status["documents"].as_array().unwrap().len(), imported["documents"].as_u64().unwrap() as usize, "nothing dropped");
}

/// A zip whose one entry declares `declared` bytes (zip64) but holds `data`.
fn zip_declaring(name: &str, declared: u64, data: &[u8]) -> Vec<u8> {
    let zip64 = |out: &mut Vec<u8>| {
        out.extend(1u16.to_le_bytes());
        out.extend(16u16.to_le_bytes());
        out.extend(declared.to_le_bytes());
        out.extend((data.len() as u64).to_le_bytes());
    };
    let common = |out: &mut Vec<u8>| {
        out.extend([45, 0, 0, 0, 0, 0, 0, 0, 0, 0]); // version 4.5, no flags, stored, no time
        out.extend(crc32(data).to_le_bytes());
        out.extend([0xFF; 8]); // sizes in the zip64 field
        out.extend((name.len() as u16).to_le_bytes());
        out.extend(20u16.to_le_bytes());
    };
    let mut out = 0x0403_4b50u32.to_le_bytes().to_vec();
    common(&mut out);
    out.extend(name.as_bytes());
    zip64(&mut out);
    out.extend(data);
    let directory_at = out.len();
    out.extend(0x0201_4b50u32.to_le_bytes());
    out.extend([45, 3]);
    common(&mut out);
    out.extend([0; 14]); // comment, disk, attributes, local header at 0
    out.extend(name.as_bytes());
    zip64(&mut out);
    let directory_len = out.len() - directory_at;
    out.extend(0x0605_4b50u32.to_le_bytes());
    out.extend([0, 0, 0, 0, 1, 0, 1, 0]);
    out.extend((directory_len as u32).to_le_bytes());
    out.extend((directory_at as u32).to_le_bytes());
    out.extend([0, 0]);
    out
}

fn crc32(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &byte in data {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            crc = if crc & 1 == 1 { (crc >> 1) ^ 0xEDB8_8320 } else { crc >> 1 };
        }
    }
    !crc
}

/// A copy of `good` with one more entry named `name`, listed in its manifest.
fn with_extra_entry(good: &Path, name: &str) -> Vec<u8> {
    let mut archive = zip::ZipArchive::new(std::fs::File::open(good).unwrap()).unwrap();
    let mut out = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default();
    for i in 0..archive.len() {
        let mut entry = archive.by_index(i).unwrap();
        let entry_name = entry.name().to_string();
        let mut bytes = Vec::new();
        entry.read_to_end(&mut bytes).unwrap();
        if entry_name == "manifest.json" {
            let mut manifest: Value = serde_json::from_slice(&bytes).unwrap();
            manifest["entries"].as_array_mut().unwrap().push(serde_json::json!({"name": name, "bytes": 4, "blake3": "0"}));
            bytes = serde_json::to_vec(&manifest).unwrap();
        }
        out.start_file(entry_name, options).unwrap();
        out.write_all(&bytes).unwrap();
    }
    out.start_file(name, options).unwrap();
    out.write_all(b"evil").unwrap();
    out.finish().unwrap().into_inner()
}

#[test]
fn a_truncated_hostile_or_damaged_archive_is_refused_with_nothing_written() {
    let source = Sandbox::empty();
    std::fs::write(source.path("note.md"), "# Note\n\nA short note about perches.\n").unwrap();
    source.index();
    let good = source.data.with_file_name("good.keakb");
    source.json(&["kb", "export", "default", good.to_str().unwrap(), "--with-files", "--json"]);
    let bytes = std::fs::read(&good).unwrap();
    let mut damaged = bytes.clone();
    let store_at = bytes.windows(17).position(|w| w == b"index/kea.sqlite3").unwrap() + 17 + 64;
    damaged[store_at] ^= 0xFF;
    let cases: [(&str, Vec<u8>, &str); 5] = [
        ("truncated", bytes[..bytes.len() / 2].to_vec(), "not a usable Kea collection file"),
        ("traversal", with_extra_entry(&good, "files/../../escaped.md"), "does not accept"),
        ("absolute", with_extra_entry(&good, "/tmp/escaped.md"), "does not accept"),
        ("bomb", zip_declaring("index/kea.sqlite3", 10 << 30, b"tiny"), "declares 10240 MB"),
        ("damaged", damaged, "not a usable Kea collection file"),
    ];
    let sandbox = Sandbox::empty();
    for (what, archive, message) in cases {
        let file = sandbox.data.with_file_name(format!("{what}.keakb"));
        std::fs::write(&file, archive).unwrap();
        let folder = sandbox.data.with_file_name(format!("{what} documents"));
        let out = sandbox.run(&["kb", "import", file.to_str().unwrap(), "--folder", folder.to_str().unwrap()]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && stderr.contains(message), "{what}: {stderr}");
        assert!(!folder.exists(), "{what}: no documents folder");
        assert!(!sandbox.data.join("collections.json").exists(), "{what}: nothing registered");
        let left: Vec<_> = std::fs::read_dir(sandbox.data.join("collections")).map(|d| d.flatten().collect()).unwrap_or_default();
        assert!(left.is_empty(), "{what}: nothing left behind: {left:?}");
        assert!(!sandbox.data.with_file_name("escaped.md").exists() && !Path::new("/tmp/escaped.md").exists());
    }
    let fine = sandbox.json(&["kb", "import", good.to_str().unwrap(), "--folder", sandbox.data.with_file_name("fine").to_str().unwrap(), "--json"]);
    assert_eq!(fine["documents"], 1, "the good archive imports: {fine}");
}
