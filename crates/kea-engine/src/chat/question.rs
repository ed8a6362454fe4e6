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
        relevance.judged_in_translation().map_or_else(|| self.clone(), |translated| self.translated(translated))
    }

    /// The question with the terms of its translation `text`, and its own
    /// kind of answer when the translation names none.
    pub fn translated(&self, text: &str) -> Question {
        let read = Question::new(text, None);
        Question { terms: read.terms, kind: read.kind.or(self.kind), ..self.clone() }
    }

    /// The asks of a question that joins several ("what does it eat and how
    /// long does it live?", 吃什么，能活多久), each read as a question with the
    /// same subject; empty when it asks one thing.
    pub fn parts(&self) -> Vec<Question> {
        let asks = split_asks(&self.text);
        if asks.len() < 2 {
            return Vec::new();
        }
        asks.iter().map(|ask| Question { language: self.language, subject: self.subject.clone(), ..Question::new(ask, None) }).collect()
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

/// Words that open an English ask.
const ASK_OPENERS: &[&str] =
    &["what", "how", "when", "where", "which", "who", "why", "whether", "does", "do", "is", "are", "can", "should", "will", "would", "could"];
/// Words that make a Chinese clause an ask.
const ASK_MARKERS_ZH: &[&str] =
    &["什么", "怎么", "怎样", "如何", "多少", "多久", "多长", "多大", "几", "吗", "呢", "哪", "谁", "为什么", "是否", "能否", "有没有", "是不是"];

/// The asks `text` joins: clauses split at question marks, commas and
/// semicolons (and English "and" before a question word), a clause that
/// asks nothing kept with the one before it.
fn split_asks(text: &str) -> Vec<String> {
    let mut clauses: Vec<String> = Vec::new();
    for piece in text.split(['?', '？', '，', ',', '；', ';']).map(str::trim).filter(|p| !p.is_empty()) {
        let words: Vec<&str> = piece.split_whitespace().collect();
        let mut start = 0;
        for i in 1..words.len() {
            let next = words.get(i + 1).map(|w| w.to_lowercase());
            if words[i].eq_ignore_ascii_case("and") && next.is_some_and(|w| ASK_OPENERS.contains(&w.as_str())) {
                clauses.push(words[start..i].join(" "));
                start = i + 1;
            }
        }
        clauses.push(if words.is_empty() { piece.to_string() } else { words[start..].join(" ") });
    }
    let asks = |clause: &str| {
        let first = clause.split_whitespace().next().unwrap_or_default().to_lowercase();
        ASK_OPENERS.contains(&first.as_str()) || ASK_MARKERS_ZH.iter().any(|m| clause.contains(m))
    };
    let mut merged: Vec<String> = Vec::new();
    let mut lead = String::new();
    for clause in clauses {
        let clause = strip_joiner(&clause);
        match merged.last_mut() {
            _ if asks(&clause) => merged.push(format!("{lead}{clause}")),
            Some(last) => {
                last.push(' ');
                last.push_str(&clause);
            }
            None => lead.push_str(&format!("{clause} ")),
        }
        if !merged.is_empty() {
            lead.clear();
        }
    }
    merged
}

/// `clause` without the word that joins it to the one before ("and", 还有).
fn strip_joiner(clause: &str) -> String {
    let lower = clause.to_lowercase();
    for joiner in ["and ", "also ", "plus "] {
        if lower.starts_with(joiner) {
            return clause[joiner.len()..].trim_start().to_string();
        }
    }
    for joiner in ["还有", "另外", "以及", "并且", "而且"] {
        if let Some(rest) = clause.strip_prefix(joiner) {
            return rest.to_string();
        }
    }
    clause.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_question_that_joins_several_asks_is_read_as_its_parts() {
        let texts = |q: &str| Question::new(q, None).parts().into_iter().map(|p| p.text).collect::<Vec<_>>();
        assert_eq!(texts("what should I feed my grey and what sort of toys does it need"), ["what should I feed my grey", "what sort of toys does it need"]);
        assert_eq!(texts("What does it eat? How long does it live?"), ["What does it eat", "How long does it live"]);
        assert_eq!(texts("玄凤鹦鹉吃什么，能活多久"), ["玄凤鹦鹉吃什么", "能活多久"]);
        assert!(texts("salt and pepper: how much of each goes in?").is_empty());
        assert!(texts("If the dough is sticky, what should I do?").is_empty(), "a clause that asks nothing stays with its ask");
        assert!(texts("面团发好以后，要烤多久").is_empty());
        let part = &Question::new("How long do budgies live, and what do they eat?", Some("Budgerigar".into())).parts()[1];
        assert_eq!((part.subject.as_deref(), part.terms.clone()), (Some("Budgerigar"), vec!["eat".to_string()]));
    }

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
