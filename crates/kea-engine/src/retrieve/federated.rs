//! Retrieval across several collections. Each collection runs its own
//! [`Retriever`] (its embedder, vector index, reranker and calibrated
//! decision), so collections with different embedders are never compared
//! by raw similarity. The collections whose decision answers (or is unsure)
//! contribute their passages, each scaled by that collection's probability
//! relative to its own best passage; a collection that refuses contributes
//! nothing unless every one refuses. The decision is the most confident
//! collection's, and every passage names the collection it came from. A
//! collection whose retrieval fails (its embedding server is down, its
//! address refused) is skipped and the trace says so; only when every one
//! fails is the search an error.

use super::calibration::Outcome;
use super::{context, Retrieval, RetrievalConfig, Retriever};
use crate::error::Result;

/// Anything that retrieves for a question: one collection's [`Retriever`]
/// or a [`Federated`] set of them (what chat asks).
pub trait Retrieve {
    /// See [`Retriever::retrieve_queries`].
    fn retrieve_queries(&self, queries: &[String], translated: Option<&str>, config: &RetrievalConfig) -> Result<Retrieval>;
}

impl Retrieve for Retriever<'_> {
    fn retrieve_queries(&self, queries: &[String], translated: Option<&str>, config: &RetrievalConfig) -> Result<Retrieval> {
        Retriever::retrieve_queries(self, queries, translated, config)
    }
}

/// Several collections' retrievers, each with its collection's name.
pub struct Federated<'a> {
    pub parts: Vec<(String, Retriever<'a>)>,
}

impl Federated<'_> {
    /// Runs the pipeline for `query` in every collection and merges.
    pub fn retrieve(&self, query: &str, config: &RetrievalConfig) -> Result<Retrieval> {
        super::check_query_length(query)?;
        self.retrieve_queries(&[query.to_string()], None, config)
    }
}

impl Retrieve for Federated<'_> {
    fn retrieve_queries(&self, queries: &[String], translated: Option<&str>, config: &RetrievalConfig) -> Result<Retrieval> {
        let mut results = Vec::with_capacity(self.parts.len());
        let mut failed = Vec::new();
        for (name, retriever) in &self.parts {
            match retriever.retrieve_queries(queries, translated, config) {
                Ok(mut result) => {
                    for hit in &mut result.hits {
                        hit.chunk.collection = Some(name.clone());
                    }
                    results.push((name.clone(), result));
                }
                Err(error) => failed.push((name.clone(), error)),
            }
        }
        merged_or_first_error(results, failed, config)
    }
}

/// The merge of the collections that answered, its trace naming the ones
/// skipped and why; the first error when none answered.
fn merged_or_first_error(results: Vec<(String, Retrieval)>, failed: Vec<(String, crate::Error)>, config: &RetrievalConfig) -> Result<Retrieval> {
    if results.is_empty() {
        return Err(failed.into_iter().next().map_or_else(|| crate::Error::InvalidInput("no collection to search".into()), |(_, error)| error));
    }
    let mut merged = merge(results, config);
    for (name, error) in failed {
        merged.trace.fallbacks.push(format!("{name}: skipped, its search failed: {error}"));
    }
    Ok(merged)
}

/// How confident a collection's decision is: its outcome, then its probability.
fn confidence(result: &Retrieval) -> (u8, f32) {
    let rank = match result.relevance.outcome {
        Outcome::Answered => 2,
        Outcome::Unsure => 1,
        Outcome::Refused => 0,
    };
    (rank, result.relevance.probability)
}

