//! Context assembly for the LLM: hits become numbered blocks
//! `[S1] source | heading path | p.N`, adjacent chunks of one source merged,
//! sentences already given dropped, within a token budget. Each block keeps
//! the chunk ids needed to show the passage later.

use serde::Serialize;

use crate::chunk::sentence_ends;
use crate::store::ChunkRow;

/// One numbered source block.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ContextBlock {
    /// `S1`, `S2`, … in the order given to the LLM.
    pub label: String,
    pub source: String,
    pub heading_path: String,
    pub page: Option<u32>,
    pub chunk_ids: Vec<i64>,
    /// [`fingerprint`] of its first chunk's text: what a citation of it
    /// checks the passage it opens against.
    pub fingerprint: String,
    pub text: String,
    /// The collection, in results across several collections.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub collection: Option<String>,
    /// The document's web address, if it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The embedder's similarity of each of its sentences to the question
    /// (empty when not computed), for the extractive answer's scorer.
    #[serde(skip)]
    pub sentence_similarity: Vec<f32>,
    /// The names its document's front matter gives the thing it describes,
    /// in every language and alias (empty when none), for the scorer's
    /// subject check.
    #[serde(skip)]
    pub names: Vec<String>,
}

impl ContextBlock {
    /// Whether `other` shows a chunk this block shows.
    pub fn shares_chunks(&self, other: &ContextBlock) -> bool {
        self.chunk_ids.iter().any(|id| other.chunk_ids.contains(id))
    }
}

/// The assembled context.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Context {
    pub blocks: Vec<ContextBlock>,
    /// The prompt text: every block with its header.
    pub text: String,
    pub estimated_tokens: usize,
}

/// A rough token count: one per CJK character, one per four other characters.
pub fn estimate_tokens(text: &str) -> usize {
    let (cjk, other) = text.chars().fold((0usize, 0usize), |(c, o), ch| if (ch as u32) >= 0x2E80 { (c + 1, o) } else { (c, o + 1) });
    cjk + other.div_ceil(4)
}

/// The sentences of `text`, trimmed, in order.
pub(crate) fn sentences(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    for end in sentence_ends(text).into_iter().chain([text.len()]) {
        if end > start {
            let s = text[start..end].trim();
            if !s.is_empty() {
                out.push(s);
            }
            start = end;
        }
    }
    out
}

fn normalise(sentence: &str) -> String {
    sentence.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase()
}

/// The context of retrieved hits, in rank order: what chat, identification
/// and the retriever all give a model or the user.
pub fn of_hits(hits: &[super::Hit], token_budget: usize) -> Context {
    let chunks: Vec<ChunkRow> = hits.iter().map(|h| h.chunk.clone()).collect();
    assemble(&chunks, token_budget)
}

/// `[S1] collection › source | heading | p.N`: a block's first line.
fn block_header(label: &str, first: &ChunkRow) -> String {
    let page = first.page.map(|p| format!(" | p.{p}")).unwrap_or_default();
    let collection = first.collection.as_ref().map(|c| format!("{c} › ")).unwrap_or_default();
    format!("[{label}] {collection}{} | {}{page}\n", first.source, first.heading_path)
}

/// Whether two chunks are next to each other in one document under one heading.
/// A short hash of a chunk's text: the same passage, wherever and whenever
/// it is stored, has the same one.
pub fn fingerprint(text: &str) -> String {
    blake3::hash(text.as_bytes()).to_hex()[..16].to_string()
}

fn neighbours(a: &ChunkRow, b: &ChunkRow) -> bool {
    a.source == b.source && a.collection == b.collection && a.chunk_index.abs_diff(b.chunk_index) == 1 && a.heading_path == b.heading_path
}

/// The sentences of `group`'s chunks, in order, that no block before had
/// (`seen`: their normalised text, updated).
fn unseen_sentences<'a>(group: &[&'a ChunkRow], seen: &mut std::collections::HashSet<String>) -> Vec<&'a str> {
    group.iter().flat_map(|chunk| sentences(&chunk.text)).filter(|sentence| seen.insert(normalise(sentence))).collect()
}

