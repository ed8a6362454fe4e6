//! Team mode: several Kea instances share one knowledge base in a Milvus
//! collection (`--store milvus://HOST:PORT/COLLECTION`).
//!
//! Each instance indexes its own folder as before (SQLite stays its own
//! truth and its chat history stays local) and writes every chunk —
//! vector, text, heading, page, full-text tokens — into the collection
//! under its folder's **namespace**, with a team id `tag << 32 | chunk id`
//! ([`team_id`]). Writes go to Milvus before the local commit, so a lost
//! server leaves nothing half-committed; a namespace whose local and remote
//! rows disagree is reconciled before the next sync.
//!
//! Searching: dense search runs in Milvus over every namespace. Milvus
//! 2.3 has no full-text search (BM25 arrived in 2.5), so each instance keeps
//! a **mirror** of the other namespaces' passages in a local SQLite store
//! with its own FTS5 index, pulled when a namespace's version in the
//! registry collection (`<COLLECTION>_sources`) changes. Fusion, MMR, rerank
//! and the filter then run as for a local index.

mod claim;
mod index;
mod milvus;
mod owner;
mod registry;
mod sync;

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

pub use index::MilvusIndex;
pub use milvus::Milvus;
pub use sync::reconcile;

use crate::error::{Error, Result};
use crate::retrieve::Passages;
use crate::store::{ChunkRow, Store};

/// Team ids put the namespace's tag above the 32 bits of a local chunk id.
pub const TAG_SHIFT: u32 = 32;
/// A namespace's tag is below this: team ids stay below 2^52, because
/// Milvus keeps the numbers of a row's dynamic fields as doubles.
const TAG_LIMIT: u64 = 1 << 20;
/// How often a search looks for what other instances changed.
const REFRESH_EVERY: Duration = Duration::from_secs(5);
/// How long one request to the server may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(15);

/// The id a chunk has in the team collection.
pub fn team_id(tag: u64, chunk_id: u64) -> u64 {
    tag << TAG_SHIFT | chunk_id
}

/// Where a team store lives: `milvus://HOST:PORT/COLLECTION`, or
/// `milvus+https://…` for a server behind TLS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TeamAddress {
    /// `host:port` of Milvus's gRPC/REST port (19530 by default).
    pub address: String,
    pub collection: String,
    /// Whether requests go over https.
    pub tls: bool,
}

impl TeamAddress {
    /// Parses `milvus://HOST[:PORT]/COLLECTION` or `milvus+https://…` (port 19530 when omitted).
    pub fn parse(url: &str) -> Result<TeamAddress> {
        let invalid = |why: &str| Error::InvalidInput(format!("team store '{url}': {why} (expected milvus://HOST:PORT/COLLECTION or milvus+https://…)"));
        let (tls, rest) = match (url.strip_prefix("milvus+https://"), url.strip_prefix("milvus://")) {
            (Some(rest), _) => (true, rest),
            (None, Some(rest)) => (false, rest),
            _ => return Err(invalid("only milvus:// and milvus+https:// stores are supported")),
        };
        let (host, collection) = rest.split_once('/').ok_or_else(|| invalid("no collection named"))?;
        if host.is_empty() {
            return Err(invalid("no host"));
        }
        let valid_name = collection.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && collection.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && collection.len() <= 200;
        if !valid_name {
            return Err(invalid("a collection name has letters, digits and underscores and starts with a letter"));
        }
        let address = if host.rsplit_once(':').is_some_and(|(_, p)| p.parse::<u16>().is_ok()) { host.to_string() } else { format!("{host}:19530") };
        Ok(TeamAddress { address, collection: collection.to_string(), tls })
    }
}

impl std::fmt::Display for TeamAddress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let scheme = if self.tls { "milvus+https" } else { "milvus" };
        write!(f, "{scheme}://{}/{}", self.address, self.collection)
    }
}

