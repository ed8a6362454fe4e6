//! [`Engine`]: the façade the CLI and the desktop shell call. It owns the
//! store, the vector index and the (lazily loaded) embedding model, and keeps
//! them consistent: on open, a vector file that is missing, stale or corrupt
//! is rebuilt from SQLite, and a change of model re-embeds everything.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::time::{Duration, Instant};

use crate::chat::{Answerer, Conversations};
use crate::chunk::ChunkConfig;
use crate::embed::{EmbedOptions, Embedder, Jittered, OnnxEmbedder};
use crate::error::{Error, Result};
use crate::extract::Ocr;
use crate::folders::Folders;
use crate::identify::Identifier;
use crate::ingest::{FileBudget, IndexModels, Ingest};
use crate::model::{ModelPaths, DEFAULT_TEXT_MODEL};
use crate::progress::CancelToken;
use crate::reader::ReaderProcess;
use crate::remote_embed::{HttpEmbedder, RemoteEmbedConfig, REMOTE_PREFIX};
use crate::rerank::{CrossEncoder, RerankCache, Reranker};
use crate::retrieve::calibration::Strictness;
use crate::retrieve::{Federated, LocalPassages, Passages, QueryModels, Retrieve, Retriever};
use crate::store::{DocRecord, Store};
use crate::team::{MilvusIndex, Team, TeamConfig, TeamPassages};
use crate::vectors::{VectorBackend, VectorIndex, VectorStamp};

pub use documents::{Documents, WebPageAdded};
pub use indexer::Indexer;

mod documents;
mod indexer;

/// The collection every data folder has: its own index over the knowledge
/// folder the settings name (see [`crate::collections`]).
pub const DEFAULT_COLLECTION: &str = "default";
/// What the app calls the default collection, in each language it speaks
/// (`collections.default` in `ui/src/i18n.ts`): no other collection takes
/// one of these names, so no two look alike in the switcher or a citation.
pub const DEFAULT_COLLECTION_LABELS: &[&str] = &["My documents", "我的文档"];

/// Everything the engine needs to know; [`EngineConfig::new`] fills defaults.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    pub knowledge_dir: PathBuf,
    pub data_dir: PathBuf,
    pub model_paths: ModelPaths,
    /// The embedding model for a new index, or the one asked for when
    /// `model_explicit`; otherwise the index keeps the model it was built with.
    pub model_id: String,
    /// The caller named the model (a flag or the environment): it must match
    /// the index's model unless `reembed` allows switching.
    pub model_explicit: bool,
    /// Allow re-embedding every chunk with another model.
    pub reembed: bool,
    /// How to reach a remote embedder (`model_id` is then `remote:<model>`).
    pub remote_embedder: Option<RemoteEmbedConfig>,
    /// The cross-encoder for reranking; `None` skips the stage (recorded in traces).
    pub reranker_id: Option<String>,
    pub chunking: ChunkConfig,
    pub embed: EmbedOptions,
    /// Larger files are recorded as errors, not read.
    pub max_file_bytes: u64,
    /// How long reading one file may take before it is recorded as timed out.
    pub file_budget: FileBudget,
    /// Threads reading files while the model embeds (at least one).
    pub readers: usize,
    /// The child process that reads PDF, Word and pictures with a memory
    /// limit; `None` reads them in this process (time budget only).
    pub reader: Option<ReaderProcess>,
    /// Which vector index backs dense search.
    pub vector_backend: VectorBackend,
    /// A team store shared with other instances (`--store milvus://…`);
    /// `None`: this machine's own index.
    pub team: Option<TeamConfig>,
    /// More folders of the collection beside `knowledge_dir` (see [`Folders`]).
    pub more_folders: Vec<PathBuf>,
    /// The collection's name (citations across collections say it).
    pub collection: String,
    /// How readily the relevance decision answers.
    pub strictness: Strictness,
    /// Searches and answers only, beside the app that indexes: nothing is
    /// written (no sync, saved vectors, model switch, kept conversation or
    /// new file), and an index that does not exist yet is an error.
    pub read_only: bool,
}

impl EngineConfig {
    pub fn new(knowledge_dir: impl Into<PathBuf>, data_dir: impl Into<PathBuf>) -> EngineConfig {
        let data_dir = data_dir.into();
        EngineConfig {
            knowledge_dir: knowledge_dir.into(),
            model_paths: ModelPaths::discover(&data_dir),
            data_dir,
            model_id: DEFAULT_TEXT_MODEL.to_string(),
            model_explicit: false,
            reembed: false,
            remote_embedder: None,
            reranker_id: None,
            chunking: ChunkConfig::default(),
            embed: EmbedOptions::default(),
            max_file_bytes: 100 * 1024 * 1024,
            file_budget: FileBudget::default(),
            readers: default_readers(),
            reader: None,
            vector_backend: VectorBackend::default(),
            team: None,
            more_folders: Vec::new(),
            collection: DEFAULT_COLLECTION.to_string(),
            strictness: Strictness::default(),
            read_only: false,
        }
    }

