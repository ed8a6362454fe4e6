//! Full-text search: BM25 over segmented words. A search is ranked from
//! FTS5's postings held in memory ([`TermIndex`]) once they are read, and by
//! FTS5's own `bm25()` until then: both give the same scores and order (a
//! test compares them). A store on disk reads them on a second connection,
//! in the background, from its first search on (about 3 s per 100k chunks;
//! FTS5's `bm25()` looks up every match's length in a B-tree, which was
//! most of a search's time on a large folder); an in-memory store reads
//! them at once. Each change the store writes is then followed in memory,
//! also for a second connection sharing them (the engine searches on its
//! own); one written by another process has them read again. A term in half the
//! chunks or more carries no weight in BM25: its matches only fill the
//! places left. Both take their tokens from FTS5's own tokenizer
//! (`tokenizer`): a query's words are segmented by `segment`, then each is
//! put through it, as the index's text was.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use rusqlite::{params, Connection, OpenFlags};

use super::term_index::{TermIndex, INSTANCES};
use super::{generation_in, Store, VectorDelta};
use crate::error::Result;
use crate::segment;

/// Terms whose counts FTS5 path remembers per generation before starting over.
const MEMO_LIMIT: usize = 4096;

/// The score of a match found only by terms without weight (what FTS5's
/// clamped IDF gives them): below every weighted match.
const UNWEIGHTED_SCORE: f32 = 1e-6;

/// Whether BM25 gives a term found in `n` of `chunks` chunks any weight.
/// FTS5's IDF, ln((N − n + ½) / (n + ½)), is clamped to 10⁻⁶ once n ≥ N/2.
fn carries_weight(n: usize, chunks: usize) -> bool {
    n > 0 && 2 * n < chunks
}

/// The term index a store holds, and whether a read of it is under way.
#[derive(Default)]
pub(super) struct HeldTerms {
    state: Mutex<Held>,
    /// Signalled when a background read ends.
    read_ended: Condvar,
}

#[derive(Default)]
struct Held {
    index: Option<Arc<TermIndex>>,
    reading: bool,
    /// The generation a read failed at (not tried again until it changes).
    failed: Option<i64>,
    /// FTS5's term counts of one generation, while no index is held.
    counts: Option<(i64, usize, HashMap<String, usize>)>,
}

impl HeldTerms {
    fn lock(&self) -> MutexGuard<'_, Held> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether a term index is held at `generation` (a change from there
    /// is followed, given the tokens of what it adds).
    pub(super) fn held_at(&self, generation: i64) -> bool {
        self.lock().index.as_ref().is_some_and(|index| index.generation == generation)
    }

    /// Commits `tx`, a change from generation `before` to `after` by
    /// `delta`, and brings the held term index along if it was at `before`,
    /// given `added_tokens`, FTS5's tokens of each added chunk (else it is
    /// dropped, to be read again). Searches sharing it wait meanwhile, so
    /// none finds the new generation with the old postings.
    pub(super) fn commit_followed(
        &self,
        tx: rusqlite::Transaction<'_>,
        (before, after): (i64, i64),
        delta: &VectorDelta,
        added_tokens: Option<Vec<Vec<String>>>,
    ) -> Result<()> {
        let mut held = self.lock();
        tx.commit()?;
        let followed = match (held.index.as_mut(), added_tokens) {
            (Some(index), _) if index.generation == before && before == after => true,
            (Some(index), Some(tokens)) if index.generation == before => {
                let added: Vec<(u64, &[String])> = delta.added.iter().zip(&tokens).map(|(a, t)| (a.id, t.as_slice())).collect();
                Arc::make_mut(index).follow(&delta.removed, &added, after)
            }
            _ => false,
        };
        if !followed {
            held.index = None;
        }
        Ok(())
    }
}

/// Where a search reads its postings: the held index, or FTS5 at a generation.
pub(super) enum Source {
    Held(Arc<TermIndex>),
    Fts5(i64),
}

/// A store's postings for one search (terms are FTS5's tokens).
pub(super) struct Postings<'s> {
    pub(super) store: &'s Store,
    pub(super) source: Source,
}

