//! A blocking client for the parts of Milvus's REST API (v1,
//! `/v1/vector/...`, served on the gRPC port since Milvus 2.3) that a team
//! store needs: collections, insert, delete by key, query and search.
//!
//! Why REST and not the official Rust SDK: the engine is synchronous and
//! already speaks HTTP through `ureq`; `milvus-sdk-rust` 3.0.3 is async
//! (tonic, tokio) and builds its protobufs with a vendored `protoc`. The cost
//! of REST v1 is its quick-setup schema: keys are assigned by the server and
//! every other field is dynamic (kept in the row's JSON), so rows are found
//! by filters on those fields and deleted by the keys a query returns.

use std::time::Duration;

use serde_json::{json, Value};

use crate::error::{Error, Result};

/// Milvus returns at most this many rows per query (offset + limit).
const QUERY_WINDOW: usize = 16_384;
/// Milvus reads are eventually consistent (REST v1 has no strong reads;
/// about a second here): a write waits until it reads back, at most this long.
const VISIBLE_WITHIN: Duration = Duration::from_secs(20);

/// One Milvus server, by address (`host:port`), over http or https, with
/// the credentials sent with every request.
pub struct Milvus {
    address: String,
    /// `http(s)://host:port/v1/vector`.
    base: String,
    /// `Bearer user:password` (or an API key), when the server asks for one.
    authorization: Option<String>,
    agent: ureq::Agent,
}

impl Milvus {
    /// A client of the server at `store` (no request is made yet); every
    /// request carries `token` and gives up after `timeout`.
    pub fn new(store: &super::TeamAddress, token: Option<&str>, timeout: Duration) -> Milvus {
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_connect(Some(Duration::from_secs(3).min(timeout)))
            .timeout_global(Some(timeout))
            .max_redirects(0)
            .build()
            .new_agent();
        let scheme = if store.tls { "https" } else { "http" };
        Milvus {
            address: store.address.clone(),
            base: format!("{scheme}://{}/v1/vector", store.address),
            authorization: token.map(|t| format!("Bearer {}", t.trim())),
            agent,
        }
    }

    pub fn address(&self) -> &str {
        &self.address
    }

    fn unreachable(&self, e: impl std::fmt::Display) -> Error {
        Error::VectorIndex(format!("the team store (Milvus) at {} cannot be reached: {e}", self.address))
    }

    /// The `data` of a reply, or its error message.
    fn data(&self, what: &str, reply: std::result::Result<ureq::http::Response<ureq::Body>, ureq::Error>) -> Result<Value> {
        let mut reply = reply.map_err(|e| self.unreachable(e))?;
        let status = reply.status();
        let body: Value = reply.body_mut().read_json().map_err(|e| self.unreachable(format!("{what}: HTTP {status}, {e}")))?;
        match body.get("code").and_then(Value::as_i64) {
            Some(200) => Ok(body.get("data").cloned().unwrap_or(Value::Null)),
            // Milvus's "not authenticated" and "permission denied".
            Some(code @ (1800 | 65535)) if body.get("message").and_then(Value::as_str).is_some_and(|m| m.contains("auth")) => {
                let message = body.get("message").and_then(Value::as_str).unwrap_or("no message");
                Err(Error::InvalidInput(format!(
                    "the team store (Milvus) at {} refused the credentials ({message}, code {code}): set the team store's token (user:password)",
                    self.address
                )))
            }
            code => {
                let message = body.get("message").and_then(Value::as_str).unwrap_or("no message");
                Err(Error::VectorIndex(format!("Milvus at {} refused {what}: {message} (code {})", self.address, code.unwrap_or(-1))))
            }
        }
    }

    fn post(&self, path: &str, body: &Value) -> Result<Value> {
        let mut request = self.agent.post(&format!("{}/{path}", self.base));
        if let Some(authorization) = &self.authorization {
            request = request.header("Authorization", authorization);
        }
        self.data(path, request.send_json(body))
    }

    fn get(&self, what: &str, path_and_query: &str) -> Result<Value> {
        let mut request = self.agent.get(&format!("{}/{path_and_query}", self.base));
        if let Some(authorization) = &self.authorization {
            request = request.header("Authorization", authorization);
        }
        self.data(what, request.call())
    }

