//! Reranking: one [`Reranker`] seam with two implementations, the local
//! cross-encoder ([`CrossEncoder`], used inside the retrieval pipeline) and
//! the language model ([`LlmReranker`], opt-in in chat). Both give a
//! relevance probability in [0, 1] per passage; [`rank`] orders and cuts by it.

mod cross_encoder;
mod llm;

pub use cross_encoder::CrossEncoder;
pub use llm::{LlmReranker, RerankCache};

use crate::error::Result;

/// Scores (query, passage) pairs.
pub trait Reranker {
    fn model_id(&self) -> &str;
    /// A relevance probability in [0, 1] per passage, in the order given.
    fn score(&mut self, query: &str, passages: &[String]) -> Result<Vec<f32>>;
}

/// Indices of `scores` with probability ≥ `min_probability`, best first, at most `keep`.
pub fn rank(scores: &[f32], keep: usize, min_probability: f32) -> Vec<(usize, f32)> {
    let mut order: Vec<(usize, f32)> = scores.iter().copied().enumerate().filter(|(_, s)| *s >= min_probability).collect();
    order.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    order.truncate(keep);
    order
}

/// The logistic function: a cross-encoder logit as a probability.
pub fn sigmoid(x: f32) -> f32 {
    1.0 / (1.0 + (-x).exp())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rank_keeps_the_best_above_the_floor() {
        assert_eq!(rank(&[0.2, 0.9, 0.6, 0.7], 2, 0.5), [(1, 0.9), (3, 0.7)]);
        assert_eq!(rank(&[0.5, 0.5], 5, 0.0), [(0, 0.5), (1, 0.5)], "ties keep the input order");
        assert!((sigmoid(0.0) - 0.5).abs() < 1e-6 && sigmoid(10.0) > 0.99);
    }
}
