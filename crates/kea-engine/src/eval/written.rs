//! What a user with a language model sees, per golden question: each
//! question asked through the chat path as the app asks it (router,
//! retrieval, the model, the checks), in a conversation of its own that
//! is not kept. Per answer: the outcome; whether it cites a relevant page;
//! whether it holds the answering fact (judged against the question's
//! `evidence` phrase: its numbers, else most of its words); its sentences
//! and those the check took out; its language; numbers its cited passages
//! lack; and the model's time to the first token and to the whole answer,
//! with its prompt and answer tokens. Summed by [`rates`] per language.

use std::collections::{BTreeMap, HashSet};
use std::time::Instant;

use kea_llm::Provider;
use serde::Serialize;

use super::answers::document_of;
use super::GoldenItem;
use crate::chat::markers::resolve_markers;
use crate::chat::{ChatAnswer, ChatEvent, ChatOptions, ModelUse};
use crate::engine::Engine;
use crate::error::Result;
use crate::language::Language;
use crate::numbers::numbers_in;
use crate::retrieve::calibration::Outcome;
use crate::segment::{content_terms, index_tokens, is_cjk};

/// One golden question's written answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Written {
    pub query: String,
    pub lang: String,
    pub answerable: bool,
    pub outcome: Outcome,
    pub answer: String,
    /// An answered question cites a relevant document.
    pub cited_right: bool,
    /// `None`: not answered, no evidence phrase, or one that cannot be
    /// judged (no number, and in another language than the answer).
    pub holds_fact: Option<bool>,
    pub sentences: usize,
    pub unsupported: usize,
    /// The answer is in the question's language (answered only).
    pub in_language: Option<bool>,
    /// Numbers of the answer its cited passages do not hold.
    pub unheld_numbers: usize,
    /// From the question to the whole answer, retrieval included.
    pub total_ms: f64,
    /// From the question to the first token of the model's reply.
    pub first_token_ms: Option<f64>,
    pub model: Option<ModelUse>,
    /// What the model was shown (the numbered sentences, with how much of
    /// the question each covers and the embedder's similarity of each to
    /// it) and wrote, when it was asked.
    pub read: Option<String>,
    pub coverage: Option<serde_json::Value>,
    pub similarity: Option<serde_json::Value>,
    pub written: Option<String>,
}

/// Asks every item of `items` through `engine`'s chat path with `llm`.
pub fn ask_all(engine: &Engine, llm: &dyn Provider, items: &[GoldenItem], options: &ChatOptions) -> Result<Vec<Written>> {
    let answerer = engine.answerer();
    let mut written = Vec::with_capacity(items.len());
    for item in items {
        let started = Instant::now();
        let mut first_token_ms = None;
        let mut model_started = false;
        let mut model_output = serde_json::Value::Null;
        let mut sink = |event: ChatEvent| match event {
            ChatEvent::ToolStart { tool: "llm" } => model_started = true,
            ChatEvent::Token { .. } if model_started && first_token_ms.is_none() => first_token_ms = Some(crate::retrieve::elapsed_ms(started)),
            ChatEvent::ToolEnd { tool: "llm", output, .. } => model_output = output,
            _ => {}
        };
        let answer = answerer.ask(llm, None, &item.query, options, &mut sink, &|| false)?;
        let total_ms = crate::retrieve::elapsed_ms(started);
        let ids: Vec<u64> = answer.citations.iter().flat_map(|c| c.chunk_ids.iter().map(|&id| id as u64)).collect();
        let cited: String = engine.retriever().chunks(&ids)?.iter().map(|c| format!("{}\n{}\n", c.heading_path, c.text)).collect();
        let mut one = judge(item, &answer, &cited, total_ms, first_token_ms);
        let text_of = |key: &str| model_output.get(key).and_then(|v| v.as_str()).map(str::to_string);
        (one.read, one.written) = (text_of("read"), text_of("written"));
        (one.coverage, one.similarity) = (model_output.get("coverage").cloned(), model_output.get("similarity").cloned());
        written.push(one);
    }
    Ok(written)
}