    /// The collection names.
    pub fn collections(&self) -> Result<Vec<String>> {
        let data = self.get("listing collections", "collections")?;
        Ok(data.as_array().map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_string)).collect()).unwrap_or_default())
    }

    /// The dimension of a collection's vectors, `None` when it does not exist.
    pub fn dimension(&self, collection: &str) -> Result<Option<usize>> {
        if !self.collections()?.iter().any(|c| c == collection) {
            return Ok(None);
        }
        let fields = self.describe(collection)?.get("fields").and_then(Value::as_array).cloned().unwrap_or_default();
        let vector_type = fields.iter().filter_map(|f| f.get("type").and_then(Value::as_str)).find(|t| t.starts_with("FloatVector(")).unwrap_or("");
        Ok(vector_type.trim_start_matches("FloatVector(").trim_end_matches(')').parse().ok())
    }

    /// Creates a cosine collection of `dim` dimensions and waits until it is loaded.
    pub fn create_collection(&self, collection: &str, dim: usize) -> Result<()> {
        let body = json!({"collectionName": collection, "dimension": dim, "metricType": "COSINE", "primaryField": "id", "vectorField": "vector"});
        self.post("collections/create", &body)?;
        for _ in 0..120 {
            if self.describe(collection)?.get("load").and_then(Value::as_str) == Some("LoadStateLoaded") {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(250));
        }
        Err(Error::VectorIndex(format!("Milvus at {} did not load the new collection {collection} within 30 s", self.address)))
    }

    /// A collection's schema, indexes and load state.
    fn describe(&self, collection: &str) -> Result<Value> {
        self.get("describing a collection", &format!("collections/describe?collectionName={collection}"))
    }

    /// Inserts rows; returns the keys the server gave them, in order.
    pub fn insert(&self, collection: &str, rows: &[Value]) -> Result<Vec<u64>> {
        let data = self.post("insert", &json!({"collectionName": collection, "data": rows}))?;
        let keys: Vec<u64> = data.get("insertIds").and_then(Value::as_array).map(|ids| ids.iter().filter_map(key_of).collect()).unwrap_or_default();
        if keys.len() != rows.len() {
            return Err(Error::VectorIndex(format!("Milvus at {} stored {} of {} rows", self.address, keys.len(), rows.len())));
        }
        Ok(keys)
    }

    /// Deletes rows by key.
    pub fn delete(&self, collection: &str, keys: &[u64]) -> Result<()> {
        for part in keys.chunks(1000) {
            let ids: Vec<String> = part.iter().map(u64::to_string).collect();
            self.post("delete", &json!({"collectionName": collection, "id": ids}))?;
        }
        Ok(())
    }

    /// Rows matching `filter`, at most `limit`.
    pub fn query(&self, collection: &str, filter: &str, fields: &[&str], limit: usize) -> Result<Vec<Value>> {
        let body = json!({"collectionName": collection, "filter": filter, "outputFields": fields, "limit": limit.clamp(1, QUERY_WINDOW)});
        Ok(self.post("query", &body)?.as_array().cloned().unwrap_or_default())
    }

    /// Every row matching `filter`, page by page in key order.
    pub fn query_all(&self, collection: &str, filter: &str, fields: &[&str]) -> Result<Vec<Value>> {
        let mut fields = fields.to_vec();
        fields.push("id");
        let (mut rows, mut after) = (Vec::new(), 0u64);
        loop {
            let page = self.query(collection, &format!("id > {after} and ({filter})"), &fields, QUERY_WINDOW)?;
            let full = page.len() == QUERY_WINDOW;
            after = page.iter().filter_map(|r| r.get("id").and_then(key_of)).max().unwrap_or(after);
            rows.extend(page);
            if !full {
                return Ok(rows);
            }
        }
    }

    /// The `limit` rows nearest `vector` (cosine similarity, best first).
    pub fn search(&self, collection: &str, vector: &[f32], limit: usize, fields: &[&str]) -> Result<Vec<Value>> {
        let body = json!({"collectionName": collection, "vector": vector, "limit": limit.clamp(1, QUERY_WINDOW), "outputFields": fields});
        Ok(self.post("search", &body)?.as_array().cloned().unwrap_or_default())
    }

    /// Waits until a row written (by key) can be read and one deleted cannot.
    pub fn wait_visible(&self, collection: &str, present: Option<u64>, absent: Option<u64>) -> Result<()> {
        let started = std::time::Instant::now();
        let seen = |key: u64| -> Result<bool> { Ok(!self.query(collection, &format!("id == {key}"), &["id"], 1)?.is_empty()) };
        loop {
            let present_ok = present.map_or(Ok(true), seen)?;
            let absent_ok = absent.map_or(Ok(true), |k| seen(k).map(|s| !s))?;
            if present_ok && absent_ok {
                return Ok(());
            }
            if started.elapsed() > VISIBLE_WITHIN {
                return Err(Error::VectorIndex(format!("Milvus at {} did not show a write within {} s", self.address, VISIBLE_WITHIN.as_secs())));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// A key as Milvus writes it (a string, to survive JSON readers without 64-bit integers) or a number.
pub fn key_of(value: &Value) -> Option<u64> {
    value.as_u64().or_else(|| value.as_str().and_then(|s| s.parse().ok()))
}