    /// Names the embedding model explicitly (a flag): a local model id.
    pub fn use_model(&mut self, id: &str) {
        self.model_id = id.to_string();
        self.model_explicit = true;
    }

    /// Names a remote embedder explicitly.
    pub fn use_remote(&mut self, remote: RemoteEmbedConfig) {
        self.model_id = remote.model_id();
        self.remote_embedder = Some(remote);
        self.model_explicit = true;
    }

    /// The platform's app-data folder for Kea (e.g. `~/.local/share/kea`).
    pub fn default_data_dir() -> PathBuf {
        dirs::data_dir().unwrap_or_else(std::env::temp_dir).join("kea")
    }
}

/// Half the cores read files; the model's threads use the rest.
fn default_readers() -> usize {
    std::thread::available_parallelism().map_or(1, |n| (n.get() / 2).max(1))
}

/// The index's state, for `kea status` and the knowledge pane.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Status {
    pub knowledge_dir: PathBuf,
    pub data_dir: PathBuf,
    pub model_id: Option<String>,
    pub dim: Option<usize>,
    pub documents: Vec<DocRecord>,
    pub chunks: usize,
    pub vectors: usize,
    /// Whether the vectors are held in memory (else mapped from their file:
    /// as opened, and again once a collection is idle).
    pub vectors_loaded: bool,
    /// Bytes of the SQLite database and vector file.
    pub index_bytes: u64,
    /// Whether the vector file had to be rebuilt from SQLite on open.
    pub vectors_rebuilt_on_open: bool,
    /// Files and folders the last full sync left out on purpose, with why.
    pub skipped: Vec<crate::progress::FileError>,
    /// Indexing is paused (searches go on over what is indexed).
    pub paused: bool,
    /// The files the last run was to read and has not yet (at most
    /// [`crate::progress::QUEUED_NAMES`]): running, paused or cancelled.
    pub queued: Vec<String>,
    /// The team store, when the index is shared.
    pub team: Option<TeamStatus>,
}

/// A shared index's state.
#[derive(Debug, Clone, serde::Serialize)]
pub struct TeamStatus {
    /// `milvus://HOST:PORT/COLLECTION`.
    pub store: String,
    /// This folder's namespace in it.
    pub namespace: String,
    /// Passages of the other namespaces searchable here.
    pub mirrored_chunks: usize,
    /// Why the store could not be reached at the last refresh: team sync is
    /// offline and searches use the last copy (`None`: online).
    pub offline: Option<String>,
}

/// What switching the embedding model would cost: every chunk is embedded again.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ReembedCost {
    pub indexed_model: Option<String>,
    pub documents: usize,
    pub chunks: usize,
    /// At the current model's measured speed (or 100 ms a chunk if unmeasured).
    pub estimated_seconds: f64,
}

