//! The registry of a team collection: a small Milvus collection
//! (`<COLLECTION>_sources`) with one row per namespace — its tag, the
//! embedding model it writes with, the hash of its owner's secret
//! (`owner.rs`), and a version that changes with every write, which tells
//! the other instances to pull it.

use std::collections::HashMap;

use serde_json::{json, Value};

use super::milvus::{key_of, Milvus};
use super::TAG_LIMIT;
use crate::error::{Error, Result};

/// One namespace's registry row.
#[derive(Debug, Clone, PartialEq)]
pub struct Source {
    pub namespace: String,
    pub tag: u64,
    pub model: String,
    pub version: u64,
    /// The owner's hash; empty in rows written before owners were recorded.
    pub owner: String,
}

/// The registry of one team collection.
pub struct Registry<'a> {
    milvus: &'a Milvus,
    name: String,
}

impl<'a> Registry<'a> {
    /// The registry of `collection`, created if missing (once, when a team store opens).
    pub fn open(milvus: &'a Milvus, collection: &str) -> Result<Registry<'a>> {
        let registry = Registry::of(milvus, collection);
        if milvus.dimension(&registry.name)?.is_none() {
            milvus.create_collection(&registry.name, 2)?;
        }
        Ok(registry)
    }

    /// The registry of `collection`, known to exist (no request).
    pub fn of(milvus: &'a Milvus, collection: &str) -> Registry<'a> {
        Registry { milvus, name: format!("{collection}_sources") }
    }

    /// Every namespace's newest row.
    pub fn sources(&self) -> Result<Vec<Source>> {
        let rows = self.milvus.query_all(&self.name, "tag > 0", &["ns", "tag", "model", "version", "owner"])?;
        let mut newest: HashMap<String, (u64, Source)> = HashMap::new();
        for row in rows {
            let (Some(key), Some(source)) = (row.get("id").and_then(key_of), source_of(&row)) else { continue };
            if newest.get(&source.namespace).is_none_or(|(k, _)| key > *k) {
                newest.insert(source.namespace.clone(), (key, source));
            }
        }
        let mut sources: Vec<Source> = newest.into_values().map(|(_, s)| s).collect();
        sources.sort_by(|a, b| a.namespace.cmp(&b.namespace));
        Ok(sources)
    }

    /// This namespace's tag (its own, or a free one for a new namespace);
    /// refuses a model other than the one the team's vectors were made
    /// with, and a namespace another owner holds. A namespace recorded with
    /// no owner (an older Kea) is adopted.
    pub fn claim(&self, namespace: &str, model: &str, owner: &str) -> Result<u64> {
        let sources = self.sources()?;
        if let Some(other) = sources.iter().find(|s| s.model != model && s.namespace != namespace) {
            return Err(Error::InvalidInput(format!(
                "the team collection is embedded with {} (namespace {}); this instance uses {model}: choose the same model",
                other.model, other.namespace
            )));
        }
        if let Some(mine) = sources.iter().find(|s| s.namespace == namespace) {
            if !mine.owner.is_empty() && mine.owner != owner {
                return Err(Error::InvalidInput(format!(
                    "the namespace '{namespace}' of the team store belongs to another Kea (another computer or data folder): \
                     choose a namespace of your own (--namespace, or the settings' team namespace)"
                )));
            }
            if mine.owner.is_empty() {
                self.publish(namespace, mine.tag, model, owner)?;
            }
            return Ok(mine.tag);
        }
        let hash = u64::from_le_bytes(blake3::hash(namespace.as_bytes()).as_bytes()[..8].try_into().unwrap_or_default());
        let mut tag = hash % (TAG_LIMIT - 1) + 1;
        while sources.iter().any(|s| s.tag == tag) {
            tag = tag % (TAG_LIMIT - 1) + 1;
        }
        self.publish(namespace, tag, model, owner)?;
        Ok(tag)
    }

    /// Records a new version of the namespace (after each write).
    pub fn publish(&self, namespace: &str, tag: u64, model: &str, owner: &str) -> Result<()> {
        // Microseconds: exact as the double Milvus keeps a dynamic number in.
        let version = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_micros() as u64);
        let row = json!({"vector": [1.0, 0.0], "ns": namespace, "tag": tag, "model": model, "version": version, "owner": owner});
        let key = self.milvus.insert(&self.name, &[row])?[0];
        self.milvus.wait_visible(&self.name, Some(key), None)?;
        let older: Vec<u64> = self
            .milvus
            .query_all(&self.name, &format!("ns == {}", quoted(namespace)), &[])?
            .iter()
            .filter_map(|r| r.get("id").and_then(key_of))
            .filter(|&k| k != key)
            .collect();
        self.milvus.delete(&self.name, &older)
    }
}

fn source_of(row: &Value) -> Option<Source> {
    Some(Source {
        namespace: row.get("ns")?.as_str()?.to_string(),
        tag: row.get("tag")?.as_u64()?,
        model: row.get("model")?.as_str()?.to_string(),
        version: row.get("version")?.as_u64()?,
        owner: row.get("owner").and_then(Value::as_str).unwrap_or_default().to_string(),
    })
}

/// A string literal for a Milvus filter expression.
pub fn quoted(value: &str) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| "\"\"".into())
}
