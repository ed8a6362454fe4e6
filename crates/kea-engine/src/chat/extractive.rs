//! The extractive answer, Kea's quality floor: when no language model is
//! good enough to write answers, the answer is the sentences of the top
//! passages that answer the question, quoted as they stand, each with its
//! `[S#]`. Every sentence of the top passages is scored against the
//! question ([`score_sentences`]): the embedder's similarity (computed at
//! retrieval, see `ContextBlock::sentence_similarity`), the IDF-weighted
//! share of the question's terms it and its heading hold, and whether it
//! holds the kind of answer the question asks for (a number, a duration…),
//! with a little weight for its passage's rank in retrieval.
//! When the question names a subject some passages are about (their
//! title, file name or the names their front matter gives, aliases too),
//! passages about other subjects, or named less fully, are not quoted.
//! The best sentence is quoted; a second only when it scores close to it in
//! the same document, when it best answers another ask of a question that
//! joins several, or when it is the best about another subject the
//! question names; a sentence that leans on the one before ("They…")
//! brings that one along. The same scorer picks the sentence each passage
//! of an unsure outcome's related reading shows ([`related_reading`]). Also
//! used to quote the passage behind an identification.

use std::collections::{BTreeSet, HashMap, HashSet};

use super::instructions::addresses_a_model;
use super::markers::defuse_markers;
use super::question::Question;
use crate::language::Language;
use crate::retrieve::context::sentences;
use crate::retrieve::{ContextBlock, Retrieval};
use crate::segment::{is_cjk, is_everyday, tokens};

/// Passages whose sentences are candidates.
const MAX_BLOCKS: usize = 4;
/// A second sentence is quoted when it scores at least this share of the best.
const CLOSE_TO_BEST: f32 = 0.85;
/// Weights of the similarity (rescaled to 0–1 over the candidates) and of a
/// sentence holding the kind of answer asked for, beside term coverage (0–1).
const SIMILARITY_WEIGHT: f32 = 0.5;
const ANSWER_TYPE_WEIGHT: f32 = 0.25;
/// Retrieval's own order: a sentence of the passage ranked `r` (0 first)
/// gains this over `1 + r`, so another passage's sentence is quoted over
/// the best passage's only when it answers clearly better.
const RANK_WEIGHT: f32 = 0.25;
/// A sentence longer than this (in characters) is cut at a word boundary.
const MAX_SENTENCE_CHARS: usize = 320;
/// Words that open a sentence leaning on the one before it.
const LEANING_OPENERS: &[&str] = &["they", "it", "its", "their", "them", "this", "these", "those", "he", "she", "both", "such"];
const LEANING_OPENERS_ZH: &[&str] = &["它们", "它", "这些", "这种", "这", "其", "此", "他们", "她们"];

/// The quoted answer and the labels it cites, in order.
#[derive(Debug, Clone, PartialEq)]
pub struct Extract {
    pub text: String,
    pub cited: Vec<String>,
}

/// One candidate sentence and its score.
#[derive(Debug, Clone, PartialEq)]
pub struct ScoredSentence<'a> {
    /// Index of its block in the blocks given, and of the sentence in it.
    pub block: usize,
    pub index: usize,
    pub text: &'a str,
    pub score: f32,
    /// The score without the passage's rank: what the sentence itself holds
    /// of the question (0 when nothing).
    pub evidence: f32,
    /// The IDF-weighted share of the question's terms it (or its heading) holds.
    pub covered: f32,
}

/// The words a block is about: its title (first heading), file name and
/// the names its document's front matter gives it.
pub(crate) fn subject_words(block: &ContextBlock) -> HashSet<String> {
    words_of(&subject_texts(block))
}

/// The search tokens of `texts`.
fn words_of(texts: &[String]) -> HashSet<String> {
    texts.iter().flat_map(|text| tokens(text)).collect()
}

/// The texts that say what a block is about (see [`subject_words`]).
fn subject_texts(block: &ContextBlock) -> Vec<String> {
    let title = block.heading_path.split(" > ").next().unwrap_or_default().to_string();
    let file = std::path::Path::new(&block.source).file_stem().and_then(|s| s.to_str()).unwrap_or_default().replace(['-', '_'], " ");
    [title, file].into_iter().chain(block.names.iter().map(|n| n.to_lowercase())).collect()
}

/// Chinese runs longer than this are not matched against a subject whole.
const MAX_NAME_CHARS: usize = 8;

