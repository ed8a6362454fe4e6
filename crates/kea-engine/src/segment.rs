//! Word segmentation for full-text search. SQLite's FTS5 tokenizer cannot
//! split Chinese, so chunk text is segmented here (jieba, search mode, for
//! CJK runs; lower-cased, Snowball-stemmed words for the rest, so
//! "cockatiels" finds "cockatiel") into a space-separated column, and
//! queries are segmented the same way. Chinese text is also indexed
//! character by character: a question's word that no passage holds (an
//! everyday 公母 for the text's 公鸟 and 母鸟, or a word jieba cut
//! differently) is searched by its characters instead ([`search_terms`]).

use std::collections::HashSet;
use std::sync::OnceLock;

use jieba_rs::Jieba;
use rust_stemmers::{Algorithm, Stemmer};

fn jieba() -> &'static Jieba {
    static JIEBA: OnceLock<Jieba> = OnceLock::new();
    JIEBA.get_or_init(Jieba::new)
}

/// Loads the segmentation dictionary now rather than on the first query.
pub fn warm_up() {
    jieba();
}

fn stem(word: String) -> String {
    static STEMMER: OnceLock<Stemmer> = OnceLock::new();
    if !word.chars().all(|c| c.is_ascii_alphabetic()) {
        return word;
    }
    STEMMER.get_or_init(|| Stemmer::create(Algorithm::English)).stem(&word).into_owned()
}

/// Whether `c` is a CJK ideograph.
pub fn is_cjk(c: char) -> bool {
    matches!(c as u32, 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF | 0x20000..=0x2FA1F)
}

/// The search tokens of `text`, in order (duplicates kept).
pub fn tokens(text: &str) -> Vec<String> {
    words(text).into_iter().map(stem).collect()
}

/// Words before stemming: jieba words for CJK runs, lower-cased words else.
fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut cjk_run = String::new();
    let flush_word = |word: &mut String, out: &mut Vec<String>| {
        if !word.is_empty() {
            out.push(std::mem::take(word));
        }
    };
    let flush_cjk = |run: &mut String, out: &mut Vec<String>| {
        if !run.is_empty() {
            out.extend(jieba().cut_for_search(run, true).into_iter().map(|t| t.word.to_string()));
            run.clear();
        }
    };
    for c in text.chars() {
        if is_cjk(c) {
            flush_word(&mut word, &mut out);
            cjk_run.push(c);
        } else if c.is_alphanumeric() {
            flush_cjk(&mut cjk_run, &mut out);
            word.extend(c.to_lowercase());
        } else {
            flush_word(&mut word, &mut out);
            flush_cjk(&mut cjk_run, &mut out);
        }
    }
    flush_word(&mut word, &mut out);
    flush_cjk(&mut cjk_run, &mut out);
    out
}

/// A noun this common in general Chinese (jieba's dictionary frequency,
/// e.g. 名字 5359, 医生 4263) names no particular subject.
const GENERIC_NOUN_FREQ: usize = 2000;

/// Whether jieba tags Chinese `word` a noun (of any kind: 寿司, 北京).
fn is_chinese_noun(word: &str) -> bool {
    word.chars().all(is_cjk) && jieba().tag(word, false).iter().all(|t| t.tag.starts_with('n'))
}

/// Below this frequency in jieba's dictionary a word is no function word
/// or everyday verb (去 123402, 放 15161; 糖 3550, which it tags a morpheme).
const EVERYDAY_WORD_FREQ: usize = 10_000;

/// Whether Chinese `word` may name a thing: a noun, or too rare to be a
/// function word or an everyday verb.
pub fn may_name_a_thing(word: &str) -> bool {
    word.chars().all(is_cjk) && (is_chinese_noun(word) || !is_everyday(word))
}

/// Whether Chinese `word` is as common as everyday words are in jieba's
/// dictionary (时候, 会议, 去), whatever it is.
pub fn is_everyday(word: &str) -> bool {
    jieba().suggest_freq(word) >= EVERYDAY_WORD_FREQ
}

