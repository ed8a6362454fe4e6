//! The claim this data folder last made on a team store: its namespace's
//! tag, with the model and dimension it writes. Kept beside the index so a
//! store that cannot be reached when Kea starts still opens, *offline*:
//! local passages and the last mirror answer, and the claim is made again
//! with the server before anything is written or pulled.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::Result;

/// What a successful claim established.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Claim {
    pub store: String,
    pub namespace: String,
    pub model: String,
    pub dim: usize,
    pub tag: u64,
}

fn path(data_dir: &Path, collection: &str) -> PathBuf {
    data_dir.join(format!("team-{collection}.claim.json"))
}

/// Records `claim` (written whole, then renamed into place).
pub fn save(data_dir: &Path, collection: &str, claim: &Claim) -> Result<()> {
    let json = serde_json::to_vec_pretty(claim).map_err(|e| crate::error::Error::io("encoding the team claim", e.into()))?;
    crate::secrets::write_private(&path(data_dir, collection), &json)
}

/// The tag last claimed for the same store, namespace, model and
/// dimension as `wanted` (whose `tag` is ignored); `None` when this data
/// folder never made that claim.
pub fn load(data_dir: &Path, collection: &str, wanted: &Claim) -> Option<u64> {
    let saved: Claim = serde_json::from_slice(&std::fs::read(path(data_dir, collection)).ok()?).ok()?;
    (Claim { tag: saved.tag, ..wanted.clone() } == saved && saved.tag > 0).then_some(saved.tag)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_saved_claim_is_found_only_for_the_same_store_namespace_and_model() {
        let dir = tempfile::tempdir().unwrap();
        let claim = Claim { store: "milvus://h:19530/kb".into(), namespace: "me:docs".into(), model: "m".into(), dim: 8, tag: 42 };
        assert_eq!(load(dir.path(), "kb", &claim), None, "nothing claimed yet");
        save(dir.path(), "kb", &claim).unwrap();
        assert_eq!(load(dir.path(), "kb", &Claim { tag: 0, ..claim.clone() }), Some(42));
        for other in [
            Claim { namespace: "you:docs".into(), ..claim.clone() },
            Claim { model: "n".into(), ..claim.clone() },
            Claim { dim: 16, ..claim.clone() },
            Claim { store: "milvus://other:19530/kb".into(), ..claim.clone() },
        ] {
            assert_eq!(load(dir.path(), "kb", &other), None, "{other:?}");
        }
        std::fs::write(path(dir.path(), "kb"), b"{not json").unwrap();
        assert_eq!(load(dir.path(), "kb", &claim), None, "a damaged file is no claim");
    }
}
