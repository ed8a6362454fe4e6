//! [`Question`]: one question as asked, read once — its text, language,
//! content terms, the kind of answer it asks for and the conversation's
//! subject it may follow up on.
//! Routing, the follow-up check, the answer's wording and the extractive
//! scorer all read this value instead of re-reading the text.

use crate::language::Language;
use crate::retrieve::answer_type::AnswerType;
use crate::retrieve::relevance::Relevance;
use crate::segment::query_terms;

/// A question, read once.
#[derive(Debug, Clone, PartialEq)]
pub struct Question {
    /// As asked, trimmed.
    pub text: String,
    /// Chinese as soon as it has a Chinese character ([`Language::of_query`]).
    pub language: Language,
    /// Its distinct content terms, stemmed ([`query_terms`]).
    pub terms: Vec<String>,
    /// The kind of answer it asks for (a number, a duration, yes or no…).
    pub kind: Option<AnswerType>,
    /// What the conversation last talked about, which a follow-up refers to.
    pub subject: Option<String>,
}

impl Question {
    pub fn new(text: &str, subject: Option<String>) -> Question {
        let text = text.trim().to_string();
        Question { language: Language::of_query(&text), terms: query_terms(&text), kind: AnswerType::asked_by(&text), text, subject }
    }

    pub fn is_chinese(&self) -> bool {
        self.language == Language::Chinese
    }

    /// The question as it is searched: `query` (a follow-up's names the
    /// subject), read in the question's language, with the same subject.
    pub fn searched_as(&self, query: &str) -> Question {
        Question { language: self.language, subject: self.subject.clone(), ..Question::new(query, None) }
    }

    /// The question as its passages are scored when `relevance` judged it
    /// in the documents' language: the translation's terms, the question's
    /// own kind of answer when the translation names none.
    pub fn as_judged(&self, relevance: &Relevance) -> Question {
        match relevance.judged_in_translation() {
            Some(translated) => {
                let read = Question::new(translated, None);
                Question { terms: read.terms, kind: read.kind.or(self.kind), ..self.clone() }
            }
            None => self.clone(),
        }
    }

    /// The subject's name in the question's language: a subject stored as
    /// "玄凤鹦鹉 (Cockatiel)" gives "Cockatiel" to an English question.
    pub fn subject_name(&self) -> Option<&str> {
        let subject = self.subject.as_deref()?;
        let Some((first, rest)) = subject.split_once(" (") else { return Some(subject) };
        let second = rest.strip_suffix(')').unwrap_or(rest);
        match Language::of_text(first) == self.language || Language::of_text(second) != self.language {
            true => Some(first),
            false => Some(second),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_question_is_read_once_and_names_its_subject_in_its_language() {
        let question = Question::new("  What do cockatiels eat? ", Some("玄凤鹦鹉 (Cockatiel)".into()));
        assert_eq!((question.text.as_str(), question.language), ("What do cockatiels eat?", Language::English));
        assert!(question.terms.contains(&"cockatiel".to_string()) && question.terms.contains(&"eat".to_string()), "{:?}", question.terms);
        assert_eq!(question.subject_name(), Some("Cockatiel"));
        assert_eq!(Question::new("它吃什么", Some("Cockatiel (玄凤鹦鹉)".into())).subject_name(), Some("玄凤鹦鹉"));
        assert_eq!(Question::new("它硬吗", Some("Quartz".into())).subject_name(), Some("Quartz"));
        assert_eq!(Question::new("它硬吗", None).subject_name(), None);
        let searched = question.searched_as("Cockatiel diet");
        assert_eq!(
            (searched.language, searched.subject, searched.terms),
            (Language::English, question.subject, vec!["cockatiel".to_string(), "diet".to_string()])
        );
    }
}