/// Whether `word` is a specific Chinese noun: tagged a noun by jieba and
/// not among the common ones (企鹅 and 仓鼠 are; 名字 and 事 are not).
pub fn is_specific_chinese_noun(word: &str) -> bool {
    word.chars().any(is_cjk) && is_chinese_noun(word) && jieba().suggest_freq(word) <= GENERIC_NOUN_FREQ
}

/// What the full-text index holds of `text`: its tokens, then each CJK character.
pub fn index_tokens(text: &str) -> Vec<String> {
    let mut indexed = tokens(text);
    indexed.extend(text.chars().filter(|&c| is_cjk(c)).map(String::from));
    indexed
}

/// The text stored in the FTS column: [`index_tokens`] joined by spaces.
pub fn index_text(text: &str) -> String {
    index_tokens(text).join(" ")
}

/// `words` without repeats, in order.
fn distinct(words: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut seen = HashSet::new();
    words.into_iter().filter(|w| seen.insert(w.clone())).collect()
}

/// Characters too common to stand for a word they are part of.
const STOP_CHARACTERS: &str = "的了是吗呢吧啊么什怎样哪为多少有我你他她它这那在和与个一不会能要就都也还很得着过把被给让";

/// Whether `term` is a Chinese word of two or more characters.
fn is_chinese_word(term: &str) -> bool {
    term.chars().count() > 1 && term.chars().all(is_cjk)
}

/// A query's search terms, given `count`, which says how many chunks hold
/// each term: its content words ([`query_terms`]), except that a Chinese
/// word no chunk holds, whose characters (the commonest aside) chunks hold, is
/// replaced by those characters, and an English word no chunk holds is
/// replaced by its other spelling that chunks hold ([`spellings`]). A word
/// with a character no chunk holds (a subject the collection never
/// mentions) stays, unknown.
pub fn search_terms<E>(query: &str, mut count: impl FnMut(&[String]) -> Result<Vec<usize>, E>) -> Result<Vec<String>, E> {
    let (words, counts): (Vec<String>, Vec<usize>) = respelled(query_terms(query), &mut count)?.into_iter().unzip();
    let unknown: HashSet<String> = words.iter().zip(&counts).filter(|(w, &c)| c == 0 && is_chinese_word(w)).map(|(w, _)| w.clone()).collect();
    if unknown.is_empty() {
        return Ok(words);
    }
    let characters = distinct(unknown.iter().flat_map(|w| w.chars()).filter(|c| !STOP_CHARACTERS.contains(*c)).map(String::from));
    let known: HashSet<String> = characters.iter().zip(count(&characters)?).filter(|(_, c)| *c > 0).map(|(t, _)| t.clone()).collect();
    let mut terms = Vec::new();
    for word in words {
        let own: Vec<String> = word.chars().filter(|c| !STOP_CHARACTERS.contains(*c)).map(String::from).collect();
        if unknown.contains(&word) && !own.is_empty() && own.iter().all(|c| known.contains(c)) {
            terms.extend(own);
        } else {
            terms.push(word);
        }
    }
    Ok(distinct(terms))
}

/// `terms` with each English one no chunk holds replaced by its other
/// spelling that some chunk holds, if any, each with how many chunks hold
/// it (`count` as in [`search_terms`]).
fn respelled<E>(terms: Vec<String>, count: &mut impl FnMut(&[String]) -> Result<Vec<usize>, E>) -> Result<Vec<(String, usize)>, E> {
    let counts = count(&terms)?;
    let mut out: Vec<(String, usize)> = Vec::with_capacity(terms.len());
    for (term, held) in terms.into_iter().zip(counts) {
        let others = if held == 0 { spellings(&term) } else { Vec::new() };
        let known = match others.is_empty() {
            true => None,
            false => {
                let counts = count(&others)?;
                others.into_iter().zip(counts).find(|(_, c)| *c > 0)
            }
        };
        let (term, held) = known.unwrap_or((term, held));
        if !out.iter().any(|(t, _)| *t == term) {
            out.push((term, held));
        }
    }
    Ok(out)
}

/// Endings of a stemmed English word spelt two ways on either side of the
/// Atlantic: colour / color, grey / gray, centre / center, defence /
/// defense, realise / realize, analyse / analyze, mould / mold, catalogue / catalog.
const SPELLING_PAIRS: &[(&str, &str)] =
    &[("our", "or"), ("ey", "ay"), ("tr", "ter"), ("br", "ber"), ("enc", "ens"), ("is", "iz"), ("ys", "yz"), ("ould", "old"), ("ogu", "og")];

