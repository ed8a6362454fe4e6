//! Where Kea keeps secrets: the language model's API key, the team store's
//! token, a remote embedder's key. They never go into `settings.json`:
//! they live in the system keyring (Secret Service on Linux, Keychain,
//! Credential Manager) when one answers, else in `secrets.json` beside the
//! settings, readable by its owner only (0600), and the settings screen
//! says so. Both are a [`SecretStore`]; [`conformance::check`] is the suite
//! every implementation passes.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// The keyring's service name for Kea's entries.
const SERVICE: &str = "kea";
/// The fallback file in the data folder.
pub const FILE_NAME: &str = "secrets.json";

/// Which kind of store holds the secrets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SecretStoreKind {
    /// The operating system's keyring.
    Keyring,
    /// `secrets.json` in the data folder (0600): no keyring answered.
    File,
}

/// A place for named secrets of one data folder.
pub trait SecretStore {
    fn kind(&self) -> SecretStoreKind;
    /// The secret called `name`; `None` when there is none.
    fn get(&self, name: &str) -> Result<Option<String>>;
    fn set(&self, name: &str, value: &str) -> Result<()>;
    /// Forgets `name` (nothing to forget is not an error).
    fn delete(&self, name: &str) -> Result<()>;
}

/// The store for `data_dir`: the system keyring when it answers, else the
/// file. `KEA_SECRETS=file` chooses the file.
pub fn store_for(data_dir: &Path) -> Box<dyn SecretStore> {
    let file_only = std::env::var("KEA_SECRETS").is_ok_and(|v| v == "file");
    match OsKeyring::open(data_dir).filter(|_| !file_only) {
        Some(keyring) => Box::new(keyring),
        None => Box::new(FileSecrets::new(data_dir)),
    }
}

/// The system keyring, one entry per data folder and secret (service
/// `kea`, account `<data folder>:<name>`).
pub struct OsKeyring {
    account: String,
}

impl OsKeyring {
    /// The keyring, if one answers (a Secret Service on the session bus,
    /// unlocked; Keychain; Credential Manager).
    pub fn open(data_dir: &Path) -> Option<OsKeyring> {
        keyring::Entry::store_status().as_ref().ok()?;
        let folder = data_dir.canonicalize().unwrap_or_else(|_| data_dir.to_path_buf());
        let keyring = OsKeyring { account: folder.display().to_string() };
        keyring.get("probe").ok().map(|_| keyring)
    }

    fn entry(&self, name: &str) -> Result<keyring::Entry> {
        keyring::Entry::new(SERVICE, &format!("{}:{name}", self.account)).map_err(keyring_error)
    }
}

fn keyring_error(e: keyring::Error) -> Error {
    Error::InvalidInput(format!("the system keyring failed: {e}"))
}

impl SecretStore for OsKeyring {
    fn kind(&self) -> SecretStoreKind {
        SecretStoreKind::Keyring
    }

    fn get(&self, name: &str) -> Result<Option<String>> {
        match self.entry(name)?.get_password() {
            Ok(value) => Ok(Some(value)),
            Err(keyring::Error::NoEntry) => Ok(None),
            Err(e) => Err(keyring_error(e)),
        }
    }

    fn set(&self, name: &str, value: &str) -> Result<()> {
        self.entry(name)?.set_password(value).map_err(keyring_error)
    }

    fn delete(&self, name: &str) -> Result<()> {
        match self.entry(name)?.delete_credential() {
            Ok(()) | Err(keyring::Error::NoEntry) => Ok(()),
            Err(e) => Err(keyring_error(e)),
        }
    }
}

/// `secrets.json` in the data folder, owner-only.
pub struct FileSecrets {
    path: PathBuf,
}

impl FileSecrets {
    pub fn new(data_dir: &Path) -> FileSecrets {
        FileSecrets { path: data_dir.join(FILE_NAME) }
    }

    fn read(&self) -> Result<BTreeMap<String, String>> {
        match std::fs::read_to_string(&self.path) {
            Ok(text) => serde_json::from_str(&text).map_err(|e| Error::InvalidInput(format!("{}: {e}", self.path.display()))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(BTreeMap::new()),
            Err(e) => Err(Error::io(format!("reading {}", self.path.display()), e)),
        }
    }

    fn write(&self, secrets: &BTreeMap<String, String>) -> Result<()> {
        if secrets.is_empty() {
            return match std::fs::remove_file(&self.path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::io(format!("removing {}", self.path.display()), e)),
                _ => Ok(()),
            };
        }
        let text = serde_json::to_string_pretty(secrets).map_err(|e| Error::InvalidInput(e.to_string()))?;
        write_private(&self.path, text.as_bytes())
    }
}

impl SecretStore for FileSecrets {
    fn kind(&self) -> SecretStoreKind {
        SecretStoreKind::File
    }

    fn get(&self, name: &str) -> Result<Option<String>> {
        Ok(self.read()?.remove(name))
    }

    fn set(&self, name: &str, value: &str) -> Result<()> {
        let mut secrets = self.read()?;
        secrets.insert(name.to_string(), value.to_string());
        self.write(&secrets)
    }

    fn delete(&self, name: &str) -> Result<()> {
        let mut secrets = self.read()?;
        if secrets.remove(name).is_some() {
            self.write(&secrets)?;
        }
        Ok(())
    }
}

/// Writes `bytes` to `path` atomically (a temporary file renamed over it),
/// readable and writable by its owner only (0600), synced to disk.
pub(crate) fn write_private(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = path.with_extension("tmp");
    let io = |e| Error::io(format!("writing {}", path.display()), e);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(io)?;
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(&tmp).map_err(io)?;
    #[cfg(unix)]
    file.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(0o600)).map_err(io)?;
    std::io::Write::write_all(&mut file, bytes).map_err(io)?;
    file.sync_all().map_err(io)?;
    std::fs::rename(&tmp, path).map_err(io)
}

/// The suite every [`SecretStore`] passes (the file here, the system
/// keyring in `tests/keyring.rs` against a real Secret Service).
pub mod conformance {
    use super::SecretStore;

    /// Panics with the implementation's `name` on the first failure.
    pub fn check(name: &str, store: &dyn SecretStore) {
        let (a, b) = ("conformance-a", "conformance-b");
        assert_eq!(store.get(a).unwrap(), None, "{name}: a missing secret is None");
        store.delete(a).expect("deleting nothing is fine");
        store.set(a, "sk-first").unwrap();
        store.set(b, "密钥 with spaces and \"quotes\"").unwrap();
        assert_eq!(store.get(a).unwrap().as_deref(), Some("sk-first"), "{name}");
        store.set(a, "sk-second").unwrap();
        assert_eq!(store.get(a).unwrap().as_deref(), Some("sk-second"), "{name}: set replaces");
        assert_eq!(store.get(b).unwrap().as_deref(), Some("密钥 with spaces and \"quotes\""), "{name}: names are apart, values exact");
        store.delete(a).unwrap();
        assert_eq!(store.get(a).unwrap(), None, "{name}: deleted");
        assert!(store.get(b).unwrap().is_some(), "{name}: deleting one keeps the other");
        store.delete(b).unwrap();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_store_passes_the_conformance_suite_and_stays_private() {
        let dir = tempfile::tempdir().unwrap();
        let store = FileSecrets::new(dir.path());
        conformance::check("file", &store);
        assert!(!dir.path().join(FILE_NAME).exists(), "an empty store leaves no file");
        store.set("llm-api-key", "sk-x").unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(std::fs::metadata(dir.path().join(FILE_NAME)).unwrap().permissions().mode() & 0o777, 0o600);
        }
    }
}
