//! A document as a whole without a language model: what it is (title,
//! kind, size, pages), its outline (the headings its passages sit under),
//! and the few sentences that best cover it. A passage is central when its
//! stored embedding is close to the document's mean; within it, a sentence
//! is central when it holds the words the document uses most. The best
//! sentence of each section is taken, the sections with the most central
//! first, so the sentences spread over the document; they are shown in
//! document order, each cited with its page.

use std::collections::{HashMap, HashSet};

use crate::chat::instructions::addresses_a_model;
use crate::retrieve::context::sentences;
use crate::segment;
use crate::store::{ChunkRow, DocRecord};
use crate::vectors::cosine;

/// Sentences an overview quotes, at most.
pub const KEY_SENTENCES: usize = 5;
/// Outline entries shown, at most.
const OUTLINE_ENTRIES: usize = 24;
/// Levels of heading a section is told apart by.
const SECTION_LEVELS: usize = 2;

/// One sentence chosen to cover a document, with the chunk it is from.
#[derive(Debug, Clone)]
pub struct KeySentence<'c> {
    pub text: String,
    pub chunk: &'c ChunkRow,
    /// Where it is in the document (chunk, sentence), for document order.
    position: (usize, usize),
    score: f32,
}

/// The outline: the distinct heading paths in document order, as nested
/// entries (depth, heading), at most [`OUTLINE_ENTRIES`].
pub fn outline(chunks: &[ChunkRow]) -> Vec<(usize, String)> {
    let mut seen: HashSet<Vec<String>> = HashSet::new();
    let mut entries = Vec::new();
    for chunk in chunks {
        let levels: Vec<String> = chunk.heading_path.split(" > ").map(str::trim).filter(|h| !h.is_empty()).map(String::from).collect();
        for depth in 1..=levels.len() {
            if seen.insert(levels[..depth].to_vec()) && entries.len() < OUTLINE_ENTRIES {
                entries.push((depth - 1, levels[depth - 1].clone()));
            }
        }
    }
    entries
}

/// The sentences that best cover the document of `chunks` (in order),
/// given the chunks' stored vectors (any may be missing).
pub fn key_sentences<'c>(chunks: &'c [ChunkRow], vectors: &HashMap<u64, Vec<f32>>, wanted: usize) -> Vec<KeySentence<'c>> {
    let centrality = centrality(chunks, vectors);
    let weights = word_weights(chunks);
    let mut by_section: HashMap<String, Vec<KeySentence<'c>>> = HashMap::new();
    for (c, chunk) in chunks.iter().enumerate() {
        let text = unwrapped(&chunk.text);
        for (s, sentence) in sentences(&text).into_iter().enumerate() {
            let Some(score) = sentence_score(sentence, &weights) else { continue };
            // Documents state their subject first: a sentence further down weighs a little less.
            let lead = 1.0 / (1.0 + 0.05 * (c * 4 + s) as f32);
            let key =
                KeySentence { text: sentence.split_whitespace().collect::<Vec<_>>().join(" "), chunk, position: (c, s), score: score * centrality[c] * lead };
            by_section.entry(section_of(&chunk.heading_path)).or_default().push(key);
        }
    }
    let mut sections: Vec<Vec<KeySentence<'c>>> = by_section.into_values().collect();
    for section in &mut sections {
        section.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.position.cmp(&b.position)));
    }
    sections.sort_by(|a, b| b[0].score.total_cmp(&a[0].score).then(a[0].position.cmp(&b[0].position)));
    // Round by round: each section's best, then each one's next best.
    let mut chosen: Vec<KeySentence<'c>> = Vec::new();
    for round in 0.. {
        let before = chosen.len();
        for section in &sections {
            if chosen.len() < wanted {
                chosen.extend(section.get(round).cloned());
            }
        }
        if chosen.len() == before || chosen.len() >= wanted {
            break;
        }
    }
    chosen.sort_by_key(|k| k.position);
    chosen
}

/// `text` with the line breaks inside sentences (a PDF's or a wrapped
/// file's lines) made spaces: a line that ends without a sentence's end
/// runs on into the next, unless a blank line or a list item follows.
pub fn unwrapped(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = String::with_capacity(text.len());
    for (i, line) in lines.iter().enumerate() {
        out.push_str(line.trim_end());
        let Some(next) = lines.get(i + 1) else { break };
        let ends = line.trim_end().ends_with(['.', '!', '?', ':', '。', '！', '？', '：', ';', '；']) || line.trim().is_empty();
        let starts_item = next.trim_start().starts_with(['-', '*', '•', '#', '|']) || next.trim().is_empty();
        out.push(if ends || starts_item { '\n' } else { ' ' });
    }
    out
}

/// Each chunk's closeness to the document's mean vector (1 for all when
/// there are no vectors to compare), floored so no chunk scores nothing.
fn centrality(chunks: &[ChunkRow], vectors: &HashMap<u64, Vec<f32>>) -> Vec<f32> {
    let held: Vec<&Vec<f32>> = chunks.iter().filter_map(|c| vectors.get(&(c.id as u64))).collect();
    let Some(dim) = held.first().map(|v| v.len()) else { return vec![1.0; chunks.len()] };
    let mut mean = vec![0f32; dim];
    for v in held.iter().filter(|v| v.len() == dim) {
        let norm = crate::vectors::norm(v).max(f32::EPSILON);
        mean.iter_mut().zip(v.iter()).for_each(|(m, x)| *m += x / norm);
    }
    chunks.iter().map(|c| vectors.get(&(c.id as u64)).filter(|v| v.len() == dim).map_or(0.5, |v| cosine(v, &mean).max(0.0)) + 0.25).collect()
}

