//! A scripted HTTP endpoint for tests: it answers each connection with the
//! next canned response (an empty one means "say nothing") and records the
//! request bodies. It stands in only where no real server can produce the
//! case: HTTP errors, malformed streams, silence, or a vision model.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A running scripted endpoint.
pub struct Scripted {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    /// The request bodies received so far.
    pub bodies: Arc<Mutex<Vec<String>>>,
}

/// An HTTP/1.1 response with a body.
pub fn http_response(status: &str, content_type: &str, body: &str) -> Vec<u8> {
    format!("HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}", body.len()).into_bytes()
}

/// A complete chat-completions stream whose content is `text`.
pub fn sse_stream(text: &str) -> Vec<u8> {
    sse_tokens(&[text])
}

/// A chat-completions stream delivering `tokens` as separate events.
pub fn sse_tokens(tokens: &[&str]) -> Vec<u8> {
    let mut body = String::new();
    for token in tokens {
        let event = serde_json::json!({"choices": [{"delta": {"content": token}, "finish_reason": null}]});
        body.push_str(&format!("data: {event}\n\n"));
    }
    body.push_str("data: [DONE]\n\n");
    http_response("200 OK", "text/event-stream", &body)
}

/// Serves `responses` in order, one per connection.
pub fn scripted(responses: Vec<Vec<u8>>) -> Scripted {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
    let url = format!("http://{}", listener.local_addr().expect("local address"));
    let bodies = Arc::new(Mutex::new(Vec::new()));
    let seen = bodies.clone();
    std::thread::spawn(move || {
        for (stream, response) in listener.incoming().zip(responses) {
            let Ok(mut stream) = stream else { continue };
            let Ok(clone) = stream.try_clone() else { continue };
            let mut reader = BufReader::new(clone);
            let mut length = 0;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap_or(0);
                }
                if line == "\r\n" {
                    break;
                }
            }
            let mut body = vec![0; length];
            let _ = reader.read_exact(&mut body);
            seen.lock().unwrap_or_else(|p| p.into_inner()).push(String::from_utf8_lossy(&body).into_owned());
            if response.is_empty() {
                std::thread::sleep(Duration::from_secs(5));
            } else {
                write_paced(&mut stream, &response);
            }
        }
    });
    Scripted { url, bodies }
}

/// Writes a response event by event (pieces ending in a blank line), a
/// little apart, as a model that is generating would: a client that renders
/// tokens as they arrive can then be seen doing so.
fn write_paced(stream: &mut impl Write, response: &[u8]) {
    let mut rest = response;
    while !rest.is_empty() {
        let end = rest.windows(2).position(|w| w == b"\n\n").map_or(rest.len(), |i| i + 2);
        if stream.write_all(&rest[..end]).and_then(|()| stream.flush()).is_err() {
            return;
        }
        rest = &rest[end..];
        if !rest.is_empty() {
            std::thread::sleep(Duration::from_millis(15));
        }
    }
}

/// A provider answering each request with the next canned text (then
/// empty text), counting the requests: the LLM boundary in unit tests of
/// code that only parses what a model says.
pub struct Canned {
    answers: Mutex<Vec<String>>,
    calls: std::sync::atomic::AtomicUsize,
}

impl Canned {
    pub fn new(answers: &[&str]) -> Canned {
        Canned { answers: Mutex::new(answers.iter().rev().map(|a| a.to_string()).collect()), calls: Default::default() }
    }

    /// Requests answered so far.
    pub fn calls(&self) -> usize {
        self.calls.load(std::sync::atomic::Ordering::SeqCst)
    }
}

impl crate::Provider for Canned {
    fn kind(&self) -> crate::ProviderKind {
        crate::ProviderKind::Openai
    }

    fn describe(&self) -> String {
        "canned answers".into()
    }

    fn complete(&self, _: &crate::Request, _: &mut dyn FnMut(&str), _: &(dyn Fn() -> bool + Sync)) -> Result<crate::Completion, crate::LlmError> {
        self.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let text = self.answers.lock().unwrap_or_else(|p| p.into_inner()).pop().unwrap_or_default();
        Ok(crate::Completion { text, tokens: 1, prompt_tokens: 1, cached_tokens: 0, first_token_ms: None, total_ms: 1.0, finish: crate::Finish::Stop })
    }
}
