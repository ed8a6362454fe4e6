//! The knowledge pane's per-file status during a large ingest: queued files
//! while indexing is paused, then each file indexed (with when), failed
//! (with why) or skipped (with why), in a screenshot.

use std::time::Duration;

use crate::harness::{sample_parrots, App};

const INDEXING: Duration = Duration::from_secs(120);

#[tokio::test(flavor = "multi_thread")]
async fn the_knowledge_pane_shows_each_files_state_and_indexing_pauses_and_resumes() {
    let chinese = sample_parrots().parent().unwrap().join("鹦鹉");
    let extra = tempfile::tempdir().unwrap();
    let mixed = extra.path().join("mixed");
    std::fs::create_dir_all(mixed.join("drafts")).unwrap();
    std::fs::write(mixed.join("broken.pdf"), b"%PDF-1.4 this is not really a PDF").unwrap();
    std::fs::write(mixed.join("drafts/wip.md"), "# Work in progress\n").unwrap();
    std::fs::write(mixed.join("tool.exe"), b"MZ").unwrap();
    std::fs::write(mixed.join(".keaignore"), "drafts/\n").unwrap();
    let mut app = App::start_with("file-status", None, &[], &[sample_parrots(), chinese, mixed]).await;

    // Pause as soon as the first run shows progress: what it has not read stays queued.
    app.click("#progress:not([hidden]) #pause-indexing").await;
    app.wait_for("#paused:not([hidden])", INDEXING).await;
    app.wait_for("#documents li.doc.queued", INDEXING).await;
    app.shot("paused-with-queued-files").await;
    let queued = app.count("#documents li.doc.queued").await;
    assert!(queued > 0, "files the paused run has not read are listed as queued");

    app.click("#resume-indexing").await;
    app.wait_text("#knowledge-summary", INDEXING, |t| t.starts_with("21 documents")).await;
    app.wait_for(r#"#documents li.doc.indexed[data-path="parrots/cockatiel.md"]"#, INDEXING).await;
    // Each row says its state (the list redraws as the run goes: wait for each).
    let state = |path: &str| format!(r#"#documents li[data-path="{path}"] .detail"#);
    app.wait_text(&state("parrots/cockatiel.md"), INDEXING, |t| t.contains("chunks") && t.contains("indexed ")).await;
    app.wait_text(&state("mixed/broken.pdf"), INDEXING, |t| t.starts_with("failed: ")).await;
    app.wait_text(&state("mixed/drafts"), INDEXING, |t| t.contains("ignored by a .gitignore or .keaignore rule")).await;
    app.wait_text(&state("mixed/tool.exe"), INDEXING, |t| t.contains("not a kind of document")).await;
    assert_eq!(app.count("#documents li.doc.queued").await, 0);
    app.shot("per-file-status").await;
    app.stop().await;
}
