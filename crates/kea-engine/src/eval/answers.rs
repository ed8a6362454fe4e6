//! What a user without a language model sees, per golden question: the
//! outcome; whether a relevant document is shown (an answered citation or
//! one of the related passages of an unsure outcome); for an answered one
//! with an `evidence` phrase, whether the extractive answer quotes it; and
//! whether it quotes a document that is not one of the relevant ones.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::chat::extractive::extract_answer;
use crate::chat::Question;
use crate::retrieve::calibration::Outcome;
use crate::retrieve::ContextBlock;
use crate::Retrieval;

use super::GoldenItem;

/// Passages an unsure outcome offers as related reading (as the chat does).
const RELATED_SHOWN: usize = 3;

/// One answerable question as the user sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct Seen {
    pub lang: String,
    pub outcome: Outcome,
    pub shown: bool,
    /// `None` when not answered or the question names no evidence.
    pub quoted: Option<bool>,
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
}

fn document_of(spec: &str) -> &str {
    spec.split_once('#').map_or(spec, |(path, _)| path)
}

fn squeeze(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase()
}

/// What `item` (answerable) looks like with `retrieval`'s outcome and passages.
pub fn seen(item: &GoldenItem, retrieval: &Retrieval) -> Seen {
    let outcome = retrieval.relevance.outcome;
    let relevant = |block: &ContextBlock| item.relevant.iter().any(|spec| document_of(spec) == block.source);
    let blocks = &retrieval.context.blocks;
    let mut seen = Seen { lang: item.lang.clone().unwrap_or_else(|| "-".into()), outcome, shown: false, quoted: None, other_document: None };
    match outcome {
        Outcome::Refused => {}
        Outcome::Unsure => seen.shown = retrieval.related_blocks(RELATED_SHOWN).into_iter().any(|(b, _)| relevant(b)),
        Outcome::Answered => {
            let Some(extract) = extract_answer(&Question::new(&item.query, None).as_judged(&retrieval.relevance), blocks) else { return seen };
            let cited: Vec<&ContextBlock> = extract.cited.iter().filter_map(|label| blocks.iter().find(|b| &b.label == label)).collect();
            seen.shown = cited.iter().any(|b| relevant(b));
            seen.other_document = Some(cited.iter().any(|b| !relevant(b)));
            seen.quoted = item.evidence.as_deref().map(|e| squeeze(&extract.text).contains(&squeeze(e)));
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
    AnswerRates {
        questions: group.len(),
        answered: share(answered, group.len()),
        unsure: share(count(&|s| s.outcome == Outcome::Unsure), group.len()),
        refused: share(count(&|s| s.outcome == Outcome::Refused), group.len()),
        shown: share(count(&|s| s.shown), group.len()),
        quoted: share(count(&|s| s.quoted == Some(true)), quoted_of),
        quoted_of,
        other_document: share(count(&|s| s.other_document == Some(true)), answered),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(lang: &str, outcome: Outcome, shown: bool, quoted: Option<bool>, other_document: Option<bool>) -> Seen {
        Seen { lang: lang.into(), outcome, shown, quoted, other_document }
    }

    #[test]
    fn rates_count_each_figure_over_its_own_questions() {
        let seen = [
            one("en", Outcome::Answered, true, Some(true), Some(false)),
            one("en", Outcome::Answered, true, None, Some(true)),
            one("en", Outcome::Unsure, true, None, None),
            one("zh", Outcome::Refused, false, None, None),
        ];
        let by = rates(&seen);
        let en = &by["en"];
        assert_eq!((en.questions, en.answered, en.unsure, en.refused), (3, 0.667, 0.333, 0.0));
        assert_eq!((en.shown, en.quoted, en.quoted_of, en.other_document), (1.0, 1.0, 1, 0.5));
        assert_eq!((by["all"].questions, by["all"].refused, by["zh"].shown), (4, 0.25, 0.0));
    }
}
