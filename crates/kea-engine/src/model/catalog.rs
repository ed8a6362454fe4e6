//! The model catalog: every model Kea can install, per role (embedder,
//! reranker, image model, language model), with languages, size, licence and
//! where its files come from. The one place a known model's identity lives:
//! id, languages, dimension, pooling and query/passage prefixes (the
//! `kea-model.json` manifest written on install) and embedding cost. Hub repositories and file names for the ONNX
//! models come from fastembed's own model lists.
//!
//! A download is pinned by its entry where the hub's listing is known: the
//! source's `revision` a commit, each file's `sha256`; the download then
//! takes nothing else ([`super::manager`]). None of the entries below is
//! pinned yet (this catalog was written without access to the hub's
//! listings, and no hash is ever guessed): until then an install records
//! the commit and hashes it got, and a repair must match them.

use serde::Serialize;
use serde_json::{json, Value};

/// What a model is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Embedder,
    Reranker,
    Image,
    Llm,
}

impl Role {
    pub const ALL: [Role; 4] = [Role::Embedder, Role::Reranker, Role::Image, Role::Llm];

    pub fn as_str(self) -> &'static str {
        match self {
            Role::Embedder => "embedder",
            Role::Reranker => "reranker",
            Role::Image => "image",
            Role::Llm => "llm",
        }
    }

    pub fn parse(text: &str) -> Option<Role> {
        Role::ALL.into_iter().find(|r| r.as_str() == text.trim().to_ascii_lowercase())
    }
}

/// One file of a hub model: where it is in the repository, its name in the
/// model folder, and (when pinned) its sha256.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HubFile {
    pub path: String,
    pub local: String,
    pub sha256: Option<String>,
}

impl HubFile {
    pub fn new(path: &str, local: &str) -> HubFile {
        HubFile { path: path.into(), local: local.into(), sha256: None }
    }
}

/// Where a model's files are downloaded from: `{endpoint}/{repo}/resolve/{revision}/{path}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HubSource {
    pub repo: String,
    pub revision: String,
    pub files: Vec<HubFile>,
}

/// A model Kea knows how to install and run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CatalogEntry {
    pub id: String,
    pub role: Role,
    pub name: String,
    /// ISO codes, or `multilingual` for models trained on many languages.
    pub languages: Vec<String>,
    /// Approximate download size; the real size is checked while downloading.
    pub size_bytes: u64,
    pub license: String,
    pub description: String,
    /// `None`: installed by `make models` from PyPI wheels, not downloadable here.
    pub hub: Option<HubSource>,
    /// Models installed together with this one (CLIP's text tower).
    pub requires: Vec<String>,
    /// The `kea-model.json` written on install.
    pub manifest: Value,
}

/// The catalog's word for a model trained on many languages.
const MULTILINGUAL: &str = "multilingual";

impl CatalogEntry {
    /// Whether the model understands `lang` (`zh`, `en`).
    pub fn covers(&self, lang: &str) -> bool {
        self.languages.iter().any(|l| l == lang || l == MULTILINGUAL)
    }

    /// What the manifest says the model prefixes to a query and a passage.
    pub fn prefixes(&self) -> (&str, &str) {
        let text = |key: &str| self.manifest[key].as_str().unwrap_or_default();
        (text("query_prefix"), text("passage_prefix"))
    }
}

/// Milliseconds of CPU to embed one chunk (~500 characters) with embedder
/// `id`, measured on this project's 2-core machine: MiniLM ~85 ms, e5-small
/// (12 layers) ~260 ms; the others scaled from their size against e5-small.
pub fn embed_ms_per_chunk(id: &str) -> u64 {
    match id {
        "all-minilm-l6-v2" => 85,
        "multilingual-e5-small" | "bge-small-zh-v1.5" => 260,
        "bge-m3" => 2_600,
        _ => 500,
    }
}

/// Every model Kea knows, in display order.
pub fn catalog() -> Vec<CatalogEntry> {
    let mut entries = embedders();
    entries.extend(rerankers());
    entries.extend(image_models());
    entries.extend(language_models());
    entries
}

/// The catalog entry of `id`.
pub fn find(id: &str) -> Option<CatalogEntry> {
    catalog().into_iter().find(|e| e.id == id)
}

const TOKENIZER_FILES: [&str; 4] = ["tokenizer.json", "config.json", "special_tokens_map.json", "tokenizer_config.json"];