/// The parts of `question` that name what `block` is about: its
/// Latin-letter terms among the block's subject words, and the characters
/// of each Chinese stretch of it (two characters or more) that a subject
/// text holds and that is no everyday word: 金刚 of 蓝黄金刚鹦鹉, 玄凤 of
/// 玄凤鹦鹉, 灰鹦鹉 of 非洲灰鹦鹉, not 时候.
fn named_subject(question: &Question, block: &ContextBlock) -> BTreeSet<String> {
    let texts = subject_texts(block);
    let words = words_of(&texts);
    let mut named: BTreeSet<String> = question.terms.iter().filter(|t| !t.chars().any(is_cjk) && words.contains(*t)).cloned().collect();
    let chars: Vec<char> = question.text.chars().collect();
    for start in 0..chars.len() {
        let run = chars[start..].iter().take(MAX_NAME_CHARS).take_while(|c| is_cjk(**c)).count();
        for len in 2..=run {
            let stretch: String = chars[start..start + len].iter().collect();
            if texts.iter().any(|t| t.contains(&stretch)) && !is_everyday(&stretch) {
                named.extend(stretch.chars().map(String::from));
            }
        }
    }
    named
}

/// The blocks about the subject the question names, or all of them when it
/// names none: of the documents it names, those no other document is named
/// more fully than ("shell parakeet" names the budgerigar, whose alias it
/// is, more fully than the monk parakeet); and the blocks of a document
/// about no named thing (a general guide, no front-matter names) whose
/// text speaks of that subject ("1.5 to 2 cm for cockatiels").
fn about_the_subject<'a>(question: &Question, blocks: Vec<&'a ContextBlock>) -> Vec<&'a ContextBlock> {
    let mut named: HashMap<&str, BTreeSet<String>> = HashMap::new();
    for block in &blocks {
        named.entry(block.source.as_str()).or_default().extend(named_subject(question, block));
    }
    if named.values().all(BTreeSet::is_empty) {
        return blocks;
    }
    let outnamed = |own: &BTreeSet<String>| named.values().any(|other| other.len() > own.len() && other.is_superset(own));
    let fullest: Vec<&BTreeSet<String>> = named.values().filter(|own| !own.is_empty() && !outnamed(own)).collect();
    let speaks_of = |block: &ContextBlock| {
        let words: HashSet<String> = tokens(&block.text).into_iter().collect();
        let holds = |w: &String| words.contains(w) || (w.chars().all(is_cjk) && block.text.contains(w.as_str()));
        block.names.is_empty() && fullest.iter().any(|subject| subject.iter().all(holds))
    };
    blocks.into_iter().filter(|b| named.get(b.source.as_str()).is_some_and(|own| if own.is_empty() { speaks_of(b) } else { !outnamed(own) })).collect()
}

/// The share of `term`'s characters (a Chinese word) found in `text`.
fn character_share(term: &str, text: &str) -> f32 {
    let chars: Vec<char> = term.chars().collect();
    chars.iter().filter(|c| text.contains(**c)).count() as f32 / chars.len().max(1) as f32
}

/// IDF-weighted share of the question's terms in a sentence (full weight),
/// only in its heading (half), or, for a Chinese term not segmented the
/// same way, by its characters (half).
fn coverage(asked: &Question, weights: &[f32], words: &HashSet<String>, heading: &HashSet<String>, text: &str) -> f32 {
    let total: f32 = weights.iter().sum();
    let held = |term: &String| {
        if words.contains(term) {
            1.0
        } else if heading.contains(term) {
            0.5
        } else if term.chars().all(is_cjk) {
            0.5 * character_share(term, text)
        } else {
            0.0
        }
    };
    asked.terms.iter().zip(weights).map(|(t, w)| w * held(t)).sum::<f32>() / total.max(1e-6)
}

