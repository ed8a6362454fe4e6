//! `.keakb`: one collection as one file, to move or share it. A zip archive
//! of `manifest.json` (format version, embedder and dimension, settings,
//! the documents with their hashes, every other entry's size and BLAKE3),
//! `index/kea.sqlite3` (a consistent copy of the store: documents, chunks,
//! full text and the exact vectors — no conversations; the vector index is
//! derived and rebuilt at the first open) and, optionally, `files/<key>`
//! (the source documents). Import treats the archive as data, never as code
//! or configuration that acts on its own: entry names come from a fixed set
//! or are checked document keys; the manifest's name is checked like any
//! collection name and names the documents' folder only as one plain file
//! name; declared sizes, compression ratios and the free disk space are
//! checked before unpacking and every entry against the manifest's size and
//! hash; the store is only read, into a store Kea makes
//! ([`crate::store::Store::copy_untrusted`]); a remote embedder it names is
//! kept only when the person confirmed its address, and then reaches only
//! public addresses. Everything is unpacked into a staging folder that
//! becomes the collection only when all of it passed — a refused archive
//! leaves nothing behind.

use std::io::{Read, Write};
use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::collections::{Collection, CollectionSettings, Library};
use crate::error::{Error, Result};
use crate::Engine;

/// The file extension of an exported collection.
pub const EXTENSION: &str = "keakb";
const FORMAT: &str = "kea-collection";
const VERSION: u32 = 1;
const MANIFEST: &str = "manifest.json";
const STORE_ENTRY: &str = "index/kea.sqlite3";
const FILES_PREFIX: &str = "files/";
/// No entry may declare more (a 1M-chunk store is ~4.3 GB).
const MAX_ENTRY_BYTES: u64 = 8 << 30;
const MAX_TOTAL_BYTES: u64 = 32 << 30;
const MAX_MANIFEST_BYTES: u64 = 64 << 20;
const MAX_ENTRIES: usize = 200_000;
/// Entries larger than this may not be compressed more than [`MAX_RATIO`]
/// to 1 (real stores and documents compress far less; a zip bomb far more).
const RATIO_FREE_BYTES: u64 = 1 << 20;
const MAX_RATIO: u64 = 200;
/// Archives unpacking to more than this may not be compressed more than
/// [`MAX_RATIO`] to 1 as a whole.
const WHOLE_RATIO_FREE_BYTES: u64 = 8 << 20;
/// Room left on the disk after unpacking.
const FREE_MARGIN: u64 = 64 << 20;
/// The widest vectors accepted (the largest embedders have a few thousand).
const MAX_DIM: usize = 16_384;
/// Where the archive's store is unpacked in the staging folder (read only),
/// and the store file Kea makes from it.
const ARCHIVED_STORE: &str = "archived.sqlite3";
const STORE_FILE: &str = "kea.sqlite3";

/// What the archive says it holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub format: String,
    pub version: u32,
    pub name: String,
    /// The embedding model of the vectors, and their dimension.
    pub embedder: String,
    pub dim: usize,
    /// The collection's settings (a remote embedder's key is never exported).
    pub settings: CollectionSettings,
    pub documents: Vec<ManifestDocument>,
    /// Every entry but the manifest: its name, size and BLAKE3.
    pub entries: Vec<ManifestEntry>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ManifestDocument {
    pub path: String,
    pub size: u64,
    pub content_hash: Option<String>,
    pub chunks: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ManifestEntry {
    pub name: String,
    pub bytes: u64,
    pub blake3: String,
}

/// What an export wrote.
#[derive(Debug, Clone, Serialize)]
pub struct Exported {
    pub file: PathBuf,
    pub documents: usize,
    pub files: usize,
    pub bytes: u64,
}

/// What an import made.
#[derive(Debug, Clone, Serialize)]
pub struct Imported {
    pub name: String,
    pub index_dir: PathBuf,
    /// Where the source documents were unpacked (`None`: exported without them).
    pub folder: Option<PathBuf>,
    pub documents: usize,
    pub embedder: String,
    /// Whether its embedder is here; if not, searching needs it installed or
    /// the collection re-embedded with another (`kea index --kb … --embedding-model … --reembed`).
    pub embedder_available: bool,
}

fn bad_archive(file: &Path, why: impl std::fmt::Display) -> Error {
    Error::InvalidInput(format!("{} is not a usable Kea collection file: {why}", file.display()))
}

/// Where [`export`] writes: the file, whether an existing one is replaced,
/// and Kea's data folder (nothing is written inside it; see [`crate::output`]).
pub struct Destination<'a> {
    pub file: &'a Path,
    pub replace: bool,
    pub data_folder: &'a Path,
}

