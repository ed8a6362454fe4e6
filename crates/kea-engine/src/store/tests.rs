//! Store unit tests on an in-memory SQLite database.

use super::*;

fn file(path: &str) -> FileFacts {
    FileFacts { path: path.into(), kind: "markdown".into(), size: 10, mtime_ns: 1 }
}

fn chunk(index: usize, text: &str, value: f32) -> NewChunk {
    NewChunk {
        index,
        heading_path: "Cockatiel > Diet".into(),
        page: None,
        byte_start: 0,
        byte_end: text.len(),
        text: text.into(),
        hash: format!("hash-{text}"),
        embedding: vec![value, 1.0 - value],
    }
}

fn replace(path: &str, chunks: Vec<NewChunk>) -> DocChange {
    DocChange::Replace { file: file(path), content_hash: format!("c-{path}"), title: Some("T".into()), front_matter: "{}".into(), chunks }
}

#[test]
fn replace_swaps_chunks_and_bumps_generation() {
    let mut store = Store::open_in_memory().unwrap();
    let first = store.apply(&[replace("a.md", vec![chunk(0, "seeds", 0.1), chunk(1, "fruit", 0.2)])]).unwrap();
    assert_eq!(first.added.len(), 2);
    assert!(first.removed.is_empty());
    let generation = store.generation().unwrap();
    let second = store.apply(&[replace("a.md", vec![chunk(0, "nuts", 0.3)])]).unwrap();
    let mut removed = second.removed.clone();
    removed.sort();
    assert_eq!(removed, first.added.iter().map(|a| a.0).collect::<Vec<_>>());
    assert!(second.added[0].0 > first.added[1].0, "chunk ids are never reused");
    assert_eq!(store.generation().unwrap(), generation + 1);
    let docs = store.documents().unwrap();
    assert_eq!((docs.len(), docs[0].chunk_count, docs[0].status), (1, 1, DocStatus::Indexed));
}

#[test]
fn embeddings_are_found_by_hash() {
    let mut store = Store::open_in_memory().unwrap();
    store.apply(&[replace("a.md", vec![chunk(0, "seeds", 0.25)])]).unwrap();
    let found = store.embeddings_for_hashes(&["hash-seeds", "hash-missing"]).unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found["hash-seeds"], vec![0.25, 0.75]);
}

#[test]
fn failure_and_removal_drop_chunks() {
    let mut store = Store::open_in_memory().unwrap();
    store.apply(&[replace("a.md", vec![chunk(0, "seeds", 0.1)]), replace("b.md", vec![chunk(0, "fruit", 0.2)])]).unwrap();
    let delta = store
        .apply(&[DocChange::Failed { file: file("a.md"), message: "broken".into() }, DocChange::Remove { path: "b.md".into() }])
        .unwrap();
    assert_eq!(delta.removed.len(), 2);
    assert_eq!(store.chunk_count().unwrap(), 0);
    let docs = store.documents().unwrap();
    assert_eq!(docs.len(), 1);
    assert_eq!((docs[0].status, docs[0].error.as_deref()), (DocStatus::Error, Some("broken")));
    assert!(store.integrity_check().unwrap().is_empty());
}

#[test]
fn full_text_search_accepts_any_text() {
    let mut store = Store::open_in_memory().unwrap();
    store.apply(&[replace("a.md", vec![chunk(0, "Cockatiels eat millet seeds", 0.1), chunk(1, "Macaws crack nuts", 0.2)])]).unwrap();
    let hits = store.fts_search("what do they EAT? \"millet\" OR NOT (", 5).unwrap();
    assert_eq!(hits.len(), 1);
    let rows = store.chunks_by_ids(&[hits[0].0]).unwrap();
    assert_eq!(rows[0].text, "Cockatiels eat millet seeds");
    assert_eq!(rows[0].source, "a.md");
    assert!(store.fts_search("?!", 5).unwrap().is_empty());
}

#[test]
fn switching_model_drops_every_vector() {
    let mut store = Store::open_in_memory().unwrap();
    store.switch_model("m1", 2).unwrap();
    store.apply(&[replace("a.md", vec![chunk(0, "seeds", 0.1)])]).unwrap();
    store.switch_model("m2", 3).unwrap();
    assert_eq!(store.chunk_count().unwrap(), 0);
    assert_eq!(store.model().unwrap(), Some(("m2".into(), 3)));
    assert_eq!(store.documents().unwrap()[0].content_hash, None, "documents must be re-extracted");
}
