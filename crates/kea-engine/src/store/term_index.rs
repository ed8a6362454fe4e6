//! [`TermIndex`]: the full-text index's postings held in memory, read from
//! FTS5 itself (its `fts5vocab` instance table) and then following the
//! changes the store writes, so a query ranks its matches with BM25 in about
//! a millisecond. FTS5's own `bm25()` looks up each matching row's length in
//! a B-tree: on a large folder that was most of a search's time. FTS5 stays
//! the durable index (written in the store's transactions); this is a cache
//! of it, with the same scores (same formula, lengths and counts, computed
//! in the same order; see `full_text`'s tests). Terms are FTS5's tokens
//! (`tokenizer`): this index neither folds nor splits anything itself. Every
//! row counts, also one without a token, as FTS5 counts them in BM25's
//! number of rows and average length.

use std::collections::HashMap;

use rusqlite::Connection;

use crate::error::Result;

/// The temporary `fts5vocab` table listing every token occurrence of
/// `chunks_fts` (term, chunk, column, offset), ordered by term then chunk.
/// Rows without a token are listed by `chunks_fts_docsize`, FTS5's own list
/// of rows and their lengths.
pub(super) const INSTANCES: &str = "CREATE VIRTUAL TABLE IF NOT EXISTS temp.chunks_fts_instances USING fts5vocab(main, chunks_fts, instance);";

/// FTS5's BM25 parameters (`bm25()` with no weights).
const K1: f64 = 1.2;
const B: f64 = 0.75;
/// FTS5 clamps an IDF at or below zero (a term in half the rows or more) to this.
const MIN_IDF: f64 = 1e-6;

/// The chunks holding one term, ascending by chunk id, and how often each holds it.
#[derive(Default, Clone)]
struct Postings {
    slots: Vec<u32>,
    frequencies: Vec<u32>,
}

/// Every term's postings for one store generation. A chunk deleted since
/// they were read keeps its slot, marked removed, until removed slots are
/// a quarter of all; then the postings are compacted.
#[derive(Clone)]
pub(super) struct TermIndex {
    pub(super) generation: i64,
    /// The chunk id of each slot, ascending.
    ids: Vec<u64>,
    /// Tokens in each slot's chunk (0 for a chunk with none: it still counts as a row).
    lengths: Vec<u32>,
    removed: Vec<bool>,
    removed_count: usize,
    /// Tokens in the chunks not removed.
    live_length: u64,
    terms: HashMap<Box<str>, Postings>,
}

impl TermIndex {
    /// Reads every token occurrence of the full-text index.
    pub(super) fn read(conn: &Connection, generation: i64) -> Result<TermIndex> {
        let mut stmt = conn.prepare("SELECT term, doc FROM temp.chunks_fts_instances")?;
        let mut rows = stmt.query([])?;
        let mut terms: HashMap<Box<str>, Postings> = HashMap::new();
        let mut current: Option<(Box<str>, Postings)> = None;
        // Slots in the order chunks are met, numbered in id order at the end.
        let mut slot_of: HashMap<u64, u32, IdHashing> = HashMap::with_hasher(IdHashing::new());
        let (mut ids, mut lengths) = (Vec::new(), Vec::new());
        while let Some(row) = rows.next()? {
            // FTS5 cuts a token at 32 KiB, also inside a character: such a
            // term is read as the tokenizer reads it (`tokenizer::term`).
            let term = super::tokenizer::term(row.get_ref(0)?)?;
            let term = term.as_ref();
            let id = row.get::<_, i64>(1)? as u64;
            if current.as_ref().is_none_or(|(t, _)| &**t != term) {
                terms.extend(current.take());
                current = Some((term.into(), Postings::default()));
            }
            let postings = &mut current.as_mut().expect("set above").1;
            let slot = *slot_of.entry(id).or_insert_with(|| {
                ids.push(id);
                lengths.push(0u32);
                (ids.len() - 1) as u32
            });
            lengths[slot as usize] += 1;
            if postings.slots.last() == Some(&slot) {
                let tf = postings.frequencies.last_mut().expect("one per slot");
                *tf = tf.saturating_add(1);
            } else {
                postings.slots.push(slot);
                postings.frequencies.push(1);
            }
        }
        terms.extend(current);
        let mut docsize = conn.prepare("SELECT id FROM chunks_fts_docsize")?;
        for id in docsize.query_map([], |r| r.get::<_, i64>(0))? {
            let id = id? as u64;
            slot_of.entry(id).or_insert_with(|| {
                ids.push(id);
                lengths.push(0);
                (ids.len() - 1) as u32
            });
        }
        Ok(Self::numbered(generation, ids, lengths, terms))
    }