/// What `answer` to `item` shows (see the module docs); `cited` is the
/// text of the passages it cites.
pub fn judge(item: &GoldenItem, answer: &ChatAnswer, cited: &str, total_ms: f64, first_token_ms: Option<f64>) -> Written {
    let answered = answer.shown.outcome == Outcome::Answered;
    let (plain, _) = resolve_markers(&answer.answer, &Default::default());
    let question_language = Language::of_query(&item.query);
    let sentences = crate::chunk::sentence_ends(&plain).len().max(usize::from(!plain.trim().is_empty()));
    Written {
        query: item.query.clone(),
        lang: item.lang.clone().unwrap_or_else(|| "-".into()),
        answerable: item.answerable,
        outcome: answer.shown.outcome,
        answer: answer.answer.clone(),
        cited_right: answered && answer.citations.iter().any(|c| item.relevant.iter().any(|spec| document_of(spec) == c.source)),
        holds_fact: item.evidence.as_deref().filter(|_| answered && item.answerable).and_then(|e| holds_fact(&plain, e)),
        sentences: if answered { sentences + answer.shown.unsupported.len() } else { 0 },
        unsupported: if answered { answer.shown.unsupported.len() } else { 0 },
        in_language: answered.then(|| Language::of_text(&plain) == question_language),
        unheld_numbers: if answered { numbers_in(&plain).difference(&numbers_in(cited)).count() } else { 0 },
        total_ms,
        first_token_ms,
        model: answer.model.clone(),
        read: None,
        coverage: None,
        similarity: None,
        written: None,
    }
}

/// Whether `answer` holds the fact of `evidence`: all its numbers (digits
/// or Chinese numerals), else, in the same language, half its content
/// words or more; `None` when neither can be judged.
pub fn holds_fact(answer: &str, evidence: &str) -> Option<bool> {
    let wanted = numbers_in(evidence);
    if !wanted.is_empty() {
        return Some(wanted.is_subset(&numbers_in(answer)));
    }
    if Language::of_text(answer) != Language::of_text(evidence) {
        return None;
    }
    let terms = content_terms(evidence);
    if terms.is_empty() {
        return None;
    }
    let words: HashSet<String> = index_tokens(answer).into_iter().collect();
    let held = terms.iter().filter(|t| words.contains(*t) || (t.chars().any(is_cjk) && answer.contains(t.as_str()))).count();
    Some(held * 2 >= terms.len())
}

/// The figures of a set of written answers.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct WrittenRates {
    pub answerable: usize,
    pub answered: f64,
    pub unsure: f64,
    pub refused: f64,
    /// Answered, citing a relevant page, and holding the fact where it can be judged.
    pub answered_right: f64,
    /// Of the answered, those citing a relevant page.
    pub cited_right: f64,
    /// Of the answered with a judged evidence phrase, those holding it.
    pub holds_fact: f64,
    pub holds_fact_of: usize,
    pub unanswerable: usize,
    pub unanswerable_answered: f64,
    /// Of all answered sentences, the share taken out as unsupported.
    pub unsupported: f64,
    pub in_language: f64,
    /// Answers stating a number their cited passages do not hold.
    pub unheld_numbers: usize,
    pub first_token_ms_p50: f64,
    pub first_token_ms_p95: f64,
    pub total_ms_p50: f64,
    pub total_ms_p95: f64,
    /// Means over the questions the model was asked.
    pub prompt_tokens: f64,
    pub cached_tokens: f64,
    pub answer_tokens: f64,
}

/// The rates of `written`, overall (`"all"`) and per language.
pub fn rates(written: &[Written]) -> BTreeMap<String, WrittenRates> {
    let mut groups: BTreeMap<String, Vec<&Written>> = BTreeMap::new();
    for w in written {
        groups.entry("all".into()).or_default().push(w);
        groups.entry(w.lang.clone()).or_default().push(w);
    }
    groups.into_iter().map(|(key, group)| (key, rates_of(&group))).collect()
}

fn share(n: usize, of: usize) -> f64 {
    if of == 0 {
        0.0
    } else {
        (n as f64 / of as f64 * 1000.0).round() / 1000.0
    }
}

