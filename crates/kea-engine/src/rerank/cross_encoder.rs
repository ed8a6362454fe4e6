//! [`CrossEncoder`]: the [`Reranker`] that runs a local cross-encoder (an
//! ONNX graph with a `logits` [batch, 1] output) through fastembed's
//! `TextRerank`; its logits become probabilities with a sigmoid.

use fastembed::TextRerank;

use super::{sigmoid, Reranker};
use crate::error::{Error, Result};
use crate::model::onnx::{self, EmbedOptions};
use crate::model::ModelPaths;

/// A local cross-encoder run by fastembed.
pub struct CrossEncoder {
    model: TextRerank,
    id: String,
    batch_size: usize,
}

impl CrossEncoder {
    /// Loads cross-encoder `id` (see [`onnx::cross_encoder`]).
    pub fn load(paths: &ModelPaths, id: &str, options: &EmbedOptions) -> Result<CrossEncoder> {
        Ok(CrossEncoder { model: onnx::cross_encoder(paths, id, options)?, id: id.to_string(), batch_size: options.batch_size.max(1) })
    }
}

impl Reranker for CrossEncoder {
    fn model_id(&self) -> &str {
        &self.id
    }

    fn score(&mut self, query: &str, passages: &[String]) -> Result<Vec<f32>> {
        if passages.is_empty() {
            return Ok(Vec::new());
        }
        let refs: Vec<&str> = passages.iter().map(String::as_str).collect();
        let results =
            self.model.rerank(query, refs.as_slice(), false, Some(self.batch_size)).map_err(|e| Error::Embedding(format!("the cross-encoder failed: {e}")))?;
        let mut scores = vec![0.0; passages.len()];
        for r in results {
            scores[r.index] = sigmoid(r.score);
        }
        Ok(scores)
    }
}
