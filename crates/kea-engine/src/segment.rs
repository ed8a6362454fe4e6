//! Word segmentation for full-text search. SQLite's FTS5 tokenizer cannot
//! split Chinese, so chunk text is segmented here (jieba, search mode, for
//! CJK runs; lower-cased, Snowball-stemmed words for the rest, so
//! "cockatiels" finds "cockatiel") into a space-separated column, and
//! queries are segmented the same way.

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

/// Whether `word` is a specific Chinese noun: tagged a noun by jieba and
/// not among the common ones (企鹅 and 仓鼠 are; 名字 and 事 are not).
pub fn is_specific_chinese_noun(word: &str) -> bool {
    word.chars().any(is_cjk) && jieba().tag(word, false).iter().all(|t| t.tag.starts_with('n')) && jieba().suggest_freq(word) <= GENERIC_NOUN_FREQ
}

/// The text stored in the FTS column: tokens joined by spaces.
pub fn index_text(text: &str) -> String {
    tokens(text).join(" ")
}

/// Question words and particles that say nothing about the topic.
const QUERY_STOPWORDS: &[&str] = &[
    "a",
    "an",
    "and",
    "are",
    "can",
    "do",
    "does",
    "for",
    "how",
    "i",
    "in",
    "is",
    "it",
    "my",
    "of",
    "on",
    "or",
    "the",
    "to",
    "what",
    "when",
    "where",
    "which",
    "who",
    "why",
    "with",
    "吗",
    "呢",
    "吧",
    "啊",
    "的",
    "了",
    "是",
    "什么",
    "怎么",
    "怎样",
    "如何",
    "哪些",
    "哪种",
    "为什么",
    "多少",
    "有",
    "和",
    "与",
    "在",
    "我",
    "它",
    "这",
    "那",
    "一种",
    "一只",
];

/// A query's distinct content tokens (question words dropped unless
/// nothing else is left), stemmed, in order.
pub fn query_terms(query: &str) -> Vec<String> {
    let all = words(query);
    let content: Vec<String> = all.iter().filter(|t| !QUERY_STOPWORDS.contains(&t.as_str())).cloned().collect();
    let chosen = if content.is_empty() { all } else { content };
    let mut seen = std::collections::HashSet::new();
    chosen.into_iter().map(stem).filter(|t| seen.insert(t.clone())).collect()
}

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
    fn queries_drop_question_words() {
        assert_eq!(query_terms("What do cockatiels EAT?"), ["cockatiel", "eat"]);
        let zh = query_terms("玄凤鹦鹉吃什么？");
        assert!(zh.iter().any(|t| t == "鹦鹉") && !zh.iter().any(|t| t == "什么"), "{zh:?}");
        assert_eq!(query_terms("what?"), ["what"]);
        assert!(query_terms("?! ()").is_empty());
    }
}
