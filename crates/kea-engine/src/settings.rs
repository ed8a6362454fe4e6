//! The user's settings, persisted as `settings.json` in the data folder,
//! written with owner-only permissions (0600) and replaced atomically;
//! unknown or missing fields fall back to defaults so older files keep
//! loading. Secrets (the API key, the team token, a remote embedder's key)
//! are kept apart in a [`SecretStore`] — the system keyring, else
//! `secrets.json` — and filled in when the settings load; a key an older
//! file still holds moves there at the next save.

use std::path::{Path, PathBuf};

use kea_llm::{LlmSettings, ProviderPreference};
use serde::{Deserialize, Serialize};

use crate::chat::enhance::EnhanceOptions;
use crate::engine::EngineConfig;
use crate::error::{Error, Result};
use crate::model::catalog::Role;
use crate::model::download;
use crate::model::manager::ModelManager;
use crate::remote_embed::RemoteEmbedConfig;
use crate::retrieve::RetrievalConfig;
use crate::secrets::{self, SecretStore, SecretStoreKind};

/// The names of the secrets in the [`SecretStore`].
const LLM_API_KEY: &str = "llm-api-key";
const TEAM_TOKEN: &str = "team-token";
const EMBEDDER_API_KEY: &str = "embedder-api-key";

/// The models chosen in the model manager (`kea models use`, the Models page).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct ModelChoices {
    /// The embedder for a new index; an existing index keeps the model it
    /// was built with until a switch is confirmed.
    pub embedder: Option<String>,
    /// How to reach a remote embedder (used when the index's model is `remote:…`).
    pub remote_embedder: Option<RemoteEmbedConfig>,
    pub reranker: Option<String>,
    pub image: Option<String>,
    /// The embedded language model (an installed GGUF model id).
    pub llm: Option<String>,
    /// A hub mirror for downloads (`HF_ENDPOINT` wins).
    pub hub_endpoint: Option<String>,
    /// What identifies photos: the CLIP image model, or the configured
    /// language model if it sees images (e.g. Ollama's llava or qwen2.5-vl).
    pub photo_classifier: PhotoClassifier,
}

pub use crate::identify::PhotoClassifier;

/// Which language model to use.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct LlmPreferences {
    pub provider: ProviderPreference,
    /// A GGUF file for the embedded provider (else the bundled default).
    pub gguf: Option<PathBuf>,
    /// OpenAI-compatible endpoint, e.g. `http://localhost:11434/v1`.
    pub base_url: Option<String>,
    pub model: Option<String>,
    pub api_key: Option<String>,
}

impl LlmPreferences {
    /// Edited preferences that entered no API key keep the stored one only
    /// while the endpoint's origin (scheme, host, port) is unchanged: a key
    /// is never sent to a host it was not entered for.
    pub fn carry_key_from(&mut self, previous: &LlmPreferences) {
        if self.api_key.is_none() && origin(self.base_url.as_deref()) == origin(previous.base_url.as_deref()) {
            self.api_key = previous.api_key.clone();
        }
    }
}

/// The folder of a settings file (its data folder).
fn folder_of(path: &Path) -> &Path {
    path.parent().unwrap_or(Path::new("."))
}

/// `scheme://host:port` of a URL, lower-cased (`None` for no URL).
fn origin(url: Option<&str>) -> Option<String> {
    let url = url?.trim();
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    Some(format!("{scheme}://{authority}").to_ascii_lowercase())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Theme {
    #[default]
    System,
    Light,
    Dark,
}

/// Everything the settings screen edits.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Settings {
    /// The knowledge folder the app and the CLI index when none is named
    /// (`None` until the user chooses one: [`Settings::knowledge_dir`]).
    pub knowledge_dir: Option<PathBuf>,
    pub llm: LlmPreferences,
    /// Extra folder searched first for embedding, reranker and CLIP models
    /// (takes effect at the next start).
    pub models_dir: Option<PathBuf>,
    pub retrieval: RetrievalConfig,
    pub enhance: EnhanceOptions,
    /// `zh` or `en`; `None` follows the system.
    pub language: Option<String>,
    pub theme: Theme,
    pub models: ModelChoices,
    /// A team store shared with other instances (takes effect at the next start).
    pub team: crate::team::TeamConfig,
    /// The first-run plan was applied, reviewed or skipped (`kea setup --yes`
    /// or the app): the app stops offering it on launch.
    pub setup_done: bool,
}

