//! What a question asks of the collection, by its words (Chinese and
//! English): about passages (most questions), about one document as a
//! whole (summarize it, what is in it, its key points or outline), about
//! the collection (what documents there are, which are about something,
//! how many) or a comparison of two documents. The named document is
//! what is left of the question once its asking words are taken out.

use serde::Serialize;

/// What a question is about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Scope {
    /// An answer in a passage or two: the passage path answers it.
    Passages,
    /// One document as a whole, named as the question names it; `sure`
    /// when the words can only mean a document ("summarize"), not when
    /// they may ask about a passage too ("what is in the kit"): then the
    /// name must fit a document, else the passages answer.
    Document { name: String, sure: bool },
    /// The collection: every document, or those `about` something.
    Collection { about: Option<String> },
    /// Two things side by side: two documents when both names fit one (or
    /// `sure`, the question says documents or files), else a passage question.
    Comparison { first: String, second: String, sure: bool },
}

impl Scope {
    /// Whether a name that fits no document is said so (rather than the
    /// question answered from passages).
    pub fn is_sure(&self) -> bool {
        match self {
            Scope::Passages | Scope::Collection { .. } => true,
            Scope::Document { sure, .. } | Scope::Comparison { sure, .. } => *sure,
        }
    }
}

/// English phrases asking about a document as a whole, the name after
/// them, and whether they can only mean a document.
const DOCUMENT_EN: &[(&str, bool)] = &[
    ("give me the gist of", true),
    ("what's the gist of", true),
    ("what is the gist of", true),
    ("the gist of", true),
    ("gist of", true),
    ("quick rundown of", true),
    ("rundown of", true),
    ("give me the highlights of", true),
    ("the highlights of", true),
    ("highlights of", true),
    ("key takeaways from", true),
    ("key takeaways of", true),
    ("takeaways from", true),
    ("what are the main terms of", true),
    ("main terms of", true),
    ("brief summary of", true),
    ("short summary of", true),
    ("sumarize", true),
    ("summerize", true),
    ("summarize", true),
    ("tl;dr", true),
    ("tldr", true),
    ("what are the key points of", true),
    ("what are the main points of", true),
    ("give me a summary of", true),
    ("give me an overview of", true),
    ("give an overview of", true),
    ("write a summary of", true),
    ("can you summarize", true),
    ("can you summarise", true),
    ("please summarize", true),
    ("please summarise", true),
    ("summarize", true),
    ("summarise", true),
    ("summary of", true),
    ("overview of", true),
    ("key points of", true),
    ("key points in", true),
    ("main points of", true),
    ("main points in", true),
    ("outline of", true),
    ("table of contents of", true),
    ("tl;dr of", true),
    ("tldr of", true),
    ("what's in", false),
    ("what is in", false),
    ("whats in", false),
    ("what's inside", false),
];

/// Chinese phrases asking about a document as a whole (before or after its name).
const DOCUMENT_ZH: &[(&str, bool)] = &[
    ("主要讲了哪些内容", true),
    ("讲了哪些内容", true),
    ("主要讲了什么", true),
    ("简单概括下", true),
    ("总结下", true),
    ("概括下", true),
    ("的主要内容", true),
    ("总结一下", true),
    ("总结", true),
    ("概括一下", true),
    ("概括", true),
    ("摘要", true),
    ("概述", true),
    ("归纳一下", true),
    ("归纳", true),
    ("主要内容", true),
    ("有哪些要点", true),
    ("的要点", true),
    ("要点", true),
    ("大纲", true),
    ("讲了什么", false),
    ("说了什么", false),
    ("讲的是什么", false),
    ("写了什么", false),
    ("里有什么", false),
    ("里面有什么", false),
    ("讲什么", false),
    ("目录", false),
];

/// Words that make two things compared documents.
const DOCUMENT_WORDS: &[&str] = &[
    "document",
    "documents",
    "file",
    "files",
    "pdf",
    "report",
    "reports",
    "policy",
    "policies",
    "contract",
    "version",
    "manual",
    "agreement",
    "handbook",
    "guide",
    "notes",
    "record",
    "recipe",
    "invoice",
    "statement",
    "letter",
    "certificate",
    ".md",
    ".pdf",
    ".docx",
    ".txt",
    ".html",
    ".csv",
    ".xlsx",
    "文档",
    "文件",
    "报告",
    "合同",
    "版本",
    "说明书",
    "手册",
    "条款",
    "政策",
    "协议",
    "指南",
    "记录",
    "食谱",
    "纪要",
    "保险单",
];

