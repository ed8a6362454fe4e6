//! Named collections: each has a name, one or more folders and its own
//! settings (embedder, chunking, document languages, reranker, how strict
//! refusal is), and an index in a data folder of its own, so collections
//! with different embedders live side by side. The [`Library`] is their
//! registry, `collections.json` in Kea's data folder. The collection named
//! [`DEFAULT_COLLECTION`] is the data folder's own index over the knowledge
//! folder the settings name: a data folder made before collections opens
//! as it, unchanged. Removing a collection never touches its folders; its
//! index is deleted only when asked.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use unicode_normalization::UnicodeNormalization;

use crate::engine::EngineConfig;
use crate::error::{Error, Result};
use crate::remote_embed::RemoteEmbedConfig;
use crate::settings::{Overrides, Settings};

pub use crate::engine::{DEFAULT_COLLECTION, DEFAULT_COLLECTION_LABELS};
pub use crate::retrieve::calibration::Strictness;
/// The name that means every collection (`--kb all`); no collection takes it.
pub const ALL_COLLECTIONS: &str = "all";
const REGISTRY_FILE: &str = "collections.json";
/// Collections' indexes live in `<data>/collections/<dir>/`.
const COLLECTIONS_DIR: &str = "collections";
const FORMAT_VERSION: u32 = 1;
const MAX_NAME_CHARS: usize = 64;
/// The secret store's name for a collection's remote embedder key.
const EMBEDDER_KEY_PREFIX: &str = "embedder-api-key:";

/// A collection's own settings; `None` follows the app's settings.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct CollectionSettings {
    /// The embedder for a new index (an index keeps the model it was built with).
    pub embedder: Option<String>,
    /// How to reach a remote embedder (its key lives in the secret store).
    pub remote_embedder: Option<RemoteEmbedConfig>,
    /// Chunks are packed up to about this many characters.
    pub chunk_chars: Option<usize>,
    /// Characters of a chunk repeated at the start of the next.
    pub chunk_overlap: Option<usize>,
    /// The languages its documents are written in (`zh`, `en`), as the user
    /// says; an embedder that does not read one of them is warned about.
    pub languages: Vec<String>,
    /// Rerank with the cross-encoder (`None`: when one is configured).
    pub rerank: Option<bool>,
    pub strictness: Strictness,
}

impl CollectionSettings {
    /// Checks what a user can get wrong.
    pub fn validate(&self) -> Result<()> {
        if let Some(chars) = self.chunk_chars.filter(|c| !(100..=8000).contains(c)) {
            return Err(Error::InvalidInput(format!("the chunk size must be 100–8000 characters (got {chars})")));
        }
        if let (Some(overlap), chars) = (self.chunk_overlap, self.chunk_chars.unwrap_or(crate::chunk::ChunkConfig::default().target_chars)) {
            if overlap * 2 > chars {
                return Err(Error::InvalidInput(format!("the overlap ({overlap}) must be at most half the chunk size ({chars})")));
            }
        }
        if let Some(language) = self.languages.iter().find(|l| crate::language::Language::from_code(l).is_none()) {
            return Err(Error::InvalidInput(format!("unknown document language {language:?} (zh or en)")));
        }
        if let Some(id) = self.embedder.as_ref().filter(|id| !id.starts_with(crate::remote_embed::REMOTE_PREFIX)) {
            crate::model::ModelId::parse(id)?;
        }
        match &self.remote_embedder {
            Some(remote) => remote.validate(),
            None => Ok(()),
        }
    }
}

/// One collection as registered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Collection {
    pub name: String,
    /// Its index folder's name under `collections/` (empty: the default
    /// collection's index is the data folder itself). Made by Kea, checked on load.
    pub dir: String,
    /// The folders it indexes (the default collection's comes from the settings).
    pub folders: Vec<PathBuf>,
    #[serde(default)]
    pub settings: CollectionSettings,
}

impl Collection {
    pub fn is_default(&self) -> bool {
        self.dir.is_empty()
    }
}

#[derive(Debug, Serialize, Deserialize)]
struct RegistryFile {
    version: u32,
    collections: Vec<Collection>,
}

