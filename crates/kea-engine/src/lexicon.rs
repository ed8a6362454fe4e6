//! A Chinese–English word bridge for questions asked in the other language
//! than a collection's documents when no language model translates them.
//! The words come from CC-CEDICT (`data/lexicon-zh-en.tsv.gz`, written by
//! `scripts/make_lexicon.py`); the collection picks among them: only the
//! candidate words its own passages hold are kept ([`Lexicon::crossing`]).
//! So 水壶保修多久 becomes "kettle warranty" over a kettle manual, and
//! "How much sugar?" becomes 糖 over a Chinese recipe folder.

use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::sync::OnceLock;

use crate::language::Language;
use crate::segment;

/// The shipped word list: a simplified headword, a tab, its senses joined by `|`.
const SHIPPED: &[u8] = include_bytes!("../data/lexicon-zh-en.tsv.gz");
/// Senses of a Chinese word turned into English candidates (the first are the commonest).
const SENSES_USED: usize = 3;
/// Candidate words kept per word of the question, the ones the collection holds.
const KEPT_PER_WORD: usize = 3;
/// How far behind the exact senses one whose last word matches is ranked.
const LOOSE_SENSE: usize = 10;
/// Words of an English sense longer than this are a definition, not a translation.
const LONGEST_SENSE: usize = 3;

/// Headwords in order with their senses, over one text.
pub struct Lexicon {
    text: String,
    /// (start, tab, end) of each line in `text`, sorted by headword.
    lines: Vec<(u32, u32, u32)>,
}