impl Settings {
    pub const FILE_NAME: &'static str = "settings.json";

    /// Reads the settings file (a missing file gives the defaults) and
    /// its folder's secrets.
    pub fn load(path: &Path) -> Result<Settings> {
        Settings::load_from(path, secrets::store_for(folder_of(path)).as_ref())
    }

    /// Like [`Settings::load`], with the secrets from `store`.
    pub fn load_from(path: &Path, store: &dyn SecretStore) -> Result<Settings> {
        let mut settings: Settings = match std::fs::read_to_string(path) {
            Ok(text) => serde_json::from_str(&text).map_err(|e| Error::InvalidInput(format!("{}: {e}", path.display())))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Settings::default(),
            Err(e) => return Err(Error::io(format!("reading {}", path.display()), e)),
        };
        // A key an older file still holds wins (it moves to the store at the next save).
        for (name, slot) in settings.secret_slots() {
            if slot.is_none() {
                *slot = store.get(name)?;
            }
        }
        Ok(settings)
    }

    /// Where the secrets of the settings at `path` are kept.
    pub fn secrets_kind(path: &Path) -> SecretStoreKind {
        secrets::store_for(folder_of(path)).kind()
    }

    /// The secret fields, by their name in the store (a remote embedder's
    /// key only when one is configured).
    fn secret_slots(&mut self) -> Vec<(&'static str, &mut Option<String>)> {
        let mut slots = vec![(LLM_API_KEY, &mut self.llm.api_key), (TEAM_TOKEN, &mut self.team.token)];
        if let Some(remote) = self.models.remote_embedder.as_mut() {
            slots.push((EMBEDDER_API_KEY, &mut remote.api_key));
        }
        slots
    }

    /// The settings in `data_dir`; an unreadable file gives the defaults and
    /// a warning for the caller to show.
    pub fn load_or_default(data_dir: &Path) -> (Settings, Option<String>) {
        match Settings::load(&data_dir.join(Settings::FILE_NAME)) {
            Ok(settings) => (settings, None),
            Err(e) => (Settings::default(), Some(format!("ignoring unreadable settings: {e}"))),
        }
    }

    /// The engine configuration these settings describe (flags and the
    /// environment may then override it).
    pub fn engine_config(&self, knowledge_dir: PathBuf, data_dir: PathBuf) -> EngineConfig {
        let mut config = EngineConfig::new(knowledge_dir, data_dir);
        if let Some(dir) = &self.models_dir {
            config.model_paths.dirs.insert(0, dir.clone());
        }
        let m = &self.models;
        if let Some(id) = m.embedder.as_ref().filter(|id| !id.is_empty()) {
            config.model_id = id.clone();
        }
        config.remote_embedder = m.remote_embedder.clone();
        config.reranker_id = m.reranker.clone().filter(|r| !r.is_empty());
        config.team = self.team.clone().named();
        config
    }

    /// The engine configuration under the one precedence of the CLI and the
    /// app: the settings file, then `overrides` (the environment, and the
    /// CLI's flags over it).
    pub fn engine_config_with(&self, knowledge_dir: PathBuf, data_dir: PathBuf, overrides: &Overrides) -> EngineConfig {
        let mut config = self.engine_config(knowledge_dir, data_dir);
        if let Some(dir) = &overrides.models_dir {
            config.model_paths.dirs.insert(0, dir.clone());
        }
        if let Some(remote) = &overrides.remote_embedder {
            config.use_remote(remote.clone());
        } else if let Some(model) = &overrides.embedding_model {
            config.use_model(model);
        }
        if let Some(reranker) = &overrides.reranker {
            config.reranker_id = Some(reranker.clone()).filter(|r| !r.is_empty());
        }
        if let Some(backend) = overrides.vector_backend {
            config.vector_backend = backend;
        }
        if let Some(seconds) = overrides.file_timeout.filter(|s| s.is_finite() && *s > 0.0) {
            config.file_budget.base = std::time::Duration::from_secs_f64(seconds);
        }
        let memory = overrides.file_memory_mb.unwrap_or(crate::reader::DEFAULT_MEMORY_MB).max(1);
        config.reader = crate::reader::ReaderProcess::this_executable(memory);
        match overrides.store.as_deref() {
            Some("local") => config.team = None,
            // A store named here keeps the settings' token while it names the same store.
            Some(url) => {
                let token = config.team.as_ref().filter(|t| t.store.trim() == url.trim()).and_then(|t| t.token.clone());
                config.team = crate::team::TeamConfig { store: url.to_string(), namespace: None, token }.named();
            }
            None => {}
        }
        if let (Some(team), Some(namespace)) = (config.team.as_mut(), &overrides.namespace) {
            team.namespace = Some(namespace.clone());
        }
        if let (Some(team), Some(token)) = (config.team.as_mut(), &overrides.store_token) {
            team.token = Some(token.clone());
        }
        config
    }

