//! The vector index. [`VectorIndex`] is the seam the engine holds (as a
//! `Box<dyn VectorIndex>`, chosen by [`VectorBackend`]); [`UsearchIndex`] is
//! the persisted HNSW index (cosine, f32), [`FlatIndex`] an exact in-RAM one,
//! the reference in tests. Every implementation passes the same conformance
//! suite (see the tests). SQLite stays the source of truth: a saved index is
//! trusted only when its [`VectorStamp`] matches the store, else it is
//! rebuilt from the store's vectors.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use usearch::{Index, IndexOptions, MetricKind, ScalarKind};

use crate::error::{Error, Result};

/// Nearest-neighbour search over chunk vectors keyed by chunk id.
pub trait VectorIndex: Send + Sync {
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    fn contains(&self, id: u64) -> bool;
    /// Adds or replaces the vector of `id`.
    fn upsert(&mut self, id: u64, vector: &[f32]) -> Result<()>;
    fn remove(&mut self, id: u64) -> Result<()>;
    /// The `k` nearest ids with cosine similarity, best first.
    fn search(&self, query: &[f32], k: usize) -> Result<Vec<(u64, f32)>>;
    /// The dimension every vector must have.
    fn dim(&self) -> usize;
    /// Persists the index with the store state it reflects; a backend that
    /// keeps nothing on disk does nothing (it is rebuilt from the store).
    fn save(&self, path: &Path, stamp: &VectorStamp) -> Result<()>;
    /// Adds or replaces many vectors at once (a build adds a batch from all cores).
    fn extend(&mut self, vectors: &[(u64, Vec<f32>)]) -> Result<()> {
        vectors.iter().try_for_each(|(id, v)| self.upsert(*id, v))
    }
    /// Applies one committed batch: removals, then additions. A shared
    /// index also keeps each added passage, for the other instances.
    fn apply(&mut self, delta: &VectorDelta) -> Result<()> {
        delta.removed.iter().try_for_each(|&id| self.remove(id))?;
        delta.added.iter().try_for_each(|a| self.upsert(a.id, &a.vector))
    }
    /// For an index that lives outside this process (a server shared by a
    /// team): writes one batch through a shared reference, so searches go
    /// on while the server answers. It is written before the store
    /// commits, so a failed write leaves the store as it was and the next
    /// sync does it again. `None`: a local index (use [`VectorIndex::apply`]).
    fn write_shared(&self, _delta: &VectorDelta) -> Option<Result<()>> {
        None
    }
    /// Saves the index to `path` under `stamp` and maps it from there
    /// instead of holding it in memory (the next change loads it again);
    /// false: it was not held in memory, or this kind of index stays.
    fn release(&mut self, _path: &Path, _stamp: &VectorStamp) -> Result<bool> {
        Ok(false)
    }
    /// Whether the index is held in this process's memory (a mapped one is not).
    fn is_loaded(&self) -> bool {
        true
    }
}

/// What one store transaction did to the chunks; the vector index applies the same.
#[derive(Debug, Default)]
pub struct VectorDelta {
    pub removed: Vec<u64>,
    pub added: Vec<AddedVector>,
}

/// A chunk added by a batch: its vector, and the passage a shared index keeps with it.
#[derive(Debug, Clone)]
pub struct AddedVector {
    pub id: u64,
    pub vector: Vec<f32>,
    pub row: ChunkRow,
    /// What the full-text index holds for the chunk (segmented heading, names, text).
    pub tokens: String,
}

/// A stored chunk with its document's path, for search results.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct ChunkRow {
    pub id: i64,
    pub source: String,
    pub title: Option<String>,
    pub chunk_index: usize,
    pub total_chunks: usize,
    pub heading_path: String,
    pub page: Option<u32>,
    pub byte_start: usize,
    pub byte_end: usize,
    pub text: String,
    /// The collection it is from, in results across several collections.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub collection: Option<String>,
    /// The document's web address (a saved page's, or a clipping's), as
    /// read from the store.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

/// Which vector index the engine keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum VectorBackend {
    /// usearch HNSW, saved beside the store.
    #[default]
    Usearch,
    /// Exact search in RAM, rebuilt from the store at every open.
    Exact,
}

impl VectorBackend {
    /// An empty index of `dim` dimensions.
    pub fn empty(self, dim: usize) -> Result<Box<dyn VectorIndex>> {
        Ok(match self {
            VectorBackend::Usearch => Box::new(UsearchIndex::new(dim)?),
            VectorBackend::Exact => Box::new(FlatIndex::new(dim)),
        })
    }

