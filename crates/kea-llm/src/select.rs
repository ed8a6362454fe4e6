//! Choosing a provider. `auto`: the configured HTTP endpoint; else an Ollama
//! server on 127.0.0.1:11434 if it answers; else the embedded GGUF if one is
//! installed (and this build has llama.cpp); else none. The choice comes
//! with the reason, which the CLI and the UI show. In `auto`, an embedded
//! model whose measured groundedness is under the floor only routes: the
//! answer is quoted from the passages instead of written by it.

use std::path::PathBuf;
use std::time::Duration;

pub use crate::gguf::{GgufModel, LlmManifest, GROUNDEDNESS_FLOOR};
use crate::openai::{OpenAiConfig, OpenAiProvider};
use crate::{Completion, LlmError, Provider, ProviderKind, Request};

/// The embedded model used when none is named. Measured on
/// tests/golden/routing.jsonl (32 questions): SmolLM2-135M routed 47%,
/// gemma-3-270m 44%, and SmolLM2 generates faster and has a chat template.
pub const DEFAULT_EMBEDDED_MODEL: &str = "smollm2-135m-instruct";

/// The user's choice of provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProviderPreference {
    #[default]
    Auto,
    Embedded,
    Openai,
    None,
}

/// LLM settings (from flags, the settings file or the environment).
#[derive(Debug, Clone, Default)]
pub struct LlmSettings {
    pub preference: ProviderPreference,
    pub base_url: Option<String>,
    pub model: Option<String>,
    pub api_key: Option<String>,
    /// An explicit GGUF file; else `embedded_model` is looked up in `model_dirs`.
    pub gguf: Option<PathBuf>,
    pub embedded_model: String,
    pub model_dirs: Vec<PathBuf>,
    /// Generation threads; default: every core up to four, else all but one.
    pub threads: Option<usize>,
    /// Whether to probe for a local Ollama server in `auto`.
    pub probe_ollama: bool,
}

impl LlmSettings {
    /// `auto` settings from the environment (the same variables the CLI
    /// reads): KEA_LLM_BASE_URL, KEA_LLM_MODEL, KEA_LLM_API_KEY, KEA_GGUF,
    /// KEA_EMBEDDED_MODEL.
    pub fn from_env(model_dirs: Vec<PathBuf>) -> LlmSettings {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        LlmSettings {
            preference: ProviderPreference::Auto,
            base_url: var("KEA_LLM_BASE_URL"),
            model: var("KEA_LLM_MODEL"),
            api_key: var("KEA_LLM_API_KEY"),
            gguf: var("KEA_GGUF").map(PathBuf::from),
            embedded_model: var("KEA_EMBEDDED_MODEL").unwrap_or_else(|| DEFAULT_EMBEDDED_MODEL.into()),
            model_dirs,
            threads: None,
            probe_ollama: true,
        }
    }
}

/// The provider in use and why it was chosen.
pub struct LlmChoice {
    pub provider: Box<dyn Provider>,
    pub reason: String,
}

/// Finds the embedded model: an explicit file, or `<dir>/<id>/kea-model.json`.
pub fn find_gguf(settings: &LlmSettings) -> Option<GgufModel> {
    crate::gguf::find(settings.gguf.as_deref(), &settings.model_dirs, &settings.embedded_model)
}

/// No language model: every request fails with [`LlmError::NotConfigured`].
pub struct NoProvider;

impl Provider for NoProvider {
    fn kind(&self) -> ProviderKind {
        ProviderKind::None
    }

    fn describe(&self) -> String {
        "no language model".into()
    }

    fn complete(&self, _: &Request, _: &mut dyn FnMut(&str), _: &(dyn Fn() -> bool + Sync)) -> Result<Completion, LlmError> {
        Err(LlmError::NotConfigured)
    }

    fn writes_answers(&self) -> bool {
        false
    }
}

const OLLAMA: &str = "http://127.0.0.1:11434";

/// The first model an Ollama server lists, if one answers quickly.
fn probe_ollama() -> Option<String> {
    let agent = ureq::Agent::config_builder().timeout_global(Some(Duration::from_millis(400))).build().new_agent();
    let mut response = agent.get(&format!("{OLLAMA}/api/tags")).call().ok()?;
    let tags: serde_json::Value = response.body_mut().read_json().ok()?;
    tags["models"].get(0)?["name"].as_str().map(str::to_string)
}

fn openai(settings: &LlmSettings, base_url: &str, model: &str) -> Box<dyn Provider> {
    let mut config = OpenAiConfig::new(base_url, model);
    config.api_key = settings.api_key.clone();
    Box::new(OpenAiProvider::new(config))
}