/// Every sentence of `blocks` scored against `question` (see the module docs).
pub fn score_sentences<'a>(asked: &Question, blocks: &[&'a ContextBlock]) -> Vec<ScoredSentence<'a>> {
    let all: Vec<(usize, usize, &'a str)> =
        blocks.iter().enumerate().flat_map(|(b, block)| sentences(&block.text).into_iter().enumerate().map(move |(i, s)| (b, i, s))).collect();
    // A passage that opens inside a sentence (chunks overlap) repeats its end: the whole one stands.
    let repeated = |&(b, _, s): &(usize, usize, &str)| all.iter().any(|&(o, _, t)| blocks[o].source == blocks[b].source && t.len() > s.len() && t.contains(s));
    let candidates: Vec<(usize, usize, &'a str)> = all.iter().copied().filter(|c| !repeated(c)).collect();
    let words: Vec<HashSet<String>> = candidates.iter().map(|(_, _, s)| tokens(s).into_iter().collect()).collect();
    let headings: Vec<HashSet<String>> = blocks.iter().map(|b| tokens(&b.heading_path).into_iter().collect()).collect();
    let n = candidates.len() as f32;
    let weights: Vec<f32> = asked
        .terms
        .iter()
        .map(|t| {
            let df = candidates.iter().zip(&words).filter(|((b, _, _), w)| w.contains(t) || headings[*b].contains(t)).count() as f32;
            (1.0 + (n + 1.0) / (df + 1.0)).ln()
        })
        .collect();
    let similarity = rescaled_similarity(blocks, &candidates);
    candidates
        .iter()
        .zip(&words)
        .enumerate()
        .map(|(k, (&(block, index, text), words))| {
            let lexical = coverage(asked, &weights, words, &headings[block], text);
            let kind = asked.kind.is_some_and(|kind| kind.found_in(text));
            let evidence = lexical + SIMILARITY_WEIGHT * similarity.get(k).copied().unwrap_or(0.0) + if kind { ANSWER_TYPE_WEIGHT } else { 0.0 };
            ScoredSentence { block, index, text, score: evidence + RANK_WEIGHT / (1 + block) as f32, evidence, covered: lexical }
        })
        .collect()
}

/// The embedder's similarity of each candidate to the question, rescaled to
/// 0–1 over the candidates; empty when some block has none (no embedder, or
/// one that does not read the question's language).
fn rescaled_similarity(blocks: &[&ContextBlock], candidates: &[(usize, usize, &str)]) -> Vec<f32> {
    let raw: Option<Vec<f32>> = candidates.iter().map(|&(b, i, _)| blocks[b].sentence_similarity.get(i).copied()).collect();
    let Some(raw) = raw.filter(|r| r.len() > 1) else { return Vec::new() };
    let (low, high) = raw.iter().fold((f32::MAX, f32::MIN), |(lo, hi), &v| (lo.min(v), hi.max(v)));
    raw.iter().map(|v| if high > low { (v - low) / (high - low) } else { 0.0 }).collect()
}

/// The best of `scored` (the earliest among equals).
fn best<'s, 'a>(scored: impl Iterator<Item = &'s ScoredSentence<'a>>) -> Option<&'s ScoredSentence<'a>>
where
    'a: 's,
{
    scored.fold(None, |kept: Option<&ScoredSentence>, s| match kept {
        Some(k) if k.score >= s.score => Some(k),
        _ => Some(s),
    })
}

/// Whether `sentence` opens with a word that points back ("They", "它们").
fn leans_on_previous(sentence: &str) -> bool {
    let first = sentence.split(|c: char| !c.is_alphanumeric()).find(|w| !w.is_empty()).unwrap_or_default().to_lowercase();
    LEANING_OPENERS.contains(&first.as_str()) || LEANING_OPENERS_ZH.iter().any(|w| sentence.starts_with(w))
}

fn shorten(sentence: &str) -> String {
    if sentence.chars().count() <= MAX_SENTENCE_CHARS {
        return sentence.to_string();
    }
    let cut: String = sentence.chars().take(MAX_SENTENCE_CHARS).collect();
    let at = cut.rfind(char::is_whitespace).filter(|&i| i > MAX_SENTENCE_CHARS / 2).unwrap_or(cut.len());
    format!("{}…", cut[..at].trim_end())
}

/// For a question that names several subjects: the best sentence of each
/// other document it names by a word that the best sentence's document
/// never uses (in what it is about or its sentences).
fn other_subjects_named(question: &Question, pool: &[&ContextBlock], scored: &[ScoredSentence], top: &ScoredSentence) -> Vec<(usize, usize)> {
    let top_source = &pool[top.block].source;
    let mut top_text = subject_texts(pool[top.block]).join(" ");
    scored.iter().filter(|s| &pool[s.block].source == top_source).for_each(|s| top_text.push_str(&format!(" {}", s.text.to_lowercase())));
    let top_words: HashSet<String> = tokens(&top_text).into_iter().collect();
    let mut sources: Vec<&str> = vec![top_source];
    let mut picked = Vec::new();
    for block in pool {
        if sources.contains(&block.source.as_str()) {
            continue;
        }
        let used = |w: &String| top_words.contains(w) || (w.chars().all(is_cjk) && top_text.contains(w.as_str()));
        if named_subject(question, block).iter().all(used) {
            continue;
        }
        sources.push(&block.source);
        if let Some(s) = best(scored.iter().filter(|s| pool[s.block].source == block.source)).filter(|s| s.evidence > 0.0) {
            picked.push((s.block, s.index));
        }
    }
    picked
}

/// For a question that joins several asks ([`Question::parts`]): the best
/// sentence of the top sentence's document for each, when it holds a word
/// of that ask ("what does it eat and how long does it live" quotes both).
fn each_ask_answered(question: &Question, pool: &[&ContextBlock], top: &ScoredSentence) -> Vec<(usize, usize)> {
    let source = &pool[top.block].source;
    let mut picked: Vec<(usize, usize)> = Vec::new();
    for part in question.parts() {
        let scored = score_sentences(&part, pool);
        if let Some(s) = best(scored.iter().filter(|s| &pool[s.block].source == source && s.covered > 0.0)) {
            if !picked.contains(&(s.block, s.index)) {
                picked.push((s.block, s.index));
            }
        }
    }
    picked
}

/// The sentences of `blocks` that answer `question` (see the module docs);
/// passages in the question's language are preferred when there are any.
/// `None` when there is no passage.
pub fn extract_answer(question: &Question, blocks: &[ContextBlock]) -> Option<Extract> {
    let language = question.language;
    let in_language: Vec<&ContextBlock> = blocks.iter().filter(|b| Language::of_text(&b.text) == language).collect();
    let pool: Vec<&ContextBlock> = if in_language.is_empty() { blocks.iter().collect() } else { in_language };
    let pool: Vec<&ContextBlock> = about_the_subject(question, pool).into_iter().take(MAX_BLOCKS).collect();
    // A sentence that speaks to a model is never quoted as an answer.
    let scored: Vec<ScoredSentence> = score_sentences(question, &pool).into_iter().filter(|s| !addresses_a_model(s.text)).collect();
    let text_of: HashMap<(usize, usize), &str> = scored.iter().map(|s| ((s.block, s.index), s.text)).collect();
    let top = best(scored.iter())?;
    let mut picked: Vec<(usize, usize)> = vec![(top.block, top.index)];
    let same_document = |s: &&ScoredSentence| pool[s.block].source == pool[top.block].source && (s.block, s.index) != (top.block, top.index);
    if let Some(second) = best(scored.iter().filter(same_document)).filter(|s| s.evidence > 0.0 && s.score >= CLOSE_TO_BEST * top.score) {
        picked.push((second.block, second.index));
    }
    picked.extend(each_ask_answered(question, &pool, top).into_iter().filter(|key| !picked.contains(key)).collect::<Vec<_>>());
    picked.extend(other_subjects_named(question, &pool, &scored, top));
    picked.retain(|key| text_of.contains_key(key));
    // The sentence before one that leans on it comes along, when it is a
    // candidate itself (one repeated by an overlapping passage is not).
    for (block, index) in picked.clone() {
        let before = (block, index.wrapping_sub(1));
        if index > 0 && leans_on_previous(text_of[&(block, index)]) && text_of.contains_key(&before) && !picked.contains(&before) {
            picked.push(before);
        }
    }
    picked.sort_unstable();
    let mut cited: Vec<String> = Vec::new();
    let parts: Vec<String> = picked
        .iter()
        .map(|key| {
            let label = &pool[key.0].label;
            if !cited.contains(label) {
                cited.push(label.clone());
            }
            format!("{} [{label}]", defuse_markers(&shorten(text_of[key])))
        })
        .collect();
    Some(Extract { text: parts.join(if language == Language::Chinese { "" } else { " " }), cited })
}

/// Passages whose sentences a language model may read.
const READ_BLOCKS: usize = 5;

/// A sentence a language model may read: its passage, where it stands
/// (the passage's place among those read, the sentence's in it) and its text.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ReadSentence<'a> {
    pub block: &'a ContextBlock,
    pub position: (usize, usize),
    pub text: &'a str,
    /// The IDF-weighted share of the question's terms it or its heading holds.
    pub covered: f32,
    /// The embedder's similarity to the question, when it was computed.
    pub similarity: Option<f32>,
}