/// How this instance joins a team store (the settings' `team`, or `--store`).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct TeamConfig {
    /// `milvus://HOST:PORT/COLLECTION`; empty: no team store.
    pub store: String,
    /// This folder's namespace; by default the host name and the folder's name.
    pub namespace: Option<String>,
    /// Sent with every request (`Authorization: Bearer …`): Milvus's
    /// `user:password`, or an API key. Never shown back to the webview.
    pub token: Option<String>,
}

impl TeamConfig {
    /// `None` when no store is named.
    pub fn named(self) -> Option<TeamConfig> {
        Some(self).filter(|t| !t.store.trim().is_empty())
    }
}

/// The default namespace of a knowledge folder: `host:folder`.
pub fn default_namespace(knowledge_dir: &Path) -> String {
    let host = std::fs::read_to_string("/etc/hostname").ok().map(|h| h.trim().to_string()).filter(|h| !h.is_empty());
    let host = host.or_else(|| std::env::var("HOSTNAME").ok()).unwrap_or_else(|| "kea".into());
    let folder = knowledge_dir.file_name().map_or_else(|| "knowledge".into(), |n| n.to_string_lossy().into_owned());
    format!("{host}:{folder}")
}

/// The team collection as this instance sees it: its own namespace's rows
/// and the mirror of everyone else's.
pub struct Team {
    milvus: Milvus,
    store: TeamAddress,
    namespace: String,
    tag: u64,
    /// This data folder's owner hash, recorded with every version published.
    owner: String,
    model_id: String,
    dim: usize,
    /// Whether the claim was made with the server since opening (not when
    /// the team opened offline, until the server answers again).
    joined: AtomicBool,
    /// This namespace's rows in Milvus: local chunk id → Milvus keys.
    own: Mutex<index::OwnRows>,
    /// The other namespaces' passages (ids are team ids).
    mirror: Mutex<Store>,
    last_refresh: Mutex<Option<Instant>>,
    /// The last refresh's failure, shown as "team sync offline".
    offline: Mutex<Option<String>>,
}

impl Team {
    /// Opens the team store: creates the collection and the registry if
    /// needed and claims this folder's namespace (same model and dimension,
    /// a namespace of its own). A server that cannot be reached is not an
    /// error when this data folder made the same claim before: the team
    /// opens offline with it (see `claim.rs`).
    pub fn open(config: &TeamConfig, knowledge_dir: &Path, data_dir: &Path, model_id: &str, dim: usize) -> Result<Arc<Team>> {
        let store = TeamAddress::parse(config.store.trim())?;
        let token = config.token.as_deref().filter(|t| !t.trim().is_empty());
        let milvus = Milvus::new(&store, token, REQUEST_TIMEOUT);
        let namespace = config.namespace.clone().filter(|n| !n.trim().is_empty()).unwrap_or_else(|| default_namespace(knowledge_dir));
        let owner = owner::of_data_dir(data_dir)?;
        let mut claim = claim::Claim { store: store.to_string(), namespace, model: model_id.to_string(), dim, tag: 0 };
        let offline = match join(&milvus, &store, &claim, &owner) {
            Ok(tag) => {
                claim.tag = tag;
                claim::save(data_dir, &store.collection, &claim)?;
                None
            }
            Err(Error::VectorIndex(why)) => match claim::load(data_dir, &store.collection, &claim) {
                Some(tag) => {
                    claim.tag = tag;
                    Some(why)
                }
                None => return Err(Error::VectorIndex(why)),
            },
            Err(refused) => return Err(refused),
        };
        let mirror = Store::open(&data_dir.join(format!("team-{}.sqlite3", store.collection)))?;
        let team = Team {
            milvus,
            store,
            namespace: claim.namespace,
            tag: claim.tag,
            owner,
            model_id: claim.model,
            dim,
            joined: AtomicBool::new(offline.is_none()),
            own: Mutex::new(index::OwnRows::unknown()),
            mirror: Mutex::new(mirror),
            last_refresh: Mutex::new(None),
            offline: Mutex::new(offline),
        };
        Ok(Arc::new(team))
    }

