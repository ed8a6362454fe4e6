//! Loading ONNX models: the "init" half of every model family, apart from
//! inference (fastembed-rs's split). One loader per family — text embedder,
//! cross-encoder, image embedder — from a local model folder, or with the
//! `hub` feature from fastembed's model hub. All share the runtime check, the
//! manifest's kind check, the session options and the load error. The
//! inference halves are `embed::OnnxEmbedder`, `rerank::CrossEncoder` and
//! `identify::ClipClassifier`.

use fastembed::{
    ImageEmbedding, ImageInitOptionsUserDefined, InitOptionsUserDefined, Pooling, QuantizationMode, RerankInitOptionsUserDefined, TextEmbedding, TextRerank,
    UserDefinedEmbeddingModel, UserDefinedImageEmbeddingModel, UserDefinedRerankingModel,
};

use super::{runtime, LocalModel, ModelManifest, ModelPaths};
use crate::error::{Error, Result};

/// Options for running an ONNX model.
#[derive(Debug, Clone)]
pub struct EmbedOptions {
    /// Texts per model call: 16–32 keeps memory near 1 GB (256 took 9.7 GB).
    pub batch_size: usize,
    /// ONNX Runtime intra-op threads; `None` = all cores.
    pub threads: Option<usize>,
}

impl Default for EmbedOptions {
    fn default() -> Self {
        EmbedOptions { batch_size: 16, threads: None }
    }
}

/// Spinning threads steal the other core from extraction and SQLite.
const SPINNING: (&str, &str) = ("session.intra_op.allow_spinning", "0");

/// A loaded text embedder and what its manifest says about it.
pub struct TextModel {
    pub session: TextEmbedding,
    pub id: String,
    pub dim: usize,
    pub query_prefix: String,
    pub passage_prefix: String,
}

/// A loaded image embedder and the CLIP settings of its manifest.
pub struct ImageModel {
    pub session: ImageEmbedding,
    /// The paired text tower's model id.
    pub text_model: String,
    pub prompt: Option<String>,
    pub logit_scale: f32,
    pub min_similarity: f32,
}

/// The local folder of model `id` of `kind` with the runtime loaded;
/// `Ok(None)` when no folder has it (the hub may).
fn local(paths: &ModelPaths, id: &str, kind: &str) -> Result<std::result::Result<LocalModel, Error>> {
    let local = match paths.resolve(id) {
        Ok(local) => local,
        Err(not_local) => return Ok(Err(not_local)),
    };
    if local.manifest.kind != kind {
        return Err(Error::InvalidInput(format!("model '{id}' is a {}, not a {kind} model", local.manifest.kind)));
    }
    runtime::ensure_loaded(paths)?;
    Ok(Ok(local))
}

fn load_failed(manifest: &ModelManifest, what: &str, e: impl std::fmt::Display) -> Error {
    Error::ModelMissing { model: manifest.id.clone(), reason: format!("could not load the {what}: {e}") }
}

/// Loads text embedder `id` (kind `text-embedding`).
pub fn text_model(paths: &ModelPaths, id: &str, options: &EmbedOptions) -> Result<TextModel> {
    let local = match local(paths, id, "text-embedding")? {
        Ok(local) => local,
        Err(not_local) => return hub::text_model(paths, id, options).unwrap_or(Err(not_local)),
    };
    let m = &local.manifest;
    // Weight-only int8 graphs must not be treated as dynamically quantized.
    let mut user_model = UserDefinedEmbeddingModel::new(local.read(&m.onnx)?, local.tokenizer_files()?).with_quantization(QuantizationMode::None);
    // `none`: the graph already outputs one vector per input (e.g. CLIP's text tower).
    match m.pooling.to_ascii_lowercase().as_str() {
        "cls" => user_model = user_model.with_pooling(Pooling::Cls),
        "none" => {}
        _ => user_model = user_model.with_pooling(Pooling::Mean),
    }
    let mut init = InitOptionsUserDefined::new().with_max_length(m.max_length).with_session_config(SPINNING.0, SPINNING.1);
    if let Some(threads) = options.threads {
        init = init.with_intra_threads(threads.max(1));
    }
    let session = TextEmbedding::try_new_from_user_defined(user_model, init).map_err(|e| load_failed(m, "ONNX model", e))?;
    Ok(TextModel { session, id: m.id.clone(), dim: m.dim, query_prefix: m.query_prefix.clone(), passage_prefix: m.passage_prefix.clone() })
}

/// Loads cross-encoder `id` (kind `reranker`: a `logits` [batch, 1] output).
pub fn cross_encoder(paths: &ModelPaths, id: &str, options: &EmbedOptions) -> Result<TextRerank> {
    let local = match local(paths, id, "reranker")? {
        Ok(local) => local,
        Err(not_local) => return hub::cross_encoder(paths, id, options).unwrap_or(Err(not_local)),
    };
    let m = &local.manifest;
    let mut init = RerankInitOptionsUserDefined::new().with_max_length(m.max_length).with_session_config(SPINNING.0, SPINNING.1);
    if let Some(threads) = options.threads {
        init = init.with_intra_threads(threads.max(1));
    }
    TextRerank::try_new_from_user_defined(UserDefinedRerankingModel::new(local.read(&m.onnx)?, local.tokenizer_files()?), init)
        .map_err(|e| load_failed(m, "reranker", e))
}