/// The sentences a language model may read to answer `question`, best
/// first: of the first passages about its subject, every sentence by its
/// score, each followed by the sentence it leans on ("They…") when that
/// one is a candidate.
pub fn reading_sentences<'a>(question: &Question, blocks: &'a [ContextBlock]) -> Vec<ReadSentence<'a>> {
    let pool: Vec<&ContextBlock> = about_the_subject(question, blocks.iter().collect()).into_iter().take(READ_BLOCKS).collect();
    let scored = score_sentences(question, &pool);
    let by_key: HashMap<(usize, usize), &ScoredSentence> = scored.iter().map(|s| ((s.block, s.index), s)).collect();
    let mut ranked: Vec<&ScoredSentence> = scored.iter().collect();
    ranked.sort_by(|a, b| b.score.total_cmp(&a.score));
    let mut keys: Vec<(usize, usize)> = Vec::new();
    for s in ranked {
        let before = (s.block, s.index.wrapping_sub(1));
        let leaning = s.index > 0 && leans_on_previous(s.text) && by_key.contains_key(&before);
        for key in [(s.block, s.index)].into_iter().chain(leaning.then_some(before)) {
            if !keys.contains(&key) {
                keys.push(key);
            }
        }
    }
    keys.into_iter()
        .map(|key| {
            let block = pool[key.0];
            ReadSentence {
                block,
                position: key,
                text: by_key[&key].text,
                covered: by_key[&key].covered,
                similarity: block.sentence_similarity.get(key.1).copied(),
            }
        })
        .collect()
}

/// A passage offered as related reading, and its sentence closest to the question.
#[derive(Debug, Clone, PartialEq)]
pub struct Related<'r> {
    pub block: &'r ContextBlock,
    /// The question crossed word for word, for a passage in the other language.
    pub crossed: Option<&'r str>,
    pub sentence: String,
}