impl Lexicon {
    /// The lexicon shipped with Kea, read on first use.
    pub fn shipped() -> &'static Lexicon {
        static SHIPPED_LEXICON: OnceLock<Lexicon> = OnceLock::new();
        SHIPPED_LEXICON.get_or_init(|| {
            let mut text = String::new();
            // The file is built into the binary, so failing to read it is a build error.
            flate2::read::GzDecoder::new(SHIPPED).read_to_string(&mut text).expect("the shipped lexicon is gzip'd UTF-8");
            Lexicon::parse(text)
        })
    }

    /// From lines of `headword\tsense|sense`, in any order; other lines are skipped.
    pub fn parse(text: String) -> Lexicon {
        let mut lines = Vec::new();
        let mut start = 0usize;
        for line in text.split_inclusive('\n') {
            let end = start + line.trim_end().len();
            if let Some(tab) = line.find('\t') {
                lines.push((start as u32, (start + tab) as u32, end as u32));
            }
            start += line.len();
        }
        let mut lexicon = Lexicon { text, lines };
        let mut lines = std::mem::take(&mut lexicon.lines);
        lines.sort_by(|a, b| lexicon.slice(a.0, a.1).cmp(lexicon.slice(b.0, b.1)));
        lexicon.lines = lines;
        lexicon
    }

    fn slice(&self, from: u32, to: u32) -> &str {
        &self.text[from as usize..to as usize]
    }

    fn entry(&self, &(start, tab, end): &(u32, u32, u32)) -> (&str, impl Iterator<Item = &str>) {
        (self.slice(start, tab), self.slice(tab + 1, end).split('|').filter(|s| !s.is_empty()))
    }

    /// The English senses of Chinese `word`, commonest first (`None` when it is not listed).
    pub fn senses(&self, word: &str) -> Option<Vec<&str>> {
        let i = self.lines.binary_search_by(|line| self.slice(line.0, line.1).cmp(word)).ok()?;
        Some(self.entry(&self.lines[i]).1.collect())
    }

    /// For each of `phrases` (lower case), the Chinese words that have it as
    /// a sense, or as the last word of a two-word one (ranked after), with
    /// that sense's place among theirs (0: their first); those where it
    /// comes first before the others, then shorter ones.
    pub fn headwords(&self, phrases: &HashSet<String>) -> HashMap<String, Vec<(usize, &str)>> {
        let mut found: HashMap<String, Vec<(usize, &str)>> = HashMap::new();
        for line in &self.lines {
            let (word, senses) = self.entry(line);
            for (rank, sense) in senses.enumerate() {
                if phrases.contains(sense) {
                    found.entry(sense.to_string()).or_default().push((rank, word));
                } else if let Some((_, last)) = sense.split_once(' ').filter(|(_, last)| !last.contains(' ') && phrases.contains(*last)) {
                    // "computer memory" is a sense of 内存 for "memory", after the exact ones.
                    found.entry(last.to_string()).or_default().push((rank + LOOSE_SENSE, word));
                }
            }
        }
        for words in found.values_mut() {
            words.sort_by_key(|&(rank, word)| (rank, word.chars().count()));
        }
        found
    }

    /// `query` put into `to` word by word. Of each word's candidates, those
    /// the collection holds are kept (`count` says how many passages hold
    /// each search token); a word none of whose candidates it holds keeps
    /// its first, so what the collection lacks stays in the question (the
    /// relevance decision sees it unknown); a name or code the lexicon does
    /// not list is kept as written. `None` when no word crosses; else the
    /// crossed words and the share of the question's words that crossed to
    /// words the collection holds.
    pub fn crossing<E>(&self, query: &str, to: Language, mut count: impl FnMut(&[String]) -> Result<Vec<usize>, E>) -> Result<Option<(String, f32)>, E> {
        let words = match to {
            Language::English => self.english_candidates(query),
            Language::Chinese => self.chinese_candidates(query),
        };
        // A Chinese candidate is held as one word; an English one by each of its stemmed words.
        let tokens_of = |candidate: &str| if to == Language::Chinese { vec![candidate.to_string()] } else { segment::tokens(candidate) };
        let tokens: Vec<String> = words.iter().flat_map(|w| &w.candidates).flat_map(|c| tokens_of(c)).collect::<HashSet<_>>().into_iter().collect();
        let held: HashSet<&String> = tokens.iter().zip(count(&tokens)?).filter(|(_, n)| *n > 0).map(|(t, _)| t).collect();
        let is_held = |candidate: &str| {
            let own = tokens_of(candidate);
            !own.is_empty() && own.iter().all(|t| held.contains(t))
        };
        let mut kept: Vec<&str> = Vec::new();
        let mut crossed = 0;
        for word in &words {
            let holding: Vec<&str> = word.candidates.iter().map(String::as_str).filter(|c| is_held(c)).take(KEPT_PER_WORD).collect();
            crossed += usize::from(!holding.is_empty());
            let lacking = word.candidates.first().map(String::as_str).filter(|_| word.names_a_thing);
            let chosen = if holding.is_empty() { lacking.into_iter().collect() } else { holding };
            for candidate in chosen {
                if !kept.contains(&candidate) {
                    kept.push(candidate);
                }
            }
        }
        Ok((crossed > 0).then(|| (kept.join(" "), crossed as f32 / words.len() as f32)))
    }

    /// Per Chinese word of `query`, the English words its first senses give;
    /// a Latin-letter word (a name, a code) as written.
    fn english_candidates(&self, query: &str) -> Vec<Crossing> {
        let mut crossings = Vec::new();
        for word in segment::content_words(query) {
            if !word.chars().all(segment::is_cjk) {
                crossings.push(Crossing { candidates: vec![word], names_a_thing: true });
                continue;
            }
            let names_a_thing = segment::is_specific_chinese_noun(&word);
            let parts = self.listed_parts(&word);
            if parts.is_empty() && names_a_thing {
                // A name the lexicon does not know: no English word holds it.
                crossings.push(Crossing { candidates: vec![word], names_a_thing });
                continue;
            }
            for listed in parts {
                let senses = self.senses(&listed).unwrap_or_default();
                let words = senses.iter().take(SENSES_USED).filter(|s| s.split(' ').count() <= LONGEST_SENSE).flat_map(|s| s.split([' ', '-']));
                let mut candidates: Vec<String> = Vec::new();
                for w in words.filter(|w| w.len() > 1 && !segment::is_query_stopword(w) && !GLOSS_FILLERS.contains(w)) {
                    if !candidates.iter().any(|c| c == w) {
                        candidates.push(w.to_string());
                    }
                }
                if !candidates.is_empty() {
                    crossings.push(Crossing { candidates, names_a_thing });
                }
            }
        }
        crossings
    }

    /// `word` when listed, else its longest listed pieces of two or more
    /// characters from the left (an unlisted compound such as 除垢水).
    fn listed_parts(&self, word: &str) -> Vec<String> {
        if self.senses(word).is_some() {
            return vec![word.to_string()];
        }
        let chars: Vec<char> = word.chars().collect();
        let mut parts = Vec::new();
        let mut i = 0;
        while i < chars.len() {
            let longest = (i + 2..=chars.len().min(i + 6)).rev().find(|&j| self.senses(&chars[i..j].iter().collect::<String>()).is_some());
            match longest {
                Some(j) => {
                    parts.push(chars[i..j].iter().collect());
                    i = j;
                }
                None => i += 1,
            }
        }
        parts
    }

    /// Per English word or two-word phrase of `query` (a phrase found stands
    /// for its words), the Chinese words with it as a sense, or the word as
    /// written when none has (sourdough, router). One character
    /// stands for a word only as its first sense and when it may name a
    /// thing: the index holds every character, so any would look held.
    fn chinese_candidates(&self, query: &str) -> Vec<Crossing> {
        let words: Vec<String> = segment::content_words(query).into_iter().filter(|w| w.chars().all(|c| c.is_ascii_alphabetic())).collect();
        let pairs: Vec<String> = words.windows(2).map(|pair| pair.join(" ")).collect();
        let forms = |phrase: &str| -> Vec<String> {
            let (head, last) = phrase.rsplit_once(' ').map_or(("", phrase), |(h, l)| (h, l));
            base_forms(last).into_iter().map(|f| if head.is_empty() { f } else { format!("{head} {f}") }).collect()
        };
        let wanted: HashSet<String> = pairs.iter().chain(&words).flat_map(|p| forms(p)).collect();
        let found = self.headwords(&wanted);
        let candidates_of = |phrase: &str| -> Vec<(usize, String)> {
            let listed = forms(phrase).into_iter().filter_map(|f| found.get(&f)).flatten();
            let mut candidates: Vec<(usize, String)> = Vec::new();
            for &(rank, word) in listed {
                let one_character_noun = rank == 0 && segment::may_name_a_thing(word);
                if (word.chars().count() > 1 || one_character_noun) && !candidates.iter().any(|(_, c)| c == word) {
                    candidates.push((rank, word.to_string()));
                }
            }
            candidates
        };
        let mut crossings = Vec::new();
        let mut covered = vec![false; words.len()];
        for (i, pair) in pairs.iter().enumerate() {
            let candidates = candidates_of(pair);
            if !candidates.is_empty() {
                (covered[i], covered[i + 1]) = (true, true);
                crossings.push(Crossing::into_chinese(candidates));
            }
        }
        for (word, _) in words.iter().zip(&covered).filter(|(_, &c)| !c) {
            let candidates = candidates_of(word);
            if candidates.is_empty() {
                // A word the list does not know (sourdough, router): no Chinese word holds it.
                crossings.push(Crossing { candidates: vec![word.clone()], names_a_thing: true });
            } else {
                crossings.push(Crossing::into_chinese(candidates));
            }
        }
        crossings
    }
}