/// One retrieval from the collections' own: the most confident decision,
/// the passages of every collection that does not refuse, best first.
fn merge(mut results: Vec<(String, Retrieval)>, config: &RetrievalConfig) -> Retrieval {
    results.sort_by(|a, b| confidence(&b.1).partial_cmp(&confidence(&a.1)).unwrap_or(std::cmp::Ordering::Equal));
    let all_refuse = results.iter().all(|(_, r)| r.relevance.outcome == Outcome::Refused);
    let mut scored = Vec::new();
    let mut notes = Vec::new();
    for (position, (name, result)) in results.iter_mut().enumerate() {
        let contributes = if all_refuse { position == 0 } else { result.relevance.outcome != Outcome::Refused };
        notes.extend(result.trace.fallbacks.iter().map(|f| format!("{name}: {f}")));
        if !contributes {
            notes.push(format!("{name}: {:?} (p = {:.2}); its passages are left out", result.relevance.outcome, result.relevance.probability));
            continue;
        }
        let best = result.hits.iter().map(|h| h.score).fold(f32::MIN, f32::max);
        let weight = result.relevance.probability.max(1e-3);
        for (rank, hit) in std::mem::take(&mut result.hits).into_iter().enumerate() {
            // Relative to the collection's own best passage (score scales differ), else by rank.
            let relative = if best > 0.0 && hit.score > 0.0 { hit.score / best } else { 1.0 / (1.0 + rank as f32) };
            scored.push((weight * relative, hit));
        }
    }
    scored.sort_by(|a, b| b.0.partial_cmp(&a.0).unwrap_or(std::cmp::Ordering::Equal));
    let hits: Vec<_> = scored.into_iter().map(|(_, hit)| hit).take(config.top_k).collect();
    let (lead_name, lead) = results.swap_remove(0);
    let mut trace = lead.trace;
    trace.fallbacks = notes;
    trace.fallbacks.insert(0, format!("decided by the collection '{lead_name}' (the most confident)"));
    Retrieval { context: context::of_hits(&hits, config.context_tokens), hits, trace, relevance: lead.relevance, other_language: None }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::retrieve::{Hit, Relevance, Trace};
    use crate::store::ChunkRow;

    fn result(collection: &str, outcome: Outcome, probability: f32, scores: &[f32]) -> (String, Retrieval) {
        let hits = scores
            .iter()
            .enumerate()
            .map(|(i, &score)| Hit {
                chunk: ChunkRow {
                    id: i as i64,
                    source: format!("{collection}-{i}.md"),
                    text: format!("Passage {i} of {collection}."),
                    collection: Some(collection.into()),
                    ..Default::default()
                },
                score,
                dense: None,
                sparse: None,
                fused: None,
                rerank: None,
            })
            .collect();
        let relevance = Relevance::stub(outcome, probability);
        let trace =
            Trace { query: String::new(), prepared_query: String::new(), stages: vec![], fallbacks: vec![], total_ms: 0.0, relevance: None, passages: vec![] };
        (collection.into(), Retrieval { hits, context: Default::default(), trace, relevance, other_language: None })
    }

    fn sources(r: &Retrieval) -> Vec<&str> {
        r.hits.iter().map(|h| h.chunk.source.as_str()).collect()
    }

    #[test]
    fn a_refusing_collection_adds_nothing_and_the_confident_one_decides() {
        let merged =
            merge(vec![result("b", Outcome::Refused, 0.1, &[0.9, 0.8]), result("a", Outcome::Answered, 0.8, &[0.5, 0.2])], &RetrievalConfig::default());
        assert_eq!(sources(&merged), ["a-0.md", "a-1.md"]);
        assert_eq!(merged.relevance.outcome, Outcome::Answered);
        assert_eq!(merged.context.blocks.len(), 2);
        assert!(merged.trace.fallbacks[0].contains("'a'"), "{:?}", merged.trace.fallbacks);
    }

    #[test]
    fn answering_collections_interleave_by_their_confidence_and_each_passage_keeps_its_collection() {
        let merged =
            merge(vec![result("a", Outcome::Answered, 0.9, &[4.0, 1.0]), result("b", Outcome::Unsure, 0.6, &[0.3, 0.25])], &RetrievalConfig::default());
        assert_eq!(sources(&merged), ["a-0.md", "b-0.md", "b-1.md", "a-1.md"]);
        assert_eq!(merged.context.blocks.iter().map(|b| b.collection.as_deref().unwrap()).collect::<Vec<_>>(), ["a", "b", "b", "a"]);
    }

    #[test]
    fn a_failing_collection_is_skipped_and_the_trace_says_so() {
        let failed = vec![("remote".to_string(), crate::Error::Embedding("the server is down".into()))];
        let merged = merged_or_first_error(vec![result("a", Outcome::Answered, 0.9, &[0.5])], failed, &RetrievalConfig::default()).unwrap();
        assert_eq!(sources(&merged), ["a-0.md"]);
        assert!(merged.trace.fallbacks.iter().any(|f| f.starts_with("remote: skipped") && f.contains("the server is down")), "{:?}", merged.trace.fallbacks);
        let none = merged_or_first_error(vec![], vec![("remote".into(), crate::Error::Embedding("down".into()))], &RetrievalConfig::default());
        assert_eq!(none.unwrap_err().kind(), crate::ErrorKind::Embedding);
    }

    #[test]
    fn when_every_collection_refuses_the_closest_one_still_shows_its_passages() {
        let merged = merge(vec![result("a", Outcome::Refused, 0.1, &[0.4]), result("b", Outcome::Refused, 0.3, &[0.2])], &RetrievalConfig::default());
        assert_eq!((sources(&merged), merged.relevance.outcome), (vec!["b-0.md"], Outcome::Refused));
    }
}