    /// Renumbers the slots (met in any order) in chunk id order.
    fn numbered(generation: i64, ids: Vec<u64>, lengths: Vec<u32>, mut terms: HashMap<Box<str>, Postings>) -> TermIndex {
        let mut order: Vec<u32> = (0..ids.len() as u32).collect();
        order.sort_unstable_by_key(|&s| ids[s as usize]);
        let mut renumbered = vec![0u32; ids.len()];
        order.iter().enumerate().for_each(|(new, &old)| renumbered[old as usize] = new as u32);
        for postings in terms.values_mut() {
            postings.slots.iter_mut().for_each(|s| *s = renumbered[*s as usize]);
            // FTS5 lists a term's chunks in id order; should it not, sort them.
            if !postings.slots.is_sorted() {
                let mut pairs: Vec<(u32, u32)> = postings.slots.iter().copied().zip(postings.frequencies.iter().copied()).collect();
                pairs.sort_unstable();
                (postings.slots, postings.frequencies) = pairs.into_iter().unzip();
            }
        }
        let live_length: u64 = lengths.iter().map(|&l| l as u64).sum();
        let ids: Vec<u64> = order.iter().map(|&s| ids[s as usize]).collect();
        let lengths: Vec<u32> = order.iter().map(|&s| lengths[s as usize]).collect();
        TermIndex { generation, removed: vec![false; ids.len()], removed_count: 0, ids, lengths, live_length, terms }
    }

    /// Follows one committed change: chunks `removed`, chunks `added` with
    /// FTS5's tokens of what was written for each, now at `generation`.
    /// False when it cannot (an added id not above every id held): read it again.
    pub(super) fn follow(&mut self, removed: &[u64], added: &[(u64, &[String])], generation: i64) -> bool {
        let mut added = added.to_vec();
        added.sort_unstable_by_key(|a| a.0);
        if added.first().is_some_and(|&(first, _)| self.ids.last().is_some_and(|&last| first <= last)) {
            return false;
        }
        for id in removed {
            if let Ok(slot) = self.ids.binary_search(id) {
                if !std::mem::replace(&mut self.removed[slot], true) {
                    self.removed_count += 1;
                    self.live_length -= self.lengths[slot] as u64;
                }
            }
        }
        for (id, tokens) in added {
            self.add(id, tokens);
        }
        if self.removed_count * 4 > self.ids.len() {
            self.compact();
        }
        self.generation = generation;
        true
    }

    /// Appends chunk `id` (above every id held) with its FTS5 tokens (a
    /// chunk without any is a row of length 0, as in FTS5).
    fn add(&mut self, id: u64, tokens: &[String]) {
        let mut frequencies: HashMap<&str, u32> = HashMap::new();
        for token in tokens {
            let tf = frequencies.entry(token.as_str()).or_default();
            *tf = tf.saturating_add(1);
        }
        let length = tokens.len() as u32;
        let slot = self.ids.len() as u32;
        self.ids.push(id);
        self.lengths.push(length);
        self.removed.push(false);
        self.live_length += length as u64;
        for (term, tf) in frequencies {
            let postings = self.terms.entry(term.into()).or_default();
            postings.slots.push(slot);
            postings.frequencies.push(tf);
        }
    }

    /// Drops the removed slots and numbers the others again.
    fn compact(&mut self) {
        let mut renumbered = vec![u32::MAX; self.ids.len()];
        let kept: Vec<usize> = (0..self.ids.len()).filter(|&s| !self.removed[s]).collect();
        kept.iter().enumerate().for_each(|(new, &old)| renumbered[old] = new as u32);
        for postings in self.terms.values_mut() {
            let (slots, frequencies) = postings
                .slots
                .iter()
                .zip(&postings.frequencies)
                .filter(|(s, _)| renumbered[**s as usize] != u32::MAX)
                .map(|(s, f)| (renumbered[*s as usize], *f))
                .unzip();
            (postings.slots, postings.frequencies) = (slots, frequencies);
        }
        self.terms.retain(|_, p| !p.slots.is_empty());
        self.ids = kept.iter().map(|&s| self.ids[s]).collect();
        self.lengths = kept.iter().map(|&s| self.lengths[s]).collect();
        self.removed = vec![false; self.ids.len()];
        self.removed_count = 0;
    }

    /// How many chunks (rows of the full-text index) there are.
    pub(super) fn chunks(&self) -> usize {
        self.ids.len() - self.removed_count
    }

    fn average_length(&self) -> f64 {
        match self.chunks() {
            0 => 1.0,
            n => self.live_length as f64 / n as f64,
        }
    }

    fn postings(&self, term: &str) -> Option<&Postings> {
        self.terms.get(term)
    }

    /// The slots of `postings` not removed, with their frequencies.
    fn live<'p>(&'p self, postings: &'p Postings) -> impl Iterator<Item = (u32, u32)> + 'p {
        postings.slots.iter().copied().zip(postings.frequencies.iter().copied()).filter(|&(s, _)| !self.removed[s as usize])
    }

