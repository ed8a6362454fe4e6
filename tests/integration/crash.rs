//! Crash safety: `kea index` killed with SIGKILL at random points in the
//! middle of ingest, restarted each time, ends with a store where the index
//! equals the disk (SQLite integrity, vectors == chunk rows, every file
//! indexed exactly once, no orphan chunks); and Ctrl+C cancels cleanly.
//!
//! The SIGKILL harness runs a smoke size by default; the full run is
//! `KEA_CRASH_FILES=2000 KEA_CRASH_KILLS=20 cargo test -p kea-cli --test integration crash -- --nocapture`.

use std::time::{Duration, Instant};

use super::util::{count, files_on_disk, paragraph_docx, repo_root, Sandbox};

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// A generated corpus of `n` files, a mix of Markdown, text, Word and PDF.
fn add_generated_docs(sandbox: &Sandbox, n: usize) {
    let dir = sandbox.path("generated");
    std::fs::create_dir_all(&dir).unwrap();
    let pdf = std::fs::read(repo_root().join("knowledge/guides/cage-setup.pdf")).unwrap();
    for i in 0..n {
        let sections: Vec<String> =
            (0..4).map(|s| format!("Observation {i}.{s}: the flock fed on seeds at dawn, then rested in the shade near water {i}.")).collect();
        match i % 10 {
            0 => std::fs::write(dir.join(format!("report-{i:04}.docx")), paragraph_docx(&sections.join("\n\n"))).unwrap(),
            1 => std::fs::write(dir.join(format!("guide-{i:04}.pdf")), [pdf.as_slice(), format!("\n% copy {i}\n").as_bytes()].concat()).unwrap(),
            2 | 3 => std::fs::write(dir.join(format!("log-{i:04}.txt")), sections.join("\n\n")).unwrap(),
            _ => {
                let body: String = sections.iter().enumerate().map(|(s, text)| format!("## Section {s}\n\n{text}\n\n")).collect();
                std::fs::write(dir.join(format!("notes-{i:04}.md")), format!("# Field notes {i}\n\n{body}")).unwrap();
            }
        }
    }
}

fn indexed_documents(db: &std::path::Path) -> i64 {
    let Ok(conn) = rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY) else { return 0 };
    conn.query_row("SELECT COUNT(*) FROM documents", [], |r| r.get(0)).unwrap_or(0)
}

fn sqlite_integrity(db: &std::path::Path) -> String {
    let conn = rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    conn.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap()
}

/// A pseudo-random number in `0..n` (no RNG dependency; seeded by the clock).
fn random_below(n: u64) -> u64 {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos() as u64;
    (nanos.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407) >> 33) % n.max(1)
}

#[test]
fn sigkill_mid_ingest_then_restart_leaves_index_equal_to_disk() {
    let (files, kills) = (env_or("KEA_CRASH_FILES", 200), env_or("KEA_CRASH_KILLS", 3));
    let sandbox = Sandbox::with_samples();
    add_generated_docs(&sandbox, files);
    let total = files_on_disk(&sandbox.knowledge).len() as i64;
    let db = sandbox.data.join("kea.sqlite3");
    let started = Instant::now();
    let mut done_kills = 0;
    for _ in 0..kills {
        let before = indexed_documents(&db);
        let mut child = sandbox.command(&["index", "--json"]).stdout(std::process::Stdio::null()).spawn().unwrap();
        // Kill after a random part of what is left (never before the first file lands).
        let target = before + 1 + random_below(((total - before) / kills as i64).max(1) as u64) as i64;
        let deadline = Instant::now() + Duration::from_secs(300);
        while Instant::now() < deadline && indexed_documents(&db) < target && child.try_wait().unwrap().is_none() {
            std::thread::sleep(Duration::from_millis(5 + random_below(20)));
        }
        if child.try_wait().unwrap().is_some() {
            break; // ingest finished before this kill
        }
        child.kill().unwrap(); // SIGKILL on Unix
        child.wait().unwrap();
        done_kills += 1;
        assert_eq!(sqlite_integrity(&db), "ok", "after kill {done_kills}");
    }
    assert!(done_kills >= kills.min(2), "only {done_kills} kills landed before ingest finished; make the corpus bigger");

    let report = sandbox.index();
    assert_eq!(count(&report, "documents"), total as u64);
    assert_eq!(report["errors"], serde_json::json!([]));

    let status = sandbox.status();
    assert_eq!(status["integrity_problems"], serde_json::json!([]));
    assert_eq!(sqlite_integrity(&db), "ok");
    assert_eq!(status["vectors"], status["chunks"]);
    let docs = status["documents"].as_array().unwrap();
    let paths: Vec<&str> = docs.iter().map(|d| d["path"].as_str().unwrap()).collect();
    assert_eq!(paths, files_on_disk(&sandbox.knowledge), "every file on disk is indexed exactly once");
    let chunk_sum: u64 = docs.iter().map(|d| d["chunk_count"].as_u64().unwrap()).sum();
    assert_eq!(chunk_sum, count(&status, "chunks"), "no orphan or missing chunks");
    assert!(docs.iter().all(|d| d["status"] == "indexed"));
    eprintln!(
        "crash harness: {total} files, {done_kills} SIGKILLs, then {} documents, {} chunks, {} vectors, integrity ok ({:.0} s)",
        docs.len(),
        count(&status, "chunks"),
        status["vectors"],
        started.elapsed().as_secs_f64()
    );
}

#[test]
fn ctrl_c_mid_ingest_cancels_cleanly_and_the_next_run_finishes() {
    let sandbox = Sandbox::with_samples();
    add_generated_docs(&sandbox, 200);
    let total = files_on_disk(&sandbox.knowledge).len() as i64;
    let child = sandbox.command(&["index", "--json"]).stdout(std::process::Stdio::piped()).spawn().unwrap();
    let db = sandbox.data.join("kea.sqlite3");
    let deadline = Instant::now() + Duration::from_secs(120);
    while Instant::now() < deadline && indexed_documents(&db) < 10 {
        std::thread::sleep(Duration::from_millis(20));
    }
    let interrupted = std::process::Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(interrupted.success());
    let out = child.wait_with_output().unwrap();
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("a cancelled run still prints its summary");
    assert_eq!(out.status.code(), Some(130), "{report}");
    assert_eq!(report["cancelled"], true);
    assert!(count(&report, "documents") < total as u64);
    assert_eq!(sandbox.status()["integrity_problems"], serde_json::json!([]));

    let finished = sandbox.index();
    assert_eq!(finished["cancelled"], false);
    assert_eq!(count(&finished, "documents"), total as u64);
}