/// fastembed's hub repository and ONNX file(s) for a text model.
fn fastembed_text(model: fastembed::EmbeddingModel) -> (String, Vec<String>) {
    let info = fastembed::TextEmbedding::get_model_info(&model).expect("fastembed lists its own models");
    let mut files = vec![info.model_file.clone()];
    files.extend(info.additional_files.iter().cloned());
    (info.model_code.clone(), files)
}

fn fastembed_reranker(model: fastembed::RerankerModel) -> (String, Vec<String>) {
    let info = fastembed::TextRerank::get_model_info(&model);
    let mut files = vec![info.model_file.clone()];
    files.extend(info.additional_files.iter().cloned());
    (info.model_code, files)
}

fn fastembed_image(model: fastembed::ImageEmbeddingModel) -> (String, Vec<String>) {
    let info = fastembed::ImageEmbedding::get_model_info(&model);
    (info.model_code, vec![info.model_file])
}

/// An ONNX model's hub source: the graph (and its external data) under the
/// folder's root names, plus `extra` files at the repository root.
fn onnx_source(repo: String, onnx_files: Vec<String>, extra: &[&str]) -> HubSource {
    let mut files: Vec<HubFile> = onnx_files
        .iter()
        .map(|path| {
            let name = path.rsplit('/').next().unwrap_or(path);
            HubFile::new(path, name)
        })
        .collect();
    files.extend(extra.iter().map(|f| HubFile::new(f, f)));
    HubSource { repo, revision: "main".into(), files }
}

/// The manifest of an ONNX text model (its languages are added by [`entry`]).
fn text_manifest(id: &str, kind: &str, dim: usize, pooling: &str, prefixes: (&str, &str)) -> Value {
    json!({
        "id": id, "kind": kind, "dim": dim, "max_length": 512, "pooling": pooling, "onnx": "model.onnx",
        "tokenizer": "tokenizer.json", "config": "config.json", "special_tokens_map": "special_tokens_map.json",
        "tokenizer_config": "tokenizer_config.json", "query_prefix": prefixes.0, "passage_prefix": prefixes.1,
    })
}

fn langs(list: &[&str]) -> Vec<String> {
    list.iter().map(|l| l.to_string()).collect()
}

struct Meta<'a> {
    id: &'a str,
    name: &'a str,
    languages: &'a [&'a str],
    size_bytes: u64,
    license: &'a str,
    description: &'a str,
}

/// A catalog entry; an ONNX model's manifest gets the entry's languages
/// (none listed: many, as `multilingual` says in the catalog).
fn entry(role: Role, meta: Meta, hub: Option<HubSource>, mut manifest: Value) -> CatalogEntry {
    if manifest.get("onnx").is_some() {
        manifest["languages"] = json!(meta.languages.iter().filter(|l| **l != MULTILINGUAL).collect::<Vec<_>>());
    }
    CatalogEntry {
        id: meta.id.into(),
        role,
        name: meta.name.into(),
        languages: langs(meta.languages),
        size_bytes: meta.size_bytes,
        license: meta.license.into(),
        description: meta.description.into(),
        hub,
        requires: Vec::new(),
        manifest,
    }
}

// A data table: one entry per catalogued embedder.
#[allow(clippy::too_many_lines)]
fn embedders() -> Vec<CatalogEntry> {
    use fastembed::EmbeddingModel as M;
    let text = |model: M, extra: &[&str]| {
        let (repo, files) = fastembed_text(model);
        Some(onnx_source(repo, files, extra))
    };
    let e5_prefixes = ("query: ", "passage: ");
    let bge_zh_prefix = ("为这个句子生成表示以用于检索相关文章：", "");
    vec![
        entry(
            Role::Embedder,
            Meta {
                id: "all-minilm-l6-v2",
                name: "all-MiniLM-L6-v2 (int8)",
                languages: &["en"],
                size_bytes: 23_000_000,
                license: "Apache-2.0",
                description: "Small, fast, English only. Installed with Kea.",
            },
            None,
            text_manifest("all-minilm-l6-v2", "text-embedding", 384, "mean", ("", "")),
        ),
        entry(
            Role::Embedder,
            Meta {
                id: "multilingual-e5-small",
                name: "multilingual-e5-small",
                languages: &["multilingual"],
                size_bytes: 470_000_000,
                license: "MIT",
                description: "About 100 languages; a Chinese question finds an English passage and back.",
            },
            text(M::MultilingualE5Small, &TOKENIZER_FILES),
            text_manifest("multilingual-e5-small", "text-embedding", 384, "mean", e5_prefixes),
        ),
        entry(
            Role::Embedder,
            Meta {
                id: "bge-small-zh-v1.5",
                name: "BGE small zh v1.5",
                languages: &["zh", "en"],
                size_bytes: 96_000_000,
                license: "MIT",
                description: "Chinese-first retrieval model, small and fast.",
            },
            text(M::BGESmallZHV15, &TOKENIZER_FILES),
            text_manifest("bge-small-zh-v1.5", "text-embedding", 512, "cls", bge_zh_prefix),
        ),
        entry(
            Role::Embedder,
            Meta {
                id: "bge-m3",
                name: "BGE-M3",
                languages: &["multilingual"],
                size_bytes: 2_270_000_000,
                license: "MIT",
                description: "Strong multilingual retrieval (100+ languages); large and slower.",
            },
            text(M::BGEM3, &TOKENIZER_FILES),
            text_manifest("bge-m3", "text-embedding", 1024, "cls", ("", "")),
        ),
    ]
}

