//! IPC shapes for the settings screen: the language model, theme, photo
//! classifier and every field.

use kea_engine::settings::{LlmPreferences, PhotoClassifier, Settings, Theme};
use kea_llm::ProviderPreference;
use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// The language model in use and why it was chosen.
#[derive(Debug, Clone, Serialize, TS)]
pub struct LlmInfoDto {
    pub provider: String,
    pub reason: String,
}

/// Which language model the user prefers (the settings' provider).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "lowercase")]
pub enum ProviderDto {
    Auto,
    Embedded,
    Openai,
    None,
}

impl From<ProviderPreference> for ProviderDto {
    fn from(p: ProviderPreference) -> Self {
        match p {
            ProviderPreference::Auto => ProviderDto::Auto,
            ProviderPreference::Embedded => ProviderDto::Embedded,
            ProviderPreference::Openai => ProviderDto::Openai,
            ProviderPreference::None => ProviderDto::None,
        }
    }
}

impl From<ProviderDto> for ProviderPreference {
    fn from(p: ProviderDto) -> Self {
        match p {
            ProviderDto::Auto => ProviderPreference::Auto,
            ProviderDto::Embedded => ProviderPreference::Embedded,
            ProviderDto::Openai => ProviderPreference::Openai,
            ProviderDto::None => ProviderPreference::None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "lowercase")]
pub enum ThemeDto {
    System,
    Light,
    Dark,
}

impl From<Theme> for ThemeDto {
    fn from(t: Theme) -> Self {
        match t {
            Theme::System => ThemeDto::System,
            Theme::Light => ThemeDto::Light,
            Theme::Dark => ThemeDto::Dark,
        }
    }
}

impl From<ThemeDto> for Theme {
    fn from(t: ThemeDto) -> Self {
        match t {
            ThemeDto::System => Theme::System,
            ThemeDto::Light => Theme::Light,
            ThemeDto::Dark => Theme::Dark,
        }
    }
}

/// The classifier behind photo identification.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum PhotoClassifierDto {
    Clip,
    VisionLlm,
}

impl From<PhotoClassifier> for PhotoClassifierDto {
    fn from(c: PhotoClassifier) -> Self {
        match c {
            PhotoClassifier::Clip => PhotoClassifierDto::Clip,
            PhotoClassifier::VisionLlm => PhotoClassifierDto::VisionLlm,
        }
    }
}

impl From<PhotoClassifierDto> for PhotoClassifier {
    fn from(c: PhotoClassifierDto) -> Self {
        match c {
            PhotoClassifierDto::Clip => PhotoClassifier::Clip,
            PhotoClassifierDto::VisionLlm => PhotoClassifier::VisionLlm,
        }
    }
}

/// The settings screen's fields. The API key never goes to the webview:
/// it reports `api_key_set`, and a new key is sent only when typed
/// (`api_key: ""` clears it, absent keeps it).
#[derive(Debug, Serialize, Deserialize, TS)]
pub struct SettingsDto {
    pub provider: ProviderDto,
    pub gguf: Option<String>,
    pub base_url: Option<String>,
    pub model: Option<String>,
    /// Sent only when typed: `""` clears the key, absent keeps it.
    #[serde(default, skip_serializing)]
    #[ts(optional)]
    pub api_key: Option<String>,
    #[serde(default)]
    pub api_key_set: bool,
    pub models_dir: Option<String>,
    /// `milvus://HOST:PORT/COLLECTION`: a team store (used at next start).
    pub team_store: Option<String>,
    /// This folder's namespace in the team store (default: host:folder).
    pub team_namespace: Option<String>,
    /// The team store's credentials (user:password or an API key), like the
    /// API key: sent only when typed, never shown back.
    #[serde(default, skip_serializing)]
    #[ts(optional)]
    pub team_token: Option<String>,
    #[serde(default)]
    pub team_token_set: bool,
    /// Where the secrets are kept: the system keyring, or (none answered) a
    /// file only the user can read.
    #[serde(default)]
    pub secrets_in_keyring: bool,
    pub rerank: bool,
    pub mmr: bool,
    pub mmr_lambda: f32,
    pub filter: bool,
    pub min_score: f32,
    pub llm_rerank: bool,
    pub summary: bool,
    pub query_expansion: bool,
    /// The interface language; none follows the system.
    #[ts(type = "\"zh\" | \"en\" | null")]
    pub language: Option<String>,
    pub theme: ThemeDto,
    pub photo_classifier: PhotoClassifierDto,
}