    /// An index holding `vectors`.
    pub fn build(self, dim: usize, vectors: &[(u64, Vec<f32>)]) -> Result<Box<dyn VectorIndex>> {
        let mut index = self.empty(dim)?;
        index.extend(vectors)?;
        Ok(index)
    }

    /// The saved index at `path` if it matches `stamp` (`None`: rebuild).
    pub fn load_if_current(self, path: &Path, stamp: &VectorStamp) -> Option<Box<dyn VectorIndex>> {
        match self {
            VectorBackend::Usearch => UsearchIndex::load_if_current(path, stamp).map(|i| Box::new(i) as Box<dyn VectorIndex>),
            VectorBackend::Exact => None,
        }
    }
}

/// What a saved usearch file was built from; written beside it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct VectorStamp {
    /// The store's generation counter when the file was saved.
    pub generation: i64,
    pub count: usize,
    pub model_id: String,
    pub dim: usize,
}

/// How usearch stores vectors: 8-bit integers. A cosine of unit-length
/// embeddings moves by about 0.003 (standard deviation), and a 100k-chunk index holds 38 MB of
/// vectors instead of 154 MB (the exact vectors stay in SQLite).
const STORED_AS: ScalarKind = ScalarKind::I8;
const STORED_AS_NAME: &str = "i8";

/// A saved file's stamp: what it was built from, and how it stores vectors
/// (a file of another storage, or older than this field, is rebuilt).
#[derive(serde::Serialize, serde::Deserialize)]
struct SavedStamp {
    #[serde(flatten)]
    stamp: VectorStamp,
    #[serde(default)]
    stored_as: String,
}

/// usearch HNSW index with cosine metric, vectors stored as [`STORED_AS`].
/// A saved index opens as a memory-mapped view (nothing read until a search
/// touches it, so opening a million vectors takes milliseconds and only the
/// pages searched stay resident); the first change loads it into memory.
pub struct UsearchIndex {
    index: Index,
    dim: usize,
    /// The file the index is a read-only view of, until the first change.
    viewed: Option<PathBuf>,
}

/// Indexes of at most this many vectors are searched exactly (a scan of
/// 10,000 i8 vectors costs about what a graph search does; the result no
/// longer depends on how the graph was built, so a rebuilt or imported
/// index ranks exactly as the original).
const EXACT_BELOW: usize = 10_000;

fn index_error(e: impl std::fmt::Display) -> Error {
    Error::VectorIndex(e.to_string())
}

impl UsearchIndex {
    pub fn new(dim: usize) -> Result<UsearchIndex> {
        let options = IndexOptions { dimensions: dim, metric: MetricKind::Cos, quantization: STORED_AS, ..Default::default() };
        let index = Index::new(&options).map_err(index_error)?;
        index.reserve(64).map_err(index_error)?;
        Ok(UsearchIndex { index, dim, viewed: None })
    }

    /// Loads a viewed index into memory so it can change (the file may be
    /// replaced by a later save while it is mapped: the mapping keeps the
    /// old one).
    fn writable(&mut self) -> Result<()> {
        if let Some(path) = self.viewed.take() {
            let loaded = UsearchIndex::new(self.dim)?;
            loaded.index.load(path.to_str().ok_or_else(|| Error::InvalidInput(format!("non-UTF-8 path {}", path.display())))?).map_err(index_error)?;
            self.index = loaded.index;
        }
        Ok(())
    }

    /// Builds an index from `(id, vector)` pairs, adding from all cores.
    pub fn build(dim: usize, vectors: &[(u64, Vec<f32>)]) -> Result<UsearchIndex> {
        let mut index = UsearchIndex::new(dim)?;
        index.extend(vectors)?;
        Ok(index)
    }

    /// Adds vectors of ids it does not hold yet, from all cores.
    fn add_new(&mut self, vectors: &[(u64, Vec<f32>)]) -> Result<()> {
        self.writable()?;
        let needed = self.index.size() + vectors.len();
        if needed > self.index.capacity() {
            self.index.reserve(needed.max(64)).map_err(index_error)?;
        }
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(8);
        let per_thread = vectors.len().div_ceil(threads).max(1);
        let index = &self.index;
        std::thread::scope(|scope| {
            let workers: Vec<_> =
                vectors.chunks(per_thread).map(|part| scope.spawn(|| part.iter().try_for_each(|(id, v)| index.add(*id, v).map_err(index_error)))).collect();
            workers.into_iter().try_for_each(|w| w.join().unwrap_or_else(|_| Err(Error::VectorIndex("index build thread panicked".into()))))
        })
    }