fn rerankers() -> Vec<CatalogEntry> {
    use fastembed::RerankerModel as M;
    let source = |model: M| {
        let (repo, files) = fastembed_reranker(model);
        Some(onnx_source(repo, files, &TOKENIZER_FILES))
    };
    vec![
        entry(
            Role::Reranker,
            Meta {
                id: "bge-reranker-base",
                name: "BGE reranker base",
                languages: &["zh", "en"],
                size_bytes: 1_110_000_000,
                license: "MIT",
                description: "Cross-encoder for Chinese and English: sharper ranking and refusal.",
            },
            source(M::BGERerankerBase),
            text_manifest("bge-reranker-base", "reranker", 1, "cls", ("", "")),
        ),
        entry(
            Role::Reranker,
            Meta {
                id: "jina-reranker-v2-base-multilingual",
                name: "Jina reranker v2 multilingual",
                languages: &["multilingual"],
                size_bytes: 1_110_000_000,
                license: "CC-BY-NC-4.0",
                description: "Multilingual cross-encoder (non-commercial licence).",
            },
            source(M::JINARerankerV2BaseMultilingual),
            text_manifest("jina-reranker-v2-base-multilingual", "reranker", 1, "cls", ("", "")),
        ),
    ]
}

fn image_models() -> Vec<CatalogEntry> {
    let (vision_repo, vision_files) = fastembed_image(fastembed::ImageEmbeddingModel::ClipVitB32);
    let (text_repo, text_files) = fastembed_text(fastembed::EmbeddingModel::ClipVitB32);
    let mut vision = entry(
        Role::Image,
        Meta {
            id: "clip-vit-b-32-vision",
            name: "CLIP ViT-B/32",
            languages: &["en"],
            size_bytes: 352_000_000,
            license: "MIT",
            description: "Identifies photos against the labels of your documents (with its text tower).",
        },
        Some(onnx_source(vision_repo, vision_files, &["preprocessor_config.json"])),
        json!({
            "id": "clip-vit-b-32-vision", "kind": "image-embedding", "dim": 512, "max_length": 77, "pooling": "none",
            "onnx": "model.onnx", "tokenizer": "", "config": "", "special_tokens_map": "", "tokenizer_config": "",
            "preprocessor": "preprocessor_config.json", "text_model": "clip-vit-b-32-text", "logit_scale": 100.0,
            "min_similarity": 0.2,
        }),
    );
    vision.requires = vec!["clip-vit-b-32-text".into()];
    let text = entry(
        Role::Image,
        Meta {
            id: "clip-vit-b-32-text",
            name: "CLIP ViT-B/32 text tower",
            languages: &["en"],
            size_bytes: 254_000_000,
            license: "MIT",
            description: "The label side of CLIP ViT-B/32 (installed with it).",
        },
        Some(onnx_source(text_repo, text_files, &TOKENIZER_FILES)),
        text_manifest("clip-vit-b-32-text", "text-embedding", 512, "none", ("", "")),
    );
    vec![vision, text]
}

fn gguf_manifest(id: &str, chat_template: bool) -> Value {
    json!({"id": id, "kind": "llm", "file": "model.gguf", "chat_template": chat_template, "context": 4096})
}

fn gguf_source(repo: &str, file: &str) -> Option<HubSource> {
    Some(HubSource { repo: repo.into(), revision: "main".into(), files: vec![HubFile::new(file, "model.gguf")] })
}