/// Writes `collection` (open as `engine`) to `dest`, with its source files when `with_files`.
pub fn export(engine: &Engine, collection: &Collection, dest: &Destination, with_files: bool) -> Result<Exported> {
    // Checked before any work, and again when the file is staged.
    crate::output::check(dest.file, dest.replace, dest.data_folder)?;
    let staging = tempfile::tempdir().map_err(|e| Error::io("making a scratch folder", e))?;
    let store_copy = staging.path().join("kea.sqlite3");
    engine.indexer().snapshot(&store_copy)?;
    let status = engine.status()?;
    let (embedder, dim) = (status.model_id.clone().unwrap_or_default(), status.dim.unwrap_or_default());
    let documents: Vec<ManifestDocument> = status
        .documents
        .iter()
        .filter(|d| d.kind.is_some())
        .map(|d| ManifestDocument { path: d.path.clone(), size: d.size, content_hash: d.content_hash.clone(), chunks: d.chunk_count })
        .collect();
    let mut files = Vec::new();
    if with_files {
        for doc in &documents {
            // Only files that are still where the index says (inside the collection's folders),
            // under a name an import accepts.
            let entry = format!("{FILES_PREFIX}{}", doc.path);
            if let (Ok(path), true) = (engine.documents().path(&doc.path), allowed_entry(&entry)) {
                files.push((entry, path));
            }
        }
    }
    let mut settings = collection.settings.clone();
    if let Some(remote) = settings.remote_embedder.as_mut() {
        remote.api_key = None;
    }
    // The default collection travels under its folder's name ("default" is every data folder's own),
    // when that is one a new collection may take (an import checks it).
    let folder_name = engine.folders().primary().and_then(Path::file_name).map(|f| f.to_string_lossy().into_owned());
    let usable = |f: String| crate::collections::checked_name(&f).ok().filter(|f| !crate::collections::names_the_default(f));
    let name = match (collection.is_default(), folder_name.and_then(usable)) {
        (true, Some(folder)) => folder,
        _ => collection.name.clone(),
    };
    let manifest = Manifest { format: FORMAT.into(), version: VERSION, name, embedder, dim, settings, documents, entries: Vec::new() };
    write_archive(dest, manifest, &store_copy, &files, engine.config().max_file_bytes)
}

/// Zips the `store` snapshot, the documents' `files` and the manifest (with
/// their sizes and hashes) into `dest`, through a new temporary file renamed
/// at the end. A document that is no longer a regular file of at most
/// `max_file_bytes` (a pipe in its place never blocks) stays out, as one
/// that is gone does.
fn write_archive(dest: &Destination, mut manifest: Manifest, store: &Path, files: &[(String, PathBuf)], max_file_bytes: u64) -> Result<Exported> {
    let io = |e: std::io::Error| Error::io(format!("writing {}", dest.file.display()), e);
    let zip_error = |e: zip::result::ZipError| Error::io(format!("writing {}", dest.file.display()), std::io::Error::other(e));
    let mut zip = zip::ZipWriter::new(crate::output::stage(dest.file, dest.replace, dest.data_folder)?);
    let options = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated).large_file(true);
    let mut add = |name: &str, from: &mut std::fs::File, limit: u64| -> Result<ManifestEntry> {
        zip.start_file(name, options).map_err(zip_error)?;
        let (bytes, blake3) = copy_hashing(from, &mut zip, limit).map_err(io)?;
        Ok(ManifestEntry { name: name.to_string(), bytes, blake3 })
    };
    let mut snapshot = std::fs::File::open(store).map_err(|e| Error::io(format!("reading {}", store.display()), e))?;
    manifest.entries.push(add(STORE_ENTRY, &mut snapshot, u64::MAX)?);
    for (name, path) in files {
        match crate::scan::open_regular(path) {
            Ok(Some((mut file, size))) if size <= max_file_bytes => manifest.entries.push(add(name, &mut file, max_file_bytes)?),
            _ => continue,
        }
    }
    zip.start_file(MANIFEST, options).map_err(zip_error)?;
    let text = serde_json::to_vec_pretty(&manifest).map_err(|e| Error::InvalidInput(e.to_string()))?;
    zip.write_all(&text).map_err(io)?;
    let staged = zip.finish().map_err(zip_error)?;
    let bytes = staged.as_file().metadata().map_err(io)?.len();
    crate::output::persist(staged, dest.file, dest.replace)?;
    let files = manifest.entries.len() - 1;
    Ok(Exported { file: dest.file.to_path_buf(), documents: manifest.documents.len(), files, bytes })
}