    fn stamp_path(path: &Path) -> PathBuf {
        path.with_extension("stamp.json")
    }

    /// Saves atomically (temp file + rename), then the stamp.
    fn save_to(&self, path: &Path, stamp: &VectorStamp) -> Result<()> {
        let tmp = path.with_extension("usearch.tmp");
        let tmp_str = tmp.to_str().ok_or_else(|| Error::InvalidInput(format!("non-UTF-8 path {}", tmp.display())))?;
        self.index.save(tmp_str).map_err(index_error)?;
        durable_rename(&tmp, path).map_err(|e| Error::io(format!("saving {}", path.display()), e))?;
        let saved = SavedStamp { stamp: stamp.clone(), stored_as: STORED_AS_NAME.into() };
        let stamp_json = serde_json::to_vec(&saved).map_err(index_error)?;
        let stamp_tmp = Self::stamp_path(path).with_extension("tmp");
        std::fs::write(&stamp_tmp, stamp_json).map_err(|e| Error::io("writing the vector stamp", e))?;
        durable_rename(&stamp_tmp, &Self::stamp_path(path)).map_err(|e| Error::io("writing the vector stamp", e))?;
        Ok(())
    }

    /// Loads a saved index if it exists, is readable and its stamp equals
    /// `expected`; `None` means "rebuild it from the store".
    pub fn load_if_current(path: &Path, expected: &VectorStamp) -> Option<UsearchIndex> {
        let saved: SavedStamp = serde_json::from_slice(&std::fs::read(Self::stamp_path(path)).ok()?).ok()?;
        if &saved.stamp != expected || saved.stored_as != STORED_AS_NAME {
            return None;
        }
        let mut index = UsearchIndex::new(expected.dim).ok()?;
        index.index.view(path.to_str()?).ok()?;
        index.viewed = Some(path.to_path_buf());
        (index.index.size() == expected.count && index.index.dimensions() == expected.dim).then_some(index)
    }
}

impl VectorIndex for UsearchIndex {
    fn len(&self) -> usize {
        self.index.size()
    }

    fn contains(&self, id: u64) -> bool {
        self.index.contains(id)
    }

    fn upsert(&mut self, id: u64, vector: &[f32]) -> Result<()> {
        if vector.len() != self.dim {
            return Err(Error::VectorIndex(format!("vector has {} dimensions, index has {}", vector.len(), self.dim)));
        }
        if id == u64::MAX {
            return Err(Error::VectorIndex("key u64::MAX is reserved by usearch".into()));
        }
        self.writable()?;
        if self.index.contains(id) {
            self.index.remove(id).map_err(index_error)?;
        }
        if self.index.size() + 1 > self.index.capacity() {
            let grown = (self.index.capacity() * 2).max(64);
            self.index.reserve(grown).map_err(index_error)?;
        }
        self.index.add(id, vector).map_err(index_error)
    }

    fn remove(&mut self, id: u64) -> Result<()> {
        self.writable()?;
        self.index.remove(id).map(|_| ()).map_err(index_error)
    }

    fn extend(&mut self, vectors: &[(u64, Vec<f32>)]) -> Result<()> {
        if let Some((_, bad)) = vectors.iter().find(|(_, v)| v.len() != self.dim) {
            return Err(Error::VectorIndex(format!("vector has {} dimensions, index has {}", bad.len(), self.dim)));
        }
        let mut seen = std::collections::HashSet::with_capacity(vectors.len());
        let fresh = vectors.iter().all(|(id, _)| *id != u64::MAX && !self.index.contains(*id) && seen.insert(*id));
        match fresh {
            true => self.add_new(vectors),
            // Replacements (or a reserved key) one by one.
            false => vectors.iter().try_for_each(|(id, v)| self.upsert(*id, v)),
        }
    }

