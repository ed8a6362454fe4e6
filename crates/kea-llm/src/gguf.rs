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

    /// Whether its file is a readable GGUF file (its magic bytes), checked
    /// before llama.cpp is given it: a missing or foreign file is a clear
    /// error, not a failure inside the library.
    pub fn check_file(&self) -> Result<(), String> {
        use std::io::Read;
        let mut magic = [0u8; 4];
        let read = std::fs::File::open(&self.path).and_then(|mut f| f.read_exact(&mut magic));
        match read {
            Err(e) => Err(format!("{} cannot be read: {e}", self.path.display())),
            Ok(()) if &magic != b"GGUF" => Err(format!("{} is not a GGUF model file", self.path.display())),
            Ok(()) => Ok(()),
        }
    }
}

/// Finds the embedded model: the file `explicit`, else the folder `id` in
/// the first of `dirs` that has its `kea-model.json`.
pub fn find(explicit: Option<&Path>, dirs: &[PathBuf], id: &str) -> Option<GgufModel> {
    if let Some(path) = explicit {
        let id = path.file_stem().map_or_else(|| "gguf".to_string(), |s| s.to_string_lossy().into_owned());
        return Some(GgufModel { id, path: path.to_path_buf(), chat_template: true, context: 4096, groundedness: None });
    }
    // An id names a folder inside a models folder, never a path out of it.
    let plain = !id.is_empty() && !id.starts_with('.') && !id.contains(['/', '\\']);
    dirs.iter().filter(|_| plain).find_map(|dir| read_manifest(&dir.join(id)))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_readable_gguf_file_reaches_llama_cpp() {
        let dir = tempfile::tempdir().unwrap();
        let model = |name: &str| find(Some(&dir.path().join(name)), &[], "").unwrap();
        std::fs::write(dir.path().join("notes.gguf"), "# not a model").unwrap();
        std::fs::write(dir.path().join("model.gguf"), b"GGUF\x03\x00\x00\x00").unwrap();
        assert!(model("missing.gguf").check_file().unwrap_err().contains("cannot be read"));
        assert!(model("notes.gguf").check_file().unwrap_err().contains("not a GGUF model file"));
        assert!(model("model.gguf").check_file().is_ok(), "the magic bytes pass; llama.cpp judges the rest");
        let models = dir.path().join("models");
        std::fs::create_dir_all(models.join("m")).unwrap();
        std::fs::create_dir_all(models.join("other")).unwrap();
        std::fs::write(models.join("m/kea-model.json"), r#"{"id": "m", "file": "model.gguf"}"#).unwrap();
        std::fs::write(models.join("m/model.gguf"), b"GGUF").unwrap();
        assert_eq!(find(None, std::slice::from_ref(&models), "m").unwrap().id, "m");
        for id in ["../m", "./../m", ".."] {
            assert!(find(None, &[models.join("other")], id).is_none(), "{id:?} leaves the models folder");
        }
    }
}
