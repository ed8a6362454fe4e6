//! Chat: a question comes in, the router decides whether the knowledge base
//! is needed, retrieval runs when it is, and the answer streams back with
//! citations resolved to chunks — or with an honest refusal that names what
//! was searched. Conversations and their subject persist in the store.

pub mod answer;
pub mod conversations;
pub mod enhance;
pub mod export;
pub mod extractive;
mod followup;
pub mod instructions;
pub mod library;
pub mod markers;
pub mod question;
pub mod reading;
pub mod router;
pub mod verify;

use std::time::Instant;

use kea_llm::{Provider, ProviderKind};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::labels::Subjects;
use crate::retrieve::calibration::Outcome;
use crate::retrieve::{elapsed_ms as ms, Retrieval, RetrievalConfig, Trace};
pub use answer::{Citation, RelatedPassage};
pub use conversations::Conversations;
pub use question::Question;
pub use router::{DecidedBy, Route, RouterMode};

/// Events of one answer, in order: status, tool start/end pairs (router,
/// retrieval, llm), token deltas, then the final answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ChatEvent {
    Status { message: String },
    ToolStart { tool: &'static str },
    ToolEnd { tool: &'static str, ms: f64, output: serde_json::Value },
    Token { text: String },
    Final { answer: Box<ChatAnswer> },
}

/// The final answer object (`kea ask --json`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChatAnswer {
    pub answer: String,
    pub citations: Vec<Citation>,
    pub route: Route,
    pub provider: ProviderKind,
    pub provider_detail: String,
    pub chat_id: i64,
    #[serde(flatten)]
    pub shown: Shown,
    pub retrieval: Option<Trace>,
    pub router_fallback: Option<String>,
    /// What the language model's generation cost, when one wrote.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<ModelUse>,
    /// Per-passage summaries (opt-in post-processing).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub summaries: Vec<enhance::PassageSummary>,
    /// A question about whole documents or the collection: what was asked
    /// and which documents it came to (see [`library`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub library: Option<library::Asked>,
}

/// What one generation of the language model cost: its prompt (and how
/// much of it the model's cache already held), the tokens it wrote, and
/// when the first came (from the request).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelUse {
    pub prompt_tokens: usize,
    pub cached_tokens: usize,
    pub tokens: usize,
    pub first_token_ms: Option<f64>,
    pub total_ms: f64,
}

impl ModelUse {
    pub fn of(done: &kea_llm::Completion) -> ModelUse {
        ModelUse {
            prompt_tokens: done.prompt_tokens,
            cached_tokens: done.cached_tokens,
            tokens: done.tokens,
            first_token_ms: done.first_token_ms,
            total_ms: done.total_ms,
        }
    }
}

/// How a model that writes answers is shown the evidence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AnswerPrompt {
    /// Sentences for a model run in-process (it pays for every prompt
    /// token on the machine's cores) that is not a tiny one, passages for a server.
    #[default]
    Auto,
    /// A few numbered sentences; the model names those that answer and
    /// replies from them ([`reading`]).
    Sentences,
    /// The passages whole, with `[S#]` citations written by the model.
    Passages,
}

impl AnswerPrompt {
    /// Whether `llm` is shown sentences.
    pub fn reads_sentences(self, llm: &dyn Provider) -> bool {
        match self {
            AnswerPrompt::Auto => llm.kind() == ProviderKind::Embedded && !llm.is_tiny(),
            AnswerPrompt::Sentences => true,
            AnswerPrompt::Passages => false,
        }
    }
}

/// What an answer shows besides its text and citations; kept with it in
/// its conversation, so a reopened one looks as it did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Shown {
    /// Answered (with citations), unsure (no direct answer: the closest
    /// passages are under `related`) or refused.
    pub outcome: Outcome,
    /// Set when the answer is not from a language model (none configured,
    /// or nothing relevant was found): shown as a banner.
    #[serde(default)]
    pub notice: Option<String>,
    #[serde(default)]
    pub related: Vec<RelatedPassage>,
    /// Sentences of the model's answer its passages do not support, taken
    /// out of `answer` (see [`verify`]).
    #[serde(default)]
    pub unsupported: Vec<String>,
}

