//! Search over the index: dense (query embedding → usearch) or full-text
//! (FTS5 BM25). The hybrid pipeline with fusion, MMR and rerank builds on
//! these two.

use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::store::ChunkRow;
use crate::vectors::VectorIndex;

/// Which retriever answers a search.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SearchMode {
    /// Nearest neighbours of the query embedding (cosine similarity).
    #[default]
    Dense,
    /// SQLite FTS5 BM25 over chunk text and heading paths.
    Fts,
}

/// One search result: the chunk and its score under the mode used.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Hit {
    #[serde(flatten)]
    pub chunk: ChunkRow,
    pub score: f32,
}

impl Engine {
    /// The `top_k` best chunks for `query`.
    pub fn search(&self, query: &str, top_k: usize, mode: SearchMode) -> Result<Vec<Hit>> {
        let query = query.trim();
        if query.is_empty() {
            return Err(Error::InvalidInput("the search query is empty".into()));
        }
        let scored = match mode {
            SearchMode::Dense => {
                let vector = self.with_embedder(|m| m.embed_query(query))?;
                self.vectors.read().unwrap_or_else(|p| p.into_inner()).search(&vector, top_k)?
            }
            SearchMode::Fts => self.store().fts_search(query, top_k)?,
        };
        let ids: Vec<u64> = scored.iter().map(|(id, _)| *id).collect();
        let rows = self.store().chunks_by_ids(&ids)?;
        Ok(rows
            .into_iter()
            .map(|chunk| {
                let score = scored.iter().find(|(id, _)| *id == chunk.id as u64).map_or(0.0, |s| s.1);
                Hit { chunk, score }
            })
            .collect())
    }
}