    /// How many chunks hold `term`.
    pub(super) fn chunks_with(&self, term: &str) -> usize {
        match (self.postings(term), self.removed_count) {
            (None, _) => 0,
            (Some(p), 0) => p.slots.len(),
            (Some(p), _) => self.live(p).count(),
        }
    }

    /// The `k` chunks with the highest BM25 score for `terms`, best first
    /// (ties by chunk id): the scores and order of FTS5's `bm25()` for the
    /// query "t1 OR t2 …" (its sign turned), computed as FTS5 computes them,
    /// term after term, in double precision.
    pub(super) fn best(&self, terms: &[String], k: usize) -> Vec<(u64, f32)> {
        // Zeroed by the allocator: only the pages the matches fall in are touched.
        let mut scores = vec![0f64; self.ids.len()];
        let mut touched = Vec::new();
        let (n, average_length) = (self.chunks() as f64, self.average_length());
        for term in terms {
            let Some(postings) = self.postings(term) else { continue };
            let found = self.chunks_with(term) as f64;
            let idf = ((n - found + 0.5) / (found + 0.5)).ln();
            let idf = if idf <= 0.0 { MIN_IDF } else { idf };
            for (slot, tf) in self.live(postings) {
                let (slot, tf) = (slot as usize, tf as f64);
                if scores[slot] == 0.0 {
                    touched.push(slot);
                }
                scores[slot] += idf * ((tf * (K1 + 1.0)) / (tf + K1 * (1.0 - B + B * self.lengths[slot] as f64 / average_length)));
            }
        }
        let mut found: Vec<(f64, u64)> = touched.into_iter().map(|slot| (scores[slot], self.ids[slot])).collect();
        // Best first: the highest score, then the lowest id.
        let better = |a: &(f64, u64), b: &(f64, u64)| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1));
        if found.len() > k {
            found.select_nth_unstable_by(k, better);
            found.truncate(k);
        }
        found.sort_unstable_by(better);
        found.into_iter().map(|(score, id)| (id, score as f32)).collect()
    }

    /// The lowest slot not removed at any of the `cursors` into `lists`
    /// (each moved past removed slots), `None` when all are at their end.
    fn next_slot<'p>(&self, lists: impl Iterator<Item = &'p Postings>, cursors: &mut [usize]) -> Option<u32> {
        let mut lowest: Option<u32> = None;
        for (postings, cursor) in lists.zip(cursors.iter_mut()) {
            while postings.slots.get(*cursor).is_some_and(|&s| self.removed[s as usize]) {
                *cursor += 1;
            }
            if let Some(&slot) = postings.slots.get(*cursor) {
                lowest = Some(lowest.map_or(slot, |l| l.min(slot)));
            }
        }
        lowest
    }

    /// The first `k` chunks, in id order, holding any of `terms`.
    pub(super) fn first_holding(&self, terms: &[String], k: usize) -> Vec<u64> {
        let lists: Vec<&Postings> = terms.iter().filter_map(|t| self.postings(t)).collect();
        let mut cursors = vec![0usize; lists.len()];
        let mut first = Vec::new();
        while let (true, Some(slot)) = (first.len() < k, self.next_slot(lists.iter().copied(), &mut cursors)) {
            first.push(self.ids[slot as usize]);
            for (postings, cursor) in lists.iter().zip(cursors.iter_mut()) {
                if postings.slots.get(*cursor) == Some(&slot) {
                    *cursor += 1;
                }
            }
        }
        first
    }

    /// Whether chunk `id` holds `term`.
    pub(super) fn holds(&self, term: &str, id: u64) -> bool {
        let (Some(postings), Ok(slot)) = (self.postings(term), self.ids.binary_search(&id)) else { return false };
        !self.removed[slot] && postings.slots.binary_search(&(slot as u32)).is_ok()
    }
}

/// Hashing for chunk ids, met once per token occurrence while reading: a
/// multiplication instead of SipHash (most of the read's time), keyed per
/// process so that no crafted ids collide.
#[derive(Clone, Copy)]
struct IdHashing(u64);

impl IdHashing {
    fn new() -> IdHashing {
        IdHashing(std::hash::BuildHasher::hash_one(&std::collections::hash_map::RandomState::new(), 0u64))
    }
}

impl std::hash::BuildHasher for IdHashing {
    type Hasher = IdHasher;
    fn build_hasher(&self) -> IdHasher {
        IdHasher(self.0)
    }
}

struct IdHasher(u64);

impl std::hash::Hasher for IdHasher {
    fn write(&mut self, bytes: &[u8]) {
        bytes.iter().for_each(|&b| self.write_u64(b as u64));
    }
    fn write_u64(&mut self, n: u64) {
        let product = (self.0 ^ n).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        self.0 = product ^ (product >> 32);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}