/// The registry of collections in one data folder.
#[derive(Debug, Clone)]
pub struct Library {
    data_dir: PathBuf,
    /// Registered collections; the default one only when it has settings of its own.
    collections: Vec<Collection>,
}

/// What removing a collection did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Removed {
    pub name: String,
    /// The index folder, deleted or (when not asked) kept.
    pub index_dir: PathBuf,
    pub index_deleted: bool,
}

/// A collection name as typed: trimmed, 1–64 characters, no control or
/// invisible characters, not the word that means every collection.
pub fn checked_name(name: &str) -> Result<String> {
    let name = name.trim();
    if same_name(name, ALL_COLLECTIONS) {
        return Err(Error::InvalidInput(format!("'{ALL_COLLECTIONS}' means every collection and cannot name one")));
    }
    if !is_stored_name(name) || holds_an_invisible_character(name) {
        return Err(Error::InvalidInput(format!("a collection name has 1–{MAX_NAME_CHARS} characters and no control or invisible characters (got {name:?})")));
    }
    Ok(name.to_string())
}

/// A name a registry may hold: 1–64 characters, no control character, not
/// the word that means every collection. Names given since are checked
/// further ([`checked_name`]), but a registry an older Kea wrote opens.
fn is_stored_name(name: &str) -> bool {
    !name.trim().is_empty() && name.chars().count() <= MAX_NAME_CHARS && !name.chars().any(char::is_control) && !same_name(name, ALL_COLLECTIONS)
}

/// Whether `name` holds an [invisible](is_invisible) character, but for
/// what shapes an emoji: one variation selector right after a symbol
/// (`❤️`) and a joiner between two (`👨‍👩‍👧`).
fn holds_an_invisible_character(name: &str) -> bool {
    use unicode_general_category::{get_general_category, GeneralCategory as G};
    // A pictographic symbol, or a skin tone after one (`🧑🏽‍💻`).
    let symbol = |c: Option<&char>| c.is_some_and(|&c| get_general_category(c) == G::OtherSymbol || ('\u{1F3FB}'..='\u{1F3FF}').contains(&c));
    let chars: Vec<char> = name.chars().collect();
    chars.iter().enumerate().any(|(i, &c)| {
        let before = i.checked_sub(1).and_then(|b| chars.get(b));
        let shapes_an_emoji = match c {
            VARIATION_TEXT | VARIATION_EMOJI => symbol(before),
            '\u{200D}' => {
                let base = if before == Some(&VARIATION_EMOJI) { i.checked_sub(2).and_then(|b| chars.get(b)) } else { before };
                symbol(base) && symbol(chars.get(i + 1))
            }
            _ => false,
        };
        is_invisible(c) && !shapes_an_emoji
    })
}

/// The variation selectors that ask for a symbol's text or emoji look.
const VARIATION_TEXT: char = '\u{FE0E}';
const VARIATION_EMOJI: char = '\u{FE0F}';

/// Characters that show nothing, or not as themselves, or reorder the text
/// around them: format characters (zero-width spaces and joiners, direction
/// marks and overrides, the byte-order mark, the soft hyphen), line and
/// paragraph separators, private-use and unassigned code points, and the
/// default-ignorable marks and letters that are not format characters
/// (the grapheme joiner, variation selectors, blank fillers): a name
/// holding one looks like another.
fn is_invisible(c: char) -> bool {
    use unicode_general_category::{get_general_category, GeneralCategory as G};
    matches!(get_general_category(c), G::Control | G::Format | G::LineSeparator | G::ParagraphSeparator | G::PrivateUse | G::Unassigned | G::Surrogate)
        || matches!(
            c,
            '\u{34F}'
                | '\u{115F}'
                | '\u{1160}'
                | '\u{17B4}'
                | '\u{17B5}'
                | '\u{180B}'..='\u{180F}'
                | '\u{2800}'
                | '\u{3164}'
                | '\u{FE00}'..='\u{FE0F}'
                | '\u{FFA0}'
                | '\u{E0000}'..='\u{E0FFF}'
        )
}

