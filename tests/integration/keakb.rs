//! Exporting a collection to one `.keakb` file and importing it: the
//! imported collection returns the same top-5 passages for every golden
//! question and the same citations; without its documents it is searched
//! as it is and never synced away; a truncated archive, a path-traversal
//! entry, a 10 GB-declared entry and a damaged entry are each refused with
//! nothing written. Real exports rewritten as an attacker would (issue 41):
//! a name that leaves Documents, a store with triggers, hidden tables or
//! short vectors, a remote embedder on a private address, a zip bomb, the
//! most entries allowed. An export never writes through a link, over a
//! file, or inside the data folder.

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
    let live = sandbox.data.join("kea.sqlite3");
    // A link waiting where a predictable temporary name would be, a link as
    // the file, and a file inside the data folder: the live index is never written.
    std::os::unix::fs::symlink(&live, file.with_extension("keakb-partial")).unwrap();
    let link = sandbox.data.with_file_name("link.keakb");
    std::os::unix::fs::symlink(&live, &link).unwrap();
    for (target, why) in [(link.clone(), "is a link"), (sandbox.data.join("inside.keakb"), "inside Kea's data folder")] {
        let refused = sandbox.run(&["kb", "export", "default", target.to_str().unwrap()]);
        let stderr = String::from_utf8_lossy(&refused.stderr);
        assert!(!refused.status.success() && stderr.contains(why), "{}: {stderr}", target.display());
    }
    sandbox.json(&["kb", "export", "default", file.to_str().unwrap(), "--json"]);
    assert!(std::fs::read(&live).unwrap().starts_with(b"SQLite format 3\0"), "the live index is still a database");
    assert_eq!(sandbox.json(&["search", "What do cockatiels eat?", "--top-k", "1", "--json"])[0]["source"], "parrots/cockatiel.md");
    let again = sandbox.run(&["kb", "export", "default", file.to_str().unwrap()]);
    assert!(!again.status.success() && String::from_utf8_lossy(&again.stderr).contains("exists already"));
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
    let cases: [(&str, Vec<u8>, &str); 6] = [
        ("truncated", bytes[..bytes.len() / 2].to_vec(), "not a usable Kea collection file"),
        ("traversal", with_extra_entry(&good, "files/../../escaped.md"), "does not accept"),
        ("escapes", with_extra_entry(&good, "files/\u{1b}]0;title\u{7}\u{202E}evil.md"), "does not accept"),
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

/// A one-note collection exported by a real `kea kb export --with-files`,
/// from a sandbox whose default collection is indexed.
fn exported_note(sandbox: &Sandbox) -> std::path::PathBuf {
    std::fs::write(sandbox.path("note.md"), "# Note\n\nA short note about perches and the wood they are made of.\n").unwrap();
    sandbox.index();
    let file = sandbox.data.with_file_name("note.keakb");
    sandbox.json(&["kb", "export", "default", file.to_str().unwrap(), "--with-files", "--json"]);
    file
}

/// `good` rewritten: its manifest through `manifest`, its store through
/// `store` (an SQLite connection to a copy), `extra` entries added; every
/// entry's size and BLAKE3 in the manifest recomputed, so only what was
/// changed on purpose differs from a real export.
fn rewritten(good: &Path, manifest: impl Fn(&mut Value), store: impl Fn(&rusqlite::Connection), extra: &[(&str, Vec<u8>)]) -> Vec<u8> {
    let mut archive = zip::ZipArchive::new(std::fs::File::open(good).unwrap()).unwrap();
    let mut entries: Vec<(String, Vec<u8>)> = Vec::new();
    for i in 0..archive.len() {
        let mut entry = archive.by_index(i).unwrap();
        let mut bytes = Vec::new();
        entry.read_to_end(&mut bytes).unwrap();
        entries.push((entry.name().to_string(), bytes));
    }
    let scratch = tempfile::tempdir().unwrap();
    let db = scratch.path().join("store.sqlite3");
    for (name, bytes) in &mut entries {
        if name == "index/kea.sqlite3" {
            std::fs::write(&db, &bytes).unwrap();
            let conn = rusqlite::Connection::open(&db).unwrap();
            store(&conn);
            drop(conn);
            *bytes = std::fs::read(&db).unwrap();
        }
    }
    entries.extend(extra.iter().map(|(name, bytes)| (name.to_string(), bytes.clone())));
    let (manifest_at, _) = entries.iter().enumerate().find(|(_, (name, _))| name == "manifest.json").unwrap();
    let mut json: Value = serde_json::from_slice(&entries[manifest_at].1).unwrap();
    json["entries"] = entries
        .iter()
        .filter(|(name, _)| name != "manifest.json")
        .map(|(name, bytes)| serde_json::json!({"name": name, "bytes": bytes.len(), "blake3": blake3::hash(bytes).to_hex().to_string()}))
        .collect();
    manifest(&mut json);
    entries[manifest_at].1 = serde_json::to_vec(&json).unwrap();
    let mut out = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
    for (name, bytes) in entries {
        out.start_file(name, options).unwrap();
        out.write_all(&bytes).unwrap();
    }
    out.finish().unwrap().into_inner()
}

/// `kea` in `sandbox` with `home` as the home folder (so Documents is inside it).
fn run_at_home(sandbox: &Sandbox, home: &Path, args: &[&str]) -> std::process::Output {
    let mut command = sandbox.command(args);
    command.env("HOME", home).env("XDG_CONFIG_HOME", home.join(".config")).env_remove("XDG_DOCUMENTS_DIR");
    command.output().unwrap()
}

/// Regression (issue 41): the manifest's name became `Documents/<name>`
/// unchecked, so `../x` or an absolute name wrote the documents anywhere.
#[test]
fn an_archive_name_never_takes_its_documents_out_of_the_documents_folder() {
    let sandbox = Sandbox::empty();
    let good = exported_note(&sandbox);
    let home = sandbox.data.with_file_name("home");
    let documents = home.join("Documents");
    std::fs::create_dir_all(&documents).unwrap();
    let absolute = sandbox.data.with_file_name("absolute-target");
    for (i, name) in ["../escaped", absolute.to_str().unwrap(), "..", "."].into_iter().enumerate() {
        let file = sandbox.data.with_file_name(format!("named-{i}.keakb"));
        std::fs::write(&file, rewritten(&good, |m| m["name"] = name.into(), |_| {}, &[])).unwrap();
        let out = run_at_home(&sandbox, &home, &["kb", "import", file.to_str().unwrap(), "--json"]);
        assert!(out.status.success(), "{name}: {}", String::from_utf8_lossy(&out.stderr));
        let imported: Value = serde_json::from_slice(&out.stdout).unwrap();
        let folder = Path::new(imported["folder"].as_str().unwrap());
        assert_eq!(folder.parent(), Some(documents.as_path()), "{name}: the documents stay directly inside Documents");
        assert!(folder.join("note.md").is_file(), "{name}");
    }
    assert!(!home.join("escaped").exists() && !absolute.exists(), "nothing written outside Documents");
    // A name no collection may take is refused, with nothing written.
    let file = sandbox.data.with_file_name("bad-name.keakb");
    std::fs::write(&file, rewritten(&good, |m| m["name"] = "bell\u{7}".into(), |_| {}, &[])).unwrap();
    let out = run_at_home(&sandbox, &home, &["kb", "import", file.to_str().unwrap()]);
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("collection name"), "{}", String::from_utf8_lossy(&out.stderr));
    // Eighth review: an embedder or a language that writes to the terminal, or lines of its own.
    let forged = "x\u{1b}]0;PWNED\u{7}\u{1b}[2J\nkea: imported cleanly";
    for (what, message) in [("embedder", "is not a model id"), ("language", "unknown document language")] {
        let manifest = |m: &mut Value| match what {
            "embedder" => m["embedder"] = forged.into(),
            _ => m["settings"]["languages"] = serde_json::json!([forged]),
        };
        std::fs::write(&file, rewritten(&good, manifest, |_| {}, &[])).unwrap();
        let out = run_at_home(&sandbox, &home, &["kb", "import", file.to_str().unwrap()]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && stderr.contains(message), "{what}: {stderr}");
        assert!(!out.stderr.contains(&0x1b) && stderr.trim_end().lines().count() == 1, "{what}: one line, no escapes: {stderr}");
    }
}