/// The engine. Cheap operations take `&self`; share it behind an `Arc`.
pub struct Engine {
    config: EngineConfig,
    /// The collection's folders (`knowledge_dir` first).
    folders: Folders,
    /// The store's writing connection (ingest, conversations, settings of the index).
    store: Mutex<Store>,
    /// A second connection for searches and the status: SQLite (WAL) lets
    /// it read the last committed state while a commit is under way, so a
    /// slow commit (a team write waiting on its server) freezes neither.
    reader: Mutex<Store>,
    vectors: RwLock<Box<dyn VectorIndex>>,
    embedder: Mutex<Option<Box<dyn Embedder>>>,
    /// A second, single-threaded instance of the same model for queries, so a
    /// query never waits behind an ingest batch (the watcher may be indexing).
    query_embedder: Mutex<Option<Box<dyn Embedder>>>,
    /// When a sync last used `embedder`.
    embedder_used: Mutex<Instant>,
    /// When a search or a change last used `vectors`.
    vectors_used: Mutex<Instant>,
    /// The CLIP image model, loaded at the first identification.
    clip: Mutex<Option<crate::identify::ClipClassifier>>,
    /// Loaded on first use; a load failure is kept so queries fall back fast.
    reranker: Mutex<Option<std::result::Result<Box<dyn Reranker + Send>, String>>>,
    /// Held for the whole of a sync: one sync at a time.
    sync_lock: Mutex<()>,
    /// The OCR engine, looked for on the machine at the first sync (not at
    /// start-up: a search never needs it); `None`: such files say it is missing.
    ocr: std::sync::OnceLock<Option<Ocr>>,
    /// The running sync's own cancel token, whoever started it.
    active_run: Mutex<Option<CancelToken>>,
    /// Set by [`Engine::retire`]: another engine replaces this one.
    retired: std::sync::atomic::AtomicBool,
    /// Set by [`Indexer::pause`]: syncs read nothing until resumed.
    paused: std::sync::atomic::AtomicBool,
    /// The files the last run was to read and has not (see `indexer::Tracked`).
    queued: Mutex<Vec<String>>,
    /// A document already read (a web page read before it was kept), by the
    /// BLAKE3 of its bytes: the next sync that meets those bytes uses it
    /// rather than read them again (see [`crate::ingest::Preread`]).
    preread: crate::ingest::Preread,
    /// When the vector file was last saved, and whether the index has
    /// changed since (saved on a debounce after a sync of some paths).
    vectors_saved: Mutex<VectorsSaved>,
    vectors_rebuilt_on_open: bool,
    /// The store's generation when this engine opened it.
    opened_generation: i64,
    /// The languages of the configured embedding model (empty: many or unknown).
    model_languages: Vec<String>,
    llm_rerank_cache: RerankCache,
    /// The knowledge folder's `kea.toml` (re-read at every sync).
    profile: RwLock<crate::profile::Profile>,
    /// The team store the vectors live in (`vectors` is then its index).
    team: Option<Arc<Team>>,
    /// The collection's names for translating questions, by store generation.
    names: Mutex<Option<(i64, std::sync::Arc<crate::labels::NameIndex>)>>,
}

/// The vector file's save state.
struct VectorsSaved {
    at: Instant,
    dirty: bool,
    /// The store's generation right after this engine's last change: the
    /// stamp names it, so vectors saved late by an engine that another one
    /// has since overtaken (a model switch reopens it) read as stale.
    generation: i64,
}

/// A sync of some paths saves the vector file at most this often; the
/// watcher saves pending changes when the folder goes quiet.
const VECTORS_SAVE_EVERY: Duration = Duration::from_secs(30);

pub(crate) const DB_FILE: &str = "kea.sqlite3";
const VECTORS_FILE: &str = "vectors.usearch";

/// The model this run uses: the index's own unless the caller named one; a
/// different model on a non-empty index needs `reembed`.
fn choose_model(config: &EngineConfig, indexed: Option<String>, chunks: usize) -> Result<String> {
    let requested = config.model_id.clone();
    let Some(indexed) = indexed else { return Ok(requested) };
    if !config.model_explicit || indexed == requested {
        return Ok(indexed);
    }
    if chunks > 0 && !config.reembed {
        return Err(Error::ReembedRequired { indexed, requested, chunks });
    }
    Ok(requested)
}

/// Vectors added to a rebuilt index at a time.
const REBUILD_BATCH: usize = 16_384;

/// The saved vector file if it matches the store, else one rebuilt from the
/// store's vectors (and saved); `true` when rebuilt.
fn open_vectors(config: &EngineConfig, store: &Store, stamp: &VectorStamp) -> Result<(Box<dyn VectorIndex>, bool)> {
    let path = config.data_dir.join(VECTORS_FILE);
    let backend = config.vector_backend;
    if let Some(index) = backend.load_if_current(&path, stamp) {
        return Ok((index, false));
    }
    // In batches: never every vector of a large (or imported) store in memory at once as floats.
    let mut index = backend.empty(stamp.dim)?;
    let mut batch = Vec::with_capacity(REBUILD_BATCH.min(stamp.count));
    store.for_each_vector(|id, v| {
        batch.push((id, v.to_vec()));
        if batch.len() == REBUILD_BATCH {
            index.extend(&batch)?;
            batch.clear();
        }
        Ok(())
    })?;
    index.extend(&batch)?;
    if !config.read_only {
        index.save(&path, stamp)?;
    }
    Ok((index, true))
}

/// The store in `config.data_dir` (made if new), or for reading only: one
/// that must exist, over no team store.
fn open_store(config: &EngineConfig) -> Result<Store> {
    let path = config.data_dir.join(DB_FILE);
    if !config.read_only {
        std::fs::create_dir_all(&config.data_dir).map_err(|e| Error::io(format!("creating {}", config.data_dir.display()), e))?;
        return Store::open(&path);
    }
    if !path.is_file() {
        return Err(Error::NotFound(format!("no index in {} yet: index it with `kea index` or the app first", config.data_dir.display())));
    }
    if config.team.is_some() {
        return Err(Error::InvalidInput("a collection in a team store is not served read-only yet: use it from the app".into()));
    }
    Store::open_read_only(&path)
}

