//! `kea index --watch`: creates, edits, renames and deletes show up in the
//! index within a few seconds, without a full rebuild.

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::Value;

use super::util::{count, Sandbox};

/// A watching `kea` whose JSON summary lines arrive on a channel.
struct Watcher {
    child: Child,
    lines: mpsc::Receiver<Value>,
}

impl Watcher {
    fn start(sandbox: &Sandbox) -> Watcher {
        let mut child = sandbox.command(&["index", "--watch", "--json"]).stdout(Stdio::piped()).spawn().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Ok(v) = serde_json::from_str::<Value>(&line) {
                    let _ = tx.send(v);
                }
            }
        });
        Watcher { child, lines }
    }

    /// The next summary that satisfies `done`, within 10 s.
    fn wait_for(&self, what: &str, done: impl Fn(&Value) -> bool) -> Value {
        loop {
            match self.lines.recv_timeout(Duration::from_secs(10)) {
                Ok(v) if done(&v) => return v,
                Ok(_) => continue,
                Err(_) => panic!("timed out waiting for: {what}"),
            }
        }
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn watcher_picks_up_create_edit_rename_and_delete() {
    let sandbox = Sandbox::with_samples();
    let watcher = Watcher::start(&sandbox);
    let initial = watcher.wait_for("the initial sync", |_| true);
    let docs = count(&initial, "documents");
    // Give the watcher a moment to be registered after the initial sync.
    std::thread::sleep(Duration::from_millis(500));

    let note = sandbox.path("kakapo.md");
    std::fs::write(&note, "# Kakapo\n\nThe kakapo is a flightless nocturnal parrot from New Zealand.\n").unwrap();
    watcher.wait_for("the new file", |v| count(v, "documents") == docs + 1);
    assert_eq!(sandbox.search("flightless nocturnal parrot", 1)[0]["source"], "kakapo.md");

    std::fs::write(&note, "# Kakapo\n\nThe kakapo is a flightless nocturnal parrot that smells of honey.\n").unwrap();
    let edit = watcher.wait_for("the edit", |v| count(v, "embedded") >= 1);
    assert_eq!(count(&edit, "documents"), docs + 1);

    std::fs::rename(&note, sandbox.path("owl-parrot.md")).unwrap();
    let rename = watcher.wait_for("the rename", |v| count(v, "removed") == 1);
    assert_eq!(count(&rename, "embedded"), 0, "a rename reuses vectors: {rename}");
    assert_eq!(sandbox.search("flightless nocturnal parrot", 1)[0]["source"], "owl-parrot.md");

    std::fs::remove_file(sandbox.path("owl-parrot.md")).unwrap();
    watcher.wait_for("the delete", |v| count(v, "documents") == docs);
}

#[test]
fn a_small_watcher_storm_settles_with_the_index_equal_to_the_disk() {
    // The smoke size of `kea bench storm` (the full run is 10,000 files in 10 s).
    let sandbox = Sandbox::empty();
    let figures = sandbox.json(&["bench", "storm", "--files", "300", "--seconds", "3", "--json"]);
    assert_eq!(figures["index_equals_disk"], true, "{figures}");
    assert_eq!(figures["query_errors"], 0, "{figures}");
    assert_eq!(figures["watcher_errors"], 0, "{figures}");
    assert!(figures["queries"].as_u64().unwrap() > 10, "queries kept running: {figures}");
    assert!(figures["documents"].as_u64().unwrap() > 200, "{figures}");
}
