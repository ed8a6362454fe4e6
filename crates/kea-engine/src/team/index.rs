//! [`MilvusIndex`]: the [`VectorIndex`] of team mode. It writes this
//! instance's chunks (vector and passage) under its namespace, searches
//! every namespace, and answers in the retriever's id space: its own chunks
//! by their local ids, the others' by team id.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use serde_json::{json, Value};

use super::milvus::key_of;
use super::registry::{quoted, Registry};
use super::{team_id, Team};
use crate::error::{Error, Result};
use crate::vectors::{AddedVector, ChunkRow, VectorDelta, VectorIndex, VectorStamp};

/// Rows sent per insert request.
const INSERT_BATCH: usize = 256;

/// This namespace's rows in Milvus, by local chunk id.
pub(crate) struct OwnRows {
    pub(super) keys: HashMap<u64, Vec<u64>>,
    /// Whether `keys` is known to match the server (else list it first).
    known: bool,
}

impl OwnRows {
    pub(crate) fn unknown() -> OwnRows {
        OwnRows { keys: HashMap::new(), known: false }
    }
}

/// The team collection as a vector index.
pub struct MilvusIndex {
    team: Arc<Team>,
}

impl MilvusIndex {
    pub fn new(team: Arc<Team>) -> MilvusIndex {
        MilvusIndex { team }
    }
}

impl Team {
    /// Lists this namespace's rows from the server.
    pub(crate) fn list_own(&self) -> Result<()> {
        self.ensure_joined()?;
        let filter = format!("ns == {}", quoted(&self.namespace));
        let mut keys: HashMap<u64, Vec<u64>> = HashMap::new();
        for row in self.milvus.query_all(&self.store.collection, &filter, &["cid"])? {
            if let (Some(cid), Some(key)) = (row.get("cid").and_then(Value::as_u64), row.get("id").and_then(key_of)) {
                keys.entry(cid).or_default().push(key);
            }
        }
        *self.own() = OwnRows { keys, known: true };
        Ok(())
    }

    /// Whether this namespace's rows must be listed and reconciled before the next write.
    pub(crate) fn needs_reconcile(&self) -> bool {
        !self.own().known
    }

    /// The chunk ids this namespace has in Milvus.
    pub(crate) fn own_ids(&self) -> Vec<u64> {
        self.own().keys.keys().copied().collect()
    }

    /// Writes a batch: deletes the rows of removed and re-added chunks, inserts
    /// the added ones, and publishes a new version; waits until it reads back.
    /// On failure the rows are marked unknown (listed again before the next write).
    pub(crate) fn write(&self, delta: &VectorDelta) -> Result<()> {
        if let Some(big) = delta.added.iter().find(|a| a.id >= 1 << super::TAG_SHIFT) {
            return Err(Error::VectorIndex(format!("chunk id {} is beyond what a team id holds (2^{})", big.id, super::TAG_SHIFT)));
        }
        if let Some(bad) = delta.added.iter().find(|a| a.vector.len() != self.dim) {
            return Err(Error::VectorIndex(format!("vector has {} dimensions, the team collection has {}", bad.vector.len(), self.dim)));
        }
        let written = self.ensure_joined().and_then(|()| self.write_rows(delta));
        if written.is_err() {
            self.own().known = false;
        }
        written
    }

    fn write_rows(&self, delta: &VectorDelta) -> Result<()> {
        let collection = &self.store.collection;
        let stale: Vec<u64> = {
            let own = self.own();
            delta.removed.iter().chain(delta.added.iter().map(|a| &a.id)).filter_map(|id| own.keys.get(id)).flatten().copied().collect()
        };
        self.milvus.delete(collection, &stale)?;
        let mut inserted = Vec::with_capacity(delta.added.len());
        for part in delta.added.chunks(INSERT_BATCH) {
            let rows: Vec<Value> = part.iter().map(|a| self.row(a)).collect();
            let keys = self.milvus.insert(collection, &rows)?;
            inserted.extend(part.iter().map(|a| a.id).zip(keys));
        }
        {
            let mut own = self.own();
            delta.removed.iter().for_each(|id| drop(own.keys.remove(id)));
            for (id, key) in &inserted {
                own.keys.insert(*id, vec![*key]);
            }
        }
        self.milvus.wait_visible(collection, inserted.last().map(|k| k.1), stale.last().copied())?;
        Registry::of(&self.milvus, collection).publish(&self.namespace, self.tag, &self.model_id, &self.owner)
    }

    /// Deletes rows by key (duplicates or rows of chunks the store no longer has).
    pub(crate) fn delete_keys(&self, keys: &[u64]) -> Result<()> {
        self.milvus.delete(&self.store.collection, keys)?;
        self.milvus.wait_visible(&self.store.collection, None, keys.last().copied())
    }

    /// One Milvus row: the vector, the namespace and ids, and the passage.
    fn row(&self, added: &AddedVector) -> Value {
        let r: &ChunkRow = &added.row;
        json!({
            "vector": added.vector, "ns": self.namespace, "cid": added.id, "tid": team_id(self.tag, added.id),
            "src": r.source, "title": r.title, "ci": r.chunk_index, "tc": r.total_chunks, "head": r.heading_path,
            "page": r.page, "bs": r.byte_start, "be": r.byte_end, "text": r.text, "tokens": added.tokens,
        })
    }

    /// Nearest rows of every namespace: own ones by local id, others by team id.
    fn search_all(&self, query: &[f32], k: usize) -> Result<Vec<(u64, f32)>> {
        if query.len() != self.dim {
            return Err(Error::VectorIndex(format!("query has {} dimensions, the team collection has {}", query.len(), self.dim)));
        }
        let rows = self.milvus.search(&self.store.collection, query, k, &["ns", "cid", "tid"])?;
        Ok(rows
            .iter()
            .filter_map(|row| {
                let own = row.get("ns").and_then(Value::as_str) == Some(self.namespace.as_str());
                let id = if own { row.get("cid") } else { row.get("tid") }.and_then(Value::as_u64)?;
                Some((id, row.get("distance").and_then(Value::as_f64)? as f32))
            })
            .collect())
    }
}

impl VectorIndex for MilvusIndex {
    fn len(&self) -> usize {
        self.team.own().keys.len()
    }

    fn contains(&self, id: u64) -> bool {
        self.team.own().keys.contains_key(&id)
    }

    fn upsert(&mut self, id: u64, vector: &[f32]) -> Result<()> {
        let row = ChunkRow { id: id as i64, total_chunks: 1, ..Default::default() };
        let added = AddedVector { id, vector: vector.to_vec(), row, tokens: String::new() };
        self.team.write(&VectorDelta { removed: Vec::new(), added: vec![added] })
    }

    fn remove(&mut self, id: u64) -> Result<()> {
        self.team.write(&VectorDelta { removed: vec![id], added: Vec::new() })
    }

    fn search(&self, query: &[f32], k: usize) -> Result<Vec<(u64, f32)>> {
        self.team.search_all(query, k)
    }

    fn dim(&self) -> usize {
        self.team.dim
    }

    /// The server keeps the vectors: nothing to save.
    fn save(&self, _: &Path, _: &VectorStamp) -> Result<()> {
        Ok(())
    }

    fn apply(&mut self, delta: &VectorDelta) -> Result<()> {
        self.team.write(delta)
    }

    fn write_shared(&self, delta: &VectorDelta) -> Option<Result<()>> {
        Some(self.team.write(delta))
    }
}
