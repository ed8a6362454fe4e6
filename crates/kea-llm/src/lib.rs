//! Kea's language-model layer: one [`Provider`] trait and its real
//! implementations — an OpenAI-compatible HTTP client (OpenAI, Ollama,
//! LM Studio, llama.cpp's server, vLLM, …), embedded llama.cpp running a GGUF
//! file in-process (feature `llama`), and none. It knows nothing of
//! documents or retrieval; the engine builds prompts and parses answers.

pub mod discover;
pub mod gguf;
pub mod grammar;
pub mod json;
#[cfg(feature = "llama")]
pub mod llama;
pub mod openai;
pub mod select;
pub mod testing;

use std::path::PathBuf;

pub use select::{auto_select, LlmChoice, LlmSettings, ProviderPreference};

/// Who speaks a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    User,
    Assistant,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Message {
    pub role: Role,
    pub content: String,
    /// Images as data URLs (`data:image/png;base64,…`), for vision models.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<String>,
}

impl Message {
    pub fn new(role: Role, content: impl Into<String>) -> Self {
        Message { role, content: content.into(), images: Vec::new() }
    }

    pub fn with_image(mut self, data_url: String) -> Self {
        self.images.push(data_url);
        self
    }
}

/// One generation request.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub messages: Vec<Message>,
    pub max_tokens: usize,
    /// 0 = greedy (deterministic).
    pub temperature: f32,
    /// Constrain the output to JSON of this schema (a grammar for llama.cpp,
    /// `response_format` for HTTP servers that support it).
    pub json_schema: Option<serde_json::Value>,
    /// Generation stops before any of these strings.
    pub stop: Vec<String>,
}

impl Request {
    pub fn new(messages: Vec<Message>) -> Self {
        Request { messages, max_tokens: 512, temperature: 0.0, json_schema: None, stop: Vec::new() }
    }
}

/// Why generation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Finish {
    Stop,
    Length,
    Cancelled,
}

/// A finished generation with its timings.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Completion {
    pub text: String,
    pub tokens: usize,
    pub prompt_tokens: usize,
    /// Of those, how many were already in the model's cache (a shared
    /// prefix not evaluated again); 0 when the provider does not say.
    pub cached_tokens: usize,
    pub first_token_ms: Option<f64>,
    pub total_ms: f64,
    pub finish: Finish,
}

/// Which kind of provider answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    Embedded,
    Openai,
    None,
}

/// Errors of the LLM layer, by kind.
#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    #[error("cannot reach the language model server at {url}: {message}")]
    Unreachable { url: String, message: String },
    #[error("the language model server answered {status}: {body}")]
    Status { status: u16, body: String },
    #[error("the language model server sent something unexpected: {0}")]
    Protocol(String),
    #[error("the language model timed out: {0}")]
    Timeout(String),
    #[error("model file {path}: {message}")]
    Model { path: PathBuf, message: String },
    #[error("generation failed: {0}")]
    Generation(String),
    /// The prompt does not fit the model's context window (counted with
    /// the model's own tokenizer, or said so by the server).
    #[error("the prompt has {tokens} tokens; the context holds {context}")]
    PromptTooLong { tokens: usize, context: usize },
    #[error("no language model is configured")]
    NotConfigured,
}

/// Streams tokens for a request. `on_token` gets each text delta as it is
/// produced; `cancelled` is polled and ends generation early when true.
pub trait Provider: Send + Sync {
    fn kind(&self) -> ProviderKind;
    /// A human description, e.g. "embedded gemma-3-270m (model.gguf)".
    fn describe(&self) -> String;
    fn complete(&self, request: &Request, on_token: &mut dyn FnMut(&str), cancelled: &(dyn Fn() -> bool + Sync)) -> Result<Completion, LlmError>;
    /// Whether this model may write answers (else it only routes and the
    /// answer is quoted from the passages: see [`select::GROUNDEDNESS_FLOOR`]).
    fn writes_answers(&self) -> bool {
        true
    }
    /// Whether measurements put this model under the groundedness floor
    /// (a 135M–270M model): it is never shown the reader's prompt.
    fn is_tiny(&self) -> bool {
        false
    }
}

/// A shared provider is a provider (the desktop keeps one behind an `Arc`).
impl<P: Provider + ?Sized> Provider for std::sync::Arc<P> {
    fn kind(&self) -> ProviderKind {
        (**self).kind()
    }

    fn describe(&self) -> String {
        (**self).describe()
    }

    fn complete(&self, request: &Request, on_token: &mut dyn FnMut(&str), cancelled: &(dyn Fn() -> bool + Sync)) -> Result<Completion, LlmError> {
        (**self).complete(request, on_token, cancelled)
    }

    fn writes_answers(&self) -> bool {
        (**self).writes_answers()
    }

    fn is_tiny(&self) -> bool {
        (**self).is_tiny()
    }
}

/// Returns the position just before the earliest stop string in `text`.
pub(crate) fn stop_position(text: &str, stops: &[String]) -> Option<usize> {
    stops.iter().filter(|s| !s.is_empty()).filter_map(|s| text.find(s.as_str())).min()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_strings_cut_at_the_earliest() {
        let stops = vec!["\nUser:".to_string(), "</s>".to_string()];
        assert_eq!(stop_position("hello</s> more\nUser: x", &stops), Some(5));
        assert_eq!(stop_position("no stop here", &stops), None);
    }
}
