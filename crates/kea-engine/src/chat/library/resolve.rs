//! Which document a question names: its exact title, file name (with or
//! without the extension) or path; else the one whose names hold every
//! word of the name (in any order, stemmed, Chinese segmented); else, in a
//! collection small enough to read, the one whose names and text hold
//! every word ("the bread recipe" for "Country Sourdough Loaf"). Several
//! that fit are a short list to choose from; none is said so, with the
//! closest names, and never guessed.

use std::collections::HashSet;

use crate::segment;
use crate::store::DocRecord;
use unicode_normalization::UnicodeNormalization;

/// What a name resolved to.
#[derive(Debug, PartialEq)]
pub enum Resolved<'d> {
    One(&'d DocRecord),
    /// Several fit about as well: the person chooses.
    Several(Vec<&'d DocRecord>),
    /// None fits: the closest names, if any come near.
    Missing(Vec<&'d DocRecord>),
}

/// Documents whose text is read to resolve a name, at most (a larger
/// collection resolves by names alone).
const TEXT_LOOKUP_DOCUMENTS: usize = 500;
/// Documents offered to choose from, at most.
const CHOICES: usize = 8;
/// Words that say "a document" without naming one.
const GENERIC: &[&str] = &["document", "file", "doc", "pdf", "文档", "文件", "那份", "这份"];

/// Resolves `name` among `documents`; `text_of` gives a document's text
/// (read only when its names do not decide).
pub fn resolve<'d>(name: &str, documents: &'d [DocRecord], text_of: &mut dyn FnMut(&DocRecord) -> String) -> Resolved<'d> {
    let wanted = folded(name);
    let exact: Vec<&DocRecord> = documents.iter().filter(|d| names_of(d).contains(&wanted)).collect();
    if !wanted.is_empty() && !exact.is_empty() {
        return one_or_several(exact);
    }
    let words = name_words(&wanted);
    if words.is_empty() {
        return Resolved::Missing(Vec::new());
    }
    let named: Vec<HashSet<String>> = documents.iter().map(|d| words_of(&names_of(d).join(" "))).collect();
    let in_names: Vec<&DocRecord> = documents.iter().zip(&named).filter(|(_, n)| words.is_subset(n)).map(|(d, _)| d).collect();
    if !in_names.is_empty() {
        return one_or_several(in_names);
    }
    if documents.len() <= TEXT_LOOKUP_DOCUMENTS {
        let mut holds_all = |doc: &DocRecord, names: &HashSet<String>| {
            let text = words_of(&text_of(doc));
            words.iter().all(|w| names.contains(w) || text.contains(w))
        };
        let in_text: Vec<&DocRecord> = documents.iter().zip(&named).filter(|(d, n)| holds_all(d, n)).map(|(d, _)| d).collect();
        if !in_text.is_empty() && in_text.len() <= CHOICES {
            return one_or_several(in_text);
        }
    }
    let share = |n: &HashSet<String>| words.iter().filter(|w| n.contains(*w)).count() as f32 / words.len() as f32;
    let mut closest: Vec<(f32, &DocRecord)> = documents.iter().zip(&named).map(|(d, n)| (share(n), d)).filter(|(s, _)| *s > 0.0).collect();
    closest.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.path.cmp(&b.1.path)));
    Resolved::Missing(closest.into_iter().take(5).map(|(_, d)| d).collect())
}

fn one_or_several(found: Vec<&DocRecord>) -> Resolved<'_> {
    match found.len() {
        1 => Resolved::One(found[0]),
        _ => Resolved::Several(found.into_iter().take(CHOICES).collect()),
    }
}

/// A document's names, folded: title, file name, file name without its extension, path.
fn names_of(doc: &DocRecord) -> Vec<String> {
    let file = doc.path.rsplit('/').next().unwrap_or(&doc.path);
    let stem = file.rsplit_once('.').map_or(file, |(stem, _)| stem);
    [doc.title.as_deref().unwrap_or_default(), file, stem, doc.path.as_str()].iter().map(|n| folded(n)).filter(|n| !n.is_empty()).collect()
}

