//! The extractive answer, Kea's quality floor: when no language model is
//! good enough to write answers, the answer is the best sentences of the top
//! passages, quoted as they stand, each with its `[S#]`. Passages in the
//! question's language come first when there are any. Also used to quote the
//! passage that backs an image identification.

use crate::language::Language;
use std::collections::HashSet;

use crate::retrieve::context::sentences;
use crate::retrieve::ContextBlock;
use crate::segment::{query_terms, tokens};

/// Sentences quoted at most, and passages drawn from.
const MAX_SENTENCES: usize = 3;
const MAX_BLOCKS: usize = 3;
/// A sentence longer than this (in characters) is cut at a word boundary.
const MAX_SENTENCE_CHARS: usize = 320;

/// The quoted answer and the labels it cites, in order.
#[derive(Debug, Clone, PartialEq)]
pub struct Extract {
    pub text: String,
    pub cited: Vec<String>,
}

/// How many of the query's terms `sentence` (with its passage heading) contains.
fn overlap(terms: &HashSet<String>, sentence: &str, heading: &str) -> usize {
    let words: HashSet<String> = tokens(sentence).into_iter().collect();
    let in_heading: HashSet<String> = tokens(heading).into_iter().collect();
    terms.iter().map(|t| if words.contains(t) { 2 } else { usize::from(in_heading.contains(t)) }).sum()
}

fn shorten(sentence: &str) -> String {
    if sentence.chars().count() <= MAX_SENTENCE_CHARS {
        return sentence.to_string();
    }
    let cut: String = sentence.chars().take(MAX_SENTENCE_CHARS).collect();
    let at = cut.rfind(char::is_whitespace).filter(|&i| i > MAX_SENTENCE_CHARS / 2).unwrap_or(cut.len());
    format!("{}…", cut[..at].trim_end())
}

/// The best sentences of `blocks` for `question`: the top passage's best
/// one or two, then the best of the next passages when they match the
/// question's terms. `None` when there is no passage.
pub fn extract_answer(question: &str, blocks: &[ContextBlock]) -> Option<Extract> {
    let language = Language::of_query(question);
    let same: Vec<&ContextBlock> = blocks.iter().filter(|b| Language::of_text(&b.text) == language).collect();
    let chosen: Vec<&ContextBlock> = if same.is_empty() { blocks.iter().collect() } else { same };
    let terms: HashSet<String> = query_terms(question).into_iter().collect();
    let mut picked: Vec<(usize, usize, &str, &str)> = Vec::new(); // (block rank, sentence index, text, label)
    let mut best_score = 0;
    for (rank, block) in chosen.iter().take(MAX_BLOCKS).enumerate() {
        let mut scored: Vec<(usize, usize, &str)> =
            sentences(&block.text).into_iter().enumerate().map(|(i, s)| (overlap(&terms, s, &block.heading_path), i, s)).collect();
        scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        if rank == 0 {
            best_score = scored.first().map_or(0, |s| s.0);
        }
        // Another passage's sentence joins only if it matches the question in
        // its own words about as well as the best one (not a heading word alone).
        let enough = |score: usize| if rank == 0 { score > 0 } else { score >= 2 && score * 2 > best_score };
        let wanted = if rank == 0 { 2 } else { 1 };
        let mut chosen: Vec<(usize, &str)> = scored.iter().take(wanted).filter(|s| enough(s.0) || (rank == 0 && s.1 == 0)).map(|s| (s.1, s.2)).collect();
        // The top passage's best sentence alone says little: its next one goes with it.
        if let (0, [(best, _)]) = (rank, chosen.as_slice()) {
            let next = best + 1;
            if let Some(&(_, _, sentence)) = scored.iter().find(|s| s.1 == next) {
                chosen.push((next, sentence));
            }
        }
        for (index, sentence) in chosen {
            if picked.len() < MAX_SENTENCES {
                picked.push((rank, index, sentence, &block.label));
            }
        }
    }
    if picked.is_empty() {
        return None;
    }
    picked.sort_by_key(|p| (p.0, p.1));
    let mut cited: Vec<String> = Vec::new();
    let parts: Vec<String> = picked
        .iter()
        .map(|&(_, _, sentence, label)| {
            if !cited.iter().any(|c| c == label) {
                cited.push(label.to_string());
            }
            format!("{} [{label}]", shorten(sentence))
        })
        .collect();
    Some(Extract { text: parts.join(if language == Language::Chinese { "" } else { " " }), cited })
}