impl SettingsDto {
    /// The same, saying where the secrets are kept.
    pub fn kept_in(self, kind: kea_engine::secrets::SecretStoreKind) -> SettingsDto {
        SettingsDto { secrets_in_keyring: kind == kea_engine::secrets::SecretStoreKind::Keyring, ..self }
    }
}

impl From<&Settings> for SettingsDto {
    fn from(s: &Settings) -> Self {
        let shown = |p: &Option<std::path::PathBuf>| p.as_ref().map(|p| p.display().to_string());
        SettingsDto {
            provider: s.llm.provider.into(),
            gguf: shown(&s.llm.gguf),
            base_url: s.llm.base_url.clone(),
            model: s.llm.model.clone(),
            api_key: None,
            api_key_set: s.llm.api_key.as_deref().is_some_and(|k| !k.is_empty()),
            models_dir: shown(&s.models_dir),
            team_store: Some(s.team.store.clone()).filter(|t| !t.is_empty()),
            team_namespace: s.team.namespace.clone(),
            team_token: None,
            team_token_set: s.team.token.as_deref().is_some_and(|t| !t.is_empty()),
            secrets_in_keyring: false,
            rerank: s.retrieval.rerank,
            mmr: s.retrieval.mmr,
            mmr_lambda: s.retrieval.mmr_lambda,
            filter: s.retrieval.filter,
            min_score: s.retrieval.min_score,
            llm_rerank: s.enhance.llm_rerank,
            summary: s.enhance.summary,
            query_expansion: s.enhance.query_expansion,
            language: s.language.clone(),
            theme: s.theme.into(),
            photo_classifier: s.models.photo_classifier.into(),
        }
    }
}

impl SettingsDto {
    /// The settings with these fields applied over `previous` (which keeps
    /// every knob the screen does not show, and the key unless replaced).
    pub fn into_settings(self, previous: &Settings) -> Settings {
        let path = |p: Option<String>| p.filter(|p| !p.trim().is_empty()).map(std::path::PathBuf::from);
        let text = |t: Option<String>| t.map(|t| t.trim().to_string()).filter(|t| !t.is_empty());
        let mut next = previous.clone();
        let key_typed = self.api_key.is_some();
        next.llm = LlmPreferences {
            provider: self.provider.into(),
            gguf: path(self.gguf),
            base_url: text(self.base_url),
            model: text(self.model),
            api_key: text(self.api_key),
        };
        if !key_typed {
            next.llm.carry_key_from(&previous.llm);
        }
        next.models_dir = path(self.models_dir);
        let store = text(self.team_store).unwrap_or_default();
        // Like the API key: a token is kept only for the store it was typed for.
        let token = match self.team_token {
            Some(typed) => text(Some(typed)),
            None => previous.team.token.clone().filter(|_| previous.team.store == store),
        };
        next.team = kea_engine::team::TeamConfig { store, namespace: text(self.team_namespace), token };
        next.retrieval.rerank = self.rerank;
        next.retrieval.mmr = self.mmr;
        next.retrieval.mmr_lambda = self.mmr_lambda;
        next.retrieval.filter = self.filter;
        next.retrieval.min_score = self.min_score;
        next.enhance.llm_rerank = self.llm_rerank;
        next.enhance.summary = self.summary;
        next.enhance.query_expansion = self.query_expansion;
        next.language = text(self.language);
        next.theme = self.theme.into();
        next.models.photo_classifier = self.photo_classifier.into();
        next
    }
}

/// How another assistant starts Kea's MCP server (`kea mcp`), shown on the
/// settings page to paste into that assistant's MCP configuration.
#[derive(Debug, Serialize, TS)]
pub struct McpConfigDto {
    /// The `kea` program (installed beside the app).
    pub command: String,
    pub args: Vec<String>,
    /// The configuration entry, as JSON.
    pub snippet: String,
    /// Whether the program is there (a development build may lack it).
    pub found: bool,
}

impl McpConfigDto {
    /// The entry for `program` serving the collections of `data_dir`
    /// (named only when it is not the default one).
    pub fn new(program: &std::path::Path, data_dir: &std::path::Path) -> McpConfigDto {
        let mut args = Vec::new();
        if data_dir != kea_engine::EngineConfig::default_data_dir() {
            args.extend(["--data-dir".to_string(), data_dir.display().to_string()]);
        }
        args.push("mcp".into());
        let command = program.display().to_string();
        let entry = serde_json::json!({ "mcpServers": { "kea": { "command": command, "args": args } } });
        let snippet = serde_json::to_string_pretty(&entry).unwrap_or_default();
        McpConfigDto { command, args, snippet, found: program.is_file() }
    }
}