/// The passages an unsure outcome offers as related reading, at most `n`,
/// in retrieval's order, each showing its sentence that best answers the
/// question. When the question was crossed word for word into the folder's
/// other language ([`Retrieval::other_language`]), the best passage it
/// found that is not shown yet takes the last place (or every place, when
/// only those are related); a passage in the other language shows its
/// sentence closest to the crossed words, which its words can be compared with.
pub fn related_reading<'r>(question: &Question, retrieval: &'r Retrieval, n: usize) -> Vec<Related<'r>> {
    let other = retrieval.other_language.as_ref();
    let crossing = other.map(|o| question.translated(&o.query));
    let related = |block: &'r ContextBlock, crossed: Option<&'r str>| {
        let asked = crossing.as_ref().filter(|_| Language::of_text(&block.text) != question.language);
        Related { block, crossed, sentence: closest_sentence(asked.unwrap_or(question), block) }
    };
    if let Some(o) = other.filter(|o| o.alone) {
        return o.blocks.iter().take(n).map(|b| related(b, Some(o.query.as_str()))).collect();
    }
    let blocks = &retrieval.context.blocks;
    let mut chosen: Vec<Related> = blocks.iter().take(n.saturating_sub(other.map_or(0, |_| 1))).map(|b| related(b, None)).collect();
    if let Some(o) = other {
        match o.blocks.iter().find(|b| !chosen.iter().any(|r| r.block.shares_chunks(b))) {
            Some(b) => chosen.push(related(b, Some(o.query.as_str()))),
            None => chosen.extend(blocks.get(chosen.len()).map(|b| related(b, None))),
        }
    }
    chosen
}

/// The sentence of `block` that best answers `question` (its first when
/// none matches), shortened.
fn closest_sentence(question: &Question, block: &ContextBlock) -> String {
    let scored = score_sentences(question, &[block]);
    defuse_markers(&shorten(best(scored.iter().filter(|s| !addresses_a_model(s.text))).map_or(block.text.trim(), |s| s.text)))
}

