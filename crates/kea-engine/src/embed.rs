//! Text embedding. [`Embedder`] is the seam the engine uses; [`OnnxEmbedder`]
//! runs a local ONNX model through fastembed (setup in `load`, inference in
//! the trait methods). Vectors are L2-normalised, so cosine = dot product.

use fastembed::{InitOptionsUserDefined, Pooling, QuantizationMode, TextEmbedding, UserDefinedEmbeddingModel};

use crate::error::{Error, Result};
use crate::model::{runtime, LocalModel, ModelPaths};

/// Turns texts into vectors of a fixed dimension.
pub trait Embedder: Send {
    /// The model id recorded in the index; a change re-embeds everything.
    fn model_id(&self) -> &str;
    fn dim(&self) -> usize;
    /// Embeds document passages (with the model's passage prefix).
    fn embed_passages(&mut self, texts: &[String]) -> Result<Vec<Vec<f32>>>;
    /// Embeds a search query (with the model's query prefix).
    fn embed_query(&mut self, text: &str) -> Result<Vec<f32>>;
}

/// Options for running an embedding model.
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

/// A local ONNX embedding model run by fastembed.
pub struct OnnxEmbedder {
    model: TextEmbedding,
    id: String,
    dim: usize,
    query_prefix: String,
    passage_prefix: String,
    batch_size: usize,
}

impl OnnxEmbedder {
    /// Loads model `id`: from a local folder first; with the `hub` feature,
    /// from fastembed's model hub when no local folder has it.
    pub fn load(paths: &ModelPaths, id: &str, options: &EmbedOptions) -> Result<OnnxEmbedder> {
        match paths.resolve(id) {
            Ok(local) => Self::from_local(paths, &local, options),
            Err(not_local) => hub::load(paths, id, options).unwrap_or(Err(not_local)),
        }
    }

    fn from_local(paths: &ModelPaths, local: &LocalModel, options: &EmbedOptions) -> Result<OnnxEmbedder> {
        runtime::ensure_loaded(paths)?;
        let m = &local.manifest;
        let tokenizer_files = local.tokenizer_files()?;
        // Weight-only int8 graphs must not be treated as dynamically quantized.
        let mut user_model = UserDefinedEmbeddingModel::new(local.read(&m.onnx)?, tokenizer_files).with_quantization(QuantizationMode::None);
        // `none`: the graph already outputs one vector per input (e.g. CLIP's text tower).
        match m.pooling.to_ascii_lowercase().as_str() {
            "cls" => user_model = user_model.with_pooling(Pooling::Cls),
            "none" => {}
            _ => user_model = user_model.with_pooling(Pooling::Mean),
        }
        let model = TextEmbedding::try_new_from_user_defined(user_model, session_options(m.max_length, options))
            .map_err(|e| Error::ModelMissing { model: m.id.clone(), reason: format!("could not load the ONNX model: {e}") })?;
        Ok(OnnxEmbedder {
            model,
            id: m.id.clone(),
            dim: m.dim,
            query_prefix: m.query_prefix.clone(),
            passage_prefix: m.passage_prefix.clone(),
            batch_size: options.batch_size.max(1),
        })
    }

    fn run(&mut self, texts: Vec<String>) -> Result<Vec<Vec<f32>>> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let vectors = self.model.embed(&texts, Some(self.batch_size)).map_err(|e| Error::Embedding(e.to_string()))?;
        if let Some(bad) = vectors.iter().find(|v| v.len() != self.dim) {
            return Err(Error::Embedding(format!("model '{}' returned {} dimensions, manifest says {}", self.id, bad.len(), self.dim)));
        }
        Ok(vectors)
    }
}

fn session_options(max_length: usize, options: &EmbedOptions) -> InitOptionsUserDefined {
    let mut init = InitOptionsUserDefined::new()
        .with_max_length(max_length)
        // Spinning threads steal the other core from extraction and SQLite.
        .with_session_config("session.intra_op.allow_spinning", "0");
    if let Some(threads) = options.threads {
        init = init.with_intra_threads(threads.max(1));
    }
    init
}

impl Embedder for OnnxEmbedder {
    fn model_id(&self) -> &str {
        &self.id
    }

    fn dim(&self) -> usize {
        self.dim
    }

    fn embed_passages(&mut self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        let texts = texts.iter().map(|t| format!("{}{t}", self.passage_prefix)).collect();
        self.run(texts)
    }

    fn embed_query(&mut self, text: &str) -> Result<Vec<f32>> {
        let mut vectors = self.run(vec![format!("{}{text}", self.query_prefix)])?;
        vectors.pop().ok_or_else(|| Error::Embedding("the model returned no vector".into()))
    }
}

/// fastembed's hub models, for real users with internet (feature `hub`).
#[cfg(feature = "hub")]
mod hub {
    use super::*;
    use fastembed::{EmbeddingModel, TextInitOptions};

    /// Known hub ids and their query/passage prefixes.
    fn known(id: &str) -> Option<(EmbeddingModel, &'static str, &'static str)> {
        match id {
            "multilingual-e5-small" => Some((EmbeddingModel::MultilingualE5Small, "query: ", "passage: ")),
            "bge-small-zh-v1.5" => Some((EmbeddingModel::BGESmallZHV15, "为这个句子生成表示以用于检索相关文章：", "")),
            "bge-small-en-v1.5" => Some((EmbeddingModel::BGESmallENV15, "Represent this sentence for searching relevant passages: ", "")),
            "clip-vit-b-32-text" => Some((EmbeddingModel::ClipVitB32, "", "")),
            _ => None,
        }
    }

    pub(super) fn load(paths: &ModelPaths, id: &str, options: &EmbedOptions) -> Option<Result<OnnxEmbedder>> {
        let (model_name, query_prefix, passage_prefix) = known(id)?;
        Some((|| {
            runtime::ensure_loaded(paths)?;
            let cache = paths.dirs.last().cloned().unwrap_or_default().join("hub");
            let mut init = TextInitOptions::new(model_name.clone()).with_cache_dir(cache).with_show_download_progress(false);
            if let Some(threads) = options.threads {
                init = init.with_intra_threads(threads.max(1));
            }
            let model = TextEmbedding::try_new(init).map_err(|e| Error::ModelMissing {
                model: id.to_string(),
                reason: format!("could not fetch it from the model hub (is the internet reachable?): {e}"),
            })?;
            let dim = TextEmbedding::get_model_info(&model_name).map(|i| i.dim).unwrap_or(384);
            Ok(OnnxEmbedder {
                model,
                id: id.to_string(),
                dim,
                query_prefix: query_prefix.into(),
                passage_prefix: passage_prefix.into(),
                batch_size: options.batch_size.max(1),
            })
        })())
    }
}

#[cfg(not(feature = "hub"))]
mod hub {
    use super::*;

    /// Without the `hub` feature no model is fetched: the local error stands.
    pub(super) fn load(_: &ModelPaths, _: &str, _: &EmbedOptions) -> Option<Result<OnnxEmbedder>> {
        None
    }
}