/// The chosen embedder's languages; a local model whose manifest differs
/// from the store's record switches the store to it (`true`: switched,
/// nothing of the old model is kept). A remote model needs its endpoint.
fn settle_model(config: &EngineConfig, store: &mut Store) -> Result<(Vec<String>, bool)> {
    if let Some(remote) = config.remote_embedder.as_ref().filter(|r| r.model_id() == config.model_id) {
        return Ok((remote.languages.clone(), false));
    }
    if config.model_id.starts_with(REMOTE_PREFIX) {
        return Err(Error::ModelMissing {
            model: config.model_id.clone(),
            reason: "the index was built with this remote embedder but no endpoint is configured for it \
                     (pass --embed-url and --embed-model, set KEA_EMBED_BASE_URL and KEA_EMBED_MODEL, or choose it in the app)"
                .into(),
        });
    }
    let Ok(local) = config.model_paths.resolve(&config.model_id) else { return Ok((Vec::new(), false)) };
    let wanted = (local.manifest.id.clone(), local.manifest.dim);
    let switch = store.model()?.as_ref() != Some(&wanted);
    if switch && config.read_only {
        if store.chunk_count()? > 0 {
            return Err(Error::InvalidInput(format!(
                "the index was built with another model than {}; open it in the app or with `kea index` to switch",
                wanted.0
            )));
        }
        return Ok((local.manifest.languages, false));
    }
    if switch {
        store.switch_model(&wanted.0, wanted.1)?;
    }
    Ok((local.manifest.languages, switch))
}

impl Engine {
    /// Opens the index in `config.data_dir`, repairing the vector file if
    /// needed. The model is not loaded until something must be embedded.
    pub fn open(mut config: EngineConfig) -> Result<Engine> {
        // Absolute, so the watcher's event paths compare with them.
        let absolute = |f: &PathBuf| std::path::absolute(f).unwrap_or_else(|_| f.clone());
        (config.knowledge_dir, config.more_folders) = (absolute(&config.knowledge_dir), config.more_folders.iter().map(absolute).collect());
        let mut store = open_store(&config)?;
        let mut chunks = store.chunk_count()?;
        config.model_id = choose_model(&config, store.model()?.map(|m| m.0), chunks)?;
        let (model_languages, switched) = settle_model(&config, &mut store)?;
        if switched {
            chunks = 0;
        }
        let (model_id, dim) = store.model()?.unwrap_or_else(|| (config.model_id.clone(), 384));
        let stamp = VectorStamp { generation: store.generation()?, count: chunks, model_id, dim };
        let (vectors, rebuilt, team) = match &config.team {
            Some(team_config) => {
                let team = Team::open(team_config, &config.knowledge_dir, &config.data_dir, &stamp.model_id, dim)?;
                team.catch_up(&store)?;
                (Box::new(MilvusIndex::new(team.clone())) as Box<dyn VectorIndex>, false, Some(team))
            }
            None => {
                let (vectors, rebuilt) = open_vectors(&config, &store, &stamp)?;
                (vectors, rebuilt, None)
            }
        };
        let folders = Folders::new(&config.knowledge_dir, &config.more_folders);
        let profile = folders.primary().and_then(|primary| crate::profile::Profile::load(primary).ok()).unwrap_or_default();
        let mut reader = open_store(&config)?;
        reader.share_full_text_with(&store);
        Ok(Engine {
            folders,
            config,
            store: Mutex::new(store),
            reader: Mutex::new(reader),
            vectors: RwLock::new(vectors),
            embedder: Mutex::new(None),
            query_embedder: Mutex::new(None),
            embedder_used: Mutex::new(Instant::now()),
            vectors_used: Mutex::new(Instant::now()),
            reranker: Mutex::new(None),
            clip: Mutex::new(None),
            sync_lock: Mutex::new(()),
            ocr: std::sync::OnceLock::new(),
            active_run: Mutex::new(None),
            retired: std::sync::atomic::AtomicBool::new(false),
            paused: std::sync::atomic::AtomicBool::new(false),
            queued: Mutex::new(Vec::new()),
            preread: crate::ingest::Preread::default(),
            vectors_saved: Mutex::new(VectorsSaved { at: Instant::now(), dirty: false, generation: 0 }),
            vectors_rebuilt_on_open: rebuilt,
            opened_generation: stamp.generation,
            model_languages,
            llm_rerank_cache: Default::default(),
            names: Mutex::new(None),
            profile: RwLock::new(profile),
            team,
        })
    }

