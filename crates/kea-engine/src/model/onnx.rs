//! Loading ONNX models: the "init" half of every model family, apart from
//! inference (fastembed-rs's split). One loader per family — text embedder,
//! cross-encoder, image embedder — from a local model folder (a model is
//! fetched only by the model manager, when the person asks). All share the runtime check, the
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

/// The local folder of model `id` of `kind` with the runtime loaded.
fn local(paths: &ModelPaths, id: &str, kind: &str) -> Result<LocalModel> {
    let local = paths.resolve(id)?;
    if local.manifest.kind != kind {
        return Err(Error::InvalidInput(format!("model '{id}' is a {}, not a {kind} model", local.manifest.kind)));
    }
    runtime::ensure_loaded(paths)?;
    Ok(local)
}

fn load_failed(manifest: &ModelManifest, what: &str, e: impl std::fmt::Display) -> Error {
    Error::ModelMissing { model: manifest.id.clone(), reason: format!("could not load the {what}: {e}") }
}

/// Loads text embedder `id` (kind `text-embedding`).
pub fn text_model(paths: &ModelPaths, id: &str, options: &EmbedOptions) -> Result<TextModel> {
    let local = local(paths, id, "text-embedding")?;
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
    let local = local(paths, id, "reranker")?;
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
    let local = local(paths, id, "image-embedding")?;
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
