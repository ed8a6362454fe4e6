//! Who owns a namespace. Each data folder keeps a random secret
//! (`team-owner.key`, 0600); the registry row of the namespaces it claims
//! records only the secret's hash. Another instance asking for a namespace
//! already owned — two computers with the same name and folder, or a typo in
//! `--namespace` — is refused instead of being handed the namespace, whose
//! reconcile would then delete the owner's rows.
//!
//! Milvus itself has no per-row permissions: this guards against mistakes
//! between members who share the server's credentials, not against a member
//! who forges rows on purpose.

use std::hash::{BuildHasher, Hasher};
use std::path::Path;

use crate::error::Result;

const KEY_FILE: &str = "team-owner.key";

/// The owner hash of this data folder (its secret made on first use).
pub fn of_data_dir(data_dir: &Path) -> Result<String> {
    let path = data_dir.join(KEY_FILE);
    let secret = match std::fs::read_to_string(&path) {
        Ok(secret) if secret.trim().len() >= 32 => secret.trim().to_string(),
        _ => create_secret(&path)?,
    };
    Ok(hash(&secret))
}

/// The hash a registry row records for `secret`.
pub fn hash(secret: &str) -> String {
    blake3::hash(format!("kea-team-owner:{secret}").as_bytes()).to_hex()[..32].to_string()
}

fn create_secret(path: &Path) -> Result<String> {
    // Each RandomState is seeded from the system's randomness.
    let random = || std::collections::hash_map::RandomState::new().build_hasher().finish();
    let secret: String = (0..4).map(|_| format!("{:016x}", random())).collect();
    crate::secrets::write_private(path, secret.as_bytes())?;
    Ok(secret)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_data_folder_keeps_one_owner_and_another_folder_is_another() {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let first = of_data_dir(a.path()).unwrap();
        assert_eq!(of_data_dir(a.path()).unwrap(), first, "the same folder is the same owner");
        assert_ne!(of_data_dir(b.path()).unwrap(), first);
        let secret = std::fs::read_to_string(a.path().join(KEY_FILE)).unwrap();
        assert!(!first.contains(&secret[..16]), "only the hash is published");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(std::fs::metadata(a.path().join(KEY_FILE)).unwrap().permissions().mode() & 0o777, 0o600);
        }
    }
}