/// The words that tell a name: its content words (stemmed, Chinese
/// segmented), without the ones that only say "a document".
fn name_words(name: &str) -> HashSet<String> {
    words_of(name).into_iter().filter(|w| !GENERIC.contains(&w.as_str()) && (w.chars().count() > 1 || w.chars().all(segment::is_cjk))).collect()
}

fn words_of(text: &str) -> HashSet<String> {
    segment::content_terms(text).into_iter().collect()
}

/// A name folded for comparison: NFKC, lower case, separators as spaces.
fn folded(name: &str) -> String {
    let spaced: String = name.nfkc().flat_map(char::to_lowercase).map(|c| if c.is_alphanumeric() { c } else { ' ' }).collect();
    spaced.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::DocStatus;

    fn doc(path: &str, title: Option<&str>) -> DocRecord {
        DocRecord {
            id: 0,
            path: path.into(),
            kind: None,
            size: 0,
            mtime_ns: 0,
            content_hash: None,
            status: DocStatus::Indexed,
            error: None,
            title: title.map(String::from),
            front_matter: serde_json::Value::Null,
            chunk_count: 1,
            indexed_at: 0,
        }
    }

    fn resolve_named<'d>(name: &str, docs: &'d [DocRecord]) -> Resolved<'d> {
        resolve(name, docs, &mut |d| if d.path == "recipe.md" { "A crusty bread from a sourdough starter.".into() } else { String::new() })
    }

    fn path_of(resolved: Resolved) -> String {
        match resolved {
            Resolved::One(d) => d.path.clone(),
            other => panic!("not one document: {other:?}"),
        }
    }

    #[test]
    fn a_document_is_named_by_title_file_name_or_stem() {
        let docs = [
            doc("reports/Quarterly_Report_Q3.pdf", Some("Quarterly report, third quarter")),
            doc("manuals/lamp.md", Some("Desk lamp")),
            doc("保修条款.docx", Some("保修条款")),
            doc("notes/lamp-bulbs.md", Some("Bulbs for the lamp")),
        ];
        assert_eq!(path_of(resolve_named("quarterly report", &docs)), "reports/Quarterly_Report_Q3.pdf");
        assert_eq!(path_of(resolve_named("Quarterly_Report_Q3.pdf", &docs)), "reports/Quarterly_Report_Q3.pdf");
        assert_eq!(path_of(resolve_named("desk lamp", &docs)), "manuals/lamp.md");
        assert_eq!(path_of(resolve_named("保修条款", &docs)), "保修条款.docx");
        assert_eq!(path_of(resolve_named("lamp.md", &docs)), "manuals/lamp.md");
        assert_eq!(path_of(resolve_named("report for the third quarter", &docs)), "reports/Quarterly_Report_Q3.pdf");
    }

    #[test]
    fn a_name_the_document_does_not_bear_is_found_in_its_text_when_every_word_is_there() {
        let docs = [doc("recipe.md", Some("Country Sourdough Loaf")), doc("lamp.md", Some("Desk lamp"))];
        assert_eq!(path_of(resolve_named("the bread recipe", &docs)), "recipe.md");
        assert!(matches!(resolve_named("the cake recipe", &docs), Resolved::Missing(d) if d.len() == 1), "one word missing: not that document");
    }

    #[test]
    fn an_ambiguous_name_offers_a_choice_and_a_missing_one_is_never_guessed() {
        let docs = [doc("policy-2024.md", Some("Travel policy 2024")), doc("policy-2025.md", Some("Travel policy 2025")), doc("lamp.md", Some("Desk lamp"))];
        assert!(matches!(resolve_named("travel policy", &docs), Resolved::Several(d) if d.len() == 2));
        assert_eq!(path_of(resolve_named("travel policy 2025", &docs)), "policy-2025.md");
        assert!(matches!(resolve_named("insurance contract", &docs), Resolved::Missing(_)));
        assert!(matches!(resolve_named("", &docs), Resolved::Missing(_)));
        assert!(matches!(resolve_named("car travel policy", &docs), Resolved::Missing(_)), "a word no document has");
    }
}
