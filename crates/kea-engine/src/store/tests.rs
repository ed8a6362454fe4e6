//! Store unit tests on an in-memory SQLite database.

use super::*;

fn file(path: &str) -> FileFacts {
    FileFacts { path: path.into(), kind: Some(crate::extract::DocKind::Markdown), size: 10, mtime_ns: 1 }
}

pub(super) fn chunk(index: usize, text: &str, value: f32) -> NewChunk {
    NewChunk {
        index,
        heading_path: "Cockatiel > Diet".into(),
        page: None,
        byte_start: 0,
        byte_end: text.len(),
        text: text.into(),
        names: String::new(),
        hash: format!("hash-{text}"),
        embedding: vec![value, 1.0 - value],
    }
}

pub(super) fn replace(path: &str, chunks: Vec<NewChunk>) -> DocChange {
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
    assert_eq!(removed, first.added.iter().map(|a| a.id).collect::<Vec<_>>());
    assert!(second.added[0].id > first.added[1].id, "chunk ids are never reused");
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
    let delta = store.apply(&[DocChange::Failed { file: file("a.md"), message: "broken".into() }, DocChange::Remove { path: "b.md".into() }]).unwrap();
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
fn a_word_in_half_the_chunks_or_more_only_fills_the_places_left() {
    let mut store = Store::open_in_memory().unwrap();
    let texts = ["Parrots of the alpine zone: the kea", "Parrots that boom at night: the kakapo", "Parrots with long tails: the macaw"];
    store.apply(&[replace("a.md", texts.iter().enumerate().map(|(i, t)| chunk(i, t, 0.1)).collect())]).unwrap();
    let text_of = |id: u64| store.chunks_by_ids(&[id]).unwrap()[0].text.clone();
    let hits = store.fts_search("kakapo parrots", 5).unwrap();
    assert_eq!(hits.len(), 3, "every chunk with either word: {hits:?}");
    assert_eq!(text_of(hits[0].0), texts[1]);
    assert!(hits[0].1 > 0.1 && hits[1..].iter().all(|h| h.1 < 1e-5), "BM25 weighs only the rarer word: {hits:?}");
    assert_eq!(store.fts_search("parrots", 5).unwrap().len(), 3, "a word in every chunk still finds them");
    let terms = ["parrot".to_string(), "kakapo".to_string()];
    assert_eq!(store.token_chunk_counts(&terms).unwrap(), (vec![3, 1], 3));
    store.apply(&[replace("b.md", vec![chunk(0, "A kakapo chick", 0.2)])]).unwrap();
    assert_eq!(store.token_chunk_counts(&terms).unwrap(), (vec![3, 2], 4), "counts are new after a change");
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

#[test]
fn chinese_words_match_inside_sentences() {
    let mut store = Store::open_in_memory().unwrap();
    store.apply(&[replace("zh.md", vec![chunk(0, "野生玄凤在地面啄食草籽和谷物。", 0.1), chunk(1, "公鸟擅长吹口哨。", 0.2)])]).unwrap();
    let hits = store.fts_search("玄凤吃什么谷物", 5).unwrap();
    assert_eq!(store.chunks_by_ids(&[hits[0].0]).unwrap()[0].text, "野生玄凤在地面啄食草籽和谷物。");
}

#[test]
fn version_1_stores_are_migrated_to_segmented_full_text() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kea.sqlite3");
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(
            "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
             INSERT INTO meta VALUES ('schema_version', '1');
             CREATE TABLE documents(id INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE, kind TEXT NOT NULL, size INTEGER NOT NULL,
               mtime_ns INTEGER NOT NULL, content_hash TEXT, status TEXT NOT NULL, error TEXT, title TEXT,
               front_matter TEXT NOT NULL DEFAULT '{}', chunk_count INTEGER NOT NULL DEFAULT 0, updated_at INTEGER NOT NULL);
             CREATE TABLE chunks(id INTEGER PRIMARY KEY AUTOINCREMENT, doc_id INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
               chunk_index INTEGER NOT NULL, total_chunks INTEGER NOT NULL, heading_path TEXT NOT NULL, page INTEGER,
               byte_start INTEGER NOT NULL, byte_end INTEGER NOT NULL, text TEXT NOT NULL, hash TEXT NOT NULL, embedding BLOB NOT NULL);
             CREATE VIRTUAL TABLE chunks_fts USING fts5(text, heading_path, content='chunks', content_rowid='id');
             CREATE TRIGGER chunks_ai AFTER INSERT ON chunks BEGIN
               INSERT INTO chunks_fts(rowid, text, heading_path) VALUES (new.id, new.text, new.heading_path); END;
             INSERT INTO documents VALUES (1, 'zh.md', 'markdown', 1, 1, 'h', 'indexed', NULL, NULL, '{}', 1, 0);
             INSERT INTO chunks VALUES (NULL, 1, 0, 1, '饮食', NULL, 0, 3, '虎皮鹦鹉主要吃草籽。', 'x', x'0000803f');",
        )
        .unwrap();
    }
    let store = Store::open(&path).unwrap();
    assert_eq!(store.meta(&MetaKey::SchemaVersion).unwrap().as_deref(), Some(SCHEMA_VERSION));
    assert_eq!(store.fts_search("草籽", 5).unwrap().len(), 1, "segmented words are searchable after migration");
    assert!(store.integrity_check().unwrap().is_empty());
}

