//! An embedded GGUF language model: where it is (an explicit file or an
//! installed folder's `kea-model.json`), how to prompt it, and whether its
//! measured groundedness lets it write answers. Shared by the provider
//! choice (`select`) and the llama.cpp provider (`llama`).

use std::path::{Path, PathBuf};

/// Share of answer sentences a model must ground in a cited passage to
/// write answers in `auto` (see `kea eval --answers`).
pub const GROUNDEDNESS_FLOOR: f32 = 0.6;

/// Groundedness measured with `scripts/groundedness.py` on 10 questions of
/// tests/golden/sample-knowledge.jsonl (5 zh, 5 en), per embedded model id:
/// SmolLM2 cited nothing; gemma mostly echoed the sources. A manifest's own
/// `"groundedness"` takes precedence; unmeasured models may answer.
const MEASURED_GROUNDEDNESS: &[(&str, f32)] = &[("smollm2-135m-instruct", 0.0), ("gemma-3-270m", 0.09)];

/// An embedded model's manifest (`kea-model.json` with `"kind": "llm"`).
#[derive(Debug, Clone, serde::Deserialize)]
pub struct LlmManifest {
    pub id: String,
    pub file: String,
    #[serde(default)]
    pub chat_template: bool,
    #[serde(default = "default_context")]
    pub context: u32,
    /// Measured share of grounded answer sentences, if known.
    #[serde(default)]
    pub groundedness: Option<f32>,
}

fn default_context() -> u32 {
    4096
}

/// A GGUF file to run and how to prompt it.
#[derive(Debug, Clone)]
pub struct GgufModel {
    pub id: String,
    pub path: PathBuf,
    /// Use the model's chat template (else a plain transcript prompt).
    pub chat_template: bool,
    pub context: u32,
    pub groundedness: Option<f32>,
}

impl GgufModel {
    /// Whether measurements say this model grounds its answers too rarely.
    pub fn below_floor(&self) -> bool {
        let measured = self.groundedness.or_else(|| MEASURED_GROUNDEDNESS.iter().find(|(id, _)| *id == self.id).map(|m| m.1));
        measured.is_some_and(|g| g < GROUNDEDNESS_FLOOR)
    }
}

/// Finds the embedded model: the file `explicit`, else the folder `id` in
/// the first of `dirs` that has its `kea-model.json`.
pub fn find(explicit: Option<&Path>, dirs: &[PathBuf], id: &str) -> Option<GgufModel> {
    if let Some(path) = explicit {
        let id = path.file_stem().map_or_else(|| "gguf".to_string(), |s| s.to_string_lossy().into_owned());
        return Some(GgufModel { id, path: path.to_path_buf(), chat_template: true, context: 4096, groundedness: None });
    }
    dirs.iter().find_map(|dir| read_manifest(&dir.join(id)))
}

fn read_manifest(folder: &Path) -> Option<GgufModel> {
    let text = std::fs::read_to_string(folder.join("kea-model.json")).ok()?;
    let manifest: LlmManifest = serde_json::from_str(&text).ok()?;
    let path = folder.join(&manifest.file);
    path.is_file().then_some(GgufModel {
        id: manifest.id,
        path,
        chat_template: manifest.chat_template,
        context: manifest.context,
        groundedness: manifest.groundedness,
    })
}
