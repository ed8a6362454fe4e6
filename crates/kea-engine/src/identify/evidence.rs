//! Evidence for an identification: the queries a doubtful result asks,
//! retrieved together and reranked once, or a confident label's own best
//! passages — all through the [`Retriever`].

use crate::language::Language;
use std::collections::HashSet;

use super::words::Words;
use super::Candidate;
use crate::error::Result;
use crate::labels::Label;
use crate::profile::Profile;
use crate::retrieve::{Hit, RetrievalConfig, Retriever};

/// Evidence hits kept after merging the queries' results.
const EVIDENCE_KEPT: usize = 6;

/// The up-to-three evidence queries for a doubtful result.
pub fn build_queries(candidates: &[Candidate], description: &str, lang: Language, profile: &Profile) -> Vec<String> {
    let words = Words::new(profile, lang);
    let top: Vec<&str> = candidates.iter().take(3).map(|c| words.name(c)).collect();
    let mut queries = Vec::new();
    if top.len() > 1 {
        queries.push(match (words.zh, &words.kind) {
            (true, Some(k)) => format!("{} 这些{k}的区别与识别要点", top.join(" / ")),
            (true, None) => format!("{} 的区别与识别要点", top.join(" / ")),
            (false, _) => format!("How to tell apart {}: identification features", top.join(" / ")),
        });
    }
    if !description.is_empty() {
        queries.push(match (words.zh, &words.kind) {
            (true, Some(k)) => format!("哪种{k}有这些特征：{description}"),
            (true, None) => format!("哪一种有这些特征：{description}"),
            (false, Some(k)) => format!("Which {k} has: {description}?"),
            (false, None) => format!("Which one has: {description}?"),
        });
    }
    if let Some(first) = top.first() {
        queries.push(if words.zh { format!("{first} 外形特征 识别") } else { format!("{first} typical features identification") });
    }
    queries
}

/// Keeps the first hit for each (source, text prefix).
pub fn dedupe_evidence(hits: Vec<Hit>) -> Vec<Hit> {
    let mut seen = HashSet::new();
    hits.into_iter().filter(|h| seen.insert((h.chunk.source.clone(), h.chunk.text.chars().take(40).collect::<String>()))).collect()
}

/// Evidence for a doubtful result: the queries retrieved together (their
/// candidates merged before fusion, reranked once against the first query
/// when a cross-encoder is installed), deduplicated.
pub(super) fn merged_evidence(retriever: &Retriever, queries: &[String], config: &RetrievalConfig) -> Result<Vec<Hit>> {
    let config = RetrievalConfig { top_k: config.top_k.max(EVIDENCE_KEPT), ..config.for_answers() };
    let mut hits = dedupe_evidence(retriever.retrieve_queries(queries, None, &config)?.hits);
    hits.truncate(EVIDENCE_KEPT);
    Ok(hits)
}

/// The best passages about one label, from its own documents, those in
/// the reply's language first.
pub(super) fn label_passages(retriever: &Retriever, labels: &[Label], name: &str, zh: bool, config: &RetrievalConfig) -> Result<Vec<Hit>> {
    let Some(label) = labels.iter().find(|l| l.name() == name) else { return Ok(Vec::new()) };
    // What a photo's viewer wants first: how it looks.
    let query = if zh { format!("{} 外形特征", label.zh.as_deref().unwrap_or(name)) } else { format!("{name} appearance identification") };
    let mut hits: Vec<Hit> = retriever.retrieve(&query, config)?.hits.into_iter().filter(|h| label.sources.contains(&h.chunk.source)).collect();
    let lang = if zh { Language::Chinese } else { Language::English };
    hits.sort_by_key(|h| Language::of_text(&h.chunk.text) != lang);
    hits.truncate(2);
    Ok(hits)
}
