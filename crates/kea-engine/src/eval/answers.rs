//! What a user without a language model sees, per golden question: the
//! outcome; whether a relevant document is shown (an answered citation or
//! one of the related passages of an unsure outcome); for a question with
//! an `evidence` phrase, whether the extractive answer quotes it (answered)
//! or a related passage shows it as its sentence (unsure); whether the
//! sentences a language model would read hold it (what any reader is
//! bounded by); and whether an answer quotes a document that is not one of
//! the relevant ones.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::chat::answer::related_passages;
use crate::chat::extractive::extract_answer;
use crate::chat::reading::Reading;
use crate::chat::Question;
use crate::retrieve::calibration::Outcome;
use crate::retrieve::ContextBlock;
use crate::Retrieval;

use super::GoldenItem;

/// One answerable question as the user sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct Seen {
    pub lang: String,
    pub outcome: Outcome,
    pub shown: bool,
    /// `None` when not answered or the question names no evidence.
    pub quoted: Option<bool>,
    /// Whether a related passage shows the evidence as its sentence; `None`
    /// when not unsure or the question names no evidence.
    pub related_quoted: Option<bool>,
    /// Whether the sentences a language model reads for it hold the
    /// evidence; `None` when refused or the question names no evidence.
    pub read: Option<bool>,
    /// `None` when not answered.
    pub other_document: Option<bool>,
}

/// The figures of [`Seen`] over a set of answerable questions (shares).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct AnswerRates {
    pub questions: usize,
    pub answered: f64,
    pub unsure: f64,
    pub refused: f64,
    /// A relevant document answered from or offered as related reading.
    pub shown: f64,
    /// Of the answered questions with an evidence phrase, how many quote it.
    pub quoted: f64,
    pub quoted_of: usize,
    /// Of the answered questions, how many quote a document that is not relevant.
    pub other_document: f64,
    /// Of the unsure questions with an evidence phrase, how many show it as
    /// the sentence of a related passage (what the chat highlights).
    pub related_quoted: f64,
    pub related_quoted_of: usize,
    /// Of the questions not refused with an evidence phrase, how many a
    /// language model is shown it in the sentences it reads (the most any
    /// reader can answer right).
    pub read: f64,
    pub read_of: usize,
}

/// The document of a golden `relevant` entry (`path#heading` → `path`).
pub(super) fn document_of(spec: &str) -> &str {
    spec.split_once('#').map_or(spec, |(path, _)| path)
}

fn squeeze(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase()
}

/// What `item` (answerable) looks like with `retrieval`'s outcome and passages.
pub fn seen(item: &GoldenItem, retrieval: &Retrieval) -> Seen {
    let outcome = retrieval.relevance.outcome;
    let relevant = |source: &str| item.relevant.iter().any(|spec| document_of(spec) == source);
    let holds_evidence = |text: &str| item.evidence.as_deref().map(|e| squeeze(text).contains(&squeeze(e)));
    let question = Question::new(&item.query, None).as_judged(&retrieval.relevance);
    let blocks = &retrieval.context.blocks;
    let lang = item.lang.clone().unwrap_or_else(|| "-".into());
    let mut seen = Seen { lang, outcome, shown: false, quoted: None, related_quoted: None, read: None, other_document: None };
    if outcome != Outcome::Refused {
        seen.read = holds_evidence(&Reading::of(&question, blocks).listing());
    }
    match outcome {
        Outcome::Refused => {}
        Outcome::Unsure => {
            let related = related_passages(&question, retrieval);
            seen.shown = related.iter().any(|r| relevant(&r.passage.source));
            seen.related_quoted = holds_evidence(&related.iter().map(|r| r.snippet.as_str()).collect::<Vec<_>>().join("\n"));
        }
        Outcome::Answered => {
            let Some(extract) = extract_answer(&question, blocks) else { return seen };
            let cited: Vec<&ContextBlock> = extract.cited.iter().filter_map(|label| blocks.iter().find(|b| &b.label == label)).collect();
            seen.shown = cited.iter().any(|b| relevant(&b.source));
            seen.other_document = Some(cited.iter().any(|b| !relevant(&b.source)));
            seen.quoted = holds_evidence(&extract.text);
        }
    }
    seen
}

/// The rates of `seen`, overall (`"all"`) and per language.
pub fn rates(seen: &[Seen]) -> BTreeMap<String, AnswerRates> {
    let mut groups: BTreeMap<String, Vec<&Seen>> = BTreeMap::new();
    for s in seen {
        groups.entry("all".into()).or_default().push(s);
        groups.entry(s.lang.clone()).or_default().push(s);
    }
    groups.into_iter().map(|(key, group)| (key, rates_of(&group))).collect()
}

fn rates_of(group: &[&Seen]) -> AnswerRates {
    let share = |n: usize, of: usize| if of == 0 { 0.0 } else { (n as f64 / of as f64 * 1000.0).round() / 1000.0 };
    let count = |keep: &dyn Fn(&Seen) -> bool| group.iter().filter(|s| keep(s)).count();
    let answered = count(&|s| s.outcome == Outcome::Answered);
    let quoted_of = count(&|s| s.quoted.is_some());
    let related_quoted_of = count(&|s| s.related_quoted.is_some());
    let read_of = count(&|s| s.read.is_some());
    AnswerRates {
        questions: group.len(),
        answered: share(answered, group.len()),
        unsure: share(count(&|s| s.outcome == Outcome::Unsure), group.len()),
        refused: share(count(&|s| s.outcome == Outcome::Refused), group.len()),
        shown: share(count(&|s| s.shown), group.len()),
        quoted: share(count(&|s| s.quoted == Some(true)), quoted_of),
        quoted_of,
        other_document: share(count(&|s| s.other_document == Some(true)), answered),
        related_quoted: share(count(&|s| s.related_quoted == Some(true)), related_quoted_of),
        related_quoted_of,
        read: share(count(&|s| s.read == Some(true)), read_of),
        read_of,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(lang: &str, outcome: Outcome, shown: bool, quoted: Option<bool>, other_document: Option<bool>) -> Seen {
        let (quoted, related_quoted) = if outcome == Outcome::Unsure { (None, quoted) } else { (quoted, None) };
        let read = (outcome != Outcome::Refused).then_some(quoted.or(related_quoted)).flatten();
        Seen { lang: lang.into(), outcome, shown, quoted, related_quoted, read, other_document }
    }

    #[test]
    fn rates_count_each_figure_over_its_own_questions() {
        let seen = [
            one("en", Outcome::Answered, true, Some(true), Some(false)),
            one("en", Outcome::Answered, true, None, Some(true)),
            one("en", Outcome::Unsure, true, Some(false), None),
            one("en", Outcome::Unsure, false, None, None),
            one("zh", Outcome::Refused, false, None, None),
        ];
        let by = rates(&seen);
        let en = &by["en"];
        assert_eq!((en.questions, en.answered, en.unsure, en.refused), (4, 0.5, 0.5, 0.0));
        assert_eq!((en.shown, en.quoted, en.quoted_of, en.other_document), (0.75, 1.0, 1, 0.5));
        assert_eq!((en.related_quoted, en.related_quoted_of), (0.0, 1), "only the unsure question with evidence counts");
        assert_eq!((en.read, en.read_of), (0.5, 2), "every question not refused with evidence counts");
        assert_eq!((by["all"].questions, by["all"].refused, by["zh"].shown), (5, 0.2, 0.0));
    }
}