/// Whether `name` is the default collection's, or what the app calls it.
pub(crate) fn names_the_default(name: &str) -> bool {
    std::iter::once(DEFAULT_COLLECTION).chain(DEFAULT_COLLECTION_LABELS.iter().copied()).any(|taken| same_name(name, taken))
}

/// Whether two collection names are one to a person: the same once
/// compatibility forms are folded (full-width letters, ligatures), case
/// is ignored and the ends are trimmed.
pub fn same_name(a: &str, b: &str) -> bool {
    // A symbol's text or emoji look, a joiner between symbols and a run of
    // spaces (a window shows one) make no other name.
    let fold = |s: &str| {
        let shown: String = s.trim().nfkc().filter(|&c| !matches!(c, VARIATION_TEXT | VARIATION_EMOJI | '\u{200D}')).collect();
        shown.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase()
    };
    fold(a) == fold(b)
}

/// The file in a collection's index folder that names its collection.
const NAME_FILE: &str = "collection-name";

/// How many `Name (n)` folders are tried before giving up.
const MAX_FOLDER_TRIES: usize = 1000;

/// A new folder for the collection `name`'s documents directly inside
/// `parent`: its name made one plain file name (no separators, no leading
/// dots: `../x` or `/etc/x` never leave `parent`), then `Name (2)`,
/// `Name (3)`… until one does not exist yet.
pub fn new_folder_for(parent: &Path, name: &str) -> Result<PathBuf> {
    let base = crate::import::sanitise_file_name(name);
    for n in 1..=MAX_FOLDER_TRIES {
        let candidate = parent.join(if n == 1 { base.clone() } else { format!("{base} ({n})") });
        // Belt and braces: exactly one plain component below `parent`.
        if candidate.parent() != Some(parent) || !matches!(candidate.components().next_back(), Some(std::path::Component::Normal(_))) {
            return Err(Error::InvalidInput(format!("{name:?} cannot name a folder")));
        }
        if std::fs::symlink_metadata(&candidate).is_err() {
            return Ok(candidate);
        }
    }
    Err(Error::InvalidInput(format!("{} already holds {MAX_FOLDER_TRIES} folders named after '{base}': choose a folder", parent.display())))
}

/// Whether `dir` is a folder name Kea made: `[a-z0-9][a-z0-9-]*`, at most 64.
fn is_index_dir_name(dir: &str) -> bool {
    let bytes = dir.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 64
        && bytes[0].is_ascii_alphanumeric()
        && bytes.iter().all(|b| b.is_ascii_digit() || b.is_ascii_lowercase() || *b == b'-')
}

/// The index folder name for a new collection called `name`: its ASCII
/// letters and digits, else `kb`, made unique among `taken`.
fn index_dir_for(name: &str, taken: &[&str]) -> String {
    let mut base = String::new();
    for c in name.chars().map(|c| c.to_ascii_lowercase()) {
        if c.is_ascii_alphanumeric() {
            base.push(c);
        } else if !base.is_empty() && !base.ends_with('-') {
            base.push('-');
        }
    }
    let mut base: String = base.trim_end_matches('-').chars().take(40).collect();
    if base.is_empty() {
        base = "kb".into();
    }
    let mut dir = base.clone();
    for n in 2.. {
        if !taken.contains(&dir.as_str()) {
            break;
        }
        dir = format!("{base}-{n}");
    }
    dir
}

/// The folders of a collection, made absolute and checked: each exists and
/// is a folder, none is inside Kea's data folder, none repeats or lies
/// inside another.
fn checked_folders(folders: &[PathBuf], data_dir: &Path) -> Result<Vec<PathBuf>> {
    if folders.is_empty() || folders.len() > 16 {
        return Err(Error::InvalidInput(format!("a collection has 1–16 folders (got {})", folders.len())));
    }
    let data = data_dir.canonicalize().unwrap_or_else(|_| data_dir.to_path_buf());
    let mut checked: Vec<PathBuf> = Vec::new();
    for folder in folders {
        let real = folder.canonicalize().map_err(|e| Error::InvalidInput(format!("{} is not a folder Kea can read: {e}", folder.display())))?;
        if !real.is_dir() {
            return Err(Error::InvalidInput(format!("{} is not a folder", folder.display())));
        }
        if real.starts_with(&data) {
            return Err(Error::InvalidInput(format!("{} is inside Kea's data folder", folder.display())));
        }
        if let Some(other) = checked.iter().find(|c| real.starts_with(c) || c.starts_with(&real)) {
            return Err(Error::InvalidInput(format!("{} and {} overlap: name each folder once", other.display(), real.display())));
        }
        checked.push(real);
    }
    Ok(checked)
}