/// Copies at most `limit` bytes from `from` to `to`, hashing them; returns
/// the count and the hash (a source longer than `limit` stops at `limit + 1`).
fn copy_hashing(from: &mut impl Read, to: &mut impl Write, limit: u64) -> std::io::Result<(u64, String)> {
    let mut hasher = blake3::Hasher::new();
    let mut buffer = vec![0u8; 1 << 16];
    let mut total = 0u64;
    let mut limited = from.take(limit.saturating_add(1));
    loop {
        let n = limited.read(&mut buffer)?;
        if n == 0 {
            return Ok((total, hasher.finalize().to_hex().to_string()));
        }
        hasher.update(&buffer[..n]);
        to.write_all(&buffer[..n])?;
        total += n as u64;
    }
}

/// Whether `name` is an entry an archive may hold: the manifest, the
/// store, or `files/` + a document key (plain components with no control
/// or direction character, a kind Kea reads).
fn allowed_entry(name: &str) -> bool {
    if name == MANIFEST || name == STORE_ENTRY {
        return true;
    }
    let Some(key) = name.strip_prefix(FILES_PREFIX) else { return false };
    let path = Path::new(key);
    let plain = |c: char| c != '\\' && !c.is_control() && !crate::import::is_bidi_control(c);
    !key.is_empty()
        && key.chars().all(plain)
        && path.components().all(|c| matches!(c, Component::Normal(_)))
        && crate::extract::DocKind::from_path(path).is_some()
}

/// Where an archive's documents go.
#[derive(Debug, Clone, Copy)]
pub enum DocumentsFolder<'a> {
    /// This folder, which must be missing or empty (the person named it).
    Exactly(&'a Path),
    /// A new folder directly inside this one, named after the collection
    /// ([`crate::collections::new_folder_for`]: never outside it).
    Inside(&'a Path),
}

/// Where to unpack an archive, what to call the collection, and what the
/// person confirmed.
pub struct ImportTarget<'a> {
    /// The collection's name (default: the one in the archive).
    pub name: Option<&'a str>,
    /// Where its source files go, when it has them.
    pub folder: DocumentsFolder<'a>,
    pub model_paths: &'a crate::model::ModelPaths,
    /// The remote embedder address the person confirmed (it must be the
    /// archive's, in full): an archive that names one imports only so.
    pub trust_embedder: Option<&'a str>,
    /// Every folder a collection reads (the default one's knowledge folder
    /// too): the documents never go inside one, where they would join that
    /// collection at its next sync.
    pub collection_folders: &'a [PathBuf],
}

/// What an archive holds, read from its checked manifest before import.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    pub name: String,
    pub documents: usize,
    /// Whether it carries its source documents.
    pub has_files: bool,
    /// The address of the remote embedder it names, which receives every
    /// question asked of it: the person confirms it before import.
    pub remote_embedder: Option<String>,
}

/// What `archive` holds (its entries and manifest checked as on import).
pub fn inspect(archive: &Path) -> Result<Summary> {
    let file = std::fs::File::open(archive).map_err(|e| Error::io(format!("reading {}", archive.display()), e))?;
    let mut zip = zip::ZipArchive::new(file).map_err(|e| bad_archive(archive, e))?;
    let declared = declared_entries(&mut zip, archive)?;
    let manifest = read_manifest(&mut zip, archive)?;
    check_manifest(&manifest, &declared, archive)?;
    Ok(Summary {
        name: manifest.name.clone(),
        documents: manifest.documents.len(),
        has_files: manifest.entries.iter().any(|e| e.name.starts_with(FILES_PREFIX)),
        remote_embedder: manifest.settings.remote_embedder.as_ref().map(|r| r.base_url.clone()),
    })
}

