//! The OpenAI-compatible HTTP provider: `POST {base}/chat/completions` with
//! `stream: true`, read as server-sent events until `data: [DONE]`. One
//! client serves OpenAI, Ollama, LM Studio, llama.cpp's server, vLLM,
//! DeepSeek, Qwen and the like. Connect errors are retried; a server that
//! rejects `response_format` is asked again without it.

use std::io::{BufRead, BufReader};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::{stop_position, Completion, Finish, LlmError, Provider, ProviderKind, Request};

/// Where and how to reach the server.
#[derive(Debug, Clone, PartialEq)]
pub struct OpenAiConfig {
    /// E.g. `http://127.0.0.1:11434/v1` (Ollama) or `https://api.openai.com/v1`.
    pub base_url: String,
    pub model: String,
    pub api_key: Option<String>,
    pub connect_timeout: Duration,
    /// The longest silence allowed while waiting for the next bytes.
    pub read_timeout: Duration,
    /// Extra attempts after a connection failure.
    pub retries: u32,
}

impl OpenAiConfig {
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        OpenAiConfig {
            base_url: base_url.into().trim_end_matches('/').to_string(),
            model: model.into(),
            api_key: None,
            connect_timeout: Duration::from_secs(5),
            read_timeout: Duration::from_secs(120),
            retries: 2,
        }
    }
}

pub struct OpenAiProvider {
    config: OpenAiConfig,
    agent: ureq::Agent,
}

impl OpenAiProvider {
    pub fn new(config: OpenAiConfig) -> Self {
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_connect(Some(config.connect_timeout))
            .timeout_per_read(Some(config.read_timeout))
            .timeout_recv_response(Some(config.read_timeout))
            .build()
            .new_agent();
        OpenAiProvider { config, agent }
    }

    fn url(&self) -> String {
        format!("{}/chat/completions", self.config.base_url)
    }

    fn body(&self, request: &Request, with_schema: bool) -> Value {
        let messages: Vec<Value> = request
            .messages
            .iter()
            .map(|m| {
                if m.images.is_empty() {
                    return json!({"role": m.role.as_str(), "content": m.content});
                }
                let mut parts = vec![json!({"type": "text", "text": m.content})];
                parts.extend(m.images.iter().map(|url| json!({"type": "image_url", "image_url": {"url": url}})));
                json!({"role": m.role.as_str(), "content": parts})
            })
            .collect();
        let mut body = json!({
            "model": self.config.model,
            "messages": messages,
            "stream": true,
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
        });
        if !request.stop.is_empty() {
            body["stop"] = json!(request.stop);
        }
        if let (true, Some(schema)) = (with_schema, &request.json_schema) {
            body["response_format"] = json!({"type": "json_schema", "json_schema": {"name": "output", "schema": schema, "strict": true}});
        }
        body
    }

    /// Sends the request, retrying connection failures; returns the response.
    fn send(&self, body: &Value) -> Result<ureq::http::Response<ureq::Body>, LlmError> {
        let mut attempt = 0;
        loop {
            let mut call = self.agent.post(&self.url()).header("Accept", "text/event-stream");
            if let Some(key) = &self.config.api_key {
                call = call.header("Authorization", &format!("Bearer {key}"));
            }
            match call.send_json(body) {
                Ok(response) => return Ok(response),
                Err(e) if is_connect_error(&e) && attempt < self.config.retries => {
                    attempt += 1;
                    std::thread::sleep(Duration::from_millis(200 * u64::from(attempt)));
                }
                Err(ureq::Error::Timeout(t)) => return Err(LlmError::Timeout(format!("{t:?} after {:?}", self.config.read_timeout))),
                Err(e) => return Err(LlmError::Unreachable { url: self.config.base_url.clone(), message: e.to_string() }),
            }
        }
    }
}

fn is_connect_error(e: &ureq::Error) -> bool {
    match e {
        ureq::Error::Io(io) => {
            matches!(io.kind(), std::io::ErrorKind::ConnectionRefused | std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::ConnectionAborted)
        }
        ureq::Error::ConnectionFailed | ureq::Error::HostNotFound => true,
        _ => false,
    }
}

/// One parsed server-sent event.
#[derive(Debug, PartialEq)]
pub enum SseEvent {
    Delta(String),
    Finish(String),
    Done,
    Ignore,
}

/// Parses one SSE line of a chat-completions stream.
pub fn parse_sse_line(line: &str) -> Result<SseEvent, LlmError> {
    let line = line.trim_end_matches('\r');
    let Some(data) = line.strip_prefix("data:") else { return Ok(SseEvent::Ignore) };
    let data = data.trim();
    if data == "[DONE]" {
        return Ok(SseEvent::Done);
    }
    if data.is_empty() {
        return Ok(SseEvent::Ignore);
    }
    let value: Value = serde_json::from_str(data).map_err(|e| LlmError::Protocol(format!("bad event JSON ({e}): {}", truncate(data))))?;
    if let Some(error) = value.get("error") {
        return Err(LlmError::Protocol(format!("server error in stream: {error}")));
    }
    let choice = value.get("choices").and_then(|c| c.get(0)).ok_or_else(|| LlmError::Protocol(format!("event without choices: {}", truncate(data))))?;
    if let Some(text) = choice.pointer("/delta/content").and_then(Value::as_str) {
        if !text.is_empty() {
            return Ok(SseEvent::Delta(text.to_string()));
        }
    }
    if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
        return Ok(SseEvent::Finish(reason.to_string()));
    }
    Ok(SseEvent::Ignore)
}

fn truncate(s: &str) -> String {
    s.chars().take(200).collect()
}

impl Provider for OpenAiProvider {
    fn kind(&self) -> ProviderKind {
        ProviderKind::Openai
    }