impl Store {
    /// The postings to search at the current generation: the held index, or
    /// FTS5 while it is read (a read is started if none is under way).
    pub(super) fn postings(&self) -> Result<Postings<'_>> {
        let generation = self.generation()?;
        let mut held = self.terms.lock();
        let source = if let Some(index) = held.index.as_ref().filter(|index| index.generation == generation) {
            Source::Held(index.clone())
        } else if let Some(file) = &self.file {
            if !held.reading && held.failed != Some(generation) {
                held.reading = true;
                read_in_background(file.clone(), self.terms.clone(), generation);
            }
            Source::Fts5(generation)
        } else {
            let index = Arc::new(TermIndex::read(&self.conn, generation)?);
            held.index = Some(index.clone());
            Source::Held(index)
        };
        Ok(Postings { store: self, source })
    }

    /// Starts reading the term index if it is not held, and waits up to
    /// `wait` for the read to end: whether an index is held now (a
    /// benchmark times the steady state with it).
    pub fn hold_full_text(&self, wait: std::time::Duration) -> Result<bool> {
        if let Source::Held(_) = self.postings()?.source {
            return Ok(true);
        }
        let held = self.terms.lock();
        let (held, _) = self.terms.read_ended.wait_timeout_while(held, wait, |h| h.reading).unwrap_or_else(|p| p.into_inner());
        Ok(held.index.is_some())
    }

    /// Makes this store search with the postings `writer` holds and follows
    /// through each change it writes (the engine's reader and writer are two
    /// connections to one file), instead of reading its own copy again after
    /// every change. Stores of different files share nothing.
    pub fn share_full_text_with(&mut self, writer: &Store) {
        if let (Some(mine), Some(theirs)) = (&self.file, &writer.file) {
            if mine.same_file(theirs) {
                self.terms = writer.terms.clone();
            }
        }
    }

    /// How many chunks contain each term (its document frequency in BM25's
    /// sense; a term FTS5 cuts in several tokens, the most any of them is
    /// in), and the number of chunks.
    pub fn token_chunk_counts(&self, terms: &[String]) -> Result<(Vec<usize>, usize)> {
        self.postings()?.term_counts(terms)
    }

    /// Full-text search (BM25 over segmented words); returns chunk ids
    /// with scores, best first (higher is better). Any text is a safe query.
    /// Matches of terms without weight only fill the places left, unscored.
    pub fn fts_search(&self, query: &str, k: usize) -> Result<Vec<(u64, f32)>> {
        self.postings()?.search(query, k)
    }

    /// The tokens found in the full-text index (heading, names, text) of
    /// any of the chunks `ids`.
    pub fn tokens_in_chunks(&self, tokens: &[String], ids: &[u64]) -> Result<Vec<String>> {
        let postings = self.postings()?;
        let mut found = Vec::new();
        for (token, own) in tokens.iter().zip(self.tokenizer.tokens(tokens)?) {
            for own in &own {
                if postings.held_by_any(own, ids)? {
                    found.push(token.clone());
                    break;
                }
            }
        }
        Ok(found)
    }
}

/// A store's file, and what it was when the store opened it (a read beside
/// the store must read the same file, not one put in its place since).
#[derive(Clone)]
pub(super) struct StoreFile {
    path: PathBuf,
    identity: Option<(u64, u64)>,
}

impl StoreFile {
    pub(super) fn new(path: &std::path::Path) -> StoreFile {
        StoreFile { path: path.to_path_buf(), identity: file_identity(path) }
    }

    fn unchanged(&self) -> bool {
        file_identity(&self.path) == self.identity
    }

    /// Whether both name one file (its device and inode, or its path where
    /// there are none).
    fn same_file(&self, other: &StoreFile) -> bool {
        match (self.identity, other.identity) {
            (Some(mine), Some(theirs)) => mine == theirs,
            _ => self.path == other.path,
        }
    }
}

/// The device and inode of `path` (`None` where there are none to read).
fn file_identity(path: &std::path::Path) -> Option<(u64, u64)> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        None
    }
}

/// Reads the term index of the store in `file` on its own connection, in
/// one snapshot, and hands it to `terms` (a store at `generation` asked).
fn read_in_background(file: StoreFile, terms: Arc<HeldTerms>, generation: i64) {
    let spawned = std::thread::Builder::new().name("kea-term-index".into()).spawn({
        let terms = terms.clone();
        move || {
            let read = (|| {
                let conn = Connection::open_with_flags(&file.path, OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX)?;
                conn.busy_timeout(std::time::Duration::from_secs(10))?;
                conn.execute_batch(INSTANCES)?;
                let snapshot = conn.unchecked_transaction()?;
                TermIndex::read(&snapshot, generation_in(&snapshot)?)
            })()
            .ok()
            .filter(|_| file.unchanged());
            let mut held = terms.lock();
            held.reading = false;
            match read {
                Some(index) if held.index.as_ref().is_none_or(|h| h.generation < index.generation) => held.index = Some(Arc::new(index)),
                Some(_) => {}
                None => held.failed = Some(generation),
            }
            terms.read_ended.notify_all();
        }
    });
    if spawned.is_err() {
        let mut held = terms.lock();
        (held.reading, held.failed) = (false, Some(generation));
    }
}