/// A model that routes but does not write answers (under the floor).
struct RoutesOnly(Box<dyn Provider>);

impl Provider for RoutesOnly {
    fn kind(&self) -> ProviderKind {
        self.0.kind()
    }

    fn describe(&self) -> String {
        format!("{}, routing only", self.0.describe())
    }

    fn complete(&self, request: &Request, on_token: &mut dyn FnMut(&str), cancelled: &(dyn Fn() -> bool + Sync)) -> Result<Completion, LlmError> {
        self.0.complete(request, on_token, cancelled)
    }

    fn writes_answers(&self) -> bool {
        false
    }

    fn is_tiny(&self) -> bool {
        self.0.is_tiny()
    }
}

/// Loads the embedded model; with `floor`, one measured under the
/// groundedness floor is wrapped to route only.
fn embedded(settings: &LlmSettings, floor: bool) -> Result<Option<LlmChoice>, LlmError> {
    let Some(model) = find_gguf(settings) else { return Ok(None) };
    #[cfg(feature = "llama")]
    {
        let mut reason = format!("embedded GGUF {}", model.path.display());
        let mut provider: Box<dyn Provider> = Box::new(crate::llama::LlamaProvider::load(&model, settings.threads)?);
        if floor && model.below_floor() {
            reason.push_str(&format!(" (routing only: it grounded under {:.0}% of its answer sentences, so answers are quoted)", GROUNDEDNESS_FLOOR * 100.0));
            provider = Box::new(RoutesOnly(provider));
        }
        Ok(Some(LlmChoice { provider, reason }))
    }
    #[cfg(not(feature = "llama"))]
    {
        let _ = floor;
        Err(LlmError::Model { path: model.path, message: "this build has no embedded llama.cpp (feature `llama`)".into() })
    }
}

/// Picks the provider for `settings` (see the module docs for `auto`).
pub fn auto_select(settings: &LlmSettings) -> Result<LlmChoice, LlmError> {
    let none = |reason: &str| LlmChoice { provider: Box::new(NoProvider), reason: reason.to_string() };
    match settings.preference {
        ProviderPreference::None => Ok(none("the provider is set to none")),
        ProviderPreference::Openai => {
            let base = settings.base_url.as_deref().ok_or_else(|| LlmError::Protocol("--provider openai needs a base URL".into()))?;
            let model = settings.model.as_deref().unwrap_or("default");
            Ok(LlmChoice { provider: openai(settings, base, model), reason: format!("configured endpoint {base}") })
        }
        ProviderPreference::Embedded => embedded(settings, false)?.ok_or_else(|| LlmError::Model {
            path: settings.model_dirs.first().cloned().unwrap_or_default().join(&settings.embedded_model),
            message: "no embedded model installed (run `make models`)".into(),
        }),
        ProviderPreference::Auto => {
            if let Some(base) = &settings.base_url {
                let model = settings.model.as_deref().unwrap_or("default");
                return Ok(LlmChoice { provider: openai(settings, base, model), reason: format!("configured endpoint {base}") });
            }
            if settings.probe_ollama {
                if let Some(model) = settings.model.clone().or_else(probe_ollama) {
                    return Ok(LlmChoice { provider: openai(settings, &format!("{OLLAMA}/v1"), &model), reason: format!("Ollama answered on {OLLAMA}") });
                }
            }
            match embedded(settings, true) {
                Ok(Some(choice)) => Ok(choice),
                Ok(None) => Ok(none("no endpoint configured, no Ollama server, no embedded model installed")),
                Err(e) => Ok(none(&format!("the embedded model could not be used: {e}"))),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(id: &str, groundedness: Option<f32>) -> GgufModel {
        GgufModel { id: id.into(), path: PathBuf::from("m.gguf"), chat_template: true, context: 4096, groundedness }
    }

    #[test]
    fn measured_tiny_models_are_under_the_floor_and_unmeasured_ones_are_not() {
        assert!(model("smollm2-135m-instruct", None).below_floor());
        assert!(model("gemma-3-270m", None).below_floor());
        assert!(!model("qwen2.5-1.5b-instruct", None).below_floor(), "unmeasured: may answer");
        assert!(!model("smollm2-135m-instruct", Some(0.8)).below_floor(), "a manifest's own figure wins");
        assert!(model("my-model", Some(0.2)).below_floor());
        assert!(!NoProvider.writes_answers());
    }
}