/// One word of a question and its candidates in the other language, best first.
struct Crossing {
    candidates: Vec<String>,
    /// It names a thing (a noun, a name): when the collection holds none of
    /// its candidates, the first stays in the question as a word it lacks.
    names_a_thing: bool,
}

impl Crossing {
    /// An English word's Chinese candidates (with the place of its sense
    /// among theirs): it names a thing when one word of two or more
    /// characters alone has it first, and that word may name one ("sushi"
    /// is 寿司; "frozen" is many words, "braise" one character).
    fn into_chinese(candidates: Vec<(usize, String)>) -> Crossing {
        let first: Vec<&String> = candidates.iter().filter(|(rank, _)| *rank == 0).map(|(_, c)| c).collect();
        let names_a_thing = first.len() == 1 && first[0].chars().count() > 1 && segment::may_name_a_thing(first[0]);
        Crossing { candidates: candidates.into_iter().map(|(_, c)| c).collect(), names_a_thing }
    }
}

/// Words of English senses that say nothing of a subject ("may", "something").
const GLOSS_FILLERS: &[&str] = &["may", "might", "must", "shall", "also", "something", "someone", "thing", "things", "kind", "used", "make", "get", "let"];

/// `word` and the forms a dictionary would list it under ("boxes" → "box",
/// "migration" → "migrate").
fn base_forms(word: &str) -> Vec<String> {
    let mut forms = vec![word.to_string()];
    let mut add = |form: String| {
        if form.len() > 2 && !forms.contains(&form) {
            forms.push(form);
        }
    };
    if let Some(stem) = word.strip_suffix("ies") {
        add(format!("{stem}y"));
    }
    for suffix in ["es", "s", "ed", "d", "ing", "ment", "ion"] {
        if let Some(stem) = word.strip_suffix(suffix) {
            add(stem.to_string());
            if matches!(suffix, "ing" | "ed" | "ion") {
                add(format!("{stem}e"));
            }
        }
    }
    forms
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> Lexicon {
        Lexicon::parse("水壶\tkettle|canteen|watering can\n保修\tpromise to keep in good repair|guarantee|warranty\n糖\tsugar|sweets|candy\n砂糖\tgranulated sugar|sugar\n五花肉\tpork belly|streaky pork\n多少\tnumber|amount|how much\n".into())
    }

    /// `query` translated over a collection whose one passage is `document`.
    fn translate(lexicon: &Lexicon, query: &str, to: Language, document: &str) -> Option<String> {
        let held: HashSet<String> = segment::index_tokens(document).into_iter().collect();
        let mut count = |tokens: &[String]| Ok::<_, ()>(tokens.iter().map(|t| usize::from(held.contains(t))).collect());
        lexicon.crossing(query, to, &mut count).unwrap().map(|(text, _)| text)
    }

    #[test]
    fn only_the_words_the_collection_holds_cross() {
        let lexicon = small();
        let manual = "The kettle comes with a two-year warranty.";
        assert_eq!(translate(&lexicon, "水壶保修多久", Language::English, manual).as_deref(), Some("kettle warranty"));
        assert_eq!(translate(&lexicon, "保修多久", Language::English, "We guarantee every repair.").as_deref(), Some("guarantee"));
        assert_eq!(translate(&lexicon, "水壶保修多久", Language::English, "Brew the tea for three minutes."), None);
        // A thing the collection lacks stays; a Latin-letter name is kept as written.
        assert_eq!(translate(&lexicon, "Brisa水壶保修多久", Language::English, "Brisa warranty terms").as_deref(), Some("brisa kettle warranty"));
    }

    #[test]
    fn english_phrases_find_the_chinese_word_they_are_the_sense_of() {
        let lexicon = small();
        let recipe = "五花肉切块，加冰糖和砂糖炒出糖色。";
        assert_eq!(translate(&lexicon, "How much sugar is in the pork belly?", Language::Chinese, recipe).as_deref(), Some("五花肉 糖 砂糖"));
        // The collection lacks pork belly: it stays in the question, as a word none of its passages has.
        assert_eq!(translate(&lexicon, "How much sugar is in the pork belly?", Language::Chinese, "糖醋排骨").as_deref(), Some("五花肉 糖"));
        assert_eq!(translate(&lexicon, "How much pork belly?", Language::Chinese, "糖醋排骨"), None, "nothing crosses");
        // A word the list does not know stays as written; half the question's words crossed.
        let mut count = |tokens: &[String]| Ok::<_, ()>(tokens.iter().map(|t| usize::from(recipe.contains(t.as_str()))).collect());
        let crossed = lexicon.crossing("How much sugar is in the sourdough?", Language::Chinese, &mut count).unwrap();
        assert_eq!(crossed, Some(("糖 砂糖 sourdough".to_string(), 0.5)));
    }

    #[test]
    fn an_unlisted_compound_is_read_by_its_listed_parts() {
        assert_eq!(small().listed_parts("水壶保修"), vec!["水壶".to_string(), "保修".to_string()]);
    }

    #[test]
    fn the_shipped_lexicon_reads_and_is_sorted() {
        let lexicon = Lexicon::shipped();
        assert!(lexicon.lines.len() > 50_000, "{}", lexicon.lines.len());
        assert!(lexicon.senses("冰箱").is_some_and(|s| s.contains(&"refrigerator")));
        assert!(lexicon.senses("没有这个词语吧").is_none());
    }
}