impl Postings<'_> {
    /// How many chunks hold each of `tokens` (FTS5's), and how many chunks there are.
    fn counts(&self, tokens: &[String]) -> Result<(Vec<usize>, usize)> {
        match &self.source {
            Source::Held(index) => Ok((tokens.iter().map(|t| index.chunks_with(t)).collect(), index.chunks())),
            Source::Fts5(generation) => fts5::counts(self.store, *generation, tokens),
        }
    }

    /// How many chunks hold each of `terms` (Kea's words: the most any of
    /// FTS5's tokens of it is in), and how many chunks there are.
    pub(super) fn term_counts(&self, terms: &[String]) -> Result<(Vec<usize>, usize)> {
        let tokens = self.store.tokenizer.tokens(terms)?;
        let (counts, chunks) = self.counts(&tokens.concat())?;
        let mut counts = counts.into_iter();
        Ok((tokens.iter().map(|own| counts.by_ref().take(own.len()).max().unwrap_or(0)).collect(), chunks))
    }

    pub(super) fn search(&self, query: &str, k: usize) -> Result<Vec<(u64, f32)>> {
        let words = segment::search_terms(query, |t| self.term_counts(t).map(|(c, _)| c))?;
        let terms = self.store.tokenizer.distinct_tokens(&words)?;
        let (counts, chunks) = self.counts(&terms)?;
        let (mut weighted, mut unweighted) = (Vec::new(), Vec::new());
        for (term, n) in terms.into_iter().zip(counts).filter(|&(_, n)| n > 0) {
            if carries_weight(n, chunks) {
                weighted.push(term)
            } else {
                unweighted.push(term)
            }
        }
        let mut found = match (&self.source, weighted.is_empty()) {
            (_, true) => Vec::new(),
            (Source::Held(index), false) => index.best(&weighted, k),
            (Source::Fts5(_), false) => fts5::best(self.store, &weighted, k)?,
        };
        if found.len() < k && !unweighted.is_empty() {
            let seen: HashSet<u64> = found.iter().map(|f| f.0).collect();
            let first = match &self.source {
                Source::Held(index) => index.first_holding(&unweighted, k),
                Source::Fts5(_) => fts5::first_holding(self.store, &unweighted, k)?,
            };
            for id in first {
                if found.len() < k && !seen.contains(&id) {
                    found.push((id, UNWEIGHTED_SCORE));
                }
            }
        }
        Ok(found)
    }

    fn held_by_any(&self, token: &str, ids: &[u64]) -> Result<bool> {
        match &self.source {
            Source::Held(index) => Ok(ids.iter().any(|&id| index.holds(token, id))),
            Source::Fts5(_) => fts5::held_by_any(self.store, token, ids),
        }
    }
}

/// The same questions asked of FTS5 itself.
mod fts5 {
    use super::*;

    /// Term counts, remembered for one generation.
    pub(super) fn counts(store: &Store, generation: i64, terms: &[String]) -> Result<(Vec<usize>, usize)> {
        let mut held = store.terms.lock();
        if held.counts.as_ref().is_none_or(|(g, _, memo)| *g != generation || memo.len() > MEMO_LIMIT) {
            held.counts = Some((generation, store.chunk_count()?, HashMap::new()));
        }
        let (_, chunks, memo) = held.counts.as_mut().expect("set above");
        let mut stmt = store.conn.prepare_cached("SELECT COUNT(*) FROM chunks_fts WHERE chunks_fts MATCH ?1")?;
        let mut counts = Vec::with_capacity(terms.len());
        for term in terms {
            let count = match memo.get(term) {
                Some(&count) => count,
                None => {
                    let count = stmt.query_row([quoted(term)], |r| r.get::<_, i64>(0))? as usize;
                    memo.insert(term.clone(), count);
                    count
                }
            };
            counts.push(count);
        }
        Ok((counts, *chunks))
    }

    pub(super) fn best(store: &Store, terms: &[String], k: usize) -> Result<Vec<(u64, f32)>> {
        let mut stmt =
            store.conn.prepare_cached("SELECT rowid, bm25(chunks_fts) FROM chunks_fts WHERE chunks_fts MATCH ?1 ORDER BY bm25(chunks_fts), rowid LIMIT ?2")?;
        let rows = stmt.query_map(params![any_of(terms), k as i64], |r| Ok((r.get::<_, i64>(0)? as u64, -r.get::<_, f64>(1)? as f32)))?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    }