/// A staging folder removed on drop unless kept.
struct Staging(Option<PathBuf>);

impl Drop for Staging {
    fn drop(&mut self) {
        if let Some(dir) = self.0.take() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// Adds the collection in `archive` to `library` (checked as the module says).
pub fn import(library: &mut Library, archive: &Path, target: &ImportTarget) -> Result<Imported> {
    let file = std::fs::File::open(archive).map_err(|e| Error::io(format!("reading {}", archive.display()), e))?;
    let mut zip = zip::ZipArchive::new(file).map_err(|e| bad_archive(archive, e))?;
    let declared = declared_entries(&mut zip, archive)?;
    let mut manifest = read_manifest(&mut zip, archive)?;
    check_manifest(&manifest, &declared, archive)?;
    trust_embedder(&mut manifest.settings, target.trust_embedder)?;
    let name = library.check_new_name(target.name.unwrap_or(&manifest.name))?;
    let has_files = manifest.entries.iter().any(|e| e.name.starts_with(FILES_PREFIX));
    let folder = if has_files { Some(new_documents_folder(library, target, &name)?) } else { None };
    let staging = Staging(Some(library.staging_dir()?));
    let root = staging.0.clone().expect("staging folder");
    check_free_space(&manifest, &root, folder.as_deref())?;
    let mut written = 0u64;
    for entry in &manifest.entries {
        written += unpack(&mut zip, entry, &root, archive)?;
    }
    if written > MAX_TOTAL_BYTES {
        return Err(bad_archive(archive, "it unpacks to more than its manifest says"));
    }
    let documents = copy_store(&root, &manifest, archive)?;
    let folders = match &folder {
        Some(folder) => {
            move_dir(&root.join("files"), folder)?;
            vec![folder.clone()]
        }
        None => Vec::new(),
    };
    let collection = library.adopt(&name, &root.join("index"), folders, manifest.settings.clone())?;
    drop(staging); // what is left of the staging folder
    let embedder_available = manifest.settings.remote_embedder.is_some() || target.model_paths.resolve(&manifest.embedder).is_ok();
    Ok(Imported { index_dir: library.index_dir(&collection), name: collection.name, folder, documents, embedder: manifest.embedder, embedder_available })
}

/// The folder the documents of the collection `name` go to: resolved,
/// outside the data folder and outside every folder a collection reads.
fn new_documents_folder(library: &Library, target: &ImportTarget, name: &str) -> Result<PathBuf> {
    let folder = library.outside_data_folder(documents_folder(target.folder, name)?)?;
    for read in target.collection_folders {
        let read = read.canonicalize().unwrap_or_else(|_| read.clone());
        if folder.starts_with(&read) {
            return Err(Error::InvalidInput(format!(
                "the documents would go to {}, inside {}, which a collection reads (they would join it): name a folder outside it for them",
                folder.display(),
                read.display()
            )));
        }
    }
    Ok(folder)
}

/// The folder the documents of the collection `name` go to (checked as
/// [`DocumentsFolder`] says).
fn documents_folder(choice: DocumentsFolder, name: &str) -> Result<PathBuf> {
    let folder = match choice {
        DocumentsFolder::Exactly(folder) if folder.exists() && !folder.is_dir() => {
            return Err(Error::InvalidInput(format!("{} is not a folder: name a new or empty folder for the documents", folder.display())))
        }
        DocumentsFolder::Exactly(folder) if folder.read_dir().is_ok_and(|mut d| d.next().is_some()) => {
            return Err(Error::InvalidInput(format!("{} is not empty: name a new or empty folder for the documents", folder.display())))
        }
        DocumentsFolder::Exactly(folder) => folder.to_path_buf(),
        DocumentsFolder::Inside(parent) => crate::collections::new_folder_for(parent, name)?,
    };
    std::path::absolute(folder).map_err(|e| Error::io("resolving the folder", e))
}

/// A remote embedder an archive names is kept only when the person
/// confirmed its address, in full; it then reaches only public addresses.
fn trust_embedder(settings: &mut CollectionSettings, trusted: Option<&str>) -> Result<()> {
    let Some(remote) = settings.remote_embedder.as_mut() else { return Ok(()) };
    // Shown to the person to confirm: a plain web address, nothing a terminal or a bidi override could redraw.
    if !remote.base_url.chars().all(|c| c.is_ascii_graphic()) || remote.base_url.len() > 2048 {
        return Err(Error::InvalidInput("this collection file names a remote embedder whose address is not a plain web address".into()));
    }
    if trusted.map(str::trim) != Some(remote.base_url.as_str()) {
        return Err(Error::InvalidInput(format!(
            "this collection file names a remote embedder, {}, which would receive every question asked of it: \
             import it only if you trust that address, by confirming it in full (kea kb import FILE --trust-embedder {})",
            remote.base_url,
            crate::shell::word(&remote.base_url)
        )));
    }
    remote.api_key = None;
    remote.public_only = true;
    Ok(())
}

/// Every entry's name and declared size, refused when the archive holds
/// too many, an unknown or repeated name, a link or folder, declares too
/// much, or compresses a large entry more than a real one would.
fn declared_entries(zip: &mut zip::ZipArchive<std::fs::File>, archive: &Path) -> Result<Vec<(String, u64)>> {
    if zip.len() > MAX_ENTRIES {
        return Err(bad_archive(archive, format!("it holds {} entries", zip.len())));
    }
    let mut entries: Vec<(String, u64)> = Vec::with_capacity(zip.len());
    let mut seen = std::collections::HashSet::with_capacity(zip.len());
    let (mut total, mut compressed) = (0u64, 0u64);
    for i in 0..zip.len() {
        let entry = zip.by_index_raw(i).map_err(|e| bad_archive(archive, e))?;
        let name = entry.name().to_string();
        let link = entry.unix_mode().is_some_and(|mode| mode & 0o170000 == 0o120000);
        if entry.is_dir() || link || !allowed_entry(&name) || !seen.insert(name.clone()) {
            return Err(bad_archive(archive, format!("it holds an entry Kea does not accept: {:?}", name.escape_debug().take(200).collect::<String>())));
        }
        total = total.saturating_add(entry.size());
        if entry.size() > MAX_ENTRY_BYTES || total > MAX_TOTAL_BYTES {
            return Err(bad_archive(archive, format!("{name} declares {} MB, over the limit", entry.size() >> 20)));
        }
        if entry.size() > RATIO_FREE_BYTES && entry.size() / entry.compressed_size().max(1) > MAX_RATIO {
            return Err(bad_archive(archive, format!("{name} is compressed over {MAX_RATIO} to 1, as no real collection is")));
        }
        compressed = compressed.saturating_add(entry.compressed_size());
        entries.push((name, entry.size()));
    }
    // The whole archive too: many entries just under the per-entry bound
    // unpack to gigabytes all the same.
    if total > WHOLE_RATIO_FREE_BYTES && total / compressed.max(1) > MAX_RATIO {
        return Err(bad_archive(archive, format!("its entries are compressed over {MAX_RATIO} to 1 together, as no real collection is")));
    }
    Ok(entries)
}

fn read_manifest(zip: &mut zip::ZipArchive<std::fs::File>, archive: &Path) -> Result<Manifest> {
    let mut text = Vec::new();
    let entry = zip.by_name(MANIFEST).map_err(|_| bad_archive(archive, "it has no manifest"))?;
    entry.take(MAX_MANIFEST_BYTES).read_to_end(&mut text).map_err(|e| bad_archive(archive, e))?;
    let mut manifest: Manifest = serde_json::from_slice(&text).map_err(|e| bad_archive(archive, format!("its manifest is damaged: {e}")))?;
    if manifest.format != FORMAT {
        return Err(bad_archive(archive, format!("its format is {:?}", manifest.format)));
    }
    if manifest.version > VERSION {
        return Err(bad_archive(archive, format!("it was written by a newer Kea (format version {})", manifest.version)));
    }
    if !(1..=MAX_DIM).contains(&manifest.dim) {
        return Err(bad_archive(archive, format!("its vectors have {} dimensions", manifest.dim)));
    }
    manifest.name = crate::collections::checked_name(&manifest.name).map_err(|e| bad_archive(archive, e))?;
    if !is_embedder_id(&manifest.embedder) {
        return Err(bad_archive(archive, format!("its embedder {:?} is not a model id", manifest.embedder.chars().take(80).collect::<String>())));
    }
    manifest.settings.validate()?;
    Ok(manifest)
}

/// Whether `id` names an embedder as an index records it: a model id, or
/// `remote:` and a remote model's name (printable ASCII, no spaces).
fn is_embedder_id(id: &str) -> bool {
    match id.strip_prefix(crate::remote_embed::REMOTE_PREFIX) {
        Some(name) => !name.is_empty() && name.len() <= 256 && name.chars().all(|c| c.is_ascii_graphic()),
        None => crate::model::ModelId::parse(id).is_ok(),
    }
}

/// The manifest lists exactly the archive's entries (but itself), with
/// their declared sizes, and the store among them.
fn check_manifest(manifest: &Manifest, declared: &[(String, u64)], archive: &Path) -> Result<()> {
    let mut listed: Vec<(&str, u64)> = manifest.entries.iter().map(|e| (e.name.as_str(), e.bytes)).collect();
    let mut found: Vec<(&str, u64)> = declared.iter().filter(|(n, _)| n != MANIFEST).map(|(n, b)| (n.as_str(), *b)).collect();
    listed.sort_unstable();
    found.sort_unstable();
    if listed != found || !listed.iter().any(|(n, _)| *n == STORE_ENTRY) {
        return Err(bad_archive(archive, "its entries differ from its manifest"));
    }
    Ok(())
}

/// Refuses an archive whose unpacked entries (and the store's copy) would
/// not fit the free space of the staging folder, or its documents that of
/// their folder.
fn check_free_space(manifest: &Manifest, staging: &Path, folder: Option<&Path>) -> Result<()> {
    let bytes = |files: bool| manifest.entries.iter().filter(|e| e.name.starts_with(FILES_PREFIX) == files).map(|e| e.bytes).sum::<u64>();
    let (files, store) = (bytes(true), bytes(false));
    let mut needs = vec![(staging.to_path_buf(), files + 2 * store)];
    // The documents are moved, or copied when their folder is on another disk.
    if let Some(existing) = folder.and_then(|f| f.ancestors().find(|a| a.is_dir())) {
        needs.push((existing.to_path_buf(), files));
    }
    for (place, needed) in needs {
        if let Some(free) = free_bytes(&place).filter(|free| needed.saturating_add(FREE_MARGIN) > *free) {
            return Err(Error::InvalidInput(format!(
                "this collection unpacks to {} MB, and {} has {} MB free: make room first",
                needed >> 20,
                place.display(),
                free >> 20
            )));
        }
    }
    Ok(())
}

/// The bytes free for this user on the disk of `path` (`None`: unknown).
#[allow(clippy::useless_conversion)] // the counts are narrower than u64 on some platforms
fn free_bytes(path: &Path) -> Option<u64> {
    #[cfg(unix)]
    {
        let stat = nix::sys::statvfs::statvfs(path).ok()?;
        Some(u64::from(stat.blocks_available()).saturating_mul(u64::from(stat.fragment_size())))
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        None
    }
}

/// Where an entry is unpacked under the staging folder: the archive's
/// store apart (it is only read, into a store Kea makes), files as named.
fn staged_path(root: &Path, name: &str) -> PathBuf {
    match name {
        STORE_ENTRY => root.join(ARCHIVED_STORE),
        _ => root.join(name),
    }
}

/// Unpacks one entry under `root`, checking its size and hash; the bytes written.
fn unpack(zip: &mut zip::ZipArchive<std::fs::File>, entry: &ManifestEntry, root: &Path, archive: &Path) -> Result<u64> {
    let dest = staged_path(root, &entry.name);
    if let Some(parent) = dest.parent() {
        std::fs::create_dir_all(parent).map_err(|e| Error::io(format!("creating {}", parent.display()), e))?;
    }
    let mut out = std::fs::File::create(&dest).map_err(|e| Error::io(format!("writing {}", dest.display()), e))?;
    let mut source = zip.by_name(&entry.name).map_err(|e| bad_archive(archive, e))?;
    let (bytes, hash) = copy_hashing(&mut source, &mut out, entry.bytes).map_err(|e| bad_archive(archive, format!("{}: {e}", entry.name)))?;
    if bytes != entry.bytes || hash != entry.blake3 {
        return Err(bad_archive(archive, format!("{} is damaged (its size or checksum differs from the manifest)", entry.name)));
    }
    Ok(bytes)
}

/// Copies the unpacked store's rows into a new store in `root/index`
/// (see [`crate::store::Store::copy_untrusted`]), which must hold the
/// manifest's embedder, and deletes the unpacked file; the number of documents.
fn copy_store(root: &Path, manifest: &Manifest, archive: &Path) -> Result<usize> {
    let (unpacked, index) = (root.join(ARCHIVED_STORE), root.join("index"));
    std::fs::create_dir_all(&index).map_err(|e| Error::io(format!("creating {}", index.display()), e))?;
    let store = crate::store::Store::copy_untrusted(&unpacked, &index.join(STORE_FILE), manifest.dim)
        .map_err(|e| bad_archive(archive, format!("its index is refused: {e}")))?;
    if store.model()? != Some((manifest.embedder.clone(), manifest.dim)) {
        return Err(bad_archive(archive, "its index was embedded with another model than its manifest says"));
    }
    let documents = store.documents()?.len();
    drop(store);
    std::fs::remove_file(&unpacked).map_err(|e| Error::io(format!("removing {}", unpacked.display()), e))?;
    Ok(documents)
}

/// Moves a folder's content to `to` (a rename, else a copy when they are on different disks).
fn move_dir(from: &Path, to: &Path) -> Result<()> {
    let io = |e: std::io::Error| Error::io(format!("moving the documents to {}", to.display()), e);
    if let Some(parent) = to.parent() {
        std::fs::create_dir_all(parent).map_err(io)?;
    }
    if to.exists() {
        std::fs::remove_dir(to).map_err(io)?;
    }
    if std::fs::rename(from, to).is_ok() {
        return Ok(());
    }
    copy_tree(from, to).map_err(io)
}

fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), target)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest_of(entries: &[(&str, u64)]) -> Manifest {
        Manifest {
            format: FORMAT.into(),
            version: VERSION,
            name: "n".into(),
            embedder: "m".into(),
            dim: 4,
            settings: CollectionSettings::default(),
            documents: Vec::new(),
            entries: entries.iter().map(|(name, bytes)| ManifestEntry { name: name.to_string(), bytes: *bytes, blake3: String::new() }).collect(),
        }
    }

    #[test]
    fn an_archive_larger_than_the_free_disk_space_is_refused_before_unpacking() {
        let dir = tempfile::tempdir().unwrap();
        let huge = manifest_of(&[(STORE_ENTRY, 1 << 40), ("files/a.md", 1 << 50)]);
        let refused = check_free_space(&huge, dir.path(), Some(&dir.path().join("docs"))).unwrap_err();
        assert!(refused.to_string().contains("make room"), "{refused}");
        assert!(check_free_space(&manifest_of(&[(STORE_ENTRY, 4096)]), dir.path(), None).is_ok());
    }

    #[test]
    fn only_the_confirmed_address_keeps_an_archive_remote_embedder_and_then_public_only() {
        let remote = crate::remote_embed::RemoteEmbedConfig {
            base_url: "https://embed.example.com/v1".into(),
            model: "e".into(),
            api_key: Some("planted".into()),
            ..Default::default()
        };
        let mut settings = CollectionSettings { remote_embedder: Some(remote), ..Default::default() };
        for wrong in [None, Some("https://embed.example.com"), Some("https://other.example.com/v1")] {
            let refused = trust_embedder(&mut settings.clone(), wrong).unwrap_err();
            assert!(refused.to_string().contains("--trust-embedder https://embed.example.com/v1"), "{refused}");
        }
        let mut hidden = settings.clone();
        hidden.remote_embedder.as_mut().unwrap().base_url = "https://good.example/v1\u{1b}[2K\u{202e}".into();
        assert!(trust_embedder(&mut hidden, Some("https://good.example/v1")).unwrap_err().to_string().contains("not a plain web address"));
        trust_embedder(&mut settings, Some("https://embed.example.com/v1")).unwrap();
        let kept = settings.remote_embedder.unwrap();
        assert!(kept.public_only && kept.api_key.is_none());
        assert!(trust_embedder(&mut CollectionSettings::default(), None).is_ok(), "no remote embedder, nothing to confirm");
    }
}
