//! Crash safety: `kea index` killed with SIGKILL in the middle of ingest,
//! then restarted, ends with a store where the index equals the disk.

use std::time::{Duration, Instant};

use super::util::{count, files_on_disk, Sandbox};

/// Extra documents so that ingest runs long enough to be interrupted.
fn add_generated_docs(sandbox: &Sandbox, n: usize) {
    let dir = sandbox.path("generated");
    std::fs::create_dir_all(&dir).unwrap();
    for i in 0..n {
        let body: String = (0..4)
            .map(|s| format!("## Section {s}\n\nObservation {i}.{s}: the flock fed on seeds at dawn, then rested in the shade near water {i}.\n\n"))
            .collect();
        std::fs::write(dir.join(format!("notes-{i:04}.md")), format!("# Field notes {i}\n\n{body}")).unwrap();
    }
}

fn indexed_documents(db: &std::path::Path) -> i64 {
    let Ok(conn) = rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY) else { return 0 };
    conn.query_row("SELECT COUNT(*) FROM documents", [], |r| r.get(0)).unwrap_or(0)
}

#[test]
fn sigkill_mid_ingest_then_restart_leaves_index_equal_to_disk() {
    let sandbox = Sandbox::with_samples();
    add_generated_docs(&sandbox, 200);
    let total = files_on_disk(&sandbox.knowledge).len() as i64;

    let mut child = sandbox.command(&["index", "--json"]).stdout(std::process::Stdio::null()).spawn().unwrap();
    let db = sandbox.data.join("kea.sqlite3");
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut seen = 0;
    while Instant::now() < deadline {
        seen = indexed_documents(&db);
        if seen >= 10 {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap(); // SIGKILL on Unix
    child.wait().unwrap();
    assert!(seen >= 10, "ingest never got going");
    assert!(seen < total, "ingest finished ({seen}/{total}) before it could be killed; make the corpus bigger");

    let report = sandbox.index();
    assert!(count(&report, "processed") > 0, "the restart must resume the pending work");
    assert_eq!(count(&report, "documents"), total as u64);
    assert_eq!(report["errors"], serde_json::json!([]));

    let status = sandbox.status();
    assert_eq!(status["integrity_problems"], serde_json::json!([]));
    assert_eq!(status["vectors"], status["chunks"]);
    let docs = status["documents"].as_array().unwrap();
    let paths: Vec<&str> = docs.iter().map(|d| d["path"].as_str().unwrap()).collect();
    assert_eq!(paths, files_on_disk(&sandbox.knowledge), "every file on disk is indexed exactly once");
    let chunk_sum: u64 = docs.iter().map(|d| d["chunk_count"].as_u64().unwrap()).sum();
    assert_eq!(chunk_sum, count(&status, "chunks"), "no orphan or missing chunks");
    assert!(docs.iter().all(|d| d["status"] == "indexed"));
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