/// The `p`-th percentile (0–100) of `values`, nearest rank; 0 when empty.
pub fn percentile(values: &[f64], p: f64) -> f64 {
    let mut sorted: Vec<f64> = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = ((p / 100.0 * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len().max(1));
    sorted.get(rank - 1).map_or(0.0, |v| (v * 10.0).round() / 10.0)
}

fn rates_of(group: &[&Written]) -> WrittenRates {
    let (answerable, unanswerable): (Vec<&Written>, Vec<&Written>) = group.iter().partition(|w| w.answerable);
    let count = |set: &[&Written], keep: &dyn Fn(&Written) -> bool| set.iter().filter(|w| keep(w)).count();
    let is = |o: Outcome| move |w: &Written| w.outcome == o;
    let answered = count(&answerable, &is(Outcome::Answered));
    let all_answered: Vec<&Written> = group.iter().copied().filter(|w| w.outcome == Outcome::Answered).collect();
    let used: Vec<&ModelUse> = group.iter().filter_map(|w| w.model.as_ref()).collect();
    let mean =
        |f: &dyn Fn(&ModelUse) -> usize| if used.is_empty() { 0.0 } else { (used.iter().map(|m| f(m)).sum::<usize>() as f64 / used.len() as f64).round() };
    let first: Vec<f64> = group.iter().filter_map(|w| w.first_token_ms).collect();
    let totals: Vec<f64> = group.iter().filter(|w| w.model.is_some()).map(|w| w.total_ms).collect();
    WrittenRates {
        answerable: answerable.len(),
        answered: share(answered, answerable.len()),
        unsure: share(count(&answerable, &is(Outcome::Unsure)), answerable.len()),
        refused: share(count(&answerable, &is(Outcome::Refused)), answerable.len()),
        answered_right: share(count(&answerable, &|w| w.cited_right && w.holds_fact != Some(false)), answerable.len()),
        cited_right: share(count(&answerable, &|w| w.cited_right), answered),
        holds_fact: share(count(&answerable, &|w| w.holds_fact == Some(true)), count(&answerable, &|w| w.holds_fact.is_some())),
        holds_fact_of: count(&answerable, &|w| w.holds_fact.is_some()),
        unanswerable: unanswerable.len(),
        unanswerable_answered: share(count(&unanswerable, &is(Outcome::Answered)), unanswerable.len()),
        unsupported: share(all_answered.iter().map(|w| w.unsupported).sum(), all_answered.iter().map(|w| w.sentences).sum()),
        in_language: share(count(&all_answered, &|w| w.in_language == Some(true)), all_answered.len()),
        unheld_numbers: count(&all_answered, &|w| w.unheld_numbers > 0),
        first_token_ms_p50: percentile(&first, 50.0),
        first_token_ms_p95: percentile(&first, 95.0),
        total_ms_p50: percentile(&totals, 50.0),
        total_ms_p95: percentile(&totals, 95.0),
        prompt_tokens: mean(&|m| m.prompt_tokens),
        cached_tokens: mean(&|m| m.cached_tokens),
        answer_tokens: mean(&|m| m.tokens),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fact_is_held_by_its_numbers_in_either_script_else_by_its_words() {
        assert_eq!(holds_fact("They live about 15 to 20 years.", "寿命约十五到二十年"), Some(true));
        assert_eq!(holds_fact("They live about 15 years.", "15 to 20 years"), Some(false));
        assert_eq!(holds_fact("Feed it fresh fruit and pellets.", "pellets and fresh fruit"), Some(true));
        assert_eq!(holds_fact("It comes from Australia.", "pellets and fresh fruit"), Some(false));
        assert_eq!(holds_fact("It eats fruit.", "吃水果和种子"), None, "no number, another language: not judged");
    }

    #[test]
    fn percentiles_take_the_nearest_rank() {
        let values = [5.0, 1.0, 3.0, 2.0, 4.0];
        assert_eq!((percentile(&values, 50.0), percentile(&values, 95.0), percentile(&[], 50.0)), (3.0, 5.0, 0.0));
    }
}