    /// Brings the team up to date after opening: reconciles this namespace
    /// and pulls the others. A server that cannot be reached leaves the
    /// team offline (searches use the local index and the last mirror).
    pub fn catch_up(&self, store: &Store) -> Result<()> {
        match reconcile(self, store).and_then(|_| self.refresh_mirror(true)) {
            Err(Error::VectorIndex(why)) => {
                *self.offline.lock().unwrap_or_else(|p| p.into_inner()) = Some(why);
                Ok(())
            }
            done => done.map(|_| ()),
        }
    }

    /// Claims the namespace again when the team opened offline; called
    /// before anything is written or pulled.
    pub(crate) fn ensure_joined(&self) -> Result<()> {
        if self.joined.load(Ordering::Acquire) {
            return Ok(());
        }
        let claim = claim::Claim { store: self.store.to_string(), namespace: self.namespace.clone(), model: self.model_id.clone(), dim: self.dim, tag: 0 };
        let tag = join(&self.milvus, &self.store, &claim, &self.owner)?;
        if tag != self.tag {
            return Err(Error::InvalidInput(format!(
                "the team store now gives the namespace '{}' another tag ({tag}, this Kea opened with {}): restart Kea",
                self.namespace, self.tag
            )));
        }
        self.joined.store(true, Ordering::Release);
        Ok(())
    }

    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    pub fn address(&self) -> &TeamAddress {
        &self.store
    }

    /// The embedding model the team's vectors are made with.
    pub fn model_id(&self) -> &str {
        &self.model_id
    }

    pub fn dim(&self) -> usize {
        self.dim
    }

    fn own(&self) -> MutexGuard<'_, index::OwnRows> {
        self.own.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn mirror(&self) -> MutexGuard<'_, Store> {
        self.mirror.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The other namespaces' passages, pulled if `REFRESH_EVERY` has passed
    /// (or `now`). A failed pull marks the team offline (searches go on
    /// with the last copy) and is tried again at the next refresh.
    pub fn refresh_mirror(&self, now: bool) -> Result<()> {
        let mut last = self.last_refresh.lock().unwrap_or_else(|p| p.into_inner());
        if !now && last.is_some_and(|t| t.elapsed() < REFRESH_EVERY) {
            return Ok(());
        }
        *last = Some(Instant::now());
        let pulled = self.ensure_joined().and_then(|()| sync::pull_others(self));
        *self.offline.lock().unwrap_or_else(|p| p.into_inner()) = pulled.as_ref().err().map(ToString::to_string);
        pulled
    }

    /// Why the team store could not be reached at the last refresh (`None`: it could).
    pub fn offline(&self) -> Option<String> {
        self.offline.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// How many passages of other namespaces the mirror holds.
    pub fn mirrored_chunks(&self) -> Result<usize> {
        self.mirror().chunk_count()
    }
}

/// Makes sure the registry and the collection exist, and claims
/// `claim`'s namespace for `owner`; returns its tag.
fn join(milvus: &Milvus, store: &TeamAddress, claim: &claim::Claim, owner: &str) -> Result<u64> {
    let registry = registry::Registry::open(milvus, &store.collection)?;
    let tag = registry.claim(&claim.namespace, &claim.model, owner)?;
    match milvus.dimension(&store.collection)? {
        None => milvus.create_collection(&store.collection, claim.dim)?,
        Some(d) if d != claim.dim => {
            return Err(Error::InvalidInput(format!(
                "the team collection {store} holds {d}-dimensional vectors; this index's model {} makes {}",
                claim.model, claim.dim
            )))
        }
        Some(_) => {}
    }
    Ok(tag)
}

/// Retrieval's passages in team mode: ids below `1 << TAG_SHIFT` are this
/// instance's chunks (its own store), the others the mirror's.
pub struct TeamPassages<'a> {
    pub local: &'a Mutex<Store>,
    pub team: &'a Team,
}

impl TeamPassages<'_> {
    fn local(&self) -> MutexGuard<'_, Store> {
        self.local.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Splits ids into (own, mirrored).
    fn split(ids: &[u64]) -> (Vec<u64>, Vec<u64>) {
        ids.iter().partition(|&&id| id < 1 << TAG_SHIFT)
    }
}

