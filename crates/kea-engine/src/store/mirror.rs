//! The store as a mirror of a team collection: chunks written with the ids
//! the team gave them (not this store's own sequence) under a document per
//! shared source, and the id ranges a namespace owns listed and dropped.
//! Also the reads a team store needs of this instance's own chunks.

use std::collections::HashMap;

use rusqlite::params;

use super::{bump_generation, delete_fts_rows, upsert_document, ChunkRow, DocStatus, FileFacts, Store};
use crate::error::Result;
use crate::vectors::to_blob;

/// A chunk another instance shared: its row (id and source as the team
/// names them), its full-text tokens and its vector.
#[derive(Debug, Clone)]
pub struct MirroredChunk {
    pub row: ChunkRow,
    pub tokens: String,
    pub vector: Vec<f32>,
}

impl Store {
    /// Every chunk id, ascending.
    pub fn chunk_ids(&self) -> Result<Vec<u64>> {
        self.chunk_ids_between(0, i64::MAX as u64)
    }

    /// The chunk ids in `[low, high)`, ascending.
    pub fn chunk_ids_between(&self, low: u64, high: u64) -> Result<Vec<u64>> {
        let mut stmt = self.conn.prepare_cached("SELECT id FROM chunks WHERE id >= ?1 AND id < ?2 ORDER BY id")?;
        let rows = stmt.query_map(params![low as i64, high.min(i64::MAX as u64) as i64], |r| r.get::<_, i64>(0))?;
        Ok(rows.map(|r| r.map(|id| id as u64)).collect::<rusqlite::Result<_>>()?)
    }

    /// Writes shared chunks (replacing any with the same id) in one transaction.
    pub fn put_mirrored(&mut self, chunks: &[MirroredChunk]) -> Result<()> {
        let tx = self.conn.transaction()?;
        let mut docs: HashMap<&str, i64> = HashMap::new();
        for c in chunks {
            let doc_id = match docs.get(c.row.source.as_str()) {
                Some(&id) => id,
                None => {
                    let facts = FileFacts { path: c.row.source.clone(), kind: None, size: 0, mtime_ns: 0 };
                    let id = upsert_document(&tx, &facts, None, DocStatus::Indexed, None, c.row.title.as_deref(), "{}", 0)?;
                    *docs.entry(c.row.source.as_str()).or_insert(id)
                }
            };
            let r = &c.row;
            delete_fts_rows(&tx, &[r.id as u64])?;
            // REPLACE fires no delete trigger: the row's language is recorded anew.
            tx.prepare_cached("DELETE FROM chinese_chunks WHERE id = ?1")?.execute([r.id])?;
            tx.prepare_cached(
                "INSERT OR REPLACE INTO chunks(id, doc_id, chunk_index, total_chunks, heading_path, page, byte_start, byte_end, text, hash, embedding)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, '', ?10)",
            )?
            .execute(params![
                r.id,
                doc_id,
                r.chunk_index as i64,
                r.total_chunks as i64,
                r.heading_path,
                r.page,
                r.byte_start as i64,
                r.byte_end as i64,
                r.text,
                to_blob(&c.vector)
            ])?;
            tx.prepare_cached("INSERT INTO chunks_fts(rowid, tokens) VALUES (?1, ?2)")?.execute(params![r.id, c.tokens])?;
            super::record_language(&tx, r.id, &r.text)?;
        }
        refresh_chunk_counts(&tx)?;
        bump_generation(&tx)?;
        tx.commit()?;
        Ok(())
    }

    /// Drops chunks by id, and documents left without any.
    pub fn remove_chunk_ids(&mut self, ids: &[u64]) -> Result<()> {
        let tx = self.conn.transaction()?;
        delete_fts_rows(&tx, ids)?;
        let mut delete = tx.prepare_cached("DELETE FROM chunks WHERE id = ?1")?;
        for &id in ids {
            delete.execute([id as i64])?;
        }
        drop(delete);
        refresh_chunk_counts(&tx)?;
        bump_generation(&tx)?;
        tx.commit()?;
        Ok(())
    }
}

/// Recounts each document's chunks and drops the documents left empty.
fn refresh_chunk_counts(tx: &rusqlite::Transaction) -> Result<()> {
    tx.execute("UPDATE documents SET chunk_count = (SELECT COUNT(*) FROM chunks WHERE chunks.doc_id = documents.id)", [])?;
    tx.execute("DELETE FROM documents WHERE chunk_count = 0", [])?;
    Ok(())
}