/// Regression (issue 41): the archive's SQLite file was opened as Kea's own
/// store, so its triggers ran and its hidden tables survived into the
/// collection and a later export.
#[test]
fn an_archive_store_with_triggers_hidden_tables_or_bad_vectors_is_refused() {
    let sandbox = Sandbox::empty();
    let good = exported_note(&sandbox);
    let trigger = "CREATE TABLE hidden(x TEXT); \
                   CREATE TRIGGER spy_insert AFTER INSERT ON meta BEGIN INSERT INTO hidden VALUES ('ran'); END; \
                   CREATE TRIGGER spy_update AFTER UPDATE ON meta BEGIN INSERT INTO hidden VALUES ('ran'); END;";
    let cases: [(&str, &str, &str); 4] = [
        ("trigger", trigger, "Kea does not make"),
        ("hidden", "CREATE TABLE hidden(x TEXT); INSERT INTO hidden VALUES ('copied chats');", "Kea does not make"),
        ("view", "CREATE VIEW everything AS SELECT * FROM chunks;", "Kea does not make"),
        ("vectors", "UPDATE chunks SET embedding = zeroblob(8);", "not 384 numbers"),
    ];
    for (what, sql, message) in cases {
        let file = sandbox.data.with_file_name(format!("{what}.keakb"));
        std::fs::write(&file, rewritten(&good, |_| {}, |conn| conn.execute_batch(sql).unwrap(), &[])).unwrap();
        let out = sandbox.run(&["kb", "import", file.to_str().unwrap(), "--name", what, "--folder", sandbox.data.with_file_name(what).to_str().unwrap()]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && stderr.contains(message), "{what}: {stderr}");
        assert!(!sandbox.data.with_file_name(what).exists(), "{what}: no documents folder");
        let left: Vec<_> = std::fs::read_dir(sandbox.data.join("collections")).map(|d| d.flatten().collect()).unwrap_or_default();
        assert!(left.is_empty(), "{what}: nothing left behind: {left:?}");
    }
    // A real archive's store is copied into one Kea makes: re-exported, it has exactly Kea's tables.
    let folder = sandbox.data.with_file_name("copy");
    sandbox.json(&["kb", "import", good.to_str().unwrap(), "--name", "Copy", "--folder", folder.to_str().unwrap(), "--json"]);
    assert_eq!(sandbox.json(&["--kb", "Copy", "search", "perches", "--top-k", "1", "--json"])[0]["source"], "note.md");
    let again = sandbox.data.with_file_name("again.keakb");
    sandbox.json(&["kb", "export", "Copy", again.to_str().unwrap(), "--json"]);
    let tables = |archive: &Path| {
        let dir = tempfile::tempdir().unwrap();
        let mut zip = zip::ZipArchive::new(std::fs::File::open(archive).unwrap()).unwrap();
        let mut bytes = Vec::new();
        zip.by_name("index/kea.sqlite3").unwrap().read_to_end(&mut bytes).unwrap();
        std::fs::write(dir.path().join("s"), bytes).unwrap();
        let conn = rusqlite::Connection::open(dir.path().join("s")).unwrap();
        let mut names: Vec<String> =
            conn.prepare("SELECT type || ' ' || name FROM sqlite_schema").unwrap().query_map([], |r| r.get(0)).unwrap().map(Result::unwrap).collect();
        names.sort();
        names
    };
    assert_eq!(tables(&again), tables(&good));
}