    /// The knowledge folder: `flag` (`--knowledge`) over the settings'
    /// choice, else `Documents/Kea` in the user's home.
    pub fn knowledge_dir(&self, flag: Option<PathBuf>) -> PathBuf {
        flag.or_else(|| self.knowledge_dir.clone()).unwrap_or_else(default_knowledge_dir)
    }

    /// The CLIP image model for photos: `$KEA_IMAGE_MODEL` over the
    /// settings' choice, else the default.
    pub fn image_model(&self) -> String {
        let from_env = std::env::var("KEA_IMAGE_MODEL").ok().filter(|v| !v.trim().is_empty());
        from_env.or_else(|| self.models.image.clone()).unwrap_or_else(|| crate::identify::DEFAULT_IMAGE_MODEL.to_string())
    }

    /// Where downloaded and imported models go: the settings' models folder,
    /// else the first folder of `$KEA_MODELS_DIR`, else `models/` in the data folder.
    pub fn install_dir(&self, data_dir: &Path) -> PathBuf {
        self.models_dir.clone().or_else(|| crate::model::env_models_dirs().into_iter().next()).unwrap_or_else(|| data_dir.join("models"))
    }

    /// The model manager for `config`'s folders.
    pub fn model_manager(&self, config: &EngineConfig) -> ModelManager {
        let endpoint = download::endpoint(self.models.hub_endpoint.as_deref());
        ModelManager::new(config.model_paths.clone(), self.install_dir(&config.data_dir), endpoint)
    }

    /// The model in use per role; `indexed` is the index's embedder.
    pub fn active_models(&self, indexed: Option<String>) -> std::collections::HashMap<Role, String> {
        let m = &self.models;
        let embedder = indexed.or_else(|| m.embedder.clone()).unwrap_or_else(|| crate::model::DEFAULT_TEXT_MODEL.into());
        let image = m.image.clone().unwrap_or_else(|| crate::model::DEFAULT_IMAGE_MODEL.into());
        let llm = m.llm.clone().unwrap_or_else(|| kea_llm::select::DEFAULT_EMBEDDED_MODEL.into());
        let mut active = std::collections::HashMap::from([(Role::Embedder, embedder), (Role::Image, image), (Role::Llm, llm)]);
        if let Some(reranker) = m.reranker.clone() {
            active.insert(Role::Reranker, reranker);
        }
        active
    }

    /// Records a model choice for `role` (`None` clears it).
    pub fn choose(&mut self, role: Role, id: Option<String>) {
        let m = &mut self.models;
        match role {
            Role::Embedder => m.embedder = id,
            Role::Reranker => m.reranker = id,
            Role::Image => m.image = id,
            Role::Llm => m.llm = id,
        }
    }

    /// Deletes an installed model and clears it from every role that chose
    /// it; the index's own embedder is refused. The caller saves the settings.
    pub fn remove_model(&mut self, config: &EngineConfig, id: &str) -> Result<()> {
        if crate::Engine::indexed_model(&config.data_dir)?.as_deref() == Some(id) {
            return Err(Error::InvalidInput(format!("{id} is the index's embedder: switch to another embedder first")));
        }
        self.model_manager(config).remove(id)?;
        self.forget(id);
        Ok(())
    }

    /// Clears `id` from every role that chose it (after the model was removed).
    fn forget(&mut self, id: &str) {
        let active = self.active_models(None);
        for role in Role::ALL {
            if active.get(&role).map(String::as_str) == Some(id) {
                self.choose(role, None);
            }
        }
    }

