//! Language-model servers on this machine: Ollama, LM Studio and llama.cpp's
//! server on their usual loopback ports, and any base URL the user gave.
//! Each is asked for its models with a short timeout; one that does not
//! answer is left out. Used by the first-run plan to propose a server's
//! model instead of a download.

use std::time::Duration;

use serde::Serialize;

/// A server that answered, with the models it lists.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LocalServer {
    /// `ollama`, `lm-studio`, `llama.cpp` or `openai-compatible`.
    pub kind: String,
    /// The OpenAI-compatible base URL (`…/v1`).
    pub base_url: String,
    pub models: Vec<String>,
}

/// The usual loopback addresses: (kind, OpenAI-compatible base URL).
const WELL_KNOWN: [(&str, &str); 3] =
    [("ollama", "http://127.0.0.1:11434/v1"), ("lm-studio", "http://127.0.0.1:1234/v1"), ("llama.cpp", "http://127.0.0.1:8080/v1")];

/// How long a server may take to list its models.
const PROBE_TIMEOUT: Duration = Duration::from_millis(500);

/// The servers that answer among the well-known ones and `extra` base URLs
/// (OpenAI-compatible, ending in `/v1`), each once, in that order.
pub fn local_servers(extra: &[String]) -> Vec<LocalServer> {
    let mut candidates: Vec<(String, String)> = extra.iter().map(|url| ("openai-compatible".to_string(), url.trim_end_matches('/').to_string())).collect();
    for (kind, url) in WELL_KNOWN {
        if !candidates.iter().any(|(_, known)| known == url) {
            candidates.push((kind.to_string(), url.to_string()));
        }
    }
    let probes: Vec<_> = candidates.into_iter().map(|(kind, url)| std::thread::spawn(move || probe(kind, url))).collect();
    probes.into_iter().filter_map(|p| p.join().ok().flatten()).collect()
}

/// The models `base_url` lists (`GET {base_url}/models`), if it answers in time.
fn probe(kind: String, base_url: String) -> Option<LocalServer> {
    let agent = ureq::Agent::config_builder().timeout_global(Some(PROBE_TIMEOUT)).build().new_agent();
    let mut response = agent.get(&format!("{base_url}/models")).call().ok()?;
    let listed: serde_json::Value = response.body_mut().with_config().limit(1 << 20).read_json().ok()?;
    let models: Vec<String> = listed["data"].as_array()?.iter().filter_map(|m| m["id"].as_str()).map(str::to_string).take(50).collect();
    Some(LocalServer { kind, base_url, models })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{http_response, scripted};

    #[test]
    fn a_server_that_lists_models_is_found_and_a_silent_one_is_not() {
        let body = r#"{"object":"list","data":[{"id":"qwen2.5-3b-instruct","object":"model"}]}"#;
        let server = scripted(vec![http_response("200 OK", "application/json", body)]);
        let base = format!("{}/v1", server.url);
        let found = local_servers(&[base.clone(), "http://127.0.0.1:9/v1".into()]);
        let ours: Vec<&LocalServer> = found.iter().filter(|s| s.kind == "openai-compatible").collect();
        assert_eq!(ours, [&LocalServer { kind: "openai-compatible".into(), base_url: base, models: vec!["qwen2.5-3b-instruct".into()] }]);
    }
}
