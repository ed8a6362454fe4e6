//! Which document a question names: its title, its file name with or
//! without the extension, or its path, compared after folding case, width
//! and punctuation; words in any order. One clear best is the document; a
//! few close ones are a short list to choose from; none is said so, with
//! the closest names, and never guessed.

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

/// A score at which a document is the one named.
const NAMED: f32 = 0.5;
/// Another document this close to the best makes the name ambiguous.
const CLOSE: f32 = 0.1;

/// Resolves `name` among `documents`.
pub fn resolve<'d>(name: &str, documents: &'d [DocRecord]) -> Resolved<'d> {
    let mut scored: Vec<(f32, &DocRecord)> = documents.iter().map(|d| (name_score(name, d), d)).collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.path.cmp(&b.1.path)));
    match scored.first() {
        Some(&(best, doc)) if best >= NAMED => {
            let close: Vec<&DocRecord> = scored.iter().take_while(|(s, _)| *s >= NAMED && best - *s < CLOSE).map(|(_, d)| *d).collect();
            if close.len() == 1 || best >= 1.0 && scored.get(1).is_none_or(|(s, _)| *s < 1.0) {
                Resolved::One(doc)
            } else {
                Resolved::Several(close.into_iter().take(8).collect())
            }
        }
        _ => Resolved::Missing(scored.iter().filter(|(s, _)| *s > 0.2).take(5).map(|(_, d)| *d).collect()),
    }
}

/// How well `name` names `doc` (1 for its exact title or file name).
fn name_score(name: &str, doc: &DocRecord) -> f32 {
    let wanted = folded(name);
    if wanted.is_empty() {
        return 0.0;
    }
    let file = doc.path.rsplit('/').next().unwrap_or(&doc.path);
    let stem = file.rsplit_once('.').map_or(file, |(stem, _)| stem);
    let names: Vec<String> =
        [doc.title.as_deref().unwrap_or_default(), file, stem, doc.path.as_str()].iter().map(|n| folded(n)).filter(|n| !n.is_empty()).collect();
    names.iter().map(|n| similarity(&wanted, n)).fold(0.0, f32::max)
}

/// How alike two folded names are: 1 when equal; by containment and by
/// shared words (stemmed, Chinese segmented) otherwise.
fn similarity(wanted: &str, name: &str) -> f32 {
    if wanted == name {
        return 1.0;
    }
    let (short, long) = if wanted.chars().count() <= name.chars().count() { (wanted, name) } else { (name, wanted) };
    let contained =
        if short.chars().count() >= 2 && long.contains(short) { 0.55 + 0.4 * short.chars().count() as f32 / long.chars().count() as f32 } else { 0.0 };
    let (a, b) = (segment::tokens(wanted), segment::tokens(name));
    let shared = a.iter().filter(|t| b.contains(t)).count();
    let words = if a.is_empty() || b.is_empty() { 0.0 } else { 0.9 * shared as f32 / a.len().max(b.len()) as f32 };
    contained.max(words)
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
        assert_eq!(path_of(resolve("quarterly report", &docs)), "reports/Quarterly_Report_Q3.pdf");
        assert_eq!(path_of(resolve("Quarterly_Report_Q3.pdf", &docs)), "reports/Quarterly_Report_Q3.pdf");
        assert_eq!(path_of(resolve("desk lamp", &docs)), "manuals/lamp.md");
        assert_eq!(path_of(resolve("保修条款", &docs)), "保修条款.docx");
        assert_eq!(path_of(resolve("lamp.md", &docs)), "manuals/lamp.md");
    }

    #[test]
    fn an_ambiguous_name_offers_a_choice_and_a_missing_one_is_never_guessed() {
        let docs = [doc("policy-2024.md", Some("Travel policy 2024")), doc("policy-2025.md", Some("Travel policy 2025")), doc("lamp.md", Some("Desk lamp"))];
        assert!(matches!(resolve("travel policy", &docs), Resolved::Several(d) if d.len() == 2));
        assert_eq!(path_of(resolve("travel policy 2025", &docs)), "policy-2025.md");
        assert!(matches!(resolve("insurance contract", &docs), Resolved::Missing(_)));
        assert!(matches!(resolve("", &docs), Resolved::Missing(_)));
    }
}