/// Chat options beyond the retrieval settings.
#[derive(Debug, Clone)]
pub struct ChatOptions {
    pub retrieval: RetrievalConfig,
    pub max_answer_tokens: usize,
    /// Messages of history given to the LLM.
    pub history_messages: usize,
    pub router: RouterMode,
    /// How the model is shown the evidence.
    pub prompt: AnswerPrompt,
    pub enhance: enhance::EnhanceOptions,
}

impl Default for ChatOptions {
    fn default() -> Self {
        ChatOptions {
            retrieval: RetrievalConfig::default(),
            max_answer_tokens: 384,
            history_messages: 6,
            router: RouterMode::Llm,
            prompt: AnswerPrompt::Auto,
            enhance: enhance::EnhanceOptions::default(),
        }
    }
}

/// Answers to questions, over the retriever, the conversation store and
/// what the collection is about.
pub struct Answerer<'a> {
    pub(crate) retriever: Box<dyn crate::retrieve::Retrieve + 'a>,
    pub(crate) conversations: Conversations<'a>,
    pub(crate) subjects: &'a dyn Subjects,
    /// The documents and their passages, for questions about documents as wholes.
    pub(crate) library: &'a dyn library::Library,
    pub(crate) llm_rerank_cache: &'a crate::rerank::RerankCache,
}