/// Phrases asking about the collection; the rest, if any, is what the documents are about.
const COLLECTION_EN: &[&str] = &[
    "do i have anything about",
    "do i have anything on",
    "do i have any documents",
    "do i have any files",
    "which docs",
    "what documents do i have",
    "what files do i have",
    "what docs do i have",
    "which documents do i have",
    "list my documents",
    "list all documents",
    "list all my documents",
    "list the documents",
    "list my files",
    "list all files",
    "show me my documents",
    "show my documents",
    "show all documents",
    "what's in my knowledge base",
    "what is in my knowledge base",
    "what's in my collection",
    "what is in my collection",
    "what's in my folder",
    "what is in my folder",
    "what's in my library",
    "what do i have",
    "how many documents",
    "how many files",
    "which documents are about",
    "which documents talk about",
    "which documents mention",
    "which files are about",
    "which files mention",
    "what documents are about",
    "what documents mention",
    "documents about",
    "files about",
];

const COLLECTION_ZH: &[&str] = &[
    "我有哪些文档",
    "我有哪些文件",
    "我有哪些资料",
    "我有什么文档",
    "我有什么文件",
    "有哪些文档",
    "有哪些文件",
    "有哪些资料",
    "列出所有文档",
    "列出全部文档",
    "列出所有文件",
    "列出文档",
    "列出文件",
    "知识库里有什么",
    "知识库里有哪些",
    "资料库里有什么",
    "文件夹里有什么",
    "有多少文档",
    "有多少个文档",
    "有多少份文档",
    "有多少文件",
    "多少个文件",
    "哪些文档是关于",
    "哪些文档关于",
    "哪些文档提到",
    "哪些文档讲",
    "哪些文件是关于",
    "哪些文件提到",
    "关于",
    "的文档有哪些",
    "的文件有哪些",
];

/// Phrases comparing two documents: (before, between, after) the two names.
const COMPARISON_EN: &[(&str, &str)] = &[
    ("how does", " compare to "),
    ("how does", " compare with "),
    ("how do", " compare to "),
    ("how do", " compare with "),
    ("compare", " and "),
    ("compare", " with "),
    ("compare", " to "),
    ("difference between", " and "),
    ("differences between", " and "),
    ("how does", " differ from "),
    ("how do", " differ from "),
    ("what changed between", " and "),
    ("what's different between", " and "),
];

const COMPARISON_ZH: &[(&str, &str)] = &[("比较", "和"), ("比较", "与"), ("对比", "和"), ("对比", "与"), ("", "和"), ("", "与"), ("", "跟")];
const COMPARISON_ZH_ENDS: &[&str] = &[
    "相比有哪些差异",
    "相比有什么不同",
    "相比有什么区别",
    "有哪些差异",
    "有哪些不同",
    "有哪些区别",
    "的区别是什么",
    "的区别",
    "有什么区别",
    "有什么不同",
    "的不同",
    "的差别",
    "有何不同",
    "的差异",
    "哪里不一样",
];

/// What `question` asks of the collection.
pub fn scope_of(question: &str) -> Scope {
    let text = question.trim().trim_end_matches(['?', '？', '.', '。', '!', '！']).trim();
    let lower = text.to_lowercase();
    // Positions found in the lower-cased text are used in the text itself,
    // unless lower-casing moved them (a letter whose lower case is longer).
    let text = if text.chars().all(|c| c.to_lowercase().map(char::len_utf8).sum::<usize>() == c.len_utf8()) { text } else { lower.as_str() };
    if let Some(scope) = comparison(text, &lower) {
        return scope;
    }
    if let Some(scope) = collection(text, &lower) {
        return scope;
    }
    if let Some((name, sure)) = document(text, &lower) {
        return Scope::Document { name, sure };
    }
    Scope::Passages
}

