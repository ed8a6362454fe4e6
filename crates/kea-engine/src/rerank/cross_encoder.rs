//! [`CrossEncoder`]: the [`Reranker`] that runs a local cross-encoder (an
//! ONNX graph with a `logits` [batch, 1] output) through fastembed's
//! `TextRerank`; its logits become probabilities with a sigmoid.

use fastembed::{RerankInitOptionsUserDefined, TextRerank, UserDefinedRerankingModel};

use super::{sigmoid, Reranker};
use crate::embed::EmbedOptions;
use crate::error::{Error, Result};
use crate::model::{runtime, LocalModel, ModelPaths};

/// A local cross-encoder run by fastembed.
pub struct CrossEncoder {
    model: TextRerank,
    id: String,
    batch_size: usize,
}

impl CrossEncoder {
    /// Loads reranker `id` from a local model folder (kind `reranker`); with
    /// the `hub` feature, known hub rerankers are fetched when not local.
    pub fn load(paths: &ModelPaths, id: &str, options: &EmbedOptions) -> Result<CrossEncoder> {
        match paths.resolve(id) {
            Ok(local) => Self::from_local(paths, &local, options),
            Err(not_local) => hub::load(paths, id, options).unwrap_or(Err(not_local)),
        }
    }

    fn from_local(paths: &ModelPaths, local: &LocalModel, options: &EmbedOptions) -> Result<CrossEncoder> {
        runtime::ensure_loaded(paths)?;
        let m = &local.manifest;
        if m.kind != "reranker" {
            return Err(Error::InvalidInput(format!("model '{}' is a {}, not a reranker", m.id, m.kind)));
        }
        let tokenizer_files = local.tokenizer_files()?;
        let mut init = RerankInitOptionsUserDefined::new().with_max_length(m.max_length).with_session_config("session.intra_op.allow_spinning", "0");
        if let Some(threads) = options.threads {
            init = init.with_intra_threads(threads.max(1));
        }
        let model = TextRerank::try_new_from_user_defined(UserDefinedRerankingModel::new(local.read(&m.onnx)?, tokenizer_files), init)
            .map_err(|e| Error::ModelMissing { model: m.id.clone(), reason: format!("could not load the reranker: {e}") })?;
        Ok(CrossEncoder { model, id: m.id.clone(), batch_size: options.batch_size.max(1) })
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

#[cfg(feature = "hub")]
mod hub {
    use super::*;
    use fastembed::{RerankInitOptions, RerankerModel};

    pub(super) fn load(paths: &ModelPaths, id: &str, options: &EmbedOptions) -> Option<Result<CrossEncoder>> {
        let model_name = match id {
            "bge-reranker-base" => RerankerModel::BGERerankerBase,
            "jina-reranker-v2-base-multilingual" => RerankerModel::JINARerankerV2BaseMultilingual,
            _ => return None,
        };
        let cache = paths.dirs.last().cloned().unwrap_or_default().join("hub");
        let init = RerankInitOptions::new(model_name).with_cache_dir(cache).with_show_download_progress(false);
        Some(
            TextRerank::try_new(init)
                .map(|model| CrossEncoder { model, id: id.to_string(), batch_size: options.batch_size.max(1) })
                .map_err(|e| Error::ModelMissing { model: id.to_string(), reason: format!("could not fetch it from the model hub: {e}") }),
        )
    }
}

#[cfg(not(feature = "hub"))]
mod hub {
    use super::*;

    pub(super) fn load(_: &ModelPaths, _: &str, _: &EmbedOptions) -> Option<Result<CrossEncoder>> {
        None
    }
}