impl Answerer<'_> {
    /// Answers `question` in conversation `chat_id` (a new one when `None`),
    /// streaming [`ChatEvent`]s to `sink`.
    pub fn ask(
        &self,
        llm: &dyn Provider,
        chat_id: Option<i64>,
        question: &str,
        options: &ChatOptions,
        sink: &mut dyn FnMut(ChatEvent),
        cancelled: &(dyn Fn() -> bool + Sync),
    ) -> Result<ChatAnswer> {
        if question.trim().is_empty() {
            return Err(Error::InvalidInput("the question is empty".into()));
        }
        crate::retrieve::check_query_length(question)?;
        let (chat_id, subject) = self.conversations.open(chat_id, question.trim())?;
        let question = Question::new(question, subject);
        let scope = library::scope_of(&question.text);
        if scope != library::Scope::Passages {
            if let Some(answer) = self.answer_about_documents(llm, chat_id, &question, scope, options, sink)? {
                return Ok(answer);
            }
        }
        let history = self.conversations.recent(chat_id, options.history_messages)?;
        sink(ChatEvent::Status { message: format!("using {}", llm.describe()) });

        let t = Instant::now();
        sink(ChatEvent::ToolStart { tool: "router" });
        let topic = self.subjects.profile().collection.topic;
        let documents_language = match options.router {
            router::RouterMode::Llm => self.subjects.names()?.other_language(question.language),
            router::RouterMode::Keywords => None,
        };
        let context = router::RouteContext { topic: topic.as_deref(), documents_language };
        let (mut route, router_fallback) = router::decide(options.router, llm, &question, &context, cancelled);
        sink(ChatEvent::ToolEnd { tool: "router", ms: ms(t), output: serde_json::to_value(&route).unwrap_or_default() });

        let retrieval = if route.use_rag { Some(self.retrieve_routed(llm, &question, &mut route, options, sink)?) } else { None };
        let summaries = match (&retrieval, options.enhance.summary) {
            (Some(r), true) => {
                let t = Instant::now();
                sink(ChatEvent::ToolStart { tool: "summary" });
                let summaries = enhance::summarise(llm, &route.search_query, &r.hits, &options.enhance);
                sink(ChatEvent::ToolEnd { tool: "summary", ms: ms(t), output: serde_json::to_value(&summaries).unwrap_or_default() });
                summaries
            }
            _ => Vec::new(),
        };
        let evidence = retrieval.as_ref().map(|r| answer::Evidence { retrieval: r, summaries: &summaries });
        let mut answer = answer::compose(llm, &question, &route, evidence, &history, options, sink, cancelled)?;
        answer.summaries = summaries;
        answer.chat_id = chat_id;
        answer.router_fallback = router_fallback;
        self.remember(chat_id, &question.text, &answer, retrieval.as_ref())?;
        sink(ChatEvent::Final { answer: Box::new(answer.clone()) });
        Ok(answer)
    }

    /// A question about whole documents or the collection, answered from
    /// the documents themselves ([`library`]), kept like any answer;
    /// `None` when it turns out to be a passage question.
    fn answer_about_documents(
        &self,
        llm: &dyn Provider,
        chat_id: i64,
        question: &Question,
        scope: library::Scope,
        options: &ChatOptions,
        sink: &mut dyn FnMut(ChatEvent),
    ) -> Result<Option<ChatAnswer>> {
        let t = Instant::now();
        sink(ChatEvent::ToolStart { tool: "library" });
        let found = library::answer(self.library, &*self.retriever, scope, question.language, &options.retrieval.for_answers())?;
        let Some(found) = found else {
            sink(ChatEvent::ToolEnd { tool: "library", ms: ms(t), output: serde_json::json!("a passage question") });
            return Ok(None);
        };
        sink(ChatEvent::ToolEnd { tool: "library", ms: ms(t), output: serde_json::to_value(&found.asked).unwrap_or_default() });
        let route = Route {
            is_followup: false,
            use_rag: true,
            search_query: question.text.clone(),
            translated_query: None,
            decided_by: router::DecidedBy::Keywords,
            followup_check: None,
        };
        let answer = ChatAnswer {
            answer: found.text,
            citations: found.citations,
            route,
            provider: llm.kind(),
            provider_detail: llm.describe(),
            chat_id,
            shown: Shown { outcome: found.outcome, notice: None, related: Vec::new(), unsupported: Vec::new() },
            retrieval: None,
            router_fallback: None,
            model: None,
            summaries: Vec::new(),
            library: Some(found.asked),
        };
        sink(ChatEvent::Token { text: answer.answer.clone() });
        self.remember(chat_id, &question.text, &answer, None)?;
        sink(ChatEvent::Final { answer: Box::new(answer.clone()) });
        Ok(Some(answer))
    }

    /// Retrieval for a routed question: the search query and any expansions
    /// through the [`crate::retrieve::Retriever`], then the opt-in LLM rerank.
    fn retrieve_for_chat(
        &self,
        llm: &dyn Provider,
        question: &str,
        route: &Route,
        options: &ChatOptions,
        sink: &mut dyn FnMut(ChatEvent),
    ) -> Result<Retrieval> {
        let t = Instant::now();
        sink(ChatEvent::ToolStart { tool: "retrieval" });
        let mut queries = vec![route.search_query.clone()];
        if options.enhance.query_expansion {
            queries.extend(enhance::expand_query(llm, question));
        }
        let mut result = self.retriever.retrieve_queries(&queries, route.translated_query.as_deref(), &options.retrieval.for_answers())?;
        if options.enhance.llm_rerank {
            let (kept, note) = enhance::apply_llm_rerank(llm, self.llm_rerank_cache, &route.search_query, std::mem::take(&mut result.hits), &options.enhance);
            result.trace.fallbacks.extend(note);
            result.context = crate::retrieve::context::of_hits(&kept, options.retrieval.context_tokens);
            result.hits = kept;
        }
        let summary = serde_json::json!({
            "query": route.search_query,
            "hits": result.hits.len(),
            "blocks": result.context.blocks.iter().map(|b| format!("{} {} | {}", b.label, b.source, b.heading_path)).collect::<Vec<_>>(),
            "fallbacks": result.trace.fallbacks,
        });
        sink(ChatEvent::ToolEnd { tool: "retrieval", ms: ms(t), output: summary });
        Ok(result)
    }

    /// Saves the exchange; what was just talked about becomes the subject
    /// for follow-ups: a label's names in both languages, else the document's title.
    fn remember(&self, chat_id: i64, question: &str, answer: &ChatAnswer, retrieval: Option<&Retrieval>) -> Result<()> {
        let top = retrieval.and_then(|r| r.hits.first()).filter(|_| answer.shown.outcome != Outcome::Refused);
        let subject = match top {
            Some(hit) => {
                let labels = self.subjects.labels()?;
                let label = labels.iter().find(|l| l.sources.contains(&hit.chunk.source));
                label.map(|l| l.subject()).or_else(|| hit.chunk.title.clone())
            }
            None => None,
        };
        let exchange = conversations::Exchange {
            user: question,
            reply: &answer.answer,
            citations: serde_json::to_value(&answer.citations).unwrap_or_default(),
            route: Some(serde_json::to_value(&answer.route).unwrap_or_default()),
            shown: Some(serde_json::to_value(&answer.shown).unwrap_or_default()),
            subject,
        };
        self.conversations.record(chat_id, &exchange)
    }
}