fn comparison(text: &str, lower: &str) -> Option<Scope> {
    for (lead, between) in COMPARISON_EN {
        let Some(at) = lower.find(lead).filter(|&at| at == 0 || lower[..at].ends_with(' ')) else { continue };
        let rest = &lower[at + lead.len()..];
        if let Some(split) = rest.find(between) {
            let offset = at + lead.len();
            return pair(&text[offset..offset + split], &text[offset + split + between.len()..]);
        }
    }
    let differs = ["differ", "different", "difference", "changed", "change", "compare"].iter().any(|w| lower.contains(w));
    if let Some((before, after)) = [" vs. ", " vs ", " versus "].iter().find_map(|vs| lower.split_once(vs)).filter(|_| differs) {
        let first = [" in ", "between ", "compare ", " of "]
            .iter()
            .filter_map(|lead| before.rsplit_once(lead).map(|(_, f)| f))
            .min_by_key(|f| f.len())
            .unwrap_or(before);
        return pair(first, after);
    }
    let end = COMPARISON_ZH_ENDS.iter().find(|e| text.ends_with(*e));
    for (lead, between) in COMPARISON_ZH {
        let Some(rest) = text.strip_prefix(lead) else { continue };
        if lead.is_empty() && end.is_none() {
            continue;
        }
        let rest = end.map_or(rest, |e| rest.strip_suffix(e).unwrap_or(rest));
        let rest = rest.strip_suffix("相比").unwrap_or(rest);
        if let Some((first, second)) = rest.split_once(between) {
            return pair(first, second);
        }
    }
    None
}

fn pair(first: &str, second: &str) -> Option<Scope> {
    let sure = [first, second].iter().any(|n| DOCUMENT_WORDS.iter().any(|w| n.to_lowercase().contains(w)));
    let (mut first, second) = (document_name(first), document_name(second));
    // "the 2024 and 2025 policies": the noun after the second year names the first too.
    if !first.is_empty() && first.chars().all(|c| c.is_ascii_digit() || c == '年') {
        if let Some((_, noun)) = second.split_once(' ').filter(|(year, _)| year.chars().all(|c| c.is_ascii_digit())) {
            first = format!("{first} {noun}");
        }
    }
    (!first.is_empty() && !second.is_empty()).then_some(Scope::Comparison { first, second, sure })
}

fn collection(text: &str, lower: &str) -> Option<Scope> {
    if ["need", "required", "submit", "bring", "keep", "需要", "必须", "准备"].iter().any(|n| lower.contains(n)) {
        return None;
    }
    let found =
        COLLECTION_EN.iter().filter(|p| **p != "what do i have" || lower == **p).find_map(|p| word_at(lower, p).map(|at| (at, p.len()))).or_else(|| {
            COLLECTION_ZH.iter().filter(|p| **p != "关于" || text.contains("文档") || text.contains("文件")).find_map(|p| text.find(p).map(|at| (at, p.len())))
        });
    let Some((at, len)) = found else { return many_documents(text, lower) };
    let rest = format!("{} {}", &text[..at], &text[at + len..]);
    let about = topic(&rest);
    Some(Scope::Collection { about: (!about.is_empty()).then_some(about) })
}

/// The collection's documents in the plural, or the collection itself.
const COLLECTION_NOUNS: &[&str] = &[
    "documents",
    "docs",
    "files",
    "my collection",
    "whole collection",
    "knowledge base",
    "my library",
    "the folder",
    "my folder",
    "in here",
    "资料库",
    "知识库",
    "文档",
    "文件",
    "资料",
];
/// Words asking which, what or how many of them.
const COLLECTION_ASKS: &[&str] =
    &["which", "what", "list", "show", "how many", "anything", "overview", "summarize", "summarise", "哪些", "什么", "多少", "列出", "都有", "有没有"];
/// A single document in Chinese ("this document"): not the collection.
const ONE_DOCUMENT_ZH: &[&str] = &["这份", "那份", "这个文档", "这个文件", "一份"];

/// A question that names the documents in the plural (or the collection)
/// and asks which or what of them; the rest of its words is what about.
fn many_documents(text: &str, lower: &str) -> Option<Scope> {
    let noun = COLLECTION_NOUNS.iter().find(|n| if n.is_ascii() { holds_word(lower, n) } else { text.contains(*n) })?;
    let ask = COLLECTION_ASKS.iter().find(|a| if a.is_ascii() { holds_word(lower, a) } else { text.contains(*a) })?;
    // Whose documents: "my documents", "in here"; documents a task needs are a passage's matter.
    let mine = [
        "my ",
        " i have",
        "do i have",
        "all the ",
        "all documents",
        "in here",
        "collection",
        "knowledge base",
        "folder",
        "我",
        "知识库",
        "资料库",
        "所有",
        "全部",
        "哪些",
    ]
    .iter()
    .any(|m| lower.contains(m));
    if ONE_DOCUMENT_ZH.iter().any(|one| text.contains(one)) || !mine || ["need", "required", "需要", "必须"].iter().any(|n| lower.contains(n)) {
        return None;
    }
    let rest = lower.replacen(noun, " ", 1).replacen(ask, " ", 1);
    let about = topic(&rest);
    Some(Scope::Collection { about: (!about.is_empty()).then_some(about) })
}