    fn search(&self, query: &[f32], k: usize) -> Result<Vec<(u64, f32)>> {
        if self.index.size() == 0 || k == 0 {
            return Ok(Vec::new());
        }
        // A small index is scanned whole: exact, and as fast as the graph there.
        let matches = match self.index.size() <= EXACT_BELOW {
            true => self.index.exact_search(query, k),
            false => self.index.search(query, k),
        }
        .map_err(index_error)?;
        Ok(matches.keys.into_iter().zip(matches.distances).map(|(id, d)| (id, 1.0 - d)).collect())
    }

    fn dim(&self) -> usize {
        self.dim
    }

    fn save(&self, path: &Path, stamp: &VectorStamp) -> Result<()> {
        self.save_to(path, stamp)
    }

    fn release(&mut self, path: &Path, stamp: &VectorStamp) -> Result<bool> {
        if self.viewed.is_some() {
            return Ok(false);
        }
        self.save_to(path, stamp)?;
        let mapped = UsearchIndex::new(self.dim)?;
        mapped.index.view(path.to_str().ok_or_else(|| Error::InvalidInput(format!("non-UTF-8 path {}", path.display())))?).map_err(index_error)?;
        (self.index, self.viewed) = (mapped.index, Some(path.to_path_buf()));
        Ok(true)
    }

    fn is_loaded(&self) -> bool {
        self.viewed.is_none()
    }
}

/// Replaces `to` with the written file `from` so that a power cut leaves
/// the old file or the new one: the data reaches the disk before the
/// rename, and the rename before this returns (the folder is synced too).
fn durable_rename(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::File::open(from)?.sync_all()?;
    std::fs::rename(from, to)?;
    #[cfg(unix)]
    if let Some(dir) = to.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::File::open(dir)?.sync_all()?;
    }
    Ok(())
}

/// Exact brute-force search over vectors held in a map.
pub struct FlatIndex {
    vectors: HashMap<u64, Vec<f32>>,
    dim: usize,
}

impl FlatIndex {
    pub fn new(dim: usize) -> FlatIndex {
        FlatIndex { vectors: HashMap::new(), dim }
    }
}

impl VectorIndex for FlatIndex {
    fn len(&self) -> usize {
        self.vectors.len()
    }

    fn contains(&self, id: u64) -> bool {
        self.vectors.contains_key(&id)
    }

    fn upsert(&mut self, id: u64, vector: &[f32]) -> Result<()> {
        if vector.len() != self.dim {
            return Err(Error::VectorIndex(format!("vector has {} dimensions, index has {}", vector.len(), self.dim)));
        }
        self.vectors.insert(id, vector.to_vec());
        Ok(())
    }

    fn remove(&mut self, id: u64) -> Result<()> {
        self.vectors.remove(&id);
        Ok(())
    }

    fn search(&self, query: &[f32], k: usize) -> Result<Vec<(u64, f32)>> {
        let mut scored: Vec<(u64, f32)> = self.vectors.iter().map(|(&id, v)| (id, cosine(query, v))).collect();
        scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        scored.truncate(k);
        Ok(scored)
    }

    fn dim(&self) -> usize {
        self.dim
    }

    fn save(&self, _: &Path, _: &VectorStamp) -> Result<()> {
        Ok(())
    }
}

/// Cosine similarity of two vectors.
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    cosine_of_norms(a, norm(a), b, norm(b))
}

/// A vector's Euclidean length.
pub fn norm(v: &[f32]) -> f32 {
    v.iter().map(|x| x * x).sum::<f32>().sqrt()
}

/// [`cosine`] of `a` and `b` given their [`norm`]s (the same value, for
/// loops that compare each vector many times).
pub fn cosine_of_norms(a: &[f32], norm_a: f32, b: &[f32], norm_b: f32) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let denom = norm_a * norm_b;
    if denom == 0.0 {
        0.0
    } else {
        dot / denom
    }
}

