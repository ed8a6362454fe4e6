//! Text embedding. [`Embedder`] is the seam the engine uses; [`OnnxEmbedder`]
//! runs an ONNX model through fastembed (loaded by `model::onnx`, inference
//! here). Vectors are L2-normalised, so cosine = dot product.

use fastembed::TextEmbedding;

use crate::error::{Error, Result};
pub use crate::model::onnx::EmbedOptions;
use crate::model::{onnx, ModelPaths};

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
    /// Loads text embedder `id` (see [`onnx::text_model`]).
    pub fn load(paths: &ModelPaths, id: &str, options: &EmbedOptions) -> Result<OnnxEmbedder> {
        let m = onnx::text_model(paths, id, options)?;
        Ok(OnnxEmbedder {
            model: m.session,
            id: m.id,
            dim: m.dim,
            query_prefix: m.query_prefix,
            passage_prefix: m.passage_prefix,
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