/// How much each content word says about the document: the share of its
/// chunks that use it (a word of every chunk says most; one of one chunk little).
fn word_weights(chunks: &[ChunkRow]) -> HashMap<String, f32> {
    let mut counts: HashMap<String, f32> = HashMap::new();
    for chunk in chunks {
        let words: HashSet<String> = segment::content_terms(&chunk.text).into_iter().collect();
        for word in words {
            *counts.entry(word).or_default() += 1.0;
        }
    }
    let total = chunks.len().max(1) as f32;
    counts.values_mut().for_each(|c| *c = (*c / total).sqrt());
    counts
}

/// A sentence's worth as a summary line: the weight of its words over the
/// square root of their number, halved for one with a web address or
/// markup; `None` for a line no summary quotes (too
/// short or long, a heading's colon, a table row, words to a model).
fn sentence_score(sentence: &str, weights: &HashMap<String, f32>) -> Option<f32> {
    let chars = sentence.chars().count();
    let wordy = sentence.chars().filter(|c| c.is_alphabetic()).count() * 2 > chars;
    if !(12..=400).contains(&chars) || !wordy || sentence.trim_end().ends_with([':', '：']) || sentence.contains('|') || addresses_a_model(sentence) {
        return None;
    }
    let words = segment::content_terms(sentence);
    if words.len() < 3 {
        return None;
    }
    let weight: f32 = words.iter().map(|w| weights.get(w).copied().unwrap_or(0.0)).sum();
    // An address or markup is seldom what sums a document up.
    let aside = if ["http", "@", "<!--", "www."].iter().any(|m| sentence.contains(m)) { 0.5 } else { 1.0 };
    Some(aside * weight / (words.len() as f32).sqrt())
}

/// The section a chunk is in: its first [`SECTION_LEVELS`] headings.
fn section_of(heading_path: &str) -> String {
    heading_path.split(" > ").take(SECTION_LEVELS).collect::<Vec<_>>().join(" > ")
}

/// How many pages the document's passages reach (`None` without pages).
pub fn pages(chunks: &[ChunkRow]) -> Option<u32> {
    chunks.iter().filter_map(|c| c.page).max()
}

/// The document's name as shown: its title, else its file name.
pub fn shown_name(doc: &DocRecord) -> String {
    doc.title.clone().filter(|t| !t.trim().is_empty()).unwrap_or_else(|| doc.path.rsplit('/').next().unwrap_or(&doc.path).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(id: i64, heading: &str, text: &str, page: Option<u32>) -> ChunkRow {
        ChunkRow {
            id,
            source: "manual.pdf".into(),
            title: None,
            chunk_index: id as usize,
            total_chunks: 6,
            heading_path: heading.into(),
            page,
            byte_start: 0,
            byte_end: 0,
            text: text.into(),
            collection: None,
            url: None,
        }
    }

    fn manual() -> Vec<ChunkRow> {
        vec![
            chunk(0, "Kettle manual > Safety", "Never immerse the kettle base in water. Keep the kettle away from children.", Some(1)),
            chunk(1, "Kettle manual > Filling", "Fill the kettle between the minimum and maximum marks. The kettle holds 1.7 litres of water.", Some(2)),
            chunk(2, "Kettle manual > Descaling", "Descale the kettle every four weeks with citric acid. Rinse the kettle twice after descaling.", Some(3)),
            chunk(3, "Kettle manual > Descaling", "Hard water leaves scale in the kettle faster.", Some(3)),
            chunk(4, "Kettle manual > Warranty", "The kettle warranty lasts two years from the date of purchase.", Some(4)),
            chunk(5, "Kettle manual > Warranty", "Contact: see the back cover:", Some(4)),
        ]
    }

    #[test]
    fn the_outline_lists_each_heading_once_in_order_and_nested() {
        let entries = outline(&manual());
        assert_eq!(entries[0], (0, "Kettle manual".to_string()));
        let names: Vec<&str> = entries.iter().map(|(_, h)| h.as_str()).collect();
        assert_eq!(names, ["Kettle manual", "Safety", "Filling", "Descaling", "Warranty"]);
        assert_eq!(pages(&manual()), Some(4));
    }

    #[test]
    fn lines_wrapped_inside_a_sentence_are_joined() {
        let page = "Bar spacing must suit the size: about 1.2 cm for small\nbirds and 2.5 cm for large ones.\n- a list item\n- another\n\nA new paragraph.";
        assert_eq!(
            unwrapped(page),
            "Bar spacing must suit the size: about 1.2 cm for small birds and 2.5 cm for large ones.\n- a list item\n- another\n\nA new paragraph."
        );
    }

    #[test]
    fn key_sentences_spread_over_the_sections_in_document_order() {
        let chunks = manual();
        let chosen = key_sentences(&chunks, &HashMap::new(), 4);
        assert_eq!(chosen.len(), 4);
        let sections: HashSet<&str> = chosen.iter().map(|k| k.chunk.heading_path.as_str()).collect();
        assert_eq!(sections.len(), 4, "one sentence from each section first: {chosen:?}");
        assert!(chosen.windows(2).all(|w| w[0].position < w[1].position), "in document order");
        assert!(chosen.iter().all(|k| !k.text.ends_with(':')), "no line that only introduces another");
    }
}