    /// Checks the values a user can get wrong.
    pub fn validate(&self) -> Result<()> {
        let r = &self.retrieval;
        if !(0.0..=1.0).contains(&r.mmr_lambda) {
            return Err(Error::InvalidInput(format!("MMR λ must be between 0 and 1 (got {})", r.mmr_lambda)));
        }
        if !(0.0..=1.0).contains(&r.min_score) {
            return Err(Error::InvalidInput(format!("the minimum score must be between 0 and 1 (got {})", r.min_score)));
        }
        if let Some(url) = &self.llm.base_url {
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(Error::InvalidInput(format!("the endpoint must be an http(s) URL (got '{url}')")));
            }
        }
        if let Some(remote) = &self.models.remote_embedder {
            remote.validate()?;
        }
        let m = &self.models;
        let local_embedder = m.embedder.as_ref().filter(|id| !id.starts_with(crate::remote_embed::REMOTE_PREFIX));
        for id in [local_embedder, m.reranker.as_ref(), m.image.as_ref(), m.llm.as_ref()].into_iter().flatten().filter(|id| !id.is_empty()) {
            crate::model::ModelId::parse(id)?;
        }
        match self.language.as_deref() {
            None | Some("zh") | Some("en") => Ok(()),
            Some(other) => Err(Error::InvalidInput(format!("unknown language '{other}' (zh or en)"))),
        }
    }

    /// Writes the file atomically with owner-only permissions, and the
    /// secrets to the folder's store (never into the file).
    pub fn save(&self, path: &Path) -> Result<()> {
        self.save_in(path, secrets::store_for(folder_of(path)).as_ref())
    }

    /// Like [`Settings::save`], with the secrets into `store`.
    pub fn save_in(&self, path: &Path, store: &dyn SecretStore) -> Result<()> {
        self.validate()?;
        let mut on_disk = self.clone();
        for (name, slot) in on_disk.secret_slots() {
            match slot.take().filter(|v| !v.is_empty()) {
                Some(value) => store.set(name, &value)?,
                None => store.delete(name)?,
            }
        }
        let text = serde_json::to_string_pretty(&on_disk).map_err(|e| Error::InvalidInput(e.to_string()))?;
        secrets::write_private(path, text.as_bytes())
    }

    /// The LLM selection these settings ask for; the environment (the same
    /// variables the CLI reads) fills what they leave open.
    pub fn llm_settings(&self, model_dirs: Vec<PathBuf>) -> LlmSettings {
        let mut settings = LlmSettings::from_env(model_dirs);
        let p = &self.llm;
        settings.preference = p.provider;
        let pick = |mine: &Option<String>, env: Option<String>| mine.clone().filter(|v| !v.is_empty()).or(env);
        settings.base_url = pick(&p.base_url, settings.base_url);
        settings.model = pick(&p.model, settings.model);
        settings.api_key = pick(&p.api_key, settings.api_key);
        settings.gguf = p.gguf.clone().or(settings.gguf);
        if let Some(llm) = self.models.llm.clone().filter(|m| !m.is_empty()) {
            settings.embedded_model = llm;
        }
        settings
    }
}

/// Where documents go until the user chooses a folder: `Documents/Kea`
/// (the XDG documents folder when there is one).
pub fn default_knowledge_dir() -> PathBuf {
    dirs::document_dir().or_else(|| dirs::home_dir().map(|home| home.join("Documents"))).unwrap_or_else(std::env::temp_dir).join("Kea")
}

/// The environment variables that override the settings file, in the CLI
/// (as the default of its flag of the same meaning) and in the app alike.
pub const OVERRIDE_ENV: [&str; 12] = [
    "KEA_EMBED_BASE_URL",
    "KEA_EMBED_MODEL",
    "KEA_EMBED_API_KEY",
    "KEA_EMBED_API",
    "KEA_EMBED_LANGUAGES",
    "KEA_RERANKER",
    "KEA_VECTOR_INDEX",
    "KEA_STORE",
    "KEA_NAMESPACE",
    "KEA_STORE_TOKEN",
    "KEA_FILE_TIMEOUT",
    "KEA_FILE_MEMORY",
];

/// What the environment or the CLI's flags set over the settings file
/// (file < environment < flags). `None` leaves the file's value; an empty
/// reranker means none, a store `local` means this machine's own index.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Overrides {
    pub models_dir: Option<PathBuf>,
    pub embedding_model: Option<String>,
    pub remote_embedder: Option<RemoteEmbedConfig>,
    pub reranker: Option<String>,
    pub vector_backend: Option<crate::vectors::VectorBackend>,
    pub store: Option<String>,
    pub namespace: Option<String>,
    pub store_token: Option<String>,
    pub file_timeout: Option<f64>,
    /// Megabytes one file's reader process may use.
    pub file_memory_mb: Option<u64>,
}