impl Passages for TeamPassages<'_> {
    fn refresh(&self) -> Result<()> {
        self.team.refresh_mirror(false)
    }

    fn chunks_by_ids(&self, ids: &[u64]) -> Result<Vec<ChunkRow>> {
        let (own, mirrored) = Self::split(ids);
        let mut rows: std::collections::HashMap<u64, ChunkRow> = self.local().chunks_by_ids(&own)?.into_iter().map(|r| (r.id as u64, r)).collect();
        rows.extend(self.team.mirror().chunks_by_ids(&mirrored)?.into_iter().map(|r| (r.id as u64, r)));
        Ok(ids.iter().filter_map(|id| rows.remove(id)).collect())
    }

    fn languages_by_ids(&self, ids: &[u64]) -> Result<Vec<crate::language::Language>> {
        let (own, mirrored) = Self::split(ids);
        let mut languages: std::collections::HashMap<u64, crate::language::Language> = own.iter().copied().zip(self.local().languages_by_ids(&own)?).collect();
        languages.extend(mirrored.iter().copied().zip(self.team.mirror().languages_by_ids(&mirrored)?));
        Ok(ids.iter().map(|id| languages[id]).collect())
    }

    fn embeddings_by_ids(&self, ids: &[u64]) -> Result<std::collections::HashMap<u64, Vec<f32>>> {
        let (own, mirrored) = Self::split(ids);
        let mut vectors = self.local().embeddings_by_ids(&own)?;
        vectors.extend(self.team.mirror().embeddings_by_ids(&mirrored)?);
        Ok(vectors)
    }

    /// Both indexes' best, merged by score (each BM25 is over its own
    /// corpus: the scores are close to, not exactly, one index's).
    fn fts_search(&self, query: &str, k: usize) -> Result<Vec<(u64, f32)>> {
        let mut hits = self.local().fts_search(query, k)?;
        hits.extend(self.team.mirror().fts_search(query, k)?);
        hits.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        hits.truncate(k);
        Ok(hits)
    }

    fn token_chunk_counts(&self, tokens: &[String]) -> Result<(Vec<usize>, usize)> {
        let (local, local_total) = self.local().token_chunk_counts(tokens)?;
        let (mirrored, mirrored_total) = self.team.mirror().token_chunk_counts(tokens)?;
        Ok((local.iter().zip(&mirrored).map(|(a, b)| a + b).collect(), local_total + mirrored_total))
    }

    fn tokens_in_chunks(&self, tokens: &[String], ids: &[u64]) -> Result<Vec<String>> {
        let (own, mirrored) = Self::split(ids);
        let mut found = self.local().tokens_in_chunks(tokens, &own)?;
        for token in self.team.mirror().tokens_in_chunks(tokens, &mirrored)? {
            if !found.contains(&token) {
                found.push(token);
            }
        }
        Ok(found)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn team_addresses_parse_with_a_default_port() {
        let a = TeamAddress::parse("milvus://10.0.0.5/birds").unwrap();
        assert_eq!((a.address.as_str(), a.collection.as_str()), ("10.0.0.5:19530", "birds"));
        assert_eq!(TeamAddress::parse("milvus://localhost:19531/team_kb").unwrap().address, "localhost:19531");
        let secure = TeamAddress::parse("milvus+https://kb.example.org/team_kb").unwrap();
        assert!(secure.tls && secure.address == "kb.example.org:19530");
        assert_eq!(secure.to_string(), "milvus+https://kb.example.org:19530/team_kb");
        assert!(!a.tls);
        for bad in ["qdrant://h/c", "milvus://h", "milvus:///c", "milvus://h/9c", "milvus://h/a-b", "https://h/c", "milvus+http://h/c"] {
            assert!(TeamAddress::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn team_ids_keep_the_local_id_below_the_tag() {
        let id = team_id(5, 1234);
        assert_eq!((id >> TAG_SHIFT, id & ((1 << TAG_SHIFT) - 1)), (5, 1234));
        assert!(team_id(TAG_LIMIT - 1, (1 << TAG_SHIFT) - 1) < 1 << 53, "exact as a double");
    }
}
