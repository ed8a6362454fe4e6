//! Keeping the two sides of a team store in step: this namespace's rows in
//! Milvus with the local store ([`reconcile`], before a sync when a write
//! failed or at open), and the local mirror with the other namespaces'
//! rows ([`pull_others`], when their registry versions change).

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use super::milvus::key_of;
use super::registry::{quoted, Registry, Source};
use super::{Team, TAG_SHIFT};
use crate::error::Result;
use crate::store::{fts_tokens, MetaKey, MirroredChunk, Store};
use crate::vectors::{AddedVector, ChunkRow, VectorDelta};

/// Rows fetched per query when pulling.
const PAGE: usize = 256;
/// Chunks uploaded per write when reconciling (each write waits until it reads back).
const UPLOAD_BATCH: usize = 2048;
/// Mirror meta key: the registry state last pulled.
/// What one pulled row may hold: a peer's rows are checked, not trusted.
const MAX_TEXT_BYTES: usize = 64 << 10;
const MAX_TOKENS_BYTES: usize = 256 << 10;
const MAX_NAME_CHARS: usize = 1024;
/// The most rows mirrored from one namespace.
const MAX_ROWS_PER_NAMESPACE: usize = 2_000_000;

/// Makes this namespace's rows in Milvus match the local store: rows of
/// chunks the store does not have (a write whose commit failed) and
/// duplicates are deleted, chunks missing remotely are uploaded. Returns
/// how many rows were deleted and uploaded.
pub fn reconcile(team: &Team, store: &Store) -> Result<(usize, usize)> {
    team.list_own()?;
    let stored: HashSet<u64> = store.chunk_ids()?.into_iter().collect();
    let extra: Vec<u64> = {
        let mut own = team.own();
        let mut extra = Vec::new();
        own.keys.retain(|cid, keys| {
            let keep = if stored.contains(cid) { 1 } else { 0 };
            extra.extend(keys.drain(keep..));
            keep == 1
        });
        extra
    };
    team.delete_keys(&extra)?;
    let present: HashSet<u64> = team.own_ids().into_iter().collect();
    let missing: Vec<u64> = stored.iter().copied().filter(|id| !present.contains(id)).collect();
    for part in missing.chunks(UPLOAD_BATCH) {
        let vectors = store.embeddings_by_ids(part)?;
        let added: Vec<AddedVector> = store
            .chunks_by_ids(part)?
            .into_iter()
            .filter_map(|row| {
                let vector = vectors.get(&(row.id as u64))?.clone();
                // The names of a document are not stored apart: re-indexing the file adds them.
                let tokens = fts_tokens(&row.heading_path, "", &row.text);
                Some(AddedVector { id: row.id as u64, vector, row, tokens })
            })
            .collect();
        team.write(&VectorDelta { removed: Vec::new(), added })?;
    }
    Ok((extra.len(), missing.len()))
}

/// Pulls what the other namespaces changed into the mirror, and drops the
/// namespaces no longer registered.
pub fn pull_others(team: &Team) -> Result<()> {
    let sources: Vec<Source> = Registry::of(&team.milvus, &team.store.collection).sources()?.into_iter().filter(|s| s.namespace != team.namespace).collect();
    let state: String = sources.iter().map(|s| format!("{}={}", s.tag, s.version)).collect::<Vec<_>>().join(",");
    if team.mirror().meta(&MetaKey::TeamPulled)?.as_deref() == Some(state.as_str()) {
        return Ok(());
    }
    for source in &sources {
        pull_namespace(team, source)?;
    }
    let registered: HashSet<u64> = sources.iter().map(|s| s.tag).collect();
    let mut mirror = team.mirror();
    let gone: Vec<u64> = mirror.chunk_ids_between(1 << TAG_SHIFT, u64::MAX)?.into_iter().filter(|id| !registered.contains(&(id >> TAG_SHIFT))).collect();
    mirror.remove_chunk_ids(&gone)?;
    mirror.set_meta(&MetaKey::TeamPulled, &state)
}

