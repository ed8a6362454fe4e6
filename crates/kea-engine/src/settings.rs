//! The user's settings, persisted as `settings.json` in the data folder.
//! The file may hold an API key, so it is written with owner-only
//! permissions (0600) and replaced atomically; unknown or missing fields fall
//! back to defaults so older files keep loading.

use std::path::{Path, PathBuf};

use kea_llm::{LlmSettings, ProviderPreference};
use serde::{Deserialize, Serialize};

use crate::chat::enhance::EnhanceOptions;
use crate::error::{Error, Result};
use crate::retrieve::RetrievalConfig;

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
    pub llm: LlmPreferences,
    /// Extra folder searched first for embedding, reranker and CLIP models
    /// (takes effect at the next start).
    pub models_dir: Option<PathBuf>,
    pub retrieval: RetrievalConfig,
    pub enhance: EnhanceOptions,
    /// `zh` or `en`; `None` follows the system.
    pub language: Option<String>,
    pub theme: Theme,
}

impl Settings {
    pub const FILE_NAME: &'static str = "settings.json";

    /// Reads the settings file; a missing file gives the defaults.
    pub fn load(path: &Path) -> Result<Settings> {
        match std::fs::read_to_string(path) {
            Ok(text) => serde_json::from_str(&text).map_err(|e| Error::InvalidInput(format!("{}: {e}", path.display()))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Settings::default()),
            Err(e) => Err(Error::io(format!("reading {}", path.display()), e)),
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
        match self.language.as_deref() {
            None | Some("zh") | Some("en") => Ok(()),
            Some(other) => Err(Error::InvalidInput(format!("unknown language '{other}' (zh or en)"))),
        }
    }

    /// Writes the file atomically with owner-only permissions.
    pub fn save(&self, path: &Path) -> Result<()> {
        self.validate()?;
        let text = serde_json::to_string_pretty(self).map_err(|e| Error::InvalidInput(e.to_string()))?;
        let tmp = path.with_extension("json.tmp");
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
        std::io::Write::write_all(&mut file, text.as_bytes()).map_err(io)?;
        file.sync_all().map_err(io)?;
        std::fs::rename(&tmp, path).map_err(io)
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
        settings
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_round_trip_with_owner_only_permissions() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("nested").join(Settings::FILE_NAME);
        assert_eq!(Settings::load(&path).unwrap(), Settings::default());
        let mut settings = Settings { language: Some("zh".into()), theme: Theme::Dark, ..Default::default() };
        settings.llm.api_key = Some("sk-secret".into());
        settings.retrieval.mmr_lambda = 0.5;
        settings.save(&path).unwrap();
        assert_eq!(Settings::load(&path).unwrap(), settings);
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
        let partial: Settings = serde_json::from_str(r#"{"theme": "light", "retrieval": {"rerank": false}}"#).unwrap();
        assert_eq!(partial.theme, Theme::Light);
        assert!(!partial.retrieval.rerank);
    }
}
