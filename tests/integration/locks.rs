//! The engine's one lock order (ARCHITECTURE.md, "one lock order"): the
//! desktop polls `status` every 400 ms while indexing and searches at the
//! same time. Regression (issue 24): a commit took the vector lock and then
//! the store's, `status` the store's and then the vector lock, and the two
//! could wait on each other for ever.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use kea_engine::{CancelToken, Engine, EngineConfig, SearchMode};

use super::util::{repo_root, Sandbox};

#[test]
fn status_and_searches_polled_from_several_threads_during_an_ingest_never_deadlock() {
    let sandbox = Sandbox::empty();
    std::fs::create_dir_all(sandbox.path("notes")).unwrap();
    for i in 0..1000 {
        let text = format!("# Note {i}\n\nThe note number {i} is about tide pools, rock {i} and the crabs living under it.\n");
        std::fs::write(sandbox.path(&format!("notes/note-{i:04}.md")), text).unwrap();
    }
    let mut config = EngineConfig::new(&sandbox.knowledge, &sandbox.data);
    config.model_paths.dirs.insert(0, repo_root().join("models"));
    config.embed.batch_size = 4;
    let engine = Arc::new(Engine::open(config).unwrap());
    let indexing = Arc::new(AtomicBool::new(true));
    let mut pollers = Vec::new();
    for thread in 0..3 {
        let (engine, indexing) = (engine.clone(), indexing.clone());
        pollers.push(std::thread::spawn(move || {
            let mut calls = 0u64;
            while indexing.load(Ordering::SeqCst) {
                match thread {
                    0 => drop(engine.status().unwrap()),
                    1 => drop(engine.indexer().integrity_problems().unwrap()),
                    _ => drop(engine.retriever().search("crabs under the rock", 3, SearchMode::Hybrid).unwrap()),
                }
                calls += 1;
                // Far tighter than the desktop's 400 ms, but leaving the
                // mutexes (which are not fair) free now and then.
                std::thread::sleep(Duration::from_millis(2));
            }
            calls
        }));
    }
    let (done, finished) = mpsc::channel();
    let syncing = engine.clone();
    std::thread::spawn(move || done.send(syncing.indexer().sync(&(), &CancelToken::new()).map(|r| r.processed)));
    let processed = finished.recv_timeout(Duration::from_secs(120)).expect("the ingest finished (no deadlock)").unwrap();
    indexing.store(false, Ordering::SeqCst);
    let calls: Vec<u64> = pollers.into_iter().map(|p| p.join().unwrap()).collect();
    assert_eq!(processed, 1000);
    assert!(calls.iter().all(|&c| c > 0), "every poller ran: {calls:?}");
    assert_eq!(engine.status().unwrap().chunks, 1000);
    assert!(engine.indexer().integrity_problems().unwrap().is_empty());
}