/// Loads image embedder `id` (kind `image-embedding`) and its CLIP settings.
pub fn image_model(paths: &ModelPaths, id: &str) -> Result<ImageModel> {
    let local = match local(paths, id, "image-embedding")? {
        Ok(local) => local,
        Err(not_local) => return hub::image_model(paths, id).unwrap_or(Err(not_local)),
    };
    let m = &local.manifest;
    let preprocessor = local.read(m.preprocessor.as_deref().unwrap_or("preprocessor_config.json"))?;
    let init = ImageInitOptionsUserDefined::new().with_session_config(SPINNING.0, SPINNING.1);
    let session = ImageEmbedding::try_new_from_user_defined(UserDefinedImageEmbeddingModel::new(local.read(&m.onnx)?, preprocessor), init)
        .map_err(|e| load_failed(m, "image model", e))?;
    let text_model = m.text_model.clone().ok_or_else(|| Error::ModelMissing { model: id.into(), reason: "its manifest names no text_model".into() })?;
    Ok(ImageModel {
        session,
        text_model,
        prompt: m.prompt.clone(),
        logit_scale: m.logit_scale.unwrap_or(100.0),
        min_similarity: m.min_similarity.unwrap_or(0.2),
    })
}

/// fastembed's hub models, for real users with internet (feature `hub`):
/// the catalogued ones, run with what the catalog says about them.
#[cfg(feature = "hub")]
mod hub {
    use super::*;
    use crate::model::catalog::{self, CatalogEntry};
    use fastembed::{ImageInitOptions, RerankInitOptions, TextInitOptions};

    fn fetch_failed(id: &str, e: impl std::fmt::Display) -> Error {
        Error::ModelMissing { model: id.to_string(), reason: format!("could not fetch it from the model hub (is the internet reachable?): {e}") }
    }

    fn cache(paths: &ModelPaths) -> std::path::PathBuf {
        paths.dirs.last().cloned().unwrap_or_default().join("hub")
    }

    /// The catalog entry of `id` of `kind` and fastembed's name for it: the
    /// model whose repository and graph file the catalog took from
    /// fastembed's list (`models`: name, repository, graph file).
    fn catalogued<T>(id: &str, kind: &str, models: impl IntoIterator<Item = (T, String, String)>) -> Option<(CatalogEntry, T)> {
        let entry = catalog::find(id).filter(|e| e.manifest["kind"] == kind)?;
        let hub = entry.hub.as_ref()?;
        let graph = &hub.files.first()?.path;
        let model = models.into_iter().find(|(_, repo, file)| *repo == hub.repo && file == graph)?.0;
        Some((entry, model))
    }

    pub(super) fn text_model(paths: &ModelPaths, id: &str, options: &EmbedOptions) -> Option<Result<TextModel>> {
        let listed = TextEmbedding::list_supported_models().into_iter().map(|i| (i.model, i.model_code, i.model_file));
        let (entry, model_name) = catalogued(id, "text-embedding", listed)?;
        Some((|| {
            runtime::ensure_loaded(paths)?;
            let mut init = TextInitOptions::new(model_name).with_cache_dir(cache(paths)).with_show_download_progress(false);
            if let Some(threads) = options.threads {
                init = init.with_intra_threads(threads.max(1));
            }
            let session = TextEmbedding::try_new(init).map_err(|e| fetch_failed(id, e))?;
            let (query_prefix, passage_prefix) = entry.prefixes();
            let dim = entry.manifest["dim"].as_u64().unwrap_or(384) as usize;
            Ok(TextModel { session, id: id.to_string(), dim, query_prefix: query_prefix.into(), passage_prefix: passage_prefix.into() })
        })())
    }

    pub(super) fn cross_encoder(paths: &ModelPaths, id: &str, _: &EmbedOptions) -> Option<Result<TextRerank>> {
        let listed = TextRerank::list_supported_models().into_iter().map(|i| (i.model, i.model_code, i.model_file));
        let (_, model_name) = catalogued(id, "reranker", listed)?;
        let init = RerankInitOptions::new(model_name).with_cache_dir(cache(paths)).with_show_download_progress(false);
        Some(runtime::ensure_loaded(paths).and_then(|_| TextRerank::try_new(init).map_err(|e| fetch_failed(id, e))))
    }

    /// CLIP's vision tower; its text tower, scale and threshold from the catalog.
    pub(super) fn image_model(paths: &ModelPaths, id: &str) -> Option<Result<ImageModel>> {
        let listed = ImageEmbedding::list_supported_models().into_iter().map(|i| (i.model, i.model_code, i.model_file));
        let (entry, model_name) = catalogued(id, "image-embedding", listed)?;
        Some((|| {
            runtime::ensure_loaded(paths)?;
            let session = ImageEmbedding::try_new(ImageInitOptions::new(model_name).with_cache_dir(cache(paths))).map_err(|e| fetch_failed(id, e))?;
            let number = |key: &str| entry.manifest[key].as_f64().unwrap_or_default() as f32;
            let text_model = entry.manifest["text_model"].as_str().unwrap_or_default().to_string();
            Ok(ImageModel { session, text_model, prompt: None, logit_scale: number("logit_scale"), min_similarity: number("min_similarity") })
        })())
    }
}

/// Without the `hub` feature no model is fetched: the local error stands.
#[cfg(not(feature = "hub"))]
mod hub {
    use super::*;

    pub(super) fn text_model(_: &ModelPaths, _: &str, _: &EmbedOptions) -> Option<Result<TextModel>> {
        None
    }

    pub(super) fn cross_encoder(_: &ModelPaths, _: &str, _: &EmbedOptions) -> Option<Result<TextRerank>> {
        None
    }

    pub(super) fn image_model(_: &ModelPaths, _: &str) -> Option<Result<ImageModel>> {
        None
    }
}