    pub(super) fn first_holding(store: &Store, terms: &[String], k: usize) -> Result<Vec<u64>> {
        let mut stmt = store.conn.prepare_cached("SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ?1 ORDER BY rowid LIMIT ?2")?;
        let rows = stmt.query_map(params![any_of(terms), k as i64], |r| Ok(r.get::<_, i64>(0)? as u64))?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    }

    pub(super) fn held_by_any(store: &Store, term: &str, ids: &[u64]) -> Result<bool> {
        let mut stmt = store.conn.prepare_cached("SELECT EXISTS(SELECT 1 FROM chunks_fts WHERE chunks_fts MATCH ?1 AND rowid = ?2)")?;
        for &id in ids {
            if stmt.query_row(params![quoted(term), id as i64], |r| r.get::<_, bool>(0))? {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// A term as an FTS5 phrase (any text is safe).
    pub(super) fn quoted(term: &str) -> String {
        format!("\"{}\"", term.replace('"', ""))
    }

    /// An FTS5 expression matching any of `terms` (not empty).
    pub(super) fn any_of(terms: &[String]) -> String {
        terms.iter().map(|t| quoted(t)).collect::<Vec<_>>().join(" OR ")
    }
}

#[cfg(test)]
mod tests {
    use super::{carries_weight, Postings, Source};
    use crate::store::term_index::TermIndex;
    use crate::store::tests::{chunk, replace};
    use crate::store::{DocChange, Store};
    use std::sync::Arc;

    #[test]
    fn a_term_in_half_the_chunks_or_more_carries_no_weight() {
        assert!(carries_weight(1, 3));
        assert!(carries_weight(49, 100));
        assert!(!carries_weight(50, 100));
        assert!(!carries_weight(2, 3));
        assert!(!carries_weight(0, 100));
    }

    /// The index a store holds now (an in-memory store reads it at once).
    fn held(store: &Store) -> Arc<TermIndex> {
        match store.postings().unwrap().source {
            Source::Held(index) => index,
            Source::Fts5(..) => panic!("no term index held"),
        }
    }

    /// A store whose chunks hold repeated words, lengths that differ,
    /// Chinese, a diacritic and a word in most chunks, with one document
    /// deleted (FTS5 keeps tombstones for it).
    fn varied_store() -> Store {
        let mut store = Store::open_in_memory().unwrap();
        let texts = [
            "Cockatiels eat millet seeds and more millet",
            "Macaws crack nuts; macaws also eat clay by the river banks of the forest",
            "A café sells seeds",
            "野生玄凤在地面啄食草籽和谷物。",
            "Seeds, seeds, seeds: the kea eats almost anything it finds in the alpine zone",
            "Lorikeets drink nectar and eat",
        ];
        store.apply(&[replace("a.md", texts.iter().enumerate().map(|(i, t)| chunk(i, t, 0.1)).collect())]).unwrap();
        store.apply(&[replace("b.md", vec![chunk(0, "Millet and nuts", 0.2)]), replace("c.md", vec![chunk(0, "Nectar seeds", 0.3)])]).unwrap();
        store.apply(&[DocChange::Remove { path: "c.md".into() }]).unwrap();
        store
    }

    #[test]
    fn the_term_index_answers_exactly_as_fts5_does() {
        let store = varied_store();
        let generation = store.generation().unwrap();
        let (ours, fts5) = (Postings { store: &store, source: Source::Held(held(&store)) }, Postings { store: &store, source: Source::Fts5(generation) });
        let terms = ["seed", "millet", "macaw", "nut", "cafe", "玄凤", "eat", "nectar", "penguin"].map(String::from);
        assert_eq!(ours.term_counts(&terms).unwrap(), fts5.term_counts(&terms).unwrap());
        assert_eq!(ours.term_counts(&terms).unwrap().1, 7);
        for query in ["seeds millet", "macaws crack nuts 玄凤", "Café", "nectar eat", "what do they eat", "eat", "penguins"] {
            let (a, b) = (ours.search(query, 10).unwrap(), fts5.search(query, 10).unwrap());
            assert_eq!(a, b, "{query}: the same ids, order and scores");
            assert_eq!(ours.search(query, 2).unwrap(), fts5.search(query, 2).unwrap(), "{query}, cut short");
        }
        assert!(!ours.search("seeds millet", 10).unwrap().is_empty());
        assert_eq!(ours.search("Café", 5).unwrap().len(), 1, "a query word is folded as the index folds it");
        let ids: Vec<u64> = ours.search("eat", 10).unwrap().iter().map(|h| h.0).collect();
        for term in &terms {
            assert_eq!(ours.held_by_any(term, &ids[..2]).unwrap(), fts5.held_by_any(term, &ids[..2]).unwrap(), "{term}");
        }
    }

    #[test]
    fn the_term_index_follows_changes_as_a_fresh_read_sees_them() {
        let mut store = varied_store();
        let doc = |name: &str, words: &[&str]| replace(name, words.iter().enumerate().map(|(i, t)| chunk(i, t, 0.1)).collect());
        let query = ["root", "seed", "cafe", "fern", "nectar"].map(String::from);
        let mut changes = vec![
            vec![doc("a.md", &["Kea eat roots and nectar"])],
            vec![DocChange::Remove { path: "b.md".into() }],
            vec![doc("c.md", &["Lorikeets drink nectar", "Ferns"]), doc("d.md", &["Seeds for the café"])],
        ];
        // Enough removals for the postings to be compacted.
        changes.extend((0..6).map(|i| vec![doc("e.md", &["seeds", "roots", "nectar"][..1 + i % 3])]));
        for change in changes {
            let before = Arc::as_ptr(&held(&store));
            store.apply(&change).unwrap();
            let followed = held(&store);
            assert_eq!(Arc::as_ptr(&followed), before, "the change was followed, not read again");
            let fresh = TermIndex::read(&store.conn, followed.generation).unwrap();
            assert_eq!((followed.chunks(), followed.best(&query, 10)), (fresh.chunks(), fresh.best(&query, 10)));
            for term in &query {
                assert_eq!(followed.chunks_with(term), fresh.chunks_with(term), "{term}");
            }
        }
    }

    #[test]
    fn a_store_on_disk_searches_fts5_until_its_term_index_is_read_beside_it() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("kea.sqlite3")).unwrap();
        let texts = ["Cockatiels eat millet seeds", "Macaws crack nuts", "Seeds and nuts"];
        store.apply(&[replace("a.md", texts.iter().enumerate().map(|(i, t)| chunk(i, t, 0.1)).collect())]).unwrap();
        assert!(matches!(store.postings().unwrap().source, Source::Fts5(..)), "the first search does not wait for the read");
        let from_fts5 = store.fts_search("seeds nuts", 5).unwrap();
        assert!(store.hold_full_text(std::time::Duration::from_secs(120)).unwrap(), "the read ended with an index held");
        assert_eq!(store.fts_search("seeds nuts", 5).unwrap(), from_fts5);
        let index = Arc::as_ptr(&held(&store));
        store.apply(&[replace("b.md", vec![chunk(0, "Nuts for macaws", 0.2)])]).unwrap();
        assert_eq!(Arc::as_ptr(&held(&store)), index, "a change the store writes is followed, not read again");
        assert_eq!(store.token_chunk_counts(&["nut".into()]).unwrap(), (vec![3], 4));
    }

    #[test]
    fn a_second_connection_searches_the_postings_its_writer_follows() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kea.sqlite3");
        let mut writer = Store::open(&path).unwrap();
        writer.apply(&[replace("a.md", vec![chunk(0, "Cockatiels eat millet seeds", 0.1)])]).unwrap();
        let mut searcher = Store::open_read_only(&path).unwrap();
        searcher.share_full_text_with(&writer);
        assert!(searcher.hold_full_text(std::time::Duration::from_secs(120)).unwrap(), "the read ended with an index held");
        let index = Arc::as_ptr(&held(&searcher));
        writer.apply(&[replace("b.md", vec![chunk(0, "Macaws crack nuts and seeds", 0.2)])]).unwrap();
        assert_eq!(Arc::as_ptr(&held(&searcher)), index, "the writer's change is followed in the postings searched, not read again");
        assert_eq!(searcher.fts_search("nuts", 5).unwrap().len(), 1);
        assert_eq!(searcher.token_chunk_counts(&["seed".into()]).unwrap(), (vec![2], 2));

        let other = Store::open(&dir.path().join("other.sqlite3")).unwrap();
        let mut stranger = Store::open_read_only(&path).unwrap();
        stranger.share_full_text_with(&other);
        assert!(!Arc::ptr_eq(&stranger.terms, &other.terms), "a store of another file shares nothing");
    }
}