    /// Indexing: syncs of the knowledge folder, the vector file, re-embedding.
    pub fn indexer(&self) -> Indexer<'_> {
        Indexer { engine: self }
    }

    /// The documents of the knowledge folder: import, open, delete, re-index.
    pub fn documents(&self) -> Documents<'_> {
        Documents { engine: self }
    }

    /// The retrieval pipeline over this engine's store (and team mirror),
    /// vectors and models.
    pub fn retriever(&self) -> Retriever<'_> {
        *self.vectors_used.lock().unwrap_or_else(|p| p.into_inner()) = Instant::now();
        Retriever::new(self.passages(), &self.vectors, self)
    }

    /// Reads the full-text postings into memory if they are not held,
    /// waiting up to `wait` for it: whether they are held now (searches
    /// use FTS5 until then; see `Store::hold_full_text`).
    pub fn hold_full_text(&self, wait: std::time::Duration) -> Result<bool> {
        self.reader.lock().unwrap_or_else(|p| p.into_inner()).hold_full_text(wait)
    }

    /// Answers to questions from this collection, in its conversations.
    pub fn answerer(&self) -> Answerer<'_> {
        self.answerer_over(Box::new(self.retriever()))
    }

    /// Answers from what `retrieve` finds (e.g. [`Engine::across`] several
    /// collections), kept in this collection's conversations.
    pub fn answerer_over<'a>(&'a self, retrieve: Box<dyn Retrieve + 'a>) -> Answerer<'a> {
        Answerer { retriever: retrieve, conversations: self.conversations(), subjects: self, library: self, llm_rerank_cache: &self.llm_rerank_cache }
    }

    /// Retrieval across this collection and `others`, each through its own
    /// pipeline and decision, merged (passages name their collection).
    pub fn across<'a>(&'a self, others: &[&'a Engine]) -> Federated<'a> {
        let parts = std::iter::once(self).chain(others.iter().copied()).map(|e| (e.config.collection.clone(), e.retriever())).collect();
        Federated { parts }
    }

    /// Photo identification against the collection's labels.
    pub fn identifier(&self) -> Identifier<'_> {
        Identifier {
            retriever: self.retriever(),
            conversations: self.conversations(),
            subjects: self,
            clip: &self.clip,
            model_paths: &self.config.model_paths,
            embed: &self.config.embed,
        }
    }

    /// The saved conversations (chats and identifications alike).
    pub fn conversations(&self) -> Conversations<'_> {
        Conversations { store: &self.store, kept: !self.config.read_only }
    }

    /// The current label set (names in front matter, keys from the profile).
    pub fn labels(&self) -> Result<Vec<crate::labels::Label>> {
        Ok(crate::labels::labels_from_documents(&self.store().documents_with_front_matter()?, &self.profile().labels))
    }

    /// The collection profile (what the knowledge folder is about).
    pub fn profile(&self) -> crate::profile::Profile {
        self.profile.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    pub fn config(&self) -> &EngineConfig {
        &self.config
    }

    /// The collection's folders: where its documents are and how their keys read.
    pub fn folders(&self) -> &Folders {
        &self.folders
    }

    /// The index's state as last committed (read on the reader connection:
    /// never waits behind a commit).
    pub fn status(&self) -> Result<Status> {
        let store = self.reader.lock().unwrap_or_else(|p| p.into_inner());
        let model = store.model()?;
        let index_bytes =
            [DB_FILE, VECTORS_FILE, "kea.sqlite3-wal"].iter().filter_map(|f| std::fs::metadata(self.config.data_dir.join(f)).ok()).map(|m| m.len()).sum();
        // One read of the vectors (a second while the first is held could
        // queue behind a waiting writer and never be granted).
        let (vectors, vectors_loaded) = {
            let index = self.vectors.read().unwrap_or_else(|p| p.into_inner());
            (index.len(), index.is_loaded())
        };
        Ok(Status {
            knowledge_dir: self.config.knowledge_dir.clone(),
            data_dir: self.config.data_dir.clone(),
            model_id: model.as_ref().map(|m| m.0.clone()),
            dim: model.map(|m| m.1),
            documents: store.documents()?,
            chunks: store.chunk_count()?,
            vectors,
            vectors_loaded,
            index_bytes,
            vectors_rebuilt_on_open: self.vectors_rebuilt_on_open,
            skipped: store.meta(&crate::store::MetaKey::Skipped)?.and_then(|json| serde_json::from_str(&json).ok()).unwrap_or_default(),
            paused: self.paused.load(std::sync::atomic::Ordering::SeqCst),
            queued: self.queued.lock().unwrap_or_else(|p| p.into_inner()).clone(),
            team: match &self.team {
                Some(team) => Some(TeamStatus {
                    store: team.address().to_string(),
                    namespace: team.namespace().to_string(),
                    mirrored_chunks: team.mirrored_chunks()?,
                    offline: team.offline(),
                }),
                None => None,
            },
        })
    }

    /// Stops this engine's indexing for good, before another engine opens
    /// the same data folder (a model switch): the run in progress is
    /// cancelled and waited for, and later syncs return `Cancelled` without
    /// touching the index, so two engines never write it at once.
    pub fn retire(&self) {
        self.retired.store(true, std::sync::atomic::Ordering::SeqCst);
        self.indexer().cancel();
        drop(self.sync_lock.lock().unwrap_or_else(|p| p.into_inner()));
    }

    /// Unloads the indexing instance of the embedding model when no sync
    /// has used it for `idle` (it loads again for the next change). The
    /// query instance stays, so searches stay fast. True if it was unloaded.
    pub fn release_idle_models(&self, idle: Duration) -> bool {
        let Ok(mut slot) = self.embedder.try_lock() else { return false };
        let unused = self.embedder_used.lock().unwrap_or_else(|p| p.into_inner()).elapsed() >= idle;
        unused && slot.take().is_some()
    }

    /// Maps the vector index from its file instead of holding it in memory
    /// when no search or change has used it for `idle` (it is saved first;
    /// the next change loads it again, searches read the mapping). Only
    /// collections in use hold their vectors in memory. True if released.
    pub fn release_idle_vectors(&self, idle: Duration) -> bool {
        if self.config.read_only || self.vectors_used.lock().unwrap_or_else(|p| p.into_inner()).elapsed() < idle {
            return false;
        }
        // No sync under way and nothing pending: the file will match the store.
        let Ok(_sync) = self.sync_lock.try_lock() else { return false };
        let Ok(saved) = self.vectors_saved.try_lock() else { return false };
        if saved.dirty {
            return false;
        }
        let store = self.store();
        let Ok(mut vectors) = self.vectors.try_write() else { return false };
        // This engine's own last change (another process may have changed
        // the store since: the file then reads as stale and is rebuilt).
        let generation = saved.generation.max(self.opened_generation);
        let stamp = match store.model() {
            Ok(Some((model_id, dim))) => VectorStamp { generation, count: vectors.len(), model_id, dim },
            _ => return false,
        };
        vectors.release(&self.config.data_dir.join(VECTORS_FILE), &stamp).unwrap_or(false)
    }

    /// Whether the index changed since this engine opened it, by another
    /// engine (the app indexing beside a read-only one): reopen to see it all.
    pub fn changed_since_open(&self) -> Result<bool> {
        Ok(self.reader.lock().unwrap_or_else(|p| p.into_inner()).generation()? != self.opened_generation)
    }

    /// Refuses a change to a read-only engine.
    pub(crate) fn writable(&self) -> Result<()> {
        match self.config.read_only {
            true => Err(Error::InvalidInput("this collection is open read-only (another program indexes it): nothing is changed".into())),
            false => Ok(()),
        }
    }

    /// The embedding model an index in `data_dir` was built with, without
    /// opening the engine (`None`: no index yet).
    pub fn indexed_model(data_dir: &Path) -> Result<Option<String>> {
        let db = data_dir.join(DB_FILE);
        if !db.is_file() {
            return Ok(None);
        }
        Ok(Store::open(&db)?.model()?.map(|m| m.0))
    }

    pub(crate) fn store(&self) -> MutexGuard<'_, Store> {
        self.store.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Loads the configured embedding model (local ONNX or remote).
    fn load_embedder(&self, options: &EmbedOptions) -> Result<Box<dyn Embedder>> {
        let model: Box<dyn Embedder> = match self.config.remote_embedder.as_ref().filter(|r| r.model_id() == self.config.model_id) {
            Some(remote) => Box::new(HttpEmbedder::connect(remote.clone())?),
            None => Box::new(OnnxEmbedder::load(&self.config.model_paths, &self.config.model_id, options)?),
        };
        Ok(Jittered::from_env(model))
    }

    /// Runs `f` with the embedding model, loading it on first use.
    pub(crate) fn with_embedder<T>(&self, f: impl FnOnce(&mut dyn Embedder) -> Result<T>) -> Result<T> {
        let mut slot = self.embedder.lock().unwrap_or_else(|p| p.into_inner());
        if slot.is_none() {
            let model = self.load_embedder(&self.config.embed)?;
            let mut store = self.store();
            let recorded = store.model()?;
            let chunks = store.chunk_count()?;
            // Same name, other vectors: the server now runs another model.
            let changed = |(id, dim): &&(String, usize)| id == model.model_id() && *dim != model.dim() && chunks > 0 && !self.config.reembed;
            if let Some((id, dim)) = recorded.as_ref().filter(changed) {
                let requested = format!("{id} ({} dimensions, the index has {dim})", model.dim());
                return Err(Error::ReembedRequired { indexed: id.clone(), requested, chunks });
            }
            // Another instance switched the index since this one opened: never switch it back.
            let replaced = |(id, _): &&(String, usize)| id != model.model_id() && chunks > 0 && !self.config.reembed;
            if let Some((id, _)) = recorded.as_ref().filter(replaced) {
                return Err(Error::ReembedRequired { indexed: id.clone(), requested: model.model_id().to_string(), chunks });
            }
            if recorded != Some((model.model_id().to_string(), model.dim())) {
                // A remote or hub model (dimension unknown at open), or an allowed switch.
                self.check_team_model(model.model_id(), model.dim())?;
                store.switch_model(model.model_id(), model.dim())?;
                if self.team.is_none() {
                    *self.vectors.write().unwrap_or_else(|p| p.into_inner()) = self.config.vector_backend.empty(model.dim())?;
                }
            }
            *slot = Some(model);
        }
        *self.embedder_used.lock().unwrap_or_else(|p| p.into_inner()) = Instant::now();
        f(slot.as_deref_mut().expect("embedder was just loaded"))
    }

    /// A team collection keeps the model it was made with: another model
    /// (or dimension) would mix vector spaces.
    fn check_team_model(&self, model_id: &str, dim: usize) -> Result<()> {
        match &self.team {
            Some(team) if team.model_id() != model_id || team.dim() != dim => Err(Error::InvalidInput(format!(
                "the team store {} is embedded with {} ({} dimensions); switching this instance to {model_id} ({dim}) would mix vector spaces: \
                 use the team's model, or another collection",
                team.address(),
                team.model_id(),
                team.dim()
            ))),
            _ => Ok(()),
        }
    }

    /// Where passages are read: the store, plus the team mirror when shared.
    fn passages(&self) -> Box<dyn Passages + '_> {
        match &self.team {
            Some(team) => Box::new(TeamPassages { local: &self.reader, team }),
            None => Box::new(LocalPassages(&self.reader)),
        }
    }

    /// The collection's names, rebuilt when the store has changed since.
    fn name_index(&self) -> Result<std::sync::Arc<crate::labels::NameIndex>> {
        let generation = self.reader.lock().unwrap_or_else(|p| p.into_inner()).generation()?;
        let mut cached = self.names.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, index)) = cached.as_ref().filter(|(at, _)| *at == generation) {
            return Ok(index.clone());
        }
        let (labelled, titles) = {
            let reader = self.reader.lock().unwrap_or_else(|p| p.into_inner());
            (reader.documents_with_front_matter()?, reader.title_sample(crate::labels::LANGUAGE_SAMPLE)?)
        };
        let index = std::sync::Arc::new(crate::labels::NameIndex::new(&labelled, &titles, &self.profile().labels));
        *cached = Some((generation, index.clone()));
        Ok(index)
    }

    /// Embeds a query with the query instance of the model (loaded on first
    /// use; the ingest instance loads too only if the store must switch model).
    fn embed_query_text(&self, query: &str) -> Result<Vec<f32>> {
        self.with_query_embedder(|embedder| embedder.embed_query(query))
    }

    /// Runs `f` with the query-time embedder (one thread), loading it on first use.
    fn with_query_embedder<T>(&self, f: impl FnOnce(&mut dyn Embedder) -> Result<T>) -> Result<T> {
        let mut slot = self.query_embedder.lock().unwrap_or_else(|p| p.into_inner());
        if slot.is_none() {
            let options = crate::embed::EmbedOptions { threads: Some(1), ..self.config.embed.clone() };
            let model = self.load_embedder(&options)?;
            if self.store().model()? != Some((model.model_id().to_string(), model.dim())) {
                // The store was built with another model: the ingest loader switches it.
                self.with_embedder(|_| Ok(()))?;
            }
            *slot = Some(model);
        }
        f(slot.as_deref_mut().expect("query embedder was just loaded"))
    }

    /// Runs `f` with the cross-encoder, loading it on first use. `Ok(None)`
    /// when none is configured; one that failed to load is an error.
    fn with_cross_encoder<T>(&self, f: impl FnOnce(&mut dyn Reranker) -> Result<T>) -> Result<Option<T>> {
        let Some(id) = &self.config.reranker_id else { return Ok(None) };
        let mut slot = self.reranker.lock().unwrap_or_else(|p| p.into_inner());
        let loaded = slot.get_or_insert_with(|| {
            CrossEncoder::load(&self.config.model_paths, id, &self.config.embed).map(|r| Box::new(r) as Box<dyn Reranker + Send>).map_err(|e| e.to_string())
        });
        match loaded {
            Ok(reranker) => f(reranker.as_mut()).map(Some),
            Err(message) => Err(Error::ModelMissing { model: id.clone(), reason: message.clone() }),
        }
    }

    /// The ingest pipeline over this engine's parts.
    fn ingest(&self) -> Ingest<'_> {
        Ingest {
            folders: &self.folders,
            max_file_bytes: self.config.max_file_bytes,
            chunking: self.config.chunking,
            batch_size: self.config.embed.batch_size,
            readers: self.config.readers,
            budget: self.config.file_budget,
            reader: self.config.reader.as_ref(),
            ocr: self.ocr.get_or_init(Ocr::discover).as_ref(),
            preread: &self.preread,
            store: &self.store,
            vectors: &self.vectors,
            profile: &self.profile,
            models: self,
        }
    }

    /// Saves the vector index with a stamp of the store's current state.
    fn save_vectors(&self, generation: i64) -> Result<()> {
        let store = self.store();
        let vectors = self.vectors.read().unwrap_or_else(|p| p.into_inner());
        let (model_id, dim) = store.model()?.unwrap_or_else(|| (self.config.model_id.clone(), vectors.dim()));
        let stamp = VectorStamp { generation, count: vectors.len(), model_id, dim };
        vectors.save(&self.config.data_dir.join(VECTORS_FILE), &stamp)
    }
}