impl Overrides {
    /// The overrides the environment sets (the app's; the CLI's flags go over them).
    pub fn from_env() -> Overrides {
        Overrides::from_lookup(|name| std::env::var(name).ok().filter(|v| !v.is_empty()))
    }

    /// The overrides `lookup` gives for the names of [`OVERRIDE_ENV`].
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Overrides {
        let remote_embedder = RemoteEmbedConfig::from_lookup(&lookup);
        let vector_backend = match lookup("KEA_VECTOR_INDEX").as_deref() {
            Some("exact") => Some(crate::vectors::VectorBackend::Exact),
            Some("usearch") => Some(crate::vectors::VectorBackend::Usearch),
            _ => None,
        };
        Overrides {
            models_dir: None,
            embedding_model: None,
            remote_embedder,
            reranker: lookup("KEA_RERANKER"),
            vector_backend,
            store: lookup("KEA_STORE"),
            namespace: lookup("KEA_NAMESPACE"),
            store_token: lookup("KEA_STORE_TOKEN"),
            file_timeout: lookup("KEA_FILE_TIMEOUT").and_then(|s| s.parse().ok()),
            file_memory_mb: lookup("KEA_FILE_MEMORY").and_then(|s| s.parse().ok()),
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_knowledge_folder_is_the_flag_else_the_settings_choice_else_documents_kea() {
        let mut settings = super::Settings::default();
        assert!(settings.knowledge_dir(None).ends_with("Kea"), "{}", settings.knowledge_dir(None).display());
        assert_eq!(settings.knowledge_dir(None), super::default_knowledge_dir());
        settings.knowledge_dir = Some("/chosen".into());
        assert_eq!(settings.knowledge_dir(None), std::path::PathBuf::from("/chosen"));
        assert_eq!(settings.knowledge_dir(Some("/flag".into())), std::path::PathBuf::from("/flag"));
        let saved: super::Settings = serde_json::from_str(&serde_json::to_string(&settings).unwrap()).unwrap();
        assert_eq!(saved.knowledge_dir, settings.knowledge_dir, "the choice is kept in the settings file");
    }

    #[test]
    fn the_environment_overrides_the_file_and_flags_override_the_environment() {
        use crate::vectors::VectorBackend;
        let mut settings = super::Settings::default();
        settings.models.reranker = Some("file-reranker".into());
        settings.team.store = "milvus://127.0.0.1:19530/kea".into();
        let config = |o: &super::Overrides| settings.engine_config_with("k".into(), "d".into(), o);
        let file = config(&super::Overrides::default());
        assert_eq!((file.reranker_id.as_deref(), file.team.is_some()), (Some("file-reranker"), true));
        let env = super::Overrides::from_lookup(|name| {
            let value = match name {
                "KEA_RERANKER" => "env-reranker",
                "KEA_STORE" => "local",
                "KEA_VECTOR_INDEX" => "exact",
                "KEA_FILE_TIMEOUT" => "7",
                _ => return None,
            };
            Some(value.to_string())
        });
        let environment = config(&env);
        assert_eq!((environment.reranker_id.as_deref(), environment.team.is_some()), (Some("env-reranker"), false));
        assert_eq!((environment.vector_backend, environment.file_budget.base.as_secs()), (VectorBackend::Exact, 7));
        let flags = super::Overrides { reranker: Some(String::new()), vector_backend: Some(VectorBackend::Usearch), ..env };
        let flagged = config(&flags);
        assert_eq!((flagged.reranker_id, flagged.vector_backend), (None, VectorBackend::Usearch), "a flag's empty reranker turns it off");
    }

    use super::*;

    #[test]
    fn the_enhance_object_is_read_from_the_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(Settings::FILE_NAME), r#"{"enhance": {"query_expansion": true, "max_summary_length": 200}}"#).unwrap();
        let (settings, warning) = Settings::load_or_default(dir.path());
        assert!(warning.is_none() && settings.enhance.query_expansion);
        assert_eq!(settings.enhance.max_summary_length, 200);
    }

    /// Secrets never reach `settings.json` (issue 24): they go to the
    /// store (here the file one; the keyring in `tests/keyring.rs`).
    #[test]
    fn settings_round_trip_with_owner_only_permissions_and_secrets_kept_apart() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("nested").join(Settings::FILE_NAME);
        let store = crate::secrets::FileSecrets::new(&tmp.path().join("nested"));
        assert_eq!(Settings::load_from(&path, &store).unwrap(), Settings::default());
        let mut settings = Settings { language: Some("zh".into()), theme: Theme::Dark, ..Default::default() };
        settings.llm.api_key = Some("sk-secret".into());
        settings.team.token = Some("root:team-secret".into());
        settings.retrieval.mmr_lambda = 0.5;
        settings.save_in(&path, &store).unwrap();
        assert_eq!(Settings::load_from(&path, &store).unwrap(), settings);
        let on_disk = std::fs::read_to_string(&path).unwrap();
        assert!(!on_disk.contains("sk-secret") && !on_disk.contains("team-secret"), "{on_disk}");
        assert_eq!(store.get(LLM_API_KEY).unwrap().as_deref(), Some("sk-secret"));
        settings.llm.api_key = None;
        settings.save_in(&path, &store).unwrap();
        assert_eq!(store.get(LLM_API_KEY).unwrap(), None, "a cleared key is forgotten");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        }
    }

    #[test]
    fn bad_values_are_refused_and_old_files_still_load() {
        let mut settings = Settings::default();
        settings.retrieval.mmr_lambda = 1.5;
        assert!(settings.validate().is_err());
        let settings = Settings { language: Some("fr".into()), ..Default::default() };
        assert!(settings.validate().is_err());
        let mut settings = Settings::default();
        settings.llm.base_url = Some("file:///etc/passwd".into());
        assert!(settings.validate().is_err());
        let mut settings = Settings::default();
        settings.models.reranker = Some("../../home".into());
        assert!(settings.validate().is_err(), "a model id that is a path");
        let partial: Settings = serde_json::from_str(r#"{"theme": "light", "retrieval": {"rerank": false}}"#).unwrap();
        assert_eq!(partial.theme, Theme::Light);
        assert!(!partial.retrieval.rerank);
    }

    /// Issue 24: a new endpoint kept the old API key and was sent it.
    #[test]
    fn a_new_endpoint_never_inherits_the_old_key() {
        let previous = LlmPreferences { base_url: Some("https://api.example.com/v1".into()), api_key: Some("sk-old".into()), ..Default::default() };
        let edit = |url: &str| {
            let mut next = LlmPreferences { base_url: Some(url.into()), ..Default::default() };
            next.carry_key_from(&previous);
            next.api_key
        };
        assert_eq!(edit("https://api.example.com/v2").as_deref(), Some("sk-old"), "same host: kept");
        assert_eq!(edit("HTTPS://API.example.com/v1/").as_deref(), Some("sk-old"));
        for other in ["https://evil.example.net/v1", "http://api.example.com/v1", "https://api.example.com:8443/v1", "https://api.example.com.evil.net/v1"] {
            assert_eq!(edit(other), None, "{other}");
        }
        let mut entered = LlmPreferences { base_url: Some("https://other.net".into()), api_key: Some("sk-new".into()), ..Default::default() };
        entered.carry_key_from(&previous);
        assert_eq!(entered.api_key.as_deref(), Some("sk-new"));
    }

    /// Regression: a retired retrieval key made the whole file unreadable,
    /// the app ran on defaults, and the next save dropped the API key.
    #[test]
    fn an_old_file_with_retired_keys_still_loads_and_keeps_the_api_key() {
        let tmp = tempfile::tempdir().unwrap();
        let old = r#"{"llm": {"provider": "openai", "base_url": "https://api.example.com/v1", "api_key": "sk-kept", "retired": 1},
            "retrieval": {"rerank": false, "bm25_boost": 2.0}, "enhance": {"old_flag": true}, "models": {"legacy": "x"},
            "window": {"width": 900}, "theme": "dark"}"#;
        let path = tmp.path().join(Settings::FILE_NAME);
        let store = crate::secrets::FileSecrets::new(tmp.path());
        std::fs::write(&path, old).unwrap();
        let settings = Settings::load_from(&path, &store).unwrap();
        assert_eq!(settings.llm.api_key.as_deref(), Some("sk-kept"));
        assert_eq!((settings.theme, settings.retrieval.rerank), (Theme::Dark, false));
        settings.save_in(&path, &store).unwrap();
        let again = Settings::load_from(&path, &store).unwrap();
        assert_eq!(again.llm.api_key.as_deref(), Some("sk-kept"), "a save keeps the key");
        assert!(!std::fs::read_to_string(&path).unwrap().contains("sk-kept"), "and moves it out of the settings file");
    }
}
