//! `.keaignore` and `.gitignore` files (gitignore syntax, in any folder)
//! and Obsidian's own folders keep files out of the index: at every sync,
//! and in the watcher, which re-reads everything when an ignore file changes.

use std::time::Duration;

use super::util::{count, Sandbox};
use super::watch::Watcher;

fn write(sandbox: &Sandbox, files: &[(&str, &str)]) {
    for (rel, text) in files {
        let path = sandbox.path(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
}

fn indexed(sandbox: &Sandbox) -> Vec<String> {
    let mut paths: Vec<String> = sandbox.documents().into_iter().map(|(path, _)| path).collect();
    paths.sort();
    paths
}

#[test]
fn ignored_files_stay_out_of_the_index_and_a_new_pattern_drops_one() {
    let sandbox = Sandbox::empty();
    write(
        &sandbox,
        &[
            (".gitignore", "drafts/\nscratch-*.md\n"),
            (".keaignore", "private.md\n"),
            ("sub/.gitignore", "local.txt\n"),
            ("notes.md", "# Notes\n\nThe ferry to the island leaves at seven every morning.\n"),
            ("later.md", "# Later\n\nThe library closes early on public holidays.\n"),
            ("sub/shared.txt", "The shared printer is on the second floor.\n"),
            ("sub/local.txt", "Local settings of one machine.\n"),
            ("drafts/wip.md", "# Work in progress\n\nAn unfinished draft.\n"),
            ("scratch-1.md", "Scratch notes.\n"),
            ("private.md", "# Private\n\nA private diary entry.\n"),
            (".obsidian/workspace.md", "Editor state.\n"),
            (".trash/deleted.md", "# Deleted\n\nA note moved to the trash.\n"),
        ],
    );
    let report = sandbox.index();
    assert_eq!(count(&report, "documents"), 3, "{report}");
    assert_eq!(indexed(&sandbox), ["later.md", "notes.md", "sub/shared.txt"]);

    std::fs::write(sandbox.path(".keaignore"), "private.md\nlater.md\n").unwrap();
    let report = sandbox.index();
    assert_eq!(count(&report, "removed"), 1, "{report}");
    assert_eq!(indexed(&sandbox), ["notes.md", "sub/shared.txt"]);
    assert!(sandbox.path("later.md").exists(), "ignoring a document never touches the file");

    // A pattern taken back (here by a negation in a sub-folder's file) lets the file in again.
    std::fs::write(sandbox.path("sub/.gitignore"), "local.txt\n!local.txt\n").unwrap();
    let report = sandbox.index();
    assert_eq!(count(&report, "processed"), 1, "{report}");
    assert_eq!(indexed(&sandbox), ["notes.md", "sub/local.txt", "sub/shared.txt"]);
    let hits = sandbox.search("When does the ferry leave?", 1);
    assert_eq!(hits[0]["source"], "notes.md");
}

#[test]
fn the_watcher_leaves_a_new_ignored_file_out_and_follows_a_changed_ignore_file() {
    let sandbox = Sandbox::empty();
    write(&sandbox, &[(".keaignore", "ignored-*.md\n"), ("notes.md", "# Notes\n\nThe ferry to the island leaves at seven every morning.\n")]);
    let watcher = Watcher::start(&sandbox);
    let initial = watcher.wait_for("the initial sync", |_| true);
    assert_eq!(count(&initial, "documents"), 1, "{initial}");
    std::thread::sleep(Duration::from_millis(500));

    // The ignored file first: once the normal one is in, the ignored one was seen.
    write(&sandbox, &[("ignored-1.md", "# Ignored\n\nThe bakery sells rye bread on Fridays.\n")]);
    std::thread::sleep(Duration::from_millis(300));
    write(&sandbox, &[("normal.md", "# Normal\n\nThe museum is free on the first Sunday of the month.\n")]);
    watcher.wait_for("the normal file", |v| count(v, "documents") == 2);
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(indexed(&sandbox), ["normal.md", "notes.md"]);

    // Ignoring the normal file and no longer the other: a full sync swaps them.
    std::fs::write(sandbox.path(".keaignore"), "normal.md\n").unwrap();
    let swap = watcher.wait_for("the sync after the ignore file changed", |v| count(v, "removed") == 1);
    assert_eq!(count(&swap, "documents"), 2, "{swap}");
    assert_eq!(indexed(&sandbox), ["ignored-1.md", "notes.md"]);
}

/// Issue 41: rewriting a nested `.gitignore` 60 times ran 60 full syncs.
/// Changes to the rules are gathered until they settle, then synced once
/// (a pause on a slow machine may split them, never into dozens).
#[test]
fn an_ignore_file_rewritten_many_times_in_a_row_costs_one_sync() {
    let sandbox = Sandbox::empty();
    write(&sandbox, &[("notes.md", "# Notes\n\nThe ferry to the island leaves at seven every morning.\n"), ("sub/local.txt", "Local settings.\n")]);
    let watcher = Watcher::start(&sandbox);
    watcher.wait_for("the initial sync", |_| true);
    std::thread::sleep(Duration::from_millis(500));
    for n in 0..60 {
        let rule = if n % 2 == 0 { "local.txt\n" } else { "other.txt\n" };
        std::fs::write(sandbox.path("sub/.gitignore"), format!("# rewrite {n}\n{rule}")).unwrap();
        std::thread::sleep(Duration::from_millis(100));
    }
    let first = watcher.wait_for("the sync after the rewrites", |_| true);
    let mut syncs = vec![first];
    while let Some(line) = watcher.next_within(Duration::from_secs(10)) {
        syncs.push(line);
    }
    assert!(syncs.len() <= 3, "{} syncs for 60 rewrites: {syncs:?}", syncs.len());
    // The last rewrite (`other.txt`) is what the index follows.
    assert_eq!(indexed(&sandbox), ["notes.md", "sub/local.txt"]);
}

/// Issue 41: an ignore file that cannot be used (over 1 MB, or patterns
/// that cannot be built) dropped its whole tree from a fresh index. It is
/// now that ignore file's problem, named in the report and the status,
/// and the documents below it are indexed (the folder's other ignore file
/// still applies).
#[test]
fn an_ignore_file_that_cannot_be_used_is_reported_and_its_tree_still_indexed() {
    let sandbox = Sandbox::empty();
    let huge = format!("private.md\n{}", "# padding\n".repeat(120_000));
    write(
        &sandbox,
        &[
            ("sub/.gitignore", huge.as_str()),
            ("sub/.keaignore", "skipped.md\n"),
            ("sub/private.md", "# Private\n\nThe owl sleeps in the barn.\n"),
            ("sub/skipped.md", "# Skipped\n\nThe fox hides in the hedge.\n"),
            ("sub/deeper/note.md", "# Note\n\nThe heron fishes at dawn.\n"),
            ("top.md", "# Top\n\nThe ferry leaves at seven.\n"),
        ],
    );
    let report = sandbox.index();
    assert_eq!(indexed(&sandbox), ["sub/deeper/note.md", "sub/private.md", "top.md"], "{report}");
    let problem = |v: &serde_json::Value| {
        v["skipped"].as_array().unwrap().iter().find(|s| s["path"] == "sub/.gitignore").map(|s| s["message"].as_str().unwrap().to_string())
    };
    let message = problem(&report).unwrap_or_else(|| panic!("the ignore file's problem is reported: {report}"));
    assert!(message.contains("over 1 MB") && message.contains("not used"), "{message}");
    assert_eq!(problem(&sandbox.status()), Some(message), "and shown in the status");
}

/// What a sync leaves out is said with why, in the report and the status,
/// and every document says when it was last read.
#[test]
fn what_a_sync_leaves_out_is_listed_with_why_and_documents_say_when_they_were_read() {
    let sandbox = Sandbox::empty();
    write(&sandbox, &[(".keaignore", "drafts/\n"), ("drafts/wip.md", "# Draft\n"), ("note.md", "# Note\n\nA kept note.\n"), ("tool.exe", "MZ")]);
    let before = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64;
    let report = sandbox.index();
    let skipped: Vec<(String, String)> =
        report["skipped"].as_array().unwrap().iter().map(|s| (s["path"].as_str().unwrap().into(), s["message"].as_str().unwrap().into())).collect();
    assert_eq!(
        skipped,
        [("drafts".to_string(), "ignored by a .gitignore or .keaignore rule".to_string()), ("tool.exe".into(), "not a kind of document Kea reads".into())],
        "{report}"
    );
    let status = sandbox.status();
    assert_eq!(status["skipped"], report["skipped"]);
    let read_at = status["documents"][0]["indexed_at"].as_i64().unwrap();
    assert!(read_at >= before - 1 && read_at <= before + 60, "{status}");
}