/// The collection's documents and passages, for questions about documents as wholes.
impl crate::chat::library::Library for Engine {
    fn documents(&self) -> Result<Vec<crate::store::DocRecord>> {
        self.store().documents()
    }

    fn chunks_of(&self, path: &str) -> Result<Vec<crate::store::ChunkRow>> {
        self.store().document_chunks(path)
    }

    fn vectors_of(&self, ids: &[u64]) -> Result<std::collections::HashMap<u64, Vec<f32>>> {
        self.store().embeddings_by_ids(ids)
    }
}

impl crate::labels::Subjects for Engine {
    fn profile(&self) -> crate::profile::Profile {
        Engine::profile(self)
    }

    fn labels(&self) -> Result<Vec<crate::labels::Label>> {
        Engine::labels(self)
    }

    fn names(&self) -> Result<std::sync::Arc<crate::labels::NameIndex>> {
        self.name_index()
    }
}

impl QueryModels for Engine {
    fn embed_query(&self, query: &str) -> Result<Vec<f32>> {
        self.embed_query_text(query)
    }

    fn embed_sentences(&self, sentences: &[String]) -> Result<Vec<Vec<f32>>> {
        self.with_query_embedder(|embedder| embedder.embed_passages(sentences))
    }

    fn cross_encode(&self, query: &str, passages: &[String]) -> Result<Option<Vec<f32>>> {
        self.with_cross_encoder(|r| r.score(query, passages))
    }