/// Whether `text` holds `word` with no letter or digit on either side.
fn holds_word(text: &str, word: &str) -> bool {
    word_at(text, word).is_some()
}

/// Where `text` first holds `phrase` with no letter or digit on either side
/// ("what is in", not "what is in" of "what is included").
fn word_at(text: &str, phrase: &str) -> Option<usize> {
    let edge = |c: Option<char>| c.is_none_or(|c| !c.is_alphanumeric() || crate::segment::is_cjk(c));
    text.match_indices(phrase).map(|(at, _)| at).find(|&at| edge(text[..at].chars().next_back()) && edge(text[at + phrase.len()..].chars().next()))
}

fn document(text: &str, lower: &str) -> Option<(String, bool)> {
    let says_document = |name: &str| DOCUMENT_WORDS.iter().any(|w| name.to_lowercase().contains(w));
    for &(phrase, sure) in DOCUMENT_EN {
        if let Some(at) = word_at(lower, phrase) {
            let name = document_name(&text[at + phrase.len()..]);
            return (!name.is_empty()).then(|| (name.clone(), sure || says_document(&name)));
        }
    }
    for &(phrase, sure) in DOCUMENT_ZH {
        if let Some(at) = text.find(phrase) {
            let (before, after) = (document_name(&text[..at]), document_name(&text[at + phrase.len()..]));
            let name = if before.chars().count() >= 2 { before } else { after };
            return (!name.is_empty()).then(|| (name.clone(), sure || says_document(&name)));
        }
    }
    // "… in a nutshell", "… briefly": the whole, asked for short.
    let short = [" in a nutshell", " in short", " briefly", " overall"].iter().find_map(|s| lower.strip_suffix(s));
    let lower = short.unwrap_or(lower);
    // "What is X about?", "Explain X briefly": a document only if X names one.
    let about = ["what is ", "what's ", "whats "].iter().find_map(|lead| lower.strip_prefix(lead)).and_then(|rest| rest.strip_suffix(" about"));
    let explain = lower.strip_prefix("explain ").filter(|_| short.is_some());
    let middle = about.or(explain)?;
    let start = lower.len() - middle.len() - if about.is_some() { " about".len() } else { 0 };
    let middle = &text[start..start + middle.len()];
    let name = document_name(middle.trim_end_matches(" briefly").trim_end_matches(" in short").trim_end_matches(" overall").trim_end_matches(" to me"));
    (!name.is_empty()).then(|| (name.clone(), short.is_some() || says_document(&name)))
}

/// Words around a document's name that are not part of it.
const NAME_FILLERS: &[&str] = &[
    "in english",
    "in chinese",
    "用中文",
    "用英文",
    "the document",
    "the file",
    "the pdf",
    "the doc",
    "document",
    "file",
    "this",
    "the",
    "my",
    "please",
    "for me",
    "in",
    "of",
    "a",
    "an",
    "这份",
    "这个",
    "那份",
    "一下",
    "请",
    "帮我",
    "给我",
    "文档",
    "文件",
    "的",
    "把",
    "里",
    "中",
];

/// A document's name as the question gives it: quotes, fillers and punctuation taken off its ends.
pub fn document_name(text: &str) -> String {
    let mut name = text.trim().trim_matches(|c: char| c.is_whitespace() || "\"'“”‘’「」《》<>()（）:：,，.。?？!！".contains(c)).to_string();
    loop {
        let before = name.clone();
        for filler in NAME_FILLERS {
            let lower = name.to_lowercase();
            let spaced = filler.is_ascii();
            if lower.starts_with(filler) && (!spaced || lower[filler.len()..].starts_with(' ') || lower.len() == filler.len()) {
                name = name[filler.len()..].trim_start().to_string();
            } else if lower.ends_with(filler) && (!spaced || lower[..lower.len() - filler.len()].ends_with(' ') || lower.len() == filler.len()) {
                name = name[..name.len() - filler.len()].trim_end().to_string();
            }
        }
        name = name.trim_matches(|c: char| c.is_whitespace() || "\"'“”‘’「」《》<>()（）:：,，.。?？!！".contains(c)).to_string();
        if name == before {
            return name;
        }
    }
}