/// The sentence of `block` that shares the most of `question`'s terms (its
/// first when none does), shortened.
pub fn closest_sentence(question: &str, block: &ContextBlock) -> String {
    let terms: HashSet<String> = query_terms(question).into_iter().collect();
    let all = sentences(&block.text);
    let best = all.iter().enumerate().max_by_key(|(i, s)| (overlap(&terms, s, &block.heading_path), std::cmp::Reverse(*i))).map(|(_, s)| *s);
    shorten(best.unwrap_or(block.text.trim()))
}

/// The banner over an extractive answer, in the question's language.
pub fn notice(question: &str, why: &str) -> String {
    if Language::of_query(question) == Language::Chinese {
        format!("摘录的回答：以下句子原样摘自你的文档（{why}）。要获得成文的回答，请在“设置 → 模型”中下载 Qwen2.5 1.5B，或运行 Ollama。")
    } else {
        format!("Extractive answer: these sentences are quoted from your documents as they stand ({why}). For written answers, download Qwen2.5 1.5B in Settings → Models, or run Ollama.")
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A context block `label` under `heading` (shared with the answer check's tests).
    pub(crate) fn block(label: &str, heading: &str, text: &str) -> ContextBlock {
        ContextBlock {
            label: label.into(),
            source: format!("{label}.md"),
            heading_path: heading.into(),
            page: None,
            chunk_ids: vec![1],
            text: text.into(),
            collection: None,
            url: None,
        }
    }

    #[test]
    fn the_best_sentences_are_quoted_with_their_labels() {
        let blocks = [
            block("S1", "Cockatiel > Diet", "Cockatiels are small. In the wild they eat grass seeds. Pellets should form most of a pet's diet."),
            block("S2", "Budgerigar > Diet", "Budgerigars eat seeds and greens."),
            block("S3", "Cage", "A cage needs perches."),
        ];
        let got = extract_answer("What do cockatiels eat?", &blocks).unwrap();
        assert_eq!(got.text, "Cockatiels are small. [S1] In the wild they eat grass seeds. [S1] Budgerigars eat seeds and greens. [S2]");
        assert_eq!(got.cited, ["S1", "S2"]);
        let unrelated = [
            block("S1", "Cockatiel > Diet", "In the wild cockatiels eat grass seeds. Pellets should form most of a pet's diet."),
            block("S2", "Cage", "A cage for cockatiels needs perches of several widths."),
        ];
        let got = extract_answer("What do cockatiels eat?", &unrelated).unwrap();
        assert_eq!(got.cited, ["S1"], "a sentence sharing only the subject's name is not evidence: {}", got.text);
    }

    #[test]
    fn passages_in_the_question_language_come_first() {
        let blocks = [block("S1", "Cockatiel > Diet", "Cockatiels eat seeds."), block("S2", "玄凤鹦鹉 > 饮食", "玄凤鹦鹉主要吃草籽。也吃颗粒饲料。")];
        let got = extract_answer("玄凤鹦鹉吃什么？", &blocks).unwrap();
        assert!(got.text.starts_with("玄凤鹦鹉主要吃草籽。 [S2]") || got.text.starts_with("玄凤鹦鹉主要吃草籽。[S2]"), "{}", got.text);
        assert_eq!(got.cited, ["S2"]);
        assert!(extract_answer("anything", &[]).is_none());
        assert!(notice("玄凤吃什么", "x").starts_with("摘录"));
    }

    #[test]
    fn the_closest_sentence_is_the_one_sharing_the_most_terms() {
        let b = block("S1", "Cockatiel > Care", "Cockatiels are small. They need a large cage with several perches. They like baths.");
        assert_eq!(closest_sentence("how big a cage does a cockatiel need", &b), "They need a large cage with several perches.");
        assert_eq!(closest_sentence("zzz", &b), "Cockatiels are small.", "none matches: the first");
    }
}