#[test]
fn version_3_stores_gain_what_answers_showed_and_keep_their_conversations() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kea.sqlite3");
    let conversation = {
        let store = Store::open(&path).unwrap();
        let id = store.create_conversation("Kept").unwrap();
        store.conn.execute_batch("DROP TABLE answers_shown; UPDATE meta SET value = '3' WHERE key = 'schema_version';").unwrap();
        id
    };
    let store = Store::open(&path).unwrap();
    assert_eq!(store.meta(&MetaKey::SchemaVersion).unwrap().as_deref(), Some(SCHEMA_VERSION));
    assert_eq!(store.conversation(conversation).unwrap().unwrap().title, "Kept");
    let reply =
        NewMessage { role: kea_llm::Role::Assistant, content: "x", citations: &serde_json::json!([]), route: None, shown: Some(&serde_json::json!({})) };
    store.add_message(conversation, &reply).expect("the new table is there");
}

#[test]
fn documents_under_a_key_are_the_file_or_the_folder_below_it() {
    let mut store = Store::open_in_memory().unwrap();
    let paths = ["a.md", "a/b.md", "a/c/d.md", "a-b.md", "a0.md", "ab.md"];
    store.apply(&paths.iter().map(|p| replace(p, vec![])).collect::<Vec<_>>()).unwrap();
    let under = |key: &str| store.documents_under(key).unwrap().into_iter().map(|d| d.path).collect::<Vec<_>>();
    assert_eq!(under("a"), ["a/b.md", "a/c/d.md"]);
    assert_eq!(under("a.md"), ["a.md"]);
    assert_eq!(under("a/c"), ["a/c/d.md"]);
    assert!(under("z").is_empty());
}

#[test]
fn labels_read_only_documents_with_front_matter_and_languages_come_from_a_spread_sample() {
    let mut store = Store::open_in_memory().unwrap();
    let mut changes: Vec<DocChange> = (0..50).map(|i| replace(&format!("doc-{i:02}.md"), vec![chunk(0, "text", 0.1)])).collect();
    if let DocChange::Replace { front_matter, .. } = &mut changes[7] {
        *front_matter = r#"{"en": "Subject"}"#.into();
    }
    store.apply(&changes).unwrap();
    let labelled: Vec<String> = store.documents_with_front_matter().unwrap().into_iter().map(|d| d.path).collect();
    assert_eq!(labelled, ["doc-07.md"]);
    assert_eq!(store.title_sample(100).unwrap().len(), 50, "a small index is read whole");
    let sample = store.title_sample(10).unwrap();
    assert!((9..=11).contains(&sample.len()), "about the asked number: {}", sample.len());
    assert_eq!(store.document_count().unwrap(), 50);
}

#[test]
fn chunk_languages_are_known_without_reading_chunks_and_filled_for_older_stores() {
    use crate::language::Language::{Chinese, English};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kea.sqlite3");
    let mut store = Store::open(&path).unwrap();
    let added = store.apply(&[replace("a.md", vec![chunk(0, "玄凤鹦鹉吃种子和水果。", 0.1), chunk(1, "Seeds and fruit.", 0.2)])]).unwrap().added;
    let ids: Vec<u64> = added.iter().map(|a| a.id).collect();
    assert_eq!(store.languages_by_ids(&ids).unwrap(), [Chinese, English]);
    // A store written before the table: its Chinese chunks are listed at the next open.
    store.conn.execute_batch("DELETE FROM chinese_chunks; DELETE FROM meta WHERE key = 'chinese_chunks';").unwrap();
    drop(store);
    let mut store = Store::open(&path).unwrap();
    assert_eq!(store.languages_by_ids(&ids).unwrap(), [Chinese, English]);
    // A replaced document's chunks leave the table with their rows.
    store.apply(&[replace("a.md", vec![chunk(0, "Only English now.", 0.3)])]).unwrap();
    let left: i64 = store.conn.query_row("SELECT COUNT(*) FROM chinese_chunks", [], |r| r.get(0)).unwrap();
    assert_eq!(left, 0);
}

/// A batch written while another connection writes waits for it (the
/// busy timeout) and then commits: the transaction takes the write lock
/// when it begins, not when a read inside it turns into a write, which
/// SQLite refuses at once once the other writer has committed.
#[test]
fn a_batch_waits_for_another_writer_instead_of_failing_busy() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kea.sqlite3");
    let mut store = Store::open(&path).unwrap();
    store.apply(&[replace("a.md", vec![chunk(0, "seeds", 0.1)])]).unwrap();
    let other = rusqlite::Connection::open(&path).unwrap();
    other.execute_batch("BEGIN IMMEDIATE; UPDATE meta SET value = value WHERE key = 'generation';").unwrap();
    let (began, finish) = (std::sync::mpsc::channel::<()>(), std::sync::mpsc::channel::<()>());
    let writer = std::thread::spawn(move || {
        began.0.send(()).unwrap();
        finish.1.recv().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(300));
        other.execute_batch("COMMIT").unwrap();
    });
    began.1.recv().unwrap();
    finish.0.send(()).unwrap();
    store.apply(&[replace("b.md", vec![chunk(0, "nuts", 0.2)])]).expect("the batch waited for the other writer");
    writer.join().unwrap();
    assert_eq!(store.chunk_count().unwrap(), 2);
}