// A table, one entry per model: longer than a screen as a list is.
#[allow(clippy::too_many_lines)]
fn language_models() -> Vec<CatalogEntry> {
    vec![
        entry(
            Role::Llm,
            Meta {
                id: "smollm2-135m-instruct",
                name: "SmolLM2 135M Instruct",
                languages: &["en"],
                size_bytes: 93_000_000,
                license: "Apache-2.0",
                description: "Tiny and fast; good for routing, too small to write answers. Installed with Kea.",
            },
            None,
            gguf_manifest("smollm2-135m-instruct", true),
        ),
        entry(
            Role::Llm,
            Meta {
                id: "gemma-3-270m",
                name: "Gemma 3 270M",
                languages: &["multilingual"],
                size_bytes: 253_000_000,
                license: "Gemma",
                description: "Tiny base model. Installed with Kea.",
            },
            None,
            gguf_manifest("gemma-3-270m", false),
        ),
        entry(
            Role::Llm,
            Meta {
                id: "qwen2.5-0.5b-instruct",
                name: "Qwen2.5 0.5B Instruct (Q4_K_M)",
                languages: &["zh", "en", "multilingual"],
                size_bytes: 491_400_064,
                license: "Apache-2.0",
                description: "Quick short answers on an older or smaller machine; reads less well than 1.5B.",
            },
            gguf_source("Qwen/Qwen2.5-0.5B-Instruct-GGUF", "qwen2.5-0.5b-instruct-q4_k_m.gguf"),
            gguf_manifest("qwen2.5-0.5b-instruct", true),
        ),
        entry(
            Role::Llm,
            Meta {
                id: "qwen2.5-1.5b-instruct",
                name: "Qwen2.5 1.5B Instruct (Q4_K_M)",
                languages: &["zh", "en", "multilingual"],
                size_bytes: 1_120_000_000,
                license: "Apache-2.0",
                description: "Capable Chinese and English answers on a laptop CPU.",
            },
            gguf_source("Qwen/Qwen2.5-1.5B-Instruct-GGUF", "qwen2.5-1.5b-instruct-q4_k_m.gguf"),
            gguf_manifest("qwen2.5-1.5b-instruct", true),
        ),
        entry(
            Role::Llm,
            Meta {
                id: "qwen2.5-3b-instruct",
                name: "Qwen2.5 3B Instruct (Q4_K_M)",
                languages: &["zh", "en", "multilingual"],
                size_bytes: 2_100_000_000,
                license: "Qwen Research",
                description: "Better answers, needs about 3 GB of memory.",
            },
            gguf_source("Qwen/Qwen2.5-3B-Instruct-GGUF", "qwen2.5-3b-instruct-q4_k_m.gguf"),
            gguf_manifest("qwen2.5-3b-instruct", true),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_role_has_a_model_and_ids_are_unique() {
        let all = catalog();
        for role in Role::ALL {
            assert!(all.iter().any(|e| e.role == role), "{role:?}");
        }
        let mut ids: Vec<&str> = all.iter().map(|e| e.id.as_str()).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), all.len());
        for e in &all {
            assert_eq!(e.manifest["id"], e.id.as_str(), "manifest id of {}", e.id);
            for required in &e.requires {
                assert!(find(required).is_some(), "{} requires unknown {required}", e.id);
            }
        }
    }

    /// A pin is a full commit and 64 lowercase hex digits, never a guess.
    #[test]
    fn pins_are_well_formed() {
        for entry in catalog() {
            let Some(hub) = entry.hub else { continue };
            let pinned = hub.files.iter().any(|f| f.sha256.is_some());
            let commit = hub.revision.len() == 40 && hub.revision.bytes().all(|b| b.is_ascii_hexdigit());
            assert!(!pinned || commit, "{}: a pinned file comes from a commit, not {}", entry.id, hub.revision);
            for sha in hub.files.iter().filter_map(|f| f.sha256.as_deref()) {
                assert!(sha.len() == 64 && sha.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()), "{}: {sha}", entry.id);
            }
        }
    }

    #[test]
    fn hub_sources_come_from_fastembed() {
        let e5 = find("multilingual-e5-small").unwrap();
        let hub = e5.hub.clone().unwrap();
        assert_eq!(hub.repo, "intfloat/multilingual-e5-small");
        assert_eq!(hub.files[0], HubFile::new("onnx/model.onnx", "model.onnx"));
        assert!(e5.covers("zh") && e5.covers("en"));
        let m3 = find("bge-m3").unwrap().hub.unwrap();
        assert!(m3.files.iter().any(|f| f.local == "model.onnx_data"), "external weights travel with the graph");
        assert!(!find("all-minilm-l6-v2").unwrap().covers("zh"));
    }
}