/// The banner over an extractive answer, in the question's language.
pub fn notice(language: Language, why: &str) -> String {
    if language == Language::Chinese {
        format!("摘录的回答：以下句子原样摘自你的文档（{why}）。要获得成文的回答，请在“设置 → 模型”中下载 Qwen2.5 1.5B，或运行 Ollama。")
    } else {
        format!("Extractive answer: these sentences are quoted from your documents as they stand ({why}). For written answers, download Qwen2.5 1.5B in Settings → Models, or run Ollama.")
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn asked(text: &str) -> Question {
        Question::new(text, None)
    }

    /// A context block `label` under `heading` (shared with the answer check's tests).
    pub(crate) fn block(label: &str, heading: &str, text: &str) -> ContextBlock {
        ContextBlock {
            label: label.into(),
            source: format!("{label}.md"),
            heading_path: heading.into(),
            page: None,
            chunk_ids: vec![1],
            fingerprint: String::new(),
            text: text.into(),
            collection: None,
            url: None,
            sentence_similarity: Vec::new(),
            names: Vec::new(),
        }
    }

    #[test]
    fn the_sentence_that_answers_is_quoted_alone_and_another_subjects_page_is_not() {
        let blocks = [
            block("S1", "Cockatiel > Diet", "Cockatiels are small. In the wild they eat grass seeds. Pellets should form most of a pet's diet."),
            block("S2", "Budgerigar > Diet", "Budgerigars eat seeds and greens."),
            block("S3", "Cage", "A cage needs perches."),
        ];
        let got = extract_answer(&asked("What do cockatiels eat?"), &blocks).unwrap();
        assert_eq!(got.text, "In the wild they eat grass seeds. [S1]");
        assert_eq!(got.cited, ["S1"], "the question names its subject: another subject's page is not quoted");
    }

    #[test]
    fn a_question_that_joins_two_asks_quotes_the_answer_to_each() {
        let page = block(
            "S1",
            "Eclectus parrot",
            "Eclectus parrots come from New Guinea. They eat mostly fruit, vegetables and sprouted seeds. \
             Males are green and females red. An eclectus usually lives 30 years or more.",
        );
        let got = extract_answer(&asked("what should an eclectus eat and how long will it live"), std::slice::from_ref(&page)).unwrap();
        assert!(got.text.contains("30 years") && got.text.contains("sprouted seeds"), "{}", got.text);
        assert!(!got.text.contains("green and females"), "{}", got.text);
        let one = extract_answer(&asked("how long will an eclectus live"), &[page]).unwrap();
        assert!(one.text.contains("30 years") && !one.text.contains("sprouted seeds"), "{}", one.text);
    }

    #[test]
    fn a_question_naming_two_subjects_quotes_each() {
        let blocks = [
            block("S1", "Sourdough starter > Feeding", "Feed the starter once a day with flour and water."),
            block("S2", "Sun conure > Diet", "Sun conures eat fruit, seeds and flowers."),
            block("S3", "Bread > Storage", "Keep bread in a linen bag."),
        ];
        let got = extract_answer(&asked("How often should I feed a sourdough starter, and what do sun conures eat?"), &blocks).unwrap();
        assert_eq!(got.cited, ["S1", "S2"], "{}", got.text);
        let mentioned = [
            block("S1", "Budgerigar > Lifespan", "Budgerigars are small parrots. They live 5 to 10 years."),
            block("S2", "African grey parrot > Lifespan", "Greys live 40 to 60 years."),
        ];
        let got = extract_answer(&asked("How long do budgerigar parrots live?"), &mentioned).unwrap();
        assert_eq!(got.cited, ["S1"], "a word the best page uses names no other subject: {}", got.text);
    }

    #[test]
    fn the_subject_is_named_by_an_alias_or_part_of_a_name_and_not_by_an_everyday_word() {
        let mut budgie = block("S1", "Budgerigar > Lifespan", "Pet budgerigars usually live 5 to 10 years.");
        budgie.names = vec!["Budgerigar".into(), "Shell parakeet".into(), "虎皮鹦鹉".into()];
        let monk = block("S2", "Monk Parakeet > Lifespan", "They live around 20 to 30 years in captivity.");
        let got = extract_answer(&asked("how old do shell parakeets get"), &[monk.clone(), budgie.clone()]).unwrap();
        assert_eq!(got.cited, ["S1"], "the alias names the budgerigar more fully than the monk parakeet: {}", got.text);
        let got = extract_answer(&asked("how old do monk parakeets get"), &[monk, budgie]).unwrap();
        assert_eq!(got.cited, ["S2"], "{}", got.text);

        let chinese = [
            (
                "金刚鹦鹉有多大",
                ("蓝黄金刚鹦鹉 > 饲养要点", "金刚鹦鹉需要很大的笼子。"),
                ("葵花凤头鹦鹉 > 行为", "葵花鹦鹉嗓门大。"),
                "金刚 is part of the macaw's name",
            ),
            (
                "虎皮是公的还是母的怎么看",
                ("虎皮鹦鹉 > 外形特征", "公鸟的蜡膜为蓝色，母鸟为褐色。"),
                ("什么时候该看兽医", "鹦鹉会掩饰病痛。"),
                "看 in a heading names nothing",
            ),
            (
                "灰鹦鹉需要晒太阳吗",
                ("非洲灰鹦鹉 > 饲养要点", "灰鹦鹉需要晒太阳。"),
                ("太阳锥尾鹦鹉 > 寿命", "一般能活二十到三十年。"),
                "太阳 names the conure no more fully",
            ),
        ];
        for (question, (heading, text), (other_heading, other_text), why) in chinese {
            let got = extract_answer(&asked(question), &[block("S1", heading, text), block("S2", other_heading, other_text)]).unwrap();
            assert_eq!(got.cited, ["S1"], "{why}: {}", got.text);
        }

        let mut young = block("S2", "太阳锥尾鹦鹉 > 外形特征", "成鸟通体金黄。幼鸟偏绿，大约一年后才换上鲜艳的颜色。");
        young.names = vec!["太阳锥尾鹦鹉".into(), "太阳鹦鹉".into()];
        let vet = block("S1", "什么时候该看兽医", "如果发现它长时间不动，应当立即就医。");
        let got = extract_answer(&asked("小太阳小时候怎么是绿的"), &[vet.clone(), young]).unwrap();
        assert_eq!(got.cited, ["S2"], "时候 is an everyday word, 太阳 names the conure: {}", got.text);

        let mut vet = block("S1", "什么时候该看兽医", "突然不吃东西，应当立即就医。");
        let mut settling = block("S2", "新鸟到家", "新鸟到家后先让它安静适应几天。");
        (settling.source, vet.source) = ("guide.docx".into(), "guide.docx".into());
        let kept = about_the_subject(&asked("新鸟到家一直不吃东西，是再等几天还是马上去看医生"), vec![&vet, &settling]);
        assert_eq!(kept.len(), 2, "a section's heading does not hide the rest of its document");

        let mut cockatiel = block("S1", "Cockatiel > Housing", "Cockatiels need a roomy cage.");
        cockatiel.names = vec!["Cockatiel".into()];
        let guide = block("S2", "Choosing a cage > Bar spacing", "Bar spacing should be 1.5 to 2 cm for cockatiels and conures.");
        let got = extract_answer(&asked("cockatiel bar spacing"), &[cockatiel.clone(), guide]).unwrap();
        assert_eq!(got.cited, ["S2"], "a general guide that speaks of the subject answers: {}", got.text);
        let mut conure = block("S2", "Sun Conure > Housing", "Like cockatiels, conures need bar spacing of 2 cm.");
        conure.names = vec!["Sun Conure".into()];
        let got = extract_answer(&asked("cockatiel bar spacing"), &[cockatiel, conure]).unwrap();
        assert_eq!(got.cited, ["S1"], "a page about another subject does not, whatever it mentions: {}", got.text);
    }

    #[test]
    fn the_best_ranked_passage_is_quoted_unless_another_answers_clearly_better() {
        let first = block("S1", "Monk Parakeet > Diet", "Wild monks eat seeds, fruit and buds.");
        let second = block("S2", "Sun Conure > Diet", "In the wild it eats fruit, berries and seeds.");
        let got = extract_answer(&asked("What do Quaker parrots eat?"), &[first.clone(), second.clone()]).unwrap();
        assert_eq!(got.cited, ["S1"], "as good an answer in a lower-ranked passage does not win: {}", got.text);
        let got = extract_answer(&asked("What do sun conures eat in the wild?"), &[first, second]).unwrap();
        assert_eq!(got.cited, ["S2"], "a lower-ranked passage that answers clearly better does: {}", got.text);
    }

    #[test]
    fn a_sentence_repeated_by_an_overlapping_passage_is_quoted_once_and_whole() {
        let first = block("S1", "Loaf > Method", "Preheat the oven to 250 °C. Bake covered for 20 minutes, then lower the oven to 230 °C.");
        let overlap = ContextBlock { source: first.source.clone(), ..block("S2", "Loaf > Method", "then lower the oven to 230 °C. Cool on a rack.") };
        let got = extract_answer(&asked("How hot should the oven be?"), &[first, overlap]).unwrap();
        assert_eq!(got.text.matches("230 °C").count(), 1, "{}", got.text);
        assert!(got.text.contains("Bake covered for 20 minutes, then lower the oven to 230 °C."), "{}", got.text);
    }

    #[test]
    fn a_marker_in_a_documents_own_text_is_quoted_as_text() {
        let page = block("S1", "Kettle > Care", "Descale the kettle every four weeks, as [S2] says.");
        let got = extract_answer(&asked("how often should I descale the kettle"), &[page]).unwrap();
        assert_eq!(got.text, "Descale the kettle every four weeks, as ［S2］ says. [S1]");
    }

    #[test]
    fn a_leaning_sentence_whose_previous_one_was_dropped_as_a_repeat_is_quoted_alone() {
        // "Kettles need descaling." is repeated inside the overlapping passage's longer sentence, so it is no candidate.
        let first = block("S1", "Kettle > Care", "Kettles need descaling. They take citric acid every four weeks.");
        let overlap = ContextBlock { source: first.source.clone(), ..block("S2", "Kettle > Care", "Steel kettles need descaling.") };
        let got = extract_answer(&asked("how often do they take citric acid"), &[first, overlap]).unwrap();
        assert!(got.text.contains("They take citric acid every four weeks."), "{}", got.text);
    }

    #[test]
    fn passages_about_the_named_subject_are_candidates_however_far_down_they_rank() {
        let other = |label: &str, name: &str| block(label, &format!("{name} > Lifespan"), &format!("{name}s live about 50 years."));
        let mut blocks = vec![other("S1", "Macaw"), other("S2", "Cockatoo"), other("S3", "Grey"), other("S4", "Eclectus")];
        blocks.push(block("S5", "Lorikeet > Lifespan", "They live around 15 to 20 years."));
        let got = extract_answer(&asked("How long do lorikeets live?"), &blocks).unwrap();
        assert_eq!(got.cited, ["S5"], "{}", got.text);
    }

    #[test]
    fn related_reading_shows_each_passages_answering_sentence_and_the_other_languages_best_last() {
        use crate::retrieve::{calibration::Outcome, Context, OtherLanguage, Relevance, Trace};
        let page = |label: &str, id: i64, text: &str| ContextBlock { chunk_ids: vec![id], ..block(label, "Kettle > Care", text) };
        let blocks = vec![
            page("S1", 1, "The kettle has a blue light. Descale the kettle every four weeks with citric acid."),
            page("S2", 2, "Keep the cord dry. Never immerse the base."),
            page("S3", 3, "The lid opens with a button."),
        ];
        let mut retrieval = Retrieval {
            hits: Vec::new(),
            context: Context { blocks, ..Context::default() },
            trace: Trace::default(),
            relevance: Relevance::stub(Outcome::Unsure, 0.5),
            other_language: None,
        };
        let shown = |r: &Retrieval| {
            related_reading(&asked("how often should I descale it"), r, 3)
                .into_iter()
                .map(|r| (r.block.label.clone(), r.crossed.is_some(), r.sentence))
                .collect::<Vec<_>>()
        };
        let labels = |r: &Retrieval| shown(r).into_iter().map(|(label, crossed, _)| (label, crossed)).collect::<Vec<_>>();
        let got = shown(&retrieval);
        assert_eq!(got[0], ("S1".into(), false, "Descale the kettle every four weeks with citric acid.".into()), "{got:?}");
        assert_eq!(labels(&retrieval), [("S1".into(), false), ("S2".into(), false), ("S3".into(), false)], "retrieval's order");
        let crossed = |blocks: Vec<ContextBlock>, alone: bool| Some(OtherLanguage { query: "除垢".into(), blocks, alone });
        retrieval.other_language = crossed(vec![page("S5", 5, "水壶要放稳。每四周用柠檬酸除垢一次。"), page("S6", 6, "除垢后冲洗。")], false);
        let got = shown(&retrieval);
        assert_eq!(
            got[2],
            ("S5".into(), true, "每四周用柠檬酸除垢一次。".into()),
            "the other language's best takes the last place, its sentence by the crossed words"
        );
        retrieval.context.blocks[1] = page("S2", 5, "水壶要放稳。每四周用柠檬酸除垢一次。");
        let got = shown(&retrieval);
        assert_eq!(
            got[1],
            ("S2".into(), false, "每四周用柠檬酸除垢一次。".into()),
            "a passage in the other language among the closest shows the crossed words' sentence"
        );
        assert_eq!(got[2].0, "S6", "one already shown is not offered twice");
        retrieval.other_language = crossed(vec![page("S5", 5, "每四周除垢一次。")], false);
        assert_eq!(labels(&retrieval)[2], ("S3".into(), false), "none left to offer: the next closest");
        retrieval.other_language = crossed(vec![page("S5", 5, "每四周除垢一次。"), page("S6", 6, "除垢后冲洗。")], true);
        assert_eq!(labels(&retrieval), [("S5".into(), true), ("S6".into(), true)], "a refusal turned unsure offers only them");
    }

    #[test]
    fn a_sentence_that_leans_on_the_one_before_brings_it_along() {
        let blocks = [block("S1", "Budgerigar > Lifespan", "Budgerigars are popular pets. They live 5 to 10 years when well cared for. Cages need cleaning.")];
        let got = extract_answer(&asked("How long do budgerigars live?"), &blocks).unwrap();
        assert_eq!(got.text, "Budgerigars are popular pets. [S1] They live 5 to 10 years when well cared for. [S1]");
    }

    #[test]
    fn the_kind_of_answer_asked_and_the_similarity_pick_among_sentences() {
        let bread = block(
            "S1",
            "Bread > Method",
            "Mix the flour and water. Let the dough rise for twelve hours in a cool kitchen before shaping the loaf. Bake for 40 minutes.",
        );
        let got = extract_answer(&asked("How long should the dough rise?"), &[bread]).unwrap();
        assert_eq!(got.text, "Let the dough rise for twelve hours in a cool kitchen before shaping the loaf. [S1]", "no fill up to three sentences");
        let mut soup = block("S1", "Soup > Storage", "Keep the pot in the fridge for three days. Frozen, the soup keeps for three months.");
        let question = "Can I put leftovers in the freezer?";
        assert_eq!(
            extract_answer(&asked(question), std::slice::from_ref(&soup)).unwrap().text,
            "Keep the pot in the fridge for three days. [S1]",
            "no similarity: the first of equals"
        );
        soup.sentence_similarity = vec![0.31, 0.62];
        assert_eq!(
            extract_answer(&asked(question), &[soup]).unwrap().text,
            "Frozen, the soup keeps for three months. [S1]",
            "the embedder's similarity decides"
        );
    }

    #[test]
    fn passages_in_the_question_language_come_first() {
        let blocks = [block("S1", "Cockatiel > Diet", "Cockatiels eat seeds."), block("S2", "玄凤鹦鹉 > 饮食", "玄凤鹦鹉主要吃草籽。也吃颗粒饲料。")];
        let got = extract_answer(&asked("玄凤鹦鹉吃什么？"), &blocks).unwrap();
        assert!(got.text.starts_with("玄凤鹦鹉主要吃草籽。 [S2]") || got.text.starts_with("玄凤鹦鹉主要吃草籽。[S2]"), "{}", got.text);
        assert_eq!(got.cited, ["S2"]);
        assert!(extract_answer(&asked("anything"), &[]).is_none());
        assert!(notice(Language::Chinese, "x").starts_with("摘录"));
    }

    #[test]
    fn the_closest_sentence_is_the_one_sharing_the_most_terms() {
        let b = block("S1", "Cockatiel > Care", "Cockatiels are small. They need a large cage with several perches. They like baths.");
        assert_eq!(closest_sentence(&asked("how big a cage does a cockatiel need"), &b), "They need a large cage with several perches.");
        assert_eq!(closest_sentence(&asked("zzz"), &b), "Cockatiels are small.", "none matches: the first");
    }
}