/// What documents are asked to be about: the rest of a collection question without its fillers.
fn topic(rest: &str) -> String {
    let name = document_name(rest);
    const FILLERS: &[&str] = &[
        "are",
        "is",
        "about",
        "on",
        "that",
        "which",
        "mention",
        "do",
        "i",
        "have",
        "there",
        "in",
        "total",
        "altogether",
        "we",
        "here",
        "does",
        "it",
        "of",
        "my",
        "them",
        "or",
        "kind",
        "sort",
        "type",
        "types",
        "topics",
        "cover",
        "all",
        "any",
        "anything",
        "documents",
        "docs",
        "files",
        "to",
    ];
    let words: Vec<&str> = name.split_whitespace().filter(|w| !FILLERS.contains(&w.to_lowercase().as_str())).collect();
    let mut joined = words.join(" ");
    for filler in ["我的", "都有些", "有些", "都有", "内容", "有关", "相关", "是", "的", "里", "跟", "和", "与", "吗", "呢", "些", "什么"]
    {
        joined = joined.replace(filler, " ");
    }
    joined.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn document_named(name: &str) -> Scope {
        Scope::Document { name: name.into(), sure: true }
    }

    #[test]
    fn questions_about_one_document_name_it() {
        assert_eq!(scope_of("Summarize the quarterly report"), document_named("quarterly report"));
        assert_eq!(scope_of("Can you summarise warranty.pdf?"), document_named("warranty.pdf"));
        assert_eq!(scope_of("What's in the user manual?"), document_named("user manual"), "sure: a manual is a document");
        assert_eq!(scope_of("What's in the kit?"), Scope::Document { name: "kit".into(), sure: false });
        assert_eq!(scope_of("What is included in the kit?"), Scope::Passages, "not \"what is in\"");
        assert_eq!(scope_of("key points of 'Travel policy 2025'"), document_named("Travel policy 2025"));
        assert_eq!(scope_of("总结一下这份说明书"), document_named("说明书"));
        assert_eq!(scope_of("保修条款讲了什么？"), document_named("保修条款"), "sure: 条款 are a document");
        assert_eq!(scope_of("第三章讲了什么？"), Scope::Document { name: "第三章".into(), sure: false });
        assert_eq!(scope_of("《年度报告》的要点"), document_named("年度报告"));
    }

    #[test]
    fn questions_about_the_collection_are_told_apart() {
        assert_eq!(scope_of("What documents do I have?"), Scope::Collection { about: None });
        assert_eq!(scope_of("我有哪些文档？"), Scope::Collection { about: None });
        assert_eq!(scope_of("Which documents are about insurance?"), Scope::Collection { about: Some("insurance".into()) });
        assert_eq!(scope_of("哪些文档是关于保险的？"), Scope::Collection { about: Some("保险".into()) });
        assert_eq!(scope_of("How many documents are there"), Scope::Collection { about: None });
    }

    #[test]
    fn comparisons_name_both_documents() {
        let pair = |a: &str, b: &str, sure: bool| Scope::Comparison { first: a.into(), second: b.into(), sure };
        assert_eq!(scope_of("What changed between the 2024 policy and the 2025 policy?"), pair("2024 policy", "2025 policy", true));
        assert_eq!(
            scope_of("What changed between the 2024 and 2025 home insurance policies?"),
            pair("2024 home insurance policies", "2025 home insurance policies", true)
        );
        assert_eq!(scope_of("Compare lamp.md with kettle.md"), pair("lamp.md", "kettle.md", true));
        assert_eq!(scope_of("旧合同和新合同有什么区别"), pair("旧合同", "新合同", true));
        assert_eq!(
            scope_of("What's the difference between males and females?"),
            pair("males", "females", false),
            "a passage question unless both name documents"
        );
    }

    #[test]
    fn passage_questions_stay_passage_questions() {
        for question in [
            "How often should I descale the kettle?",
            "What do they eat?",
            "台灯用什么灯泡？",
            "What is the warranty period?",
            "水壶和台灯",
            "What does the warranty cover?",
        ] {
            assert_eq!(scope_of(question), Scope::Passages, "{question}");
        }
    }
}
