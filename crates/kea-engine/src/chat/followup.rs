//! Whether a follow-up is one. The router (an LLM, or keyword rules that see
//! "their" or "它") may call a question a follow-up of the conversation's
//! subject when it names a subject of its own. It keeps the conversation's
//! subject only when the question has none:
//! - a question naming a label other than the subject (any of its names or
//!   aliases) is a new question;
//! - else it is searched as asked; when a word of it names the best
//!   passage's document (its title or file name) and is not part of the
//!   subject's name, it is a new question;
//! - else both searches are weighed, and the follow-up stands unless it is
//!   refused while the question as asked is not.
//!
//! The route's `followup_check` says which, and why.

use std::collections::HashSet;

use kea_llm::Provider;

use super::extractive::subject_words;
use super::{Answerer, ChatEvent, ChatOptions, Question, Route};
use crate::error::Result;
use crate::retrieve::calibration::Outcome;
use crate::retrieve::Retrieval;
use crate::segment::tokens;

impl Answerer<'_> {
    /// Retrieval for a routed question, a follow-up checked as above (`route` says the outcome).
    pub(super) fn retrieve_routed(
        &self,
        llm: &dyn Provider,
        question: &Question,
        route: &mut Route,
        options: &ChatOptions,
        sink: &mut dyn FnMut(ChatEvent),
    ) -> Result<Retrieval> {
        let asked = question.text.as_str();
        let Some(subject) = question.subject.as_deref().filter(|_| route.is_followup) else { return self.retrieve_for_chat(llm, asked, route, options, sink) };
        let labels = self.subjects.labels()?;
        if let Some(named) = labels.iter().find(|l| l.is_mentioned_in(asked) && l.subject() != subject && !l.is_mentioned_in(subject)) {
            *route = route.clone().standing_alone(question, format!("the question names its own subject, {}: a new question", named.name()));
            return self.retrieve_for_chat(llm, asked, route, options, sink);
        }
        let alone = route.clone().standing_alone(question, String::new());
        let as_asked = self.retrieve_for_chat(llm, asked, &alone, options, sink)?;
        if let Some(word) = own_subject_word(question, subject, &as_asked) {
            *route = Route {
                followup_check: Some(format!("the question names its own subject, “{word}” (its best passage's document): a new question")),
                ..alone
            };
            return Ok(as_asked);
        }
        let followed = self.retrieve_for_chat(llm, asked, route, options, sink)?;
        let (with, without) = (followed.relevance.probability, as_asked.relevance.probability);
        if followed.relevance.outcome == Outcome::Refused && as_asked.relevance.outcome != Outcome::Refused {
            *route = Route {
                followup_check: Some(format!(
                    "searched with and without the conversation's subject; kept the question as asked ({without:.2} against {with:.2})"
                )),
                ..alone
            };
            return Ok(as_asked);
        }
        route.followup_check = Some(format!("searched with and without the conversation's subject; kept the subject ({with:.2} against {without:.2})"));
        Ok(followed)
    }
}

/// A word of `question` that names the document of `retrieval`'s best
/// passage (its title or file name) and is not part of `subject`.
fn own_subject_word(question: &Question, subject: &str, retrieval: &Retrieval) -> Option<String> {
    let block = retrieval.context.blocks.first().filter(|_| retrieval.relevance.outcome != Outcome::Refused)?;
    let in_subject: HashSet<String> = tokens(subject).into_iter().collect();
    let document_words = subject_words(block);
    question.terms.iter().find(|t| document_words.contains(*t) && !in_subject.contains(*t)).cloned()
}
