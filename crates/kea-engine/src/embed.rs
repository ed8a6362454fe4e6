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

/// The variable that turns on [`Jittered`]: `RELATIVE:SEED`, e.g. `0.005:1`.
pub const JITTER_ENV: &str = "KEA_TEST_EMBED_JITTER";

/// A test instrument: another embedder whose vectors are perturbed by a
/// small relative noise (each component times `1 ± relative`, drawn from a
/// generator seeded by `seed` and the text, then renormalised). A decision
/// that flips under it sits on an edge that another CPU's arithmetic could
/// cross; the tests repeat their asserted decisions under it.
pub struct Jittered {
    inner: Box<dyn Embedder>,
    relative: f32,
    seed: u64,
}

impl Jittered {
    /// Wraps `inner` when [`JITTER_ENV`] is set to a valid `RELATIVE:SEED`.
    pub fn from_env(inner: Box<dyn Embedder>) -> Box<dyn Embedder> {
        let parsed = std::env::var(JITTER_ENV).ok().and_then(|v| {
            let (relative, seed) = v.split_once(':')?;
            Some((relative.trim().parse::<f32>().ok().filter(|r| (0.0..0.5).contains(r))?, seed.trim().parse::<u64>().ok()?))
        });
        match parsed {
            Some((relative, seed)) => Box::new(Jittered { inner, relative, seed }),
            None => inner,
        }
    }

    fn perturb(&self, text: &str, mut vector: Vec<f32>) -> Vec<f32> {
        let mut state = text.bytes().fold(self.seed ^ 0x9E37_79B9_7F4A_7C15, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01B3));
        for x in &mut vector {
            state = splitmix64(state);
            let unit = (state >> 11) as f32 / (1u64 << 53) as f32 * 2.0 - 1.0;
            *x *= 1.0 + unit * self.relative;
        }
        let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
        if norm > 0.0 {
            vector.iter_mut().for_each(|x| *x /= norm);
        }
        vector
    }
}

fn splitmix64(state: u64) -> u64 {
    let mut z = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Embedder for Jittered {
    fn model_id(&self) -> &str {
        self.inner.model_id()
    }

    fn dim(&self) -> usize {
        self.inner.dim()
    }

    fn embed_passages(&mut self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        let vectors = self.inner.embed_passages(texts)?;
        Ok(texts.iter().zip(vectors).map(|(t, v)| self.perturb(t, v)).collect())
    }

    fn embed_query(&mut self, text: &str) -> Result<Vec<f32>> {
        let vector = self.inner.embed_query(text)?;
        Ok(self.perturb(text, vector))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fixed;

    impl Embedder for Fixed {
        fn model_id(&self) -> &str {
            "fixed"
        }
        fn dim(&self) -> usize {
            4
        }
        fn embed_passages(&mut self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
            Ok(texts.iter().map(|_| vec![0.5; 4]).collect())
        }
        fn embed_query(&mut self, _: &str) -> Result<Vec<f32>> {
            Ok(vec![0.5; 4])
        }
    }

    #[test]
    fn jitter_moves_each_component_by_at_most_its_share_and_repeats_for_a_seed() {
        let jittered = |seed| Jittered { inner: Box::new(Fixed), relative: 0.005, seed };
        let a = jittered(1).embed_query("question").unwrap();
        assert_eq!(a, jittered(1).embed_query("question").unwrap(), "one seed, one text: one vector");
        assert_ne!(a, jittered(2).embed_query("question").unwrap(), "another seed moves it");
        assert!(a.iter().all(|x| (x - 0.5).abs() <= 0.5 * 0.011), "{a:?}");
        assert!((a.iter().map(|x| x * x).sum::<f32>() - 1.0).abs() < 1e-5, "still normalised: {a:?}");
    }
}