/// Encodes a vector as little-endian f32 bytes (the store's BLOB format).
pub fn to_blob(vector: &[f32]) -> Vec<u8> {
    vector.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// Decodes a BLOB written by [`to_blob`].
pub fn from_blob(blob: &[u8]) -> Vec<f32> {
    blob.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect()
}

/// The conformance suite every [`VectorIndex`] passes (public so the
/// integration tests run it against a server-backed index too).
#[doc(hidden)]
pub mod conformance {
    use super::VectorIndex;

    /// Deterministic pseudo-random unit vectors (xorshift), for index tests.
    pub fn vectors(n: usize, dim: usize, seed: u64) -> Vec<Vec<f32>> {
        let mut state = seed.max(1);
        (0..n)
            .map(|_| {
                let v: Vec<f32> = (0..dim)
                    .map(|_| {
                        state ^= state << 13;
                        state ^= state >> 7;
                        state ^= state << 17;
                        (state % 2000) as f32 / 1000.0 - 1.0
                    })
                    .collect();
                let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
                v.into_iter().map(|x| x / n).collect()
            })
            .collect()
    }

    /// Runs the suite on an empty 8-dimensional index named `name`.
    pub fn check(name: &str, mut index: Box<dyn VectorIndex>) {
        let data = vectors(40, 8, 11);
        assert!(index.is_empty() && index.dim() == 8, "{name}: starts empty");
        assert!(index.search(&data[0], 5).unwrap().is_empty(), "{name}: an empty index finds nothing");
        for (i, v) in data.iter().enumerate() {
            index.upsert(i as u64 + 1, v).unwrap();
        }
        assert_eq!(index.len(), 40, "{name}");
        let hits = index.search(&data[6], 3).unwrap();
        assert_eq!(hits[0].0, 7, "{name}: a stored vector is its own nearest neighbour");
        assert!((hits[0].1 - 1.0).abs() < 1e-4 && hits.windows(2).all(|w| w[0].1 >= w[1].1), "{name}: {hits:?}");
        index.upsert(7, &data[0]).unwrap();
        assert_eq!(index.len(), 40, "{name}: upsert replaces");
        assert_ne!(index.search(&data[6], 1).unwrap()[0].0, 7, "{name}: the old vector is gone");
        index.remove(7).unwrap();
        assert!(!index.contains(7) && index.len() == 39, "{name}: remove");
        assert!(index.search(&data[6], 40).unwrap().iter().all(|h| h.0 != 7), "{name}: a removed vector is not found");
        assert!(index.upsert(99, &[1.0; 3]).is_err(), "{name}: a wrong dimension is refused");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use super::conformance::{check, vectors};

    /// The persisted part of the suite: build, save, load what was saved;
    /// what loaded takes changes and saves over its own file.
    fn build_save_load(backend: VectorBackend) {
        let data = vectors(40, 8, 11);
        let pairs: Vec<(u64, Vec<f32>)> = data.iter().cloned().enumerate().map(|(i, v)| (i as u64 + 1, v)).collect();
        let built = backend.build(8, &pairs).unwrap();
        assert_eq!((built.len(), built.search(&data[3], 1).unwrap()[0].0), (40, 4), "{backend:?}: build");
        let dir = tempfile::tempdir().unwrap();
        let stamp = VectorStamp { generation: 1, count: 40, model_id: "m".into(), dim: 8 };
        built.save(&dir.path().join("vectors.idx"), &stamp).unwrap();
        let path = dir.path().join("vectors.idx");
        if let Some(mut loaded) = backend.load_if_current(&path, &stamp) {
            assert_eq!(loaded.len(), 40, "{backend:?}: what loads is what was saved");
            assert_eq!(loaded.search(&data[5], 1).unwrap()[0].0, 6, "{backend:?}: a loaded index searches");
            loaded.remove(6).unwrap();
            loaded.upsert(41, &data[5]).unwrap();
            assert_eq!(loaded.search(&data[5], 1).unwrap()[0].0, 41, "{backend:?}: a loaded index changes");
            let changed = VectorStamp { generation: 2, ..stamp.clone() };
            loaded.save(&path, &changed).unwrap();
            let again = backend.load_if_current(&path, &changed).expect("the changed index loads");
            assert!(again.contains(41) && !again.contains(6) && again.len() == 40, "{backend:?}: the change was saved");
        }
    }

    /// The team store's Milvus index passes the same [`check`] in
    /// `tests/integration/team.rs` (it needs a server).
    #[test]
    fn every_backend_passes_the_conformance_suite() {
        for backend in [VectorBackend::Usearch, VectorBackend::Exact] {
            check(&format!("{backend:?}"), backend.empty(8).unwrap());
            build_save_load(backend);
        }
        let dir = tempfile::tempdir().unwrap();
        let mut released = VectorBackend::Usearch.empty(8).unwrap();
        let stamp = VectorStamp { generation: 1, count: 0, model_id: "m".into(), dim: 8 };
        assert!(released.release(&dir.path().join("v.usearch"), &stamp).unwrap());
        check("Usearch, released", released);
    }

    #[test]
    fn a_released_index_is_mapped_searches_as_before_and_loads_for_a_change() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("vectors.usearch");
        let data = vectors(30, 8, 4);
        let mut index: Box<dyn VectorIndex> = VectorBackend::Usearch.empty(8).unwrap();
        for (i, v) in data.iter().enumerate() {
            index.upsert(i as u64 + 1, v).unwrap();
        }
        let before: Vec<Vec<(u64, f32)>> = data.iter().map(|q| index.search(q, 5).unwrap()).collect();
        let stamp = VectorStamp { generation: 7, count: 30, model_id: "m".into(), dim: 8 };
        assert!(index.is_loaded());
        assert!(index.release(&path, &stamp).unwrap());
        assert!(!index.is_loaded() && !index.release(&path, &stamp).unwrap(), "mapped: nothing left to release");
        assert_eq!(data.iter().map(|q| index.search(q, 5).unwrap()).collect::<Vec<_>>(), before, "it ranks exactly as before");
        assert!(VectorBackend::Usearch.load_if_current(&path, &stamp).is_some(), "the file it maps is saved under the stamp");
        index.remove(3).unwrap();
        assert!(index.is_loaded() && !index.contains(3) && index.len() == 29, "a change loads it and applies");
    }

    #[test]
    fn usearch_agrees_with_exact_search_within_its_storage_error() {
        let data = vectors(500, 32, 7);
        let mut usearch = UsearchIndex::new(32).unwrap();
        let mut flat = FlatIndex::new(32);
        for (i, v) in data.iter().enumerate() {
            usearch.upsert(i as u64 + 1, v).unwrap();
            flat.upsert(i as u64 + 1, v).unwrap();
        }
        // 8-bit storage moves a cosine of unit vectors by about 0.003
        // (standard deviation, whatever the dimension): near-ties may swap.
        for query in vectors(20, 32, 99) {
            let best = flat.search(&query, 1).unwrap()[0].1;
            let (id, score) = usearch.search(&query, 1).unwrap()[0];
            let true_score = cosine(&query, &data[id as usize - 1]);
            assert!((score - true_score).abs() < 0.02, "the score is the cosine: {score} vs {true_score}");
            assert!(best - true_score < 0.02, "the hit is as near as the exact one: {true_score} vs {best}");
        }
    }

    #[test]
    fn upsert_replaces_and_remove_deletes() {
        let data = vectors(3, 8, 3);
        let mut index = UsearchIndex::new(8).unwrap();
        index.upsert(1, &data[0]).unwrap();
        index.upsert(1, &data[1]).unwrap();
        assert_eq!(index.len(), 1);
        assert!((index.search(&data[1], 1).unwrap()[0].1 - 1.0).abs() < 1e-5);
        index.remove(1).unwrap();
        assert!(index.is_empty());
        assert!(index.upsert(2, &[1.0; 3]).is_err(), "wrong dimension must be refused");
        assert!(index.upsert(u64::MAX, &data[0]).is_err());
    }

    #[test]
    fn saved_index_loads_only_with_a_matching_stamp() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("vectors.usearch");
        let data = vectors(10, 8, 5);
        let pairs: Vec<(u64, Vec<f32>)> = data.into_iter().enumerate().map(|(i, v)| (i as u64, v)).collect();
        let index = UsearchIndex::build(8, &pairs).unwrap();
        let stamp = VectorStamp { generation: 3, count: 10, model_id: "m".into(), dim: 8 };
        index.save_to(&path, &stamp).unwrap();
        assert_eq!(UsearchIndex::load_if_current(&path, &stamp).unwrap().len(), 10);
        let newer = VectorStamp { generation: 4, ..stamp.clone() };
        assert!(UsearchIndex::load_if_current(&path, &newer).is_none());
        let stamp_path = UsearchIndex::stamp_path(&path);
        std::fs::write(&stamp_path, serde_json::to_vec(&stamp).unwrap()).unwrap();
        assert!(UsearchIndex::load_if_current(&path, &stamp).is_none(), "a file saved before vectors were stored as i8 is rebuilt");
        std::fs::write(&path, b"garbage").unwrap();
        assert!(UsearchIndex::load_if_current(&path, &stamp).is_none(), "a corrupt file must not load");
    }

    #[test]
    fn blob_round_trip() {
        let v = vec![0.5, -1.25, 3.0];
        assert_eq!(from_blob(&to_blob(&v)), v);
    }
}
