//! The label set for identification comes from the knowledge base: every
//! document whose front matter gives a name under one of the profile's label
//! keys (by default `zh`, `en`, `latin`, optional `aliases`) is a label;
//! documents in two languages about the same thing (same scientific name,
//! else same English name) are one label.

use crate::language::Language;
use serde::Serialize;

use crate::profile::LabelFields;
use crate::store::DocRecord;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Label {
    /// The Chinese name, if given.
    pub zh: Option<String>,
    pub en: Option<String>,
    pub latin: Option<String>,
    pub aliases: Vec<String>,
    /// The documents that describe it.
    pub sources: Vec<String>,
}

impl Label {
    /// The name shown to the user: English, else Chinese, else Latin.
    pub fn name(&self) -> &str {
        self.en.as_deref().or(self.zh.as_deref()).or(self.latin.as_deref()).unwrap_or("?")
    }

    /// The conversation subject: both names when there are two ("玄凤鹦鹉
    /// (Cockatiel)"), so a follow-up can search in the question's language.
    pub fn subject(&self) -> String {
        match (&self.zh, &self.en) {
            (Some(zh), Some(en)) if zh != en => format!("{zh} ({en})"),
            _ => self.name().to_string(),
        }
    }

    /// Its names in each language, its scientific name and its aliases.
    pub fn all_names(&self) -> impl Iterator<Item = &str> {
        [self.zh.as_deref(), self.en.as_deref(), self.latin.as_deref()].into_iter().flatten().chain(self.aliases.iter().map(String::as_str))
    }

    /// Whether `text` names this label (any of its names, case-insensitive).
    pub fn is_named(&self, text: &str) -> bool {
        let t = text.trim().to_lowercase();
        self.all_names().any(|n| n.to_lowercase() == t)
    }

    /// Whether `text` mentions this label: one of its names (two characters
    /// or more) as whole words, an English one also in the plural.
    pub fn is_mentioned_in(&self, text: &str) -> bool {
        let lower = text.to_lowercase();
        self.all_names().map(str::to_lowercase).filter(|n| n.chars().count() >= 2).any(|name| mentions(&lower, &name))
    }

    /// Fills a prompt template: `{en}`, `{zh}`, `{latin}`.
    pub fn prompt(&self, template: &str) -> String {
        template
            .replace("{en}", self.en.as_deref().unwrap_or(self.name()))
            .replace("{zh}", self.zh.as_deref().unwrap_or(self.name()))
            .replace("{latin}", self.latin.as_deref().unwrap_or(""))
    }
}

/// Whether `name` occurs in `text` (both lower-case) on word boundaries
/// (none needed around Chinese), allowing a plural "s" or "es" after it.
fn mentions(text: &str, name: &str) -> bool {
    let alphanumeric_ascii = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    text.match_indices(name).any(|(i, _)| {
        let rest = &text[i + name.len()..];
        let rest = rest.strip_prefix("es").filter(|r| !alphanumeric_ascii(r.chars().next())).or_else(|| rest.strip_prefix('s')).unwrap_or(rest);
        !alphanumeric_ascii(text[..i].chars().next_back()) && !alphanumeric_ascii(rest.chars().next())
    })
}

/// The first non-empty text value under any of `keys`.
fn text(doc: &DocRecord, keys: &[String]) -> Option<String> {
    keys.iter().find_map(|key| match doc.front_matter.get(key)? {
        serde_json::Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_string()),
        _ => None,
    })
}

fn aliases(doc: &DocRecord, keys: &[String]) -> Vec<String> {
    keys.iter()
        .flat_map(|key| match doc.front_matter.get(key) {
            Some(serde_json::Value::Array(items)) => items.iter().filter_map(|a| a.as_str().map(str::to_string)).collect(),
            Some(serde_json::Value::String(s)) => s.split(',').map(|a| a.trim().to_string()).filter(|a| !a.is_empty()).collect(),
            _ => Vec::new(),
        })
        .collect()
}

