//! Checking a language model's answer against its sources, sentence by
//! sentence. Each sentence (with the `[S#]` markers that close it) is
//! compared with the passages it cites, or with all of them when it cites
//! none: more than half of its content words, and every number it states,
//! must be in them. A sentence in another language than its passages cannot be
//! compared word for word and is kept unchecked; so is one with no content
//! words ("Yes."). Unsupported sentences are taken out of the answer and
//! listed apart, so the user sees what the model said beyond the documents;
//! when fewer of the checked sentences hold than fail, the answer does not
//! stand and the extractive floor answers instead.

use crate::language::Language;
use std::collections::HashSet;

use super::markers::{map_markers, marker_labels};
use crate::chunk::sentence_ends;
use crate::retrieve::ContextBlock;
use crate::segment::{content_terms, index_tokens, is_cjk};

/// Share of a sentence's content words its passages must hold more than.
const MIN_SUPPORT: f32 = 0.5;

/// An answer after the check.
#[derive(Debug, Clone, PartialEq)]
pub struct Checked {
    /// The answer without its unsupported sentences.
    pub text: String,
    /// The sentences taken out, as the model wrote them.
    pub unsupported: Vec<String>,
    /// Whether at least half of the sentences that could be checked hold.
    pub stands: bool,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Verdict {
    Supported,
    Unsupported,
    /// No content words, or written in another language than its passages.
    Unchecked,
}

/// Checks `answer` against `blocks` (see the module docs).
pub fn check(answer: &str, blocks: &[ContextBlock]) -> Checked {
    let spans = sentence_spans(answer);
    let verdicts: Vec<Verdict> = spans.iter().map(|&(start, end)| judge(&answer[start..end], blocks)).collect();
    let count = |v: Verdict| verdicts.iter().filter(|&&x| x == v).count();
    let (held, failed) = (count(Verdict::Supported), count(Verdict::Unsupported));
    let mut text = String::with_capacity(answer.len());
    let mut unsupported = Vec::new();
    for (&(start, end), verdict) in spans.iter().zip(&verdicts) {
        let sentence = &answer[start..end];
        if *verdict == Verdict::Unsupported {
            unsupported.push(sentence.trim().to_string());
            // Keep the line break that ended it, so the next line stays a line.
            if sentence.ends_with('\n') && !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
        } else {
            text.push_str(sentence);
        }
    }
    Checked { text: tidy(&text), unsupported, stands: held >= failed }
}

/// Byte ranges of the sentences of `text`, together covering all of it;
/// `[S#]` markers that open a sentence belong to the one before.
fn sentence_spans(text: &str) -> Vec<(usize, usize)> {
    let mut spans: Vec<(usize, usize)> = Vec::new();
    let mut start = 0;
    for end in sentence_ends(text).into_iter().chain([text.len()]) {
        if end <= start {
            continue;
        }
        if let Some(last) = spans.last_mut() {
            last.1 = start + leading_markers(&text[start..end]);
            start = last.1;
        }
        if end > start {
            spans.push((start, end));
        }
        start = end;
    }
    spans
}

/// The length of the citation markers (and the spaces between them) that open `text`.
fn leading_markers(text: &str) -> usize {
    let mut taken = 0;
    loop {
        let rest = &text[taken..];
        let trimmed = rest.trim_start_matches([' ', '\t']);
        let close = trimmed.strip_prefix('[').and_then(|r| r.find(']'));
        match close.filter(|&c| marker_labels(&trimmed[1..1 + c]).is_some()) {
            Some(c) => taken += rest.len() - trimmed.len() + c + 2,
            None => return taken,
        }
    }
}

/// Whether `sentence` is held by the passages it cites (see the module docs).
fn judge(sentence: &str, blocks: &[ContextBlock]) -> Verdict {
    let mut cited: Vec<String> = Vec::new();
    let plain = map_markers(sentence, |labels| {
        cited.extend(labels.iter().map(|l| l.to_uppercase()));
        String::new()
    });
    let terms = content_terms(&plain);
    if terms.is_empty() || is_list_number(&plain) {
        return Verdict::Unchecked;
    }
    let language = Language::of_text(&plain);
    let sources: Vec<&ContextBlock> =
        blocks.iter().filter(|b| cited.is_empty() || cited.contains(&b.label)).filter(|b| Language::of_text(&b.text) == language).collect();
    if sources.is_empty() {
        return Verdict::Unchecked;
    }
    let source_text: String = sources.iter().map(|b| format!("{}\n{}\n", b.heading_path, b.text)).collect();
    let source_tokens: HashSet<String> = index_tokens(&source_text).into_iter().collect();
    let held = |t: &String| source_tokens.contains(t) || (t.chars().any(is_cjk) && source_text.contains(t.as_str()));
    let is_number = |t: &String| t.chars().all(|c| c.is_ascii_digit());
    if terms.iter().any(|t| is_number(t) && !held(t)) {
        return Verdict::Unsupported;
    }
    let share = terms.iter().filter(|t| held(t)).count() as f32 / terms.len() as f32;
    if share > MIN_SUPPORT {
        Verdict::Supported
    } else {
        Verdict::Unsupported
    }
}

/// Whether `text` is only a list item's number (`1.`, `2)`).
fn is_list_number(text: &str) -> bool {
    let number = text.trim().trim_end_matches(['.', ')']);
    !number.is_empty() && number.chars().all(|c| c.is_ascii_digit())
}

/// `text` without the lines its removals emptied (or left holding only a
/// list bullet or number) and without runs of blank lines.
fn tidy(text: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    for line in text.lines() {
        let bare = line.trim().trim_start_matches(['-', '*', '+']).trim();
        if !line.trim().is_empty() && (bare.is_empty() || is_list_number(bare)) {
            continue;
        }
        if line.trim().is_empty() && out.last().is_none_or(|l| l.trim().is_empty()) {
            continue;
        }
        out.push(line);
    }
    out.join("\n").trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chat::extractive::tests::block;

    fn sources() -> Vec<ContextBlock> {
        vec![
            block("S1", "Cockatiel > Diet", "In the wild cockatiels eat grass seeds. Pellets should form most of a pet's diet."),
            block("S2", "Cockatiel > Lifespan", "Cockatiels live 15 to 20 years in captivity."),
            block("S3", "玄凤鹦鹉 > 饮食", "玄凤鹦鹉在野外主要吃草籽。宠物的饮食应以颗粒饲料为主。"),
        ]
    }

    #[test]
    fn sentences_the_cited_passages_hold_are_kept() {
        let answer = "Wild cockatiels eat grass seeds [S1]. As pets, pellets should form most of the diet. [S1] They live 15 to 20 years [S2].";
        let checked = check(answer, &sources());
        assert_eq!(checked.text, answer);
        assert!(checked.unsupported.is_empty() && checked.stands);
    }

    #[test]
    fn an_invented_claim_or_number_is_taken_out_and_listed() {
        let answer = "Cockatiels eat grass seeds [S1]. They live 40 years [S2]. Chocolate cures feather plucking quickly [S1].";
        let checked = check(answer, &sources());
        assert_eq!(checked.text, "Cockatiels eat grass seeds [S1].");
        assert_eq!(checked.unsupported, ["They live 40 years [S2].", "Chocolate cures feather plucking quickly [S1]."]);
        assert!(!checked.stands, "one of three holds: the answer does not stand");
    }

    #[test]
    fn a_sentence_is_checked_against_the_passage_it_cites() {
        let checked = check("Cockatiels live 15 to 20 years [S1].", &sources());
        assert_eq!(checked.unsupported.len(), 1, "S1 says nothing of lifespan, though S2 does");
        let checked = check("Cockatiels live 15 to 20 years.", &sources());
        assert!(checked.unsupported.is_empty(), "a sentence citing nothing is checked against every passage");
    }

    #[test]
    fn chinese_answers_are_checked_by_their_words() {
        let checked = check("玄凤鹦鹉在野外主要吃草籽[S3]。它们最爱吃巧克力和咖啡豆[S3]。", &sources());
        assert_eq!(checked.text, "玄凤鹦鹉在野外主要吃草籽[S3]。");
        assert_eq!(checked.unsupported, ["它们最爱吃巧克力和咖啡豆[S3]。"]);
        let across = check("玄凤鹦鹉主要吃草籽 [S1]。", &sources());
        assert!(across.unsupported.is_empty(), "a sentence in another language than its passage is not compared word for word");
    }

    #[test]
    fn lists_keep_their_shape_when_an_item_goes() {
        let answer = "What they eat:\n\n- Grass seeds in the wild [S1]\n- Mostly chocolate [S1]\n- Pellets for pets [S1]\n\nYes.";
        let checked = check(answer, &sources());
        assert_eq!(checked.text, "What they eat:\n\n- Grass seeds in the wild [S1]\n- Pellets for pets [S1]\n\nYes.");
        let numbered = check("1. Grass seeds in the wild [S1].\n2. Mostly chocolate [S1].\n", &sources());
        assert_eq!(numbered.text, "1. Grass seeds in the wild [S1].");
        assert_eq!(sentence_spans("A. [S1] [S2] B."), [(0, 12), (12, 15)], "markers after the full stop close the sentence before");
    }
}