/// The other spellings of stemmed English `term` ([`SPELLING_PAIRS`] at
/// its end, the first inside it too, as in favourite), stemmed.
fn spellings(term: &str) -> Vec<String> {
    if term.len() < 4 || !term.chars().all(|c| c.is_ascii_lowercase()) {
        return Vec::new();
    }
    let mut found: Vec<String> = Vec::new();
    for &(a, b) in SPELLING_PAIRS {
        for (from, to) in [(a, b), (b, a)] {
            if let Some(head) = term.strip_suffix(from).filter(|h| h.len() >= 2) {
                found.push(format!("{head}{to}"));
            }
            if a == "our" {
                if let Some(at) = term[2..].find(from).map(|i| i + 2).filter(|&i| i + from.len() < term.len()) {
                    found.push(format!("{}{to}{}", &term[..at], &term[at + from.len()..]));
                }
            }
        }
    }
    distinct(found.into_iter().map(stem).filter(|t| t != term))
}

/// Function words, question words and chat fillers that say nothing about
/// a question's topic (English: Snowball's stop words and a few fillers).
const QUERY_STOPWORDS: &str = "\
    a about above after again against all am an and any are as at be because been before being below between both but by \
    can could did do does doing down during each few for from further had has have having he her here hers herself him \
    himself his how i if in into is it its itself just me more most my myself no nor not of off on once only or other \
    ought our ours ourselves out over own same she should so some such than that the their theirs them themselves then \
    there these they this those through to too under until up very was we were what when where which while who whom why \
    will with would you your yours yourself yourselves s t m re ve ll don doesn isn get gets got getting hi hello hey please thanks thank really actually yes ok okay \
    吗 呢 吧 啊 呀 啦 嘛 哦 的 了 是 什么 怎么 怎样 如何 哪些 哪种 为什么 多少 有 和 与 在 我 我们 我家 你 他 她 它 这 那 \
    这个 那个 一种 一只 一下 请问 到底 是不是 能不能 会不会 要不要 有没有 还是 就 都 也 还 很 \
    多久 多长 多长时间 多大 几 几个 几次 哪里 哪儿 哪个 啥 为啥 干啥 干嘛 咋 咋样 咋办 怎么办";

/// Whether `word` (lower case) is a function word, question word or filler.
pub fn is_query_stopword(word: &str) -> bool {
    static WORDS: OnceLock<HashSet<&'static str>> = OnceLock::new();
    WORDS.get_or_init(|| QUERY_STOPWORDS.split_whitespace().collect()).contains(word)
}

/// A query's distinct content tokens (question words dropped unless
/// nothing else is left), stemmed, in order.
pub fn query_terms(query: &str) -> Vec<String> {
    let content = content_terms(query);
    if content.is_empty() {
        distinct(words(query).into_iter().map(stem))
    } else {
        content
    }
}

/// The distinct content words of `text` (no function words), stemmed, in order.
pub fn content_terms(text: &str) -> Vec<String> {
    distinct(content_words(text).into_iter().map(stem))
}

/// The content words of `text` as written (lower case, not stemmed), in order.
pub fn content_words(text: &str) -> Vec<String> {
    let all = words(text);
    let asks_how = |i: usize| i > 0 && all[i - 1] == "how" && HOW_WORDS.contains(&all[i].as_str());
    distinct(all.iter().enumerate().filter(|(i, t)| !is_query_stopword(t) && !asks_how(*i)).map(|(_, t)| t.clone()))
}