/// Builds the context from chunks in rank order.
pub(crate) fn assemble(hits: &[ChunkRow], token_budget: usize) -> Context {
    // Group adjacent chunks of the same source, in the order of their best hit.
    let mut groups: Vec<Vec<&ChunkRow>> = Vec::new();
    for hit in hits {
        let adjacent = groups.iter_mut().find(|g| g.iter().any(|c| neighbours(c, hit)));
        match adjacent {
            Some(group) => group.push(hit),
            None => groups.push(vec![hit]),
        }
    }
    let mut seen = std::collections::HashSet::new();
    let mut context = Context::default();
    for mut group in groups {
        group.sort_by_key(|c| c.chunk_index);
        let kept = unseen_sentences(&group, &mut seen);
        if kept.is_empty() {
            continue;
        }
        let label = format!("S{}", context.blocks.len() + 1);
        let first = group[0];
        let header = block_header(&label, first);
        let mut body = String::new();
        let mut used = context.estimated_tokens + estimate_tokens(&header);
        for sentence in kept {
            let cost = estimate_tokens(sentence) + 1;
            if used + cost > token_budget {
                break;
            }
            if !body.is_empty() {
                body.push(' ');
            }
            body.push_str(sentence);
            used += cost;
        }
        if body.is_empty() {
            break;
        }
        context.text.push_str(&header);
        context.text.push_str(&body);
        context.text.push_str("\n\n");
        context.estimated_tokens = used;
        context.blocks.push(ContextBlock {
            label,
            source: first.source.clone(),
            heading_path: first.heading_path.clone(),
            page: first.page,
            chunk_ids: group.iter().map(|c| c.id).collect(),
            fingerprint: fingerprint(&first.text),
            text: body,
            collection: first.collection.clone(),
            url: first.url.clone(),
            sentence_similarity: Vec::new(),
            names: Vec::new(),
        });
    }
    context
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: i64, source: &str, index: usize, text: &str) -> ChunkRow {
        ChunkRow {
            id,
            source: source.into(),
            title: None,
            chunk_index: index,
            total_chunks: 9,
            heading_path: "Cockatiel > Diet".into(),
            page: None,
            byte_start: 0,
            byte_end: text.len(),
            text: text.into(),
            ..Default::default()
        }
    }

    #[test]
    fn adjacent_chunks_merge_and_overlap_is_dropped() {
        let hits = [
            row(1, "a.md", 3, "Seeds are a treat. Pellets are the base."),
            row(9, "b.md", 0, "Macaws eat nuts."),
            row(2, "a.md", 4, "Pellets are the base. Greens every day."),
        ];
        let ctx = assemble(&hits, 1500);
        assert_eq!(ctx.blocks.len(), 2);
        assert_eq!(ctx.blocks[0].label, "S1");
        assert_eq!(ctx.blocks[0].chunk_ids, [1, 2]);
        assert_eq!(ctx.blocks[0].text, "Seeds are a treat. Pellets are the base. Greens every day.");
        assert!(ctx.text.starts_with("[S1] a.md | Cockatiel > Diet\n"));
        assert!(ctx.text.contains("[S2] b.md | Cockatiel > Diet\nMacaws eat nuts."));
    }

    #[test]
    fn budget_is_respected() {
        let long: String = (0..100).map(|i| format!("Parrots need company on day {i}. ")).collect();
        let hits = [row(1, "a.md", 0, &long), row(2, "b.md", 5, "Never reached.")];
        let ctx = assemble(&hits, 120);
        assert!(ctx.estimated_tokens <= 120, "{}", ctx.estimated_tokens);
        assert_eq!(ctx.blocks.len(), 1);
    }

    #[test]
    fn chinese_tokens_are_counted_per_character() {
        assert_eq!(estimate_tokens("鹦鹉吃种子"), 5);
        assert_eq!(estimate_tokens("abcdefgh"), 2);
    }
}