/// `query` with the names it gives in its own language replaced by their
/// names in the other one (Chinese ↔ English), for labels whose documents
/// are all written in that other language (`language_of` a document path):
/// a question naming 玄凤鹦鹉 over English documents also searches
/// "Cockatiel". `None` when no name is replaced. Longest names first.
pub fn translate_names(query: &str, labels: &[Label], language_of: &dyn Fn(&str) -> Language) -> Option<String> {
    let language = Language::of_query(query);
    let mut swaps: Vec<(String, String)> = Vec::new();
    for label in labels.iter().filter(|l| l.sources.iter().all(|s| language_of(s) != language)) {
        let (own, other) = match language {
            Language::Chinese => (label.zh.iter().chain(&label.aliases).filter(|n| Language::of_text(n) == language).collect::<Vec<_>>(), label.en.as_ref()),
            Language::English => {
                (label.en.iter().chain(&label.latin).chain(&label.aliases).filter(|n| Language::of_text(n) == language).collect(), label.zh.as_ref())
            }
        };
        let Some(other) = other else { continue };
        swaps.extend(own.into_iter().filter(|n| n.chars().count() > 1).map(|n| (n.to_lowercase(), other.clone())));
    }
    swaps.sort_by_key(|(name, _)| std::cmp::Reverse(name.chars().count()));
    let mut translated = query.to_lowercase();
    let mut changed = false;
    for (name, other) in swaps {
        if translated.contains(&name) {
            translated = translated.replace(&name, &format!(" {other} "));
            changed = true;
        }
    }
    changed.then(|| translated.split_whitespace().collect::<Vec<_>>().join(" "))
}

/// Documents whose titles tell which languages a collection is written in.
pub const LANGUAGE_SAMPLE: usize = 2_000;

/// The labels of a collection with the language of each of their documents,
/// for [`translate_names`], and how many of a sample of titles are in each
/// language (built once per change of the store; a document's language is
/// its title's).
#[derive(Debug, Default)]
pub struct NameIndex {
    labels: Vec<Label>,
    /// Which label each labelled document describes (an index into `labels`).
    label_of: std::collections::HashMap<String, usize>,
    languages: std::collections::HashMap<String, Language>,
    sampled: std::collections::BTreeMap<Language, usize>,
}

impl NameIndex {
    /// From the documents with front matter and a sample of all titles.
    pub fn new(labelled: &[DocRecord], sampled_titles: &[String], fields: &LabelFields) -> NameIndex {
        let languages = labelled.iter().map(|d| (d.path.clone(), Language::of_text(d.title.as_deref().unwrap_or(&d.path)))).collect();
        let mut sampled = std::collections::BTreeMap::new();
        for title in sampled_titles {
            *sampled.entry(Language::of_text(title)).or_default() += 1;
        }
        let labels = labels_from_documents(labelled, fields);
        let label_of = labels.iter().enumerate().flat_map(|(i, l)| l.sources.iter().map(move |s| (s.clone(), i))).collect();
        NameIndex { labels, label_of, languages, sampled }
    }

    /// `query` with its names translated (see [`translate_names`]).
    pub fn translate(&self, query: &str) -> Option<String> {
        translate_names(query, &self.labels, &|path| self.languages.get(path).copied().unwrap_or_default())
    }

    /// Every name of the thing document `source` describes (see
    /// [`Label::all_names`]); empty when its front matter names nothing.
    pub fn names_of(&self, source: &str) -> Vec<String> {
        self.label_of.get(source).map(|&i| self.labels[i].all_names().map(str::to_string).collect()).unwrap_or_default()
    }

    /// The languages a sample of the documents' titles are in.
    pub fn languages(&self) -> Vec<Language> {
        self.sampled.keys().copied().collect()
    }

    /// The language most documents are in, when none is in the question's
    /// language `asked` (`None` for an empty collection or one the
    /// question's language is part of).
    pub fn other_language(&self, asked: Language) -> Option<Language> {
        if self.sampled.contains_key(&asked) {
            return None;
        }
        self.sampled.iter().max_by_key(|(_, n)| **n).map(|(language, _)| *language)
    }
}

/// Labels from indexed documents, sorted by name.
/// What the collection is about, as answers and identification read it:
/// its profile, its labels and the names that translate between its languages.
pub trait Subjects {
    fn profile(&self) -> crate::profile::Profile;
    fn labels(&self) -> crate::error::Result<Vec<Label>>;
    fn names(&self) -> crate::error::Result<std::sync::Arc<NameIndex>>;
}