impl Library {
    /// The registry in `data_dir` (none yet: only the default collection).
    pub fn load(data_dir: &Path) -> Result<Library> {
        let path = data_dir.join(REGISTRY_FILE);
        let mut collections = match std::fs::read_to_string(&path) {
            Ok(text) => {
                let file: RegistryFile = serde_json::from_str(&text).map_err(|e| Error::InvalidInput(format!("{}: {e}", path.display())))?;
                if file.version > FORMAT_VERSION {
                    return Err(Error::InvalidInput(format!("{} was written by a newer Kea (format {})", path.display(), file.version)));
                }
                file.collections
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(Error::io(format!("reading {}", path.display()), e)),
        };
        for c in &collections {
            let bad_dir = !c.is_default() && !is_index_dir_name(&c.dir);
            if bad_dir || !is_stored_name(&c.name) || (c.is_default() && c.name != DEFAULT_COLLECTION) {
                return Err(Error::InvalidInput(format!("{}: the collection {:?} is damaged (folder {:?})", path.display(), c.name, c.dir)));
            }
        }
        let secrets = crate::secrets::store_for(data_dir);
        for c in &mut collections {
            if let Some(remote) = c.settings.remote_embedder.as_mut().filter(|r| r.api_key.is_none()) {
                remote.api_key = secrets.get(&format!("{EMBEDDER_KEY_PREFIX}{}", c.dir))?;
            }
        }
        Ok(Library { data_dir: data_dir.to_path_buf(), collections })
    }

    /// A registry with no collection but the default one (when the file is unreadable).
    pub fn empty(data_dir: &Path) -> Library {
        Library { data_dir: data_dir.to_path_buf(), collections: Vec::new() }
    }

    /// Writes the registry atomically (0600); remote embedder keys go to the secret store.
    fn save(&self) -> Result<()> {
        let secrets = crate::secrets::store_for(&self.data_dir);
        let mut collections = self.collections.clone();
        for c in &mut collections {
            let name = format!("{EMBEDDER_KEY_PREFIX}{}", c.dir);
            match c.settings.remote_embedder.as_mut().and_then(|r| r.api_key.take()).filter(|k| !k.is_empty()) {
                Some(key) => secrets.set(&name, &key)?,
                None => secrets.delete(&name)?,
            }
        }
        let file = RegistryFile { version: FORMAT_VERSION, collections };
        let text = serde_json::to_string_pretty(&file).map_err(|e| Error::InvalidInput(e.to_string()))?;
        crate::secrets::write_private(&self.data_dir.join(REGISTRY_FILE), text.as_bytes())
    }

    /// Every collection, the default one first (its folder from `settings`, or `knowledge`).
    pub fn list(&self, settings: &Settings, knowledge: Option<PathBuf>) -> Vec<Collection> {
        let mut default = self.collections.iter().find(|c| c.is_default()).cloned().unwrap_or_else(|| Collection {
            name: DEFAULT_COLLECTION.into(),
            dir: String::new(),
            folders: Vec::new(),
            settings: CollectionSettings::default(),
        });
        default.folders = vec![settings.knowledge_dir(knowledge)];
        std::iter::once(default).chain(self.collections.iter().filter(|c| !c.is_default()).cloned()).collect()
    }

    /// The collections `names` name (case-insensitive; `all`: every one; none: the default).
    pub fn resolve(&self, names: &[String], settings: &Settings, knowledge: Option<PathBuf>) -> Result<Vec<Collection>> {
        let all = self.list(settings, knowledge);
        if names.iter().any(|n| same_name(n, ALL_COLLECTIONS)) {
            return Ok(all);
        }
        if names.is_empty() {
            return Ok(all.into_iter().take(1).collect());
        }
        let mut chosen: Vec<Collection> = Vec::new();
        for name in names {
            let found = all.iter().find(|c| same_name(&c.name, name)).ok_or_else(|| {
                let known: Vec<&str> = all.iter().map(|c| c.name.as_str()).collect();
                Error::NotFound(format!("no collection is called '{name}' (there are: {})", known.join(", ")))
            })?;
            if !chosen.iter().any(|c| c.name == found.name) {
                chosen.push(found.clone());
            }
        }
        Ok(chosen)
    }

    /// `name` checked, and free: no collection is called so.
    pub fn check_new_name(&self, name: &str) -> Result<String> {
        let name = checked_name(name)?;
        if names_the_default(&name) || self.collections.iter().any(|c| same_name(&c.name, &name)) {
            return Err(Error::InvalidInput(format!("a collection called '{name}' exists already: choose another name")));
        }
        Ok(name)
    }

    /// Registers a new collection over `folders` (nothing is indexed yet).
    pub fn create(&mut self, name: &str, folders: &[PathBuf], settings: CollectionSettings) -> Result<Collection> {
        let name = self.check_new_name(name)?;
        settings.validate()?;
        let folders = checked_folders(folders, &self.data_dir)?;
        let dir = self.free_index_dir(&name, true);
        let collection = Collection { dir, name, folders, settings };
        self.mark_owner(&collection)?;
        self.collections.push(collection.clone());
        self.save()?;
        Ok(collection)
    }

    /// The index folder for a new collection `name`: when `reuse_kept`,
    /// the kept index of a removed collection of this very name (found
    /// again, nothing re-embedded); else a name no collection uses and no
    /// folder on disk has, so a kept index (with its conversations) is
    /// never taken over by a collection of another name.
    fn free_index_dir(&self, name: &str, reuse_kept: bool) -> String {
        let root = self.data_dir.join(COLLECTIONS_DIR);
        let mut taken: Vec<String> = self.collections.iter().map(|c| c.dir.clone()).collect();
        let on_disk: Vec<String> =
            std::fs::read_dir(&root).map(|entries| entries.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect()).unwrap_or_default();
        let kept = on_disk
            .iter()
            .filter(|_| reuse_kept)
            .filter(|dir| is_index_dir_name(dir) && !taken.contains(dir))
            .find(|dir| std::fs::read_to_string(root.join(dir).join(NAME_FILE)).is_ok_and(|owner| same_name(&owner, name)));
        if let Some(dir) = kept {
            return dir.clone();
        }
        taken.extend(on_disk);
        index_dir_for(name, &taken.iter().map(String::as_str).collect::<Vec<_>>())
    }

    /// Records in `collection`'s index folder whose it is (see [`Self::free_index_dir`]).
    fn mark_owner(&self, collection: &Collection) -> Result<()> {
        if collection.is_default() {
            return Ok(());
        }
        let dir = self.index_dir(collection);
        std::fs::create_dir_all(&dir).map_err(|e| Error::io(format!("creating {}", dir.display()), e))?;
        std::fs::write(dir.join(NAME_FILE), &collection.name).map_err(|e| Error::io(format!("writing {}", dir.display()), e))
    }

    /// `folder` resolved (it need not exist yet: its nearest existing
    /// parent is, links and all, and what follows is plain names), when it
    /// is not inside the data folder.
    pub(crate) fn outside_data_folder(&self, folder: PathBuf) -> Result<PathBuf> {
        let data = self.data_dir.canonicalize().unwrap_or_else(|_| self.data_dir.clone());
        let existing = folder.ancestors().find(|a| a.exists()).unwrap_or(&folder);
        let rest = folder.strip_prefix(existing).unwrap_or(Path::new(""));
        if !rest.components().all(|c| matches!(c, std::path::Component::Normal(_))) {
            return Err(Error::InvalidInput(format!("{}: name a new folder without '..' after a folder that does not exist", folder.display())));
        }
        let real = existing.canonicalize().map_err(|e| Error::InvalidInput(format!("{} is not a folder Kea can read: {e}", folder.display())))?.join(rest);
        if real.starts_with(&data) {
            return Err(Error::InvalidInput(format!("{} is inside Kea's data folder: name a folder outside it for the documents", folder.display())));
        }
        Ok(real)
    }

    /// A new, empty folder beside the collections' indexes, for unpacking
    /// one (on the same disk, so it can be renamed into place).
    pub(crate) fn staging_dir(&self) -> Result<PathBuf> {
        let root = self.data_dir.join(COLLECTIONS_DIR);
        std::fs::create_dir_all(&root).map_err(|e| Error::io(format!("creating {}", root.display()), e))?;
        let dir = tempfile::Builder::new().prefix(".importing-").tempdir_in(&root).map_err(|e| Error::io("making a staging folder", e))?;
        Ok(dir.keep())
    }

    /// Registers a collection whose index is ready in `index` (moved into
    /// place under a folder name no index uses yet).
    pub(crate) fn adopt(&mut self, name: &str, index: &Path, folders: Vec<PathBuf>, settings: CollectionSettings) -> Result<Collection> {
        let name = self.check_new_name(name)?;
        let root = self.data_dir.join(COLLECTIONS_DIR);
        // An imported index never lands on a kept one.
        let dir = self.free_index_dir(&name, false);
        std::fs::rename(index, root.join(&dir)).map_err(|e| Error::io(format!("moving the index into {}", root.display()), e))?;
        let collection = Collection { name, dir, folders, settings };
        self.mark_owner(&collection)?;
        self.collections.push(collection.clone());
        self.save()?;
        Ok(collection)
    }

    /// Forgets a collection; its folders are never touched, its index is
    /// deleted only when `delete_index` (else it stays for a later re-add).
    pub fn remove(&mut self, name: &str, delete_index: bool) -> Result<Removed> {
        let position = self.position(name)?;
        let collection = self.collections.remove(position);
        self.save()?;
        // Its embedder's key goes with it (`save` writes only the others').
        crate::secrets::store_for(&self.data_dir).delete(&format!("{EMBEDDER_KEY_PREFIX}{}", collection.dir))?;
        let index_dir = self.index_dir(&collection);
        if delete_index {
            let meta = std::fs::symlink_metadata(&index_dir);
            // Only a real folder of Kea's own naming under `collections/` is ever deleted.
            if meta.is_ok_and(|m| m.is_dir()) && index_dir.parent() == Some(self.data_dir.join(COLLECTIONS_DIR).as_path()) {
                std::fs::remove_dir_all(&index_dir).map_err(|e| Error::io(format!("deleting {}", index_dir.display()), e))?;
            }
        }
        Ok(Removed { name: collection.name, index_dir, index_deleted: delete_index })
    }

    /// Renames a collection (its index folder stays where it is).
    pub fn rename(&mut self, from: &str, to: &str) -> Result<()> {
        let to = checked_name(to)?;
        let position = self.position(from)?;
        let clash = |c: &Collection| same_name(&c.name, &to) && !same_name(&c.name, from);
        if names_the_default(&to) || self.collections.iter().any(clash) {
            return Err(Error::InvalidInput(format!("a collection called '{to}' exists already")));
        }
        self.collections[position].name = to;
        self.mark_owner(&self.collections[position])?;
        self.save()
    }

    /// Points a collection at other folders (its documents are re-read at the next sync).
    pub fn set_folders(&mut self, name: &str, folders: &[PathBuf]) -> Result<()> {
        let position = self.position(name)?;
        self.collections[position].folders = checked_folders(folders, &self.data_dir)?;
        self.save()
    }

    /// Replaces a collection's settings (the default collection's too: its
    /// embedder is the app's, chosen in the model manager).
    pub fn set_settings(&mut self, name: &str, settings: CollectionSettings) -> Result<()> {
        settings.validate()?;
        if same_name(name, DEFAULT_COLLECTION) && !self.collections.iter().any(Collection::is_default) {
            let default = Collection { name: DEFAULT_COLLECTION.into(), dir: String::new(), folders: Vec::new(), settings: CollectionSettings::default() };
            self.collections.insert(0, default);
        }
        let position = self.collections.iter().position(|c| same_name(&c.name, name)).ok_or_else(|| self.not_found(name))?;
        self.collections[position].settings = settings;
        self.save()
    }

    /// Records the embedder a collection's index was (re)built with, so later
    /// runs keep it (the default collection's goes to the app's settings).
    pub fn remember_embedder(&mut self, name: &str, model: &str, remote: Option<RemoteEmbedConfig>) -> Result<()> {
        let position = self.position(name)?;
        let settings = &mut self.collections[position].settings;
        if settings.embedder.as_deref() == Some(model) && settings.remote_embedder == remote {
            return Ok(());
        }
        settings.embedder = Some(model.to_string());
        settings.remote_embedder = remote;
        self.save()
    }

    /// Where a collection's index lives.
    pub fn index_dir(&self, collection: &Collection) -> PathBuf {
        match collection.is_default() {
            true => self.data_dir.clone(),
            false => self.data_dir.join(COLLECTIONS_DIR).join(&collection.dir),
        }
    }

    /// The engine configuration of `collection`: the app's settings under
    /// the one precedence (file < environment < flags), then the
    /// collection's own folders, index folder and settings. An embedder
    /// named by a flag wins over the collection's.
    pub fn engine_config(&self, collection: &Collection, settings: &Settings, overrides: &Overrides) -> EngineConfig {
        // A collection imported without its documents has no folder (never the app's).
        let primary = match collection.folders.first() {
            Some(folder) => folder.clone(),
            None if collection.is_default() => settings.knowledge_dir(None),
            None => PathBuf::new(),
        };
        let mut config = settings.engine_config_with(primary, self.data_dir.clone(), overrides);
        config.more_folders = collection.folders.iter().skip(1).cloned().collect();
        config.collection = collection.name.clone();
        let own = &collection.settings;
        if !collection.is_default() {
            config.data_dir = self.index_dir(collection);
            // Team mode shares the app's own index; a named collection is this machine's.
            config.team = None;
            if !config.model_explicit {
                match (&own.remote_embedder, &own.embedder) {
                    (Some(remote), _) => config.use_remote(remote.clone()),
                    (None, Some(id)) => config.model_id = id.clone(),
                    (None, None) => {}
                }
                config.model_explicit = false;
            }
        }
        config.chunking.target_chars = own.chunk_chars.unwrap_or(config.chunking.target_chars);
        config.chunking.overlap_chars = own.chunk_overlap.unwrap_or(config.chunking.overlap_chars);
        config.chunking.max_chars = config.chunking.max_chars.max(config.chunking.target_chars * 3);
        if own.rerank == Some(false) {
            config.reranker_id = None;
        }
        config.strictness = own.strictness;
        config
    }

    /// The registered collection called `name` (the default one is not registered).
    fn position(&self, name: &str) -> Result<usize> {
        if same_name(name, DEFAULT_COLLECTION) {
            return Err(Error::InvalidInput("the default collection is the app's own knowledge folder: choose its folder in the settings".into()));
        }
        self.collections.iter().position(|c| !c.is_default() && same_name(&c.name, name)).ok_or_else(|| self.not_found(name))
    }

    fn not_found(&self, name: &str) -> Error {
        let known: Vec<&str> =
            std::iter::once(DEFAULT_COLLECTION).chain(self.collections.iter().filter(|c| !c.is_default()).map(|c| c.name.as_str())).collect();
        Error::NotFound(format!("no collection is called '{name}' (there are: {})", known.join(", ")))
    }
}

/// Keeps an embedder the caller named (a flag) once its index opened with
/// it, so later runs without the flag keep using it: the default
/// collection's goes to the app's settings, another's to the registry.
/// An unreadable settings file is never overwritten (it may hold a key).
pub fn remember_explicit_embedder(config: &EngineConfig) -> Result<()> {
    if !config.model_explicit {
        return Ok(());
    }
    let model = config.model_id.clone();
    let remote = config.remote_embedder.clone().filter(|r| r.model_id() == model);
    if config.collection != DEFAULT_COLLECTION {
        // `<app data>/collections/<dir>` (see `Library::index_dir`).
        let Some(app_data) = config.data_dir.parent().and_then(Path::parent) else { return Ok(()) };
        return Library::load(app_data)?.remember_embedder(&config.collection, &model, remote);
    }
    let path = config.data_dir.join(Settings::FILE_NAME);
    let Ok(mut settings) = Settings::load(&path) else { return Ok(()) };
    if settings.models.embedder.as_ref() != Some(&model) || settings.models.remote_embedder != remote {
        settings.models.embedder = Some(model);
        settings.models.remote_embedder = remote;
        settings.save(&path)?;
    }
    Ok(())
}

/// A collection's embedder as the switcher and `kea kb list` show it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EmbedderState {
    /// The index's embedder, else the one a new index would use.
    pub embedder: String,
    /// Whether the collection has an index yet.
    pub indexed: bool,
    /// Its documents are in a language the embedder does not read.
    pub warning: Option<String>,
}