    fn describe(&self) -> String {
        format!("{} at {}", self.config.model, self.config.base_url)
    }

    fn complete(&self, request: &Request, on_token: &mut dyn FnMut(&str), cancelled: &(dyn Fn() -> bool + Sync)) -> Result<Completion, LlmError> {
        let started = Instant::now();
        let mut response = self.send(&self.body(request, true))?;
        if response.status() == 400 && request.json_schema.is_some() {
            let body = response.body_mut().read_to_string().unwrap_or_default();
            if let Some(too_long) = context_exceeded(400, &body) {
                return Err(too_long);
            }
            // Servers without JSON-schema support reject response_format: ask plainly.
            response = self.send(&self.body(request, false))?;
        }
        let status = response.status().as_u16();
        if status != 200 {
            let body = response.body_mut().read_to_string().unwrap_or_default();
            return Err(context_exceeded(status, &body).unwrap_or(LlmError::Status { status, body: truncate(&body) }));
        }
        let reader = BufReader::new(response.body_mut().as_reader());
        let mut text = String::new();
        let mut tokens = 0;
        let mut first_token_ms = None;
        let mut finish = None;
        for line in reader.lines() {
            if cancelled() {
                finish = Some(Finish::Cancelled);
                break;
            }
            let line = line.map_err(|e| match e.kind() {
                std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock => LlmError::Timeout(format!("no data for {:?}", self.config.read_timeout)),
                _ => LlmError::Protocol(format!("stream broke off: {e}")),
            })?;
            match parse_sse_line(&line)? {
                SseEvent::Delta(delta) => {
                    first_token_ms.get_or_insert_with(|| started.elapsed().as_secs_f64() * 1000.0);
                    tokens += 1;
                    let before = text.len();
                    text.push_str(&delta);
                    if let Some(cut) = stop_position(&text, &request.stop) {
                        if cut > before {
                            on_token(&text[before..cut]);
                        }
                        text.truncate(cut);
                        finish = Some(Finish::Stop);
                        break;
                    }
                    on_token(&delta);
                }
                SseEvent::Finish(reason) => finish = Some(if reason == "length" { Finish::Length } else { Finish::Stop }),
                SseEvent::Done => {
                    finish.get_or_insert(Finish::Stop);
                    break;
                }
                SseEvent::Ignore => {}
            }
        }
        let finish = finish.ok_or_else(|| LlmError::Protocol("the stream ended without [DONE]".into()))?;
        Ok(Completion { text, tokens, prompt_tokens: 0, cached_tokens: 0, first_token_ms, total_ms: started.elapsed().as_secs_f64() * 1000.0, finish })
    }
}

/// A server's refusal of a prompt longer than its context (llama-server's
/// `exceed_context_size_error`, OpenAI's `context_length_exceeded`), with
/// the counts it gives.
fn context_exceeded(status: u16, body: &str) -> Option<LlmError> {
    let error = serde_json::from_str::<serde_json::Value>(body).ok()?.get("error")?.clone();
    let kind = [error.get("type"), error.get("code")].into_iter().flatten().filter_map(|v| v.as_str()).collect::<Vec<_>>().join(" ");
    let exceeded = status == 400 && (kind.contains("exceed_context_size") || kind.contains("context_length_exceeded"));
    let count = |key: &str| error.get(key).and_then(|v| v.as_u64()).unwrap_or(0) as usize;
    exceeded.then(|| LlmError::PromptTooLong { tokens: count("n_prompt_tokens"), context: count("n_ctx") })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sse_lines_parse() {
        let delta = r#"data: {"choices":[{"delta":{"content":"Hi"},"finish_reason":null}]}"#;
        assert_eq!(parse_sse_line(delta).unwrap(), SseEvent::Delta("Hi".into()));
        let finish = r#"data: {"choices":[{"delta":{},"finish_reason":"length"}]}"#;
        assert_eq!(parse_sse_line(finish).unwrap(), SseEvent::Finish("length".into()));
        assert_eq!(parse_sse_line("data: [DONE]").unwrap(), SseEvent::Done);
        assert_eq!(parse_sse_line(": keep-alive").unwrap(), SseEvent::Ignore);
        assert_eq!(parse_sse_line("").unwrap(), SseEvent::Ignore);
        assert!(matches!(parse_sse_line("data: {not json"), Err(LlmError::Protocol(_))));
        let too_long = r#"{"error":{"code":400,"message":"the request exceeds the available context size","type":"exceed_context_size_error","n_prompt_tokens":5940,"n_ctx":4096}}"#;
        assert!(matches!(context_exceeded(400, too_long), Some(LlmError::PromptTooLong { tokens: 5940, context: 4096 })));
        let openai = r#"{"error":{"message":"maximum context length","type":"invalid_request_error","code":"context_length_exceeded"}}"#;
        assert!(matches!(context_exceeded(400, openai), Some(LlmError::PromptTooLong { .. })));
        assert!(context_exceeded(500, too_long).is_none() && context_exceeded(400, r#"{"error":{"type":"other"}}"#).is_none());
        assert!(matches!(parse_sse_line(r#"data: {"error":{"message":"boom"}}"#), Err(LlmError::Protocol(_))));
    }

    #[test]
    fn a_closed_port_is_unreachable_quickly() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let mut config = OpenAiConfig::new(format!("http://127.0.0.1:{port}/v1"), "m");
        config.retries = 1;
        let provider = OpenAiProvider::new(config);
        let started = Instant::now();
        let err = provider.complete(&Request::new(vec![]), &mut |_| {}, &|| false).unwrap_err();
        assert!(matches!(err, LlmError::Unreachable { .. }), "{err}");
        assert!(started.elapsed() < Duration::from_secs(5));
    }
}