pub fn labels_from_documents(docs: &[DocRecord], fields: &LabelFields) -> Vec<Label> {
    let mut labels: Vec<Label> = Vec::new();
    for doc in docs {
        let (zh, en, latin) = (text(doc, &fields.zh), text(doc, &fields.en), text(doc, &fields.scientific));
        if zh.is_none() && en.is_none() && latin.is_none() {
            continue;
        }
        let aliases = aliases(doc, &fields.aliases);
        let same = |l: &Label| match (&l.latin, &latin) {
            (Some(a), Some(b)) => a.eq_ignore_ascii_case(b),
            _ => l.en.is_some() && l.en == en,
        };
        match labels.iter_mut().find(|l| same(l)) {
            Some(label) => {
                label.zh = label.zh.take().or(zh);
                label.en = label.en.take().or(en);
                for a in aliases {
                    if !label.aliases.contains(&a) {
                        label.aliases.push(a);
                    }
                }
                label.sources.push(doc.path.clone());
            }
            None => labels.push(Label { zh, en, latin, aliases, sources: vec![doc.path.clone()] }),
        }
    }
    labels.sort_by(|a, b| a.name().cmp(b.name()));
    labels
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::DocStatus;

    fn doc(path: &str, fm: serde_json::Value) -> DocRecord {
        DocRecord {
            id: 1,
            path: path.into(),
            kind: Some(crate::extract::DocKind::Markdown),
            size: 1,
            mtime_ns: 1,
            content_hash: None,
            status: DocStatus::Indexed,
            error: None,
            title: None,
            front_matter: fm,
            chunk_count: 1,
            indexed_at: 0,
        }
    }

    #[test]
    fn names_are_translated_only_for_subjects_written_in_the_other_language() {
        let docs = [
            doc("parrots/cockatiel.md", serde_json::json!({"zh": "玄凤鹦鹉", "en": "Cockatiel", "latin": "Nymphicus hollandicus", "aliases": ["鸡尾鹦鹉"]})),
            doc("鹦鹉/虎皮鹦鹉.md", serde_json::json!({"zh": "虎皮鹦鹉", "en": "Budgerigar", "latin": "Melopsittacus undulatus"})),
        ];
        let labels = labels_from_documents(&docs, &LabelFields::default());
        let language_of = |path: &str| if path.starts_with("鹦鹉") { Language::Chinese } else { Language::English };
        assert_eq!(translate_names("玄凤鹦鹉吃什么", &labels, &language_of).as_deref(), Some("Cockatiel 吃什么"));
        assert_eq!(translate_names("鸡尾鹦鹉怕冷吗", &labels, &language_of).as_deref(), Some("Cockatiel 怕冷吗"), "an alias too");
        assert_eq!(translate_names("How long do budgerigars live?", &labels, &language_of).as_deref(), Some("how long do 虎皮鹦鹉 s live?"));
        assert_eq!(translate_names("虎皮鹦鹉吃什么", &labels, &language_of), None, "its document is in Chinese already");
        assert_eq!(translate_names("What do cockatiels eat?", &labels, &language_of), None);
    }

    #[test]
    fn documents_in_two_languages_make_one_label() {
        let docs = [
            doc("parrots/cockatiel.md", serde_json::json!({"en": "Cockatiel", "latin": "Nymphicus hollandicus", "aliases": ["Quarrion"]})),
            doc("鹦鹉/玄凤鹦鹉.md", serde_json::json!({"zh": "玄凤鹦鹉", "en": "Cockatiel", "latin": "Nymphicus hollandicus", "aliases": ["鸡尾鹦鹉"]})),
            doc("guides/care.md", serde_json::json!({"title": "Care"})),
        ];
        let labels = labels_from_documents(&docs, &LabelFields::default());
        assert_eq!(labels.len(), 1);
        let l = &labels[0];
        assert_eq!((l.zh.as_deref(), l.en.as_deref()), (Some("玄凤鹦鹉"), Some("Cockatiel")));
        assert_eq!(l.sources.len(), 2);
        assert!(l.is_named("quarrion") && l.is_named("鸡尾鹦鹉") && l.is_named("nymphicus hollandicus"));
        assert_eq!(l.prompt("a photo of a {en} ({latin})"), "a photo of a Cockatiel (Nymphicus hollandicus)");
    }
}
