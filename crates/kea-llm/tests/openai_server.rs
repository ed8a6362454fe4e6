//! The HTTP client against a real OpenAI-compatible server: llama.cpp's
//! server (`tools/server`, started by scripts/llama_server.py, path in
//! $KEA_LLAMA_SERVER) serving SmolLM2 on a random loopback port; plus fault
//! injection (HTTP 500, malformed SSE, a silent server, a stream cut short)
//! from a tiny scripted socket, the only way to produce those on demand.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use kea_llm::openai::{OpenAiConfig, OpenAiProvider};
use kea_llm::{Finish, LlmError, Message, Provider, Request, Role};

struct Server {
    child: Child,
    url: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn start_llama_server() -> Server {
    let binary = std::env::var_os("KEA_LLAMA_SERVER").map(PathBuf::from).expect("set KEA_LLAMA_SERVER (make test builds it)");
    let models = std::env::var_os("KEA_MODELS_DIR")
        .and_then(|list| std::env::split_paths(&list).next())
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../models"));
    let port = free_port();
    let child = Command::new(&binary)
        .args(["--host", "127.0.0.1", "--port", &port.to_string(), "-c", "2048", "-t", "1", "-np", "1"])
        .arg("-m")
        .arg(models.join("smollm2-135m-instruct/model.gguf"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", binary.display()));
    let server = Server { child, url: format!("http://127.0.0.1:{port}") };
    let deadline = Instant::now() + Duration::from_secs(90);
    let agent = ureq::Agent::config_builder().http_status_as_error(false).timeout_global(Some(Duration::from_secs(2))).build().new_agent();
    while Instant::now() < deadline {
        if agent.get(&format!("{}/health", server.url)).call().is_ok_and(|r| r.status() == 200) {
            return server;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    panic!("llama-server did not become healthy");
}

fn provider(url: &str) -> OpenAiProvider {
    OpenAiProvider::new(OpenAiConfig::new(format!("{url}/v1"), "smollm2"))
}

fn question(text: &str, max_tokens: usize) -> Request {
    let mut r = Request::new(vec![Message::new(Role::User, text)]);
    r.max_tokens = max_tokens;
    r
}

#[test]
fn real_server_streams_honours_json_schema_and_cancels() {
    let server = start_llama_server();
    let llm = provider(&server.url);

    let mut streamed = String::new();
    let mut pieces = 0;
    let done = llm
        .complete(
            &question("Name two parrots.", 24),
            &mut |t| {
                streamed.push_str(t);
                pieces += 1;
            },
            &|| false,
        )
        .unwrap();
    assert!(pieces > 1, "streamed token by token");
    assert_eq!(streamed, done.text);
    assert!(matches!(done.finish, Finish::Stop | Finish::Length));
    assert!(done.first_token_ms.is_some());

    let mut json_request = question("Is a cockatiel a parrot? Answer as JSON.", 48);
    json_request.json_schema = Some(serde_json::json!({
        "type": "object", "properties": {"answer": {"type": "boolean"}, "reason": {"type": "string"}},
        "required": ["answer", "reason"], "additionalProperties": false
    }));
    let json = llm.complete(&json_request, &mut |_| {}, &|| false).unwrap();
    let value: serde_json::Value = serde_json::from_str(json.text.trim()).unwrap_or_else(|e| panic!("{e}: {:?}", json.text));
    assert!(value["answer"].is_boolean(), "{value}");

    let seen = AtomicUsize::new(0);
    let cancelled = llm
        .complete(
            &question("Write a long poem about parrots.", 300),
            &mut |_| {
                seen.fetch_add(1, Ordering::SeqCst);
            },
            &|| seen.load(Ordering::SeqCst) >= 3,
        )
        .unwrap();
    assert_eq!(cancelled.finish, Finish::Cancelled);
    assert!(cancelled.tokens < 50);
}

fn scripted(responses: Vec<Vec<u8>>) -> String {
    kea_llm::testing::scripted(responses).url
}

fn http(status: &str, content_type: &str, body: &str) -> Vec<u8> {
    kea_llm::testing::http_response(status, content_type, body)
}

#[test]
fn server_faults_become_clear_errors_without_hanging() {
    let started = Instant::now();
    let url = scripted(vec![http("500 Internal Server Error", "application/json", r#"{"error":"model crashed"}"#)]);
    let err = provider(&url).complete(&question("hi", 8), &mut |_| {}, &|| false).unwrap_err();
    assert!(matches!(&err, LlmError::Status { status: 500, body } if body.contains("model crashed")), "{err}");

    let url = scripted(vec![http("200 OK", "text/event-stream", "data: {\"choices\": [oops\n\n")]);
    let err = provider(&url).complete(&question("hi", 8), &mut |_| {}, &|| false).unwrap_err();
    assert!(matches!(err, LlmError::Protocol(_)), "{err}");

    let cut = "data: {\"choices\":[{\"delta\":{\"content\":\"Hel\"}}]}\n\n";
    let url = scripted(vec![http("200 OK", "text/event-stream", cut)]);
    let err = provider(&url).complete(&question("hi", 8), &mut |_| {}, &|| false).unwrap_err();
    assert!(err.to_string().contains("without [DONE]"), "{err}");

    let url = scripted(vec![Vec::new()]);
    let mut config = OpenAiConfig::new(format!("{url}/v1"), "m");
    config.read_timeout = Duration::from_millis(500);
    let err = OpenAiProvider::new(config).complete(&question("hi", 8), &mut |_| {}, &|| false).unwrap_err();
    assert!(matches!(err, LlmError::Timeout(_) | LlmError::Unreachable { .. }), "{err}");
    assert!(started.elapsed() < Duration::from_secs(15), "no hang");
}

#[test]
fn servers_that_reject_response_format_are_asked_again_plainly() {
    let ok = "data: {\"choices\":[{\"delta\":{\"content\":\"{\\\"a\\\": 1}\"}}]}\n\ndata: [DONE]\n\n";
    let url =
        scripted(vec![http("400 Bad Request", "application/json", r#"{"error":"response_format not supported"}"#), http("200 OK", "text/event-stream", ok)]);
    let mut request = question("json please", 8);
    request.json_schema = Some(serde_json::json!({"type": "object"}));
    let done = provider(&url).complete(&request, &mut |_| {}, &|| false).unwrap();
    assert_eq!(done.text, "{\"a\": 1}");
}