    fn languages(&self) -> &[String] {
        &self.model_languages
    }

    fn translate_names(&self, query: &str) -> Result<Option<String>> {
        Ok(self.name_index()?.translate(query))
    }

    fn document_languages(&self) -> Result<Vec<crate::language::Language>> {
        Ok(self.name_index()?.languages())
    }

    fn document_names(&self, sources: &[&str]) -> Result<Vec<Vec<String>>> {
        let index = self.name_index()?;
        Ok(sources.iter().map(|source| index.names_of(source)).collect())
    }

    fn calibration(&self) -> crate::retrieve::calibration::Calibration {
        let model = self.reader.lock().unwrap_or_else(|p| p.into_inner()).model().ok().flatten().map(|(id, _)| id).unwrap_or_default();
        crate::retrieve::calibration::Calibration::for_model(&self.config.data_dir, &model).shifted(self.config.strictness.threshold_shift())
    }
}

impl IndexModels for Engine {
    fn embed_for_index(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        self.indexer().embed_passages(texts)
    }

    fn vectors_changed(&self, now: bool) -> Result<()> {
        *self.vectors_used.lock().unwrap_or_else(|p| p.into_inner()) = Instant::now();
        let generation = self.store().generation()?;
        let due = {
            let mut saved = self.vectors_saved.lock().unwrap_or_else(|p| p.into_inner());
            saved.dirty = true;
            saved.generation = generation;
            now || saved.at.elapsed() >= VECTORS_SAVE_EVERY
        };
        if due {
            self.indexer().save_pending_vectors()?;
        }
        Ok(())
    }
}