/// Words that, after "how", ask for a kind of answer ("how long", "how
/// many") rather than name the question's subject.
const HOW_WORDS: &[&str] = &["long", "many", "much", "often", "old", "far", "big", "soon", "large", "tall", "heavy", "early", "late"];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chinese_is_split_into_words() {
        let t = tokens("玄凤鹦鹉喜欢吃小米");
        assert!(t.contains(&"鹦鹉".to_string()), "{t:?}");
        assert!(t.contains(&"小米".to_string()), "{t:?}");
    }

    #[test]
    fn words_that_may_name_a_thing_are_told_from_everyday_verbs() {
        for word in ["糖", "水", "寿司", "北京"] {
            assert!(may_name_a_thing(word), "{word}");
        }
        for word in ["去", "放", "用", "sugar"] {
            assert!(!may_name_a_thing(word), "{word}");
        }
    }

    #[test]
    fn specific_nouns_are_told_from_common_words() {
        for word in ["企鹅", "仓鼠", "钢琴"] {
            assert!(is_specific_chinese_noun(word), "{word}");
        }
        for word in ["名字", "事", "应该", "平时", "penguin"] {
            assert!(!is_specific_chinese_noun(word), "{word}");
        }
    }

    #[test]
    fn mixed_text_is_lower_cased_and_split() {
        assert_eq!(tokens("Cockatiels (Nymphicus) eating 小米 B2!"), ["cockatiel", "nymphicus", "eat", "小米", "b2"]);
    }

    #[test]
    fn chinese_is_also_indexed_by_character() {
        let indexed = index_text("公鸟的蜡膜");
        for token in ["公鸟", "蜡膜", "公", "鸟", "蜡", "膜"] {
            assert!(indexed.split(' ').any(|t| t == token), "{token} in {indexed}");
        }
    }

    #[test]
    fn an_unknown_chinese_word_is_searched_by_its_known_characters() {
        let index = ["公鸟 公 鸟 母鸟 母 鸟", "体重 体 重 鹦鹉 鹦 鹉"];
        let count = |terms: &[String]| -> Result<Vec<usize>, ()> {
            Ok(terms.iter().map(|t| index.iter().filter(|chunk| chunk.split(' ').any(|w| w == t)).count()).collect())
        };
        let terms = search_terms("鹦鹉公母怎么看", count).unwrap();
        assert!(terms.contains(&"公".into()) && terms.contains(&"母".into()) && terms.contains(&"鹦鹉".into()), "{terms:?}");
        assert!(!terms.contains(&"公母".into()), "{terms:?}");
        // 企 is in no chunk: the word stays whole, and unknown.
        let terms = search_terms("企鹅吃什么", count).unwrap();
        assert!(terms.contains(&"企鹅".into()) && !terms.contains(&"鹅".into()), "{terms:?}");
        assert_eq!(search_terms("cockatiels eat", count).unwrap(), ["cockatiel", "eat"]);
    }

    #[test]
    fn an_english_word_no_chunk_holds_is_searched_by_its_other_spelling() {
        let held = ["colour", "grey", "centr", "defenc", "favourit", "beak"];
        let count = |terms: &[String]| Ok::<_, ()>(terms.iter().map(|t| usize::from(held.contains(&t.as_str()))).collect());
        assert_eq!(search_terms("What color is the beak?", count).unwrap(), ["colour", "beak"]);
        assert_eq!(search_terms("gray center defense favorite", count).unwrap(), ["grey", "centr", "defenc", "favourit"]);
        assert_eq!(search_terms("is it ok to use the motor", count).unwrap(), ["use", "motor"], "no other spelling held: the word stays");
        let american = ["color", "gray"];
        let count = |terms: &[String]| Ok::<_, ()>(terms.iter().map(|t| usize::from(american.contains(&t.as_str()))).collect());
        assert_eq!(search_terms("colour of a grey bird", count).unwrap(), ["color", "gray", "bird"]);
    }

    #[test]
    fn queries_drop_question_words() {
        assert_eq!(query_terms("What do cockatiels EAT?"), ["cockatiel", "eat"]);
        let zh = query_terms("玄凤鹦鹉吃什么？");
        assert!(zh.iter().any(|t| t == "鹦鹉") && !zh.iter().any(|t| t == "什么"), "{zh:?}");
        assert_eq!(query_terms("I'm worried, is it OK that we've moved the cage?"), ["worri", "move", "cage"], "contractions and fillers");
        assert_eq!(query_terms("玄凤为啥老咬人"), query_terms("玄凤为什么老咬人"), "colloquial question words");
        assert_eq!(query_terms("what?"), ["what"]);
        assert!(query_terms("?! ()").is_empty());
    }
}