/// Regression (issue 41): an archive's remote embedder received every
/// question, with no confirmation and no address check, and its failure
/// failed a search of every collection.
#[test]
fn an_archive_remote_embedder_needs_its_address_confirmed_and_reaches_only_public_addresses() {
    let sandbox = Sandbox::empty();
    let good = exported_note(&sandbox);
    let spy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    spy.set_nonblocking(true).unwrap();
    let url = format!("http://127.0.0.1:{}/v1", spy.local_addr().unwrap().port());
    // As a collection embedded by a remote server exports: its settings name
    // the server, its index records the server's model.
    let remote = serde_json::json!({"base_url": url, "model": "spy", "api": "openai"});
    let manifest = |m: &mut Value| {
        m["settings"]["remote_embedder"] = remote.clone();
        m["embedder"] = "remote:spy".into();
    };
    let store = |conn: &rusqlite::Connection| conn.execute_batch("UPDATE meta SET value = 'remote:spy' WHERE key = 'model_id'").unwrap();
    let file = sandbox.data.with_file_name("remote.keakb");
    std::fs::write(&file, rewritten(&good, manifest, store, &[])).unwrap();
    let import = |extra: &[&str]| {
        let folder = sandbox.data.with_file_name("remote documents");
        let mut args = vec!["kb", "import", file.to_str().unwrap(), "--name", "Remote", "--folder", folder.to_str().unwrap()];
        args.extend_from_slice(extra);
        sandbox.run(&args)
    };
    let refused = import(&[]);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success() && stderr.contains(&url) && stderr.contains("--trust-embedder"), "{stderr}");
    let wrong = format!("{url}/other");
    assert!(!import(&["--trust-embedder", &wrong]).status.success(), "only the archive's own address, in full");
    assert!(!sandbox.data.join("collections.json").exists(), "nothing registered");

    let trusted = import(&["--trust-embedder", &url]);
    assert!(trusted.status.success(), "{}", String::from_utf8_lossy(&trusted.stderr));
    let search = sandbox.run(&["--kb", "Remote", "search", "perches"]);
    let stderr = String::from_utf8_lossy(&search.stderr);
    assert!(!search.status.success() && stderr.contains("private network"), "an imported embedder reaches only public addresses: {stderr}");
    assert_eq!(spy.accept().map(drop).unwrap_err().kind(), std::io::ErrorKind::WouldBlock, "no connection reached the loopback address");

    // Searching every collection skips the one whose embedder fails, and says so.
    let all = sandbox.json(&["--kb", "all", "search", "perches", "--trace", "--json"]);
    assert_eq!(all["hits"][0]["source"], "note.md", "{all}");
    let notes = all["trace"]["fallbacks"].as_array().unwrap();
    assert!(notes.iter().any(|n| n.as_str().unwrap().starts_with("Remote: skipped")), "{notes:?}");
}