/// Brings one namespace's mirrored rows to its current version.
fn pull_namespace(team: &Team, source: &Source) -> Result<()> {
    let version_key = MetaKey::TeamVersion(source.tag.to_string());
    if team.mirror().meta(&version_key)? == Some(source.version.to_string()) {
        return Ok(());
    }
    let listed = team.milvus.query_all(&team.store.collection, &format!("ns == {}", quoted(&source.namespace)), &["tid"])?;
    // Only ids under the namespace's own tag, and not without end.
    let remote: HashMap<u64, u64> = listed
        .iter()
        .filter_map(|r| Some((r.get("tid")?.as_u64()?, r.get("id").and_then(key_of)?)))
        .filter(|(tid, _)| tid >> TAG_SHIFT == source.tag)
        .take(MAX_ROWS_PER_NAMESPACE)
        .collect();
    let low = source.tag << TAG_SHIFT;
    let local: HashSet<u64> = team.mirror().chunk_ids_between(low, low + (1 << TAG_SHIFT))?.into_iter().collect();
    let gone: Vec<u64> = local.iter().copied().filter(|id| !remote.contains_key(id)).collect();
    team.mirror().remove_chunk_ids(&gone)?;
    let wanted: Vec<u64> = remote.iter().filter(|(tid, _)| !local.contains(tid)).map(|(_, key)| *key).collect();
    for part in wanted.chunks(PAGE) {
        let keys: Vec<String> = part.iter().map(u64::to_string).collect();
        let fields = ["tid", "src", "title", "ci", "tc", "head", "page", "bs", "be", "text", "tokens", "vector"];
        let rows = team.milvus.query(&team.store.collection, &format!("id in [{}]", keys.join(",")), &fields, part.len())?;
        let chunks: Vec<MirroredChunk> = rows.iter().filter_map(|r| mirrored_chunk(source, team.dim, r)).collect();
        team.mirror().put_mirrored(&chunks)?;
    }
    team.mirror().set_meta(&version_key, &source.version.to_string())
}

/// A Milvus row as a mirrored chunk (its source shown under its namespace);
/// `None` for a row that is not the namespace's (another tag), whose
/// vector is not the team's dimension, or whose fields are over their limits.
fn mirrored_chunk(source: &Source, dim: usize, r: &Value) -> Option<MirroredChunk> {
    let text = |k: &str, max_bytes: usize| -> Option<String> {
        let value = r.get(k).and_then(Value::as_str).unwrap_or_default();
        (value.len() <= max_bytes).then(|| value.to_string())
    };
    let name = |k: &str| text(k, 4 * MAX_NAME_CHARS).filter(|v| v.chars().count() <= MAX_NAME_CHARS);
    let number = |k: &str| r.get(k).and_then(Value::as_u64).unwrap_or_default() as usize;
    let id = r.get("tid")?.as_u64()?;
    if id >> TAG_SHIFT != source.tag {
        return None;
    }
    let row = ChunkRow {
        id: i64::try_from(id).ok()?,
        source: format!("{}/{}", source.namespace, name("src")?),
        title: r.get("title").and_then(Value::as_str).map(|_| name("title")).unwrap_or_default(),
        chunk_index: number("ci"),
        total_chunks: number("tc"),
        heading_path: name("head")?,
        page: r.get("page").and_then(Value::as_u64).and_then(|p| u32::try_from(p).ok()),
        byte_start: number("bs"),
        byte_end: number("be"),
        text: text("text", MAX_TEXT_BYTES)?,
        collection: None,
        url: None,
    };
    let vector: Vec<f32> = r.get("vector")?.as_array()?.iter().filter_map(|x| x.as_f64().map(|x| x as f32)).filter(|x| x.is_finite()).collect();
    (vector.len() == dim).then_some(MirroredChunk { row, tokens: text("tokens", MAX_TOKENS_BYTES)?, vector })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source() -> Source {
        Source { namespace: "alpha".into(), tag: 7, model: "m".into(), version: 1, owner: String::new() }
    }

    fn row(tid: u64, text: &str, vector: &[f64]) -> Value {
        serde_json::json!({"tid": tid, "src": "notes/a.md", "title": "A", "ci": 0, "tc": 1, "head": "A", "bs": 0, "be": 4, "text": text, "tokens": "a", "vector": vector})
    }

    /// Issue 24: pulled rows were used as they came.
    #[test]
    fn a_peer_row_is_checked_before_it_is_mirrored() {
        let good = mirrored_chunk(&source(), 2, &row(7u64 << TAG_SHIFT | 3, "text", &[0.6, 0.8])).expect("a good row");
        assert_eq!((good.row.source.as_str(), good.row.id), ("alpha/notes/a.md", (7u64 << TAG_SHIFT | 3) as i64));
        assert!(mirrored_chunk(&source(), 2, &row(8u64 << TAG_SHIFT | 3, "text", &[0.6, 0.8])).is_none(), "another namespace's id");
        assert!(mirrored_chunk(&source(), 3, &row(7u64 << TAG_SHIFT | 3, "text", &[0.6, 0.8])).is_none(), "another dimension");
        assert!(mirrored_chunk(&source(), 2, &row(7u64 << TAG_SHIFT | 3, &"x".repeat(MAX_TEXT_BYTES + 1), &[0.6, 0.8])).is_none(), "text over its cap");
        let mut long_heading = row(7u64 << TAG_SHIFT | 3, "text", &[0.6, 0.8]);
        long_heading["head"] = Value::String("h".repeat(MAX_NAME_CHARS + 1));
        assert!(mirrored_chunk(&source(), 2, &long_heading).is_none(), "a heading over its cap");
    }
}