/// The embedder of the collection `config` opens, and a warning when it
/// does not read one of `collection`'s document languages.
pub fn embedder_state(collection: &Collection, config: &EngineConfig) -> EmbedderState {
    let indexed = crate::Engine::indexed_model(&config.data_dir).ok().flatten();
    let embedder = indexed.clone().unwrap_or_else(|| config.model_id.clone());
    let languages = match config.remote_embedder.as_ref().filter(|r| r.model_id() == embedder) {
        Some(remote) => remote.languages.clone(),
        None => config.model_paths.resolve(&embedder).map(|m| m.manifest.languages).unwrap_or_default(),
    };
    let unread: Vec<&str> = collection.settings.languages.iter().filter(|l| !languages.is_empty() && !languages.contains(l)).map(String::as_str).collect();
    let warning = (!unread.is_empty()).then(|| {
        format!(
            "the embedder {embedder} reads only {}: passages in {} are found by their words alone; choose a multilingual embedder for '{}' (kea models list)",
            languages.join(", "),
            unread.join(", "),
            collection.name
        )
    });
    EmbedderState { embedder, indexed: indexed.is_some(), warning }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_with_a_hidden_character_is_refused_but_an_emoji_is_a_name() {
        for name in ["Recipes ❤️", "👨‍👩‍👧 family", "Notes", "资料", "🧑🏽‍💻 work"] {
            assert!(checked_name(name).is_ok(), "{name}");
        }
        let look_alikes = ["A\u{FE0F}", "Bad\u{200D}", "Wo\u{1BCA0}rk", "A\u{2028}B", "\u{E000}x", "A\u{378}", "Work\u{FFF9}", "Ｂad\u{115F}"];
        // An emoji's selector twice, a joiner at the end or after a lone symbol.
        let padded_emoji = ["Recipes \u{2764}\u{FE0F}\u{FE0F}", "Recipes \u{2764}\u{FE0F}\u{200D}", "Work\u{2122}\u{200D}"];
        for name in look_alikes.iter().chain(&padded_emoji) {
            assert!(checked_name(name).is_err(), "{name:?}");
        }
        assert!(same_name("Work\u{2122}\u{FE0F}", "work\u{2122}"), "a symbol's emoji look is the same name");
        assert!(same_name("Recipes \u{1F355}\u{200D}\u{1F35D}", "recipes \u{1F355}\u{1F35D}") && same_name("ev  il", "ev il"));
        assert!(checked_name("Tag`\u{200D}`").is_err(), "a joiner between two accents is no emoji");
        // A registry an older Kea wrote opens with the names it was given then.
        assert!(is_stored_name("Bad\u{200B}") && !is_stored_name("all") && !is_stored_name("a\u{7}"));
    }

    #[test]
    fn no_collection_takes_the_name_the_app_gives_the_default_one() {
        let data = tempfile::tempdir().unwrap();
        let folder = tempfile::tempdir().unwrap();
        let mut library = Library::empty(data.path());
        for name in ["default", "My documents", "my  DOCUMENTS", "Ｍｙ documents", "我的文档"] {
            assert!(library.check_new_name(name).is_err(), "{name}");
        }
        library.create("Notes", &[folder.path().to_path_buf()], CollectionSettings::default()).unwrap();
        assert!(library.rename("Notes", "My Documents").is_err() && library.rename("Notes", "我的文档").is_err());
        assert!(library.rename("Notes", "My documents 2").is_ok());
    }
}
