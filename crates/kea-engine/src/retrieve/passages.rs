//! [`Passages`]: where retrieval reads passages, their vectors and their
//! full-text index. One store alone ([`LocalPassages`]), or, in team mode,
//! this instance's store plus the mirror of the team's other folders
//! (`crate::team`).

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use crate::error::Result;
use crate::language::Language;
use crate::store::{ChunkRow, Store};

/// The passage reads of the retrieval pipeline, by chunk id.
pub trait Passages: Sync {
    /// Brings the passages up to date before a retrieval (a team mirror pulls
    /// what the other instances changed); a local store is always current.
    fn refresh(&self) -> Result<()> {
        Ok(())
    }
    /// Chunks by id, in the order given (unknown ids are skipped).
    fn chunks_by_ids(&self, ids: &[u64]) -> Result<Vec<ChunkRow>>;
    /// The language of each of the chunks `ids`, in that order (without
    /// reading them: a search asks this of hundreds of candidates).
    fn languages_by_ids(&self, ids: &[u64]) -> Result<Vec<Language>>;
    /// Stored vectors of the given chunks (unknown ids are skipped).
    fn embeddings_by_ids(&self, ids: &[u64]) -> Result<HashMap<u64, Vec<f32>>>;
    /// BM25 over segmented words: ids with scores, best first.
    fn fts_search(&self, query: &str, k: usize) -> Result<Vec<(u64, f32)>>;
    /// How many chunks contain each token, and the number of chunks.
    fn token_chunk_counts(&self, tokens: &[String]) -> Result<(Vec<usize>, usize)>;
    /// The tokens found in the full-text index of any of the chunks `ids`.
    fn tokens_in_chunks(&self, tokens: &[String], ids: &[u64]) -> Result<Vec<String>>;
}

/// One store's passages.
pub struct LocalPassages<'a>(pub &'a Mutex<Store>);

impl LocalPassages<'_> {
    fn store(&self) -> MutexGuard<'_, Store> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Passages for LocalPassages<'_> {
    fn chunks_by_ids(&self, ids: &[u64]) -> Result<Vec<ChunkRow>> {
        self.store().chunks_by_ids(ids)
    }

    fn embeddings_by_ids(&self, ids: &[u64]) -> Result<HashMap<u64, Vec<f32>>> {
        self.store().embeddings_by_ids(ids)
    }

    fn languages_by_ids(&self, ids: &[u64]) -> Result<Vec<Language>> {
        self.store().languages_by_ids(ids)
    }

    fn fts_search(&self, query: &str, k: usize) -> Result<Vec<(u64, f32)>> {
        self.store().fts_search(query, k)
    }

    fn token_chunk_counts(&self, tokens: &[String]) -> Result<(Vec<usize>, usize)> {
        self.store().token_chunk_counts(tokens)
    }

    fn tokens_in_chunks(&self, tokens: &[String], ids: &[u64]) -> Result<Vec<String>> {
        self.store().tokens_in_chunks(tokens, ids)
    }
}