/// Imports `good` with `extra` entries added, under `name`; the import's
/// stderr, after checking it failed and left no documents folder.
fn refused_with_entries(sandbox: &Sandbox, good: &Path, name: &str, extra: &[(&str, Vec<u8>)]) -> String {
    let file = sandbox.data.with_file_name(format!("{name}.keakb"));
    std::fs::write(&file, rewritten(good, |_| {}, |_| {}, extra)).unwrap();
    let folder = sandbox.data.with_file_name(format!("{name} documents"));
    let out = sandbox.run(&["kb", "import", file.to_str().unwrap(), "--name", name, "--folder", folder.to_str().unwrap()]);
    assert!(!out.status.success() && !folder.exists(), "{name} was imported");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Issue 41: a large entry compressed far beyond any real document is
/// refused before anything is unpacked.
#[test]
fn an_archive_entry_compressed_like_a_zip_bomb_is_refused() {
    let sandbox = Sandbox::empty();
    let good = exported_note(&sandbox);
    let stderr = refused_with_entries(&sandbox, &good, "Bomb", &[("files/zeros.md", vec![b'0'; 4 << 20])]);
    assert!(stderr.contains("compressed over 200 to 1"), "{stderr}");
}

/// Issue 41 (review): many entries each just under the per-entry ratio
/// bound (1 MB of zeros) are a bomb as a whole.
#[test]
fn many_small_entries_compressed_like_a_zip_bomb_together_are_refused() {
    let sandbox = Sandbox::empty();
    let good = exported_note(&sandbox);
    let names: Vec<String> = (0..40).map(|i| format!("files/bomb/{i}.md")).collect();
    let zeros: Vec<(&str, Vec<u8>)> = names.iter().map(|n| (n.as_str(), vec![b'0'; 1 << 20])).collect();
    let stderr = refused_with_entries(&sandbox, &good, "Bombs", &zeros);
    assert!(stderr.contains("compressed over 200 to 1 together"), "{stderr}");
}

/// Issue 41: the repeated-name check is linear (it was quadratic: an
/// archive with the most entries allowed, 200,000, took about a minute
/// before its first refusal; no timing is asserted, the run shows it).
#[test]
fn an_archive_with_the_most_entries_allowed_is_checked_at_once() {
    let sandbox = Sandbox::empty();
    let file = sandbox.data.with_file_name("many.keakb");
    let mut out = zip::ZipWriter::new(std::io::BufWriter::new(std::fs::File::create(&file).unwrap()));
    let options = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    for i in 0..200_000 {
        out.start_file(format!("files/{i}.md"), options).unwrap();
    }
    out.finish().unwrap();
    let run = sandbox.run(&["kb", "import", file.to_str().unwrap(), "--folder", sandbox.data.with_file_name("many").to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(!run.status.success() && stderr.contains("it has no manifest"), "{stderr}");
}

/// Fifth review: a document replaced by a pipe after indexing blocked
/// `kb export --with-files` for ever. It is left out; the rest is exported.
#[test]
fn a_pipe_in_a_documents_place_is_left_out_of_an_export() {
    let sandbox = Sandbox::empty();
    std::fs::write(sandbox.path("note.md"), "# Note\n\nA short note about perches.\n").unwrap();
    std::fs::write(sandbox.path("pipe.md"), "# Pipe\n\nSoon a pipe.\n").unwrap();
    sandbox.index();
    std::fs::remove_file(sandbox.path("pipe.md")).unwrap();
    assert!(std::process::Command::new("mkfifo").arg(sandbox.path("pipe.md")).status().unwrap().success());
    let file = sandbox.data.with_file_name("piped.keakb");
    let child = sandbox
        .command(&["kb", "export", "default", file.to_str().unwrap(), "--with-files", "--json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let pid = child.id();
    std::thread::spawn(move || tx.send(child.wait_with_output()));
    let Ok(out) = rx.recv_timeout(std::time::Duration::from_secs(300)) else {
        let _ = std::process::Command::new("kill").arg("-9").arg(pid.to_string()).status();
        panic!("the export never returned");
    };
    let out = out.unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mut zip = zip::ZipArchive::new(std::fs::File::open(&file).unwrap()).unwrap();
    let names: Vec<String> = zip.file_names().map(String::from).collect();
    assert!(names.contains(&"files/note.md".to_string()) && !names.iter().any(|n| n.contains("pipe")), "{names:?}");
    let mut manifest = String::new();
    zip.by_name("manifest.json").unwrap().read_to_string(&mut manifest).unwrap();
    assert!(!manifest.contains("files/pipe.md"), "{manifest}");
}

/// Fifth review: `kb import --folder` put a collection's documents inside
/// the data folder, where `kb set --folder` refuses them; ninth: or inside
/// a folder a collection reads, so a shared archive's files joined it.
#[test]
fn an_import_never_puts_documents_inside_the_data_folder() {
    let sandbox = Sandbox::empty();
    let good = exported_note(&sandbox);
    // Sixth review: a folder that does not exist yet, then `..`, led back inside.
    let around = sandbox.data.with_file_name("missing").join("..").join(sandbox.data.file_name().unwrap()).join("docs");
    for inside in [sandbox.data.join("docs-inside"), sandbox.data.join("collections").join("new").join("docs"), around] {
        let out = sandbox.run(&["kb", "import", good.to_str().unwrap(), "--name", "Inside", "--folder", inside.to_str().unwrap()]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && (stderr.contains("inside Kea's data folder") || stderr.contains("without '..'")), "{stderr}");
        assert!(!inside.exists() && !sandbox.data.with_file_name("missing").exists(), "nothing written");
    }
    // Ninth review: nor inside a folder a collection reads, where they would join it at its next sync.
    let other = sandbox.data.with_file_name("other-collection");
    std::fs::create_dir_all(&other).unwrap();
    sandbox.json(&["kb", "create", "Other", "--folder", other.to_str().unwrap(), "--json"]);
    for read in [sandbox.knowledge.join("shared"), other.join("shared")] {
        let out = sandbox.run(&["kb", "import", good.to_str().unwrap(), "--name", "Joined", "--folder", read.to_str().unwrap()]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && stderr.contains("which a collection reads"), "{stderr}");
        assert!(!read.exists(), "nothing written");
    }
    // Twelfth review: a file named as the folder is refused before anything is unpacked.
    let file = sandbox.data.with_file_name("a-file.txt");
    std::fs::write(&file, "mine").unwrap();
    let out = sandbox.run(&["kb", "import", good.to_str().unwrap(), "--name", "File", "--folder", file.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && stderr.contains("is not a folder"), "{stderr}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "mine");
    let listed = sandbox.json(&["kb", "list", "--json"]);
    assert!(listed.as_array().unwrap().iter().all(|c| c["name"] != "File"), "no collection made: {listed}");
    let outside = sandbox.data.with_file_name("docs-outside");
    let imported = sandbox.json(&["kb", "import", good.to_str().unwrap(), "--name", "Outside", "--folder", outside.to_str().unwrap(), "--json"]);
    assert_eq!(imported["documents"], 1);
}
