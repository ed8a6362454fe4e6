//! IPC shapes for the Models page and the first-run plan: roles, catalog rows,
//! proposals, downloads, remote embedders, re-embedding cost.

use kea_engine::model::catalog::Role;
use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// What a model is for (the Models page's sections).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "lowercase")]
pub enum ModelRoleDto {
    Embedder,
    Reranker,
    Image,
    Llm,
}

impl From<Role> for ModelRoleDto {
    fn from(r: Role) -> Self {
        match r {
            Role::Embedder => ModelRoleDto::Embedder,
            Role::Reranker => ModelRoleDto::Reranker,
            Role::Image => ModelRoleDto::Image,
            Role::Llm => ModelRoleDto::Llm,
        }
    }
}

impl From<ModelRoleDto> for Role {
    fn from(r: ModelRoleDto) -> Self {
        match r {
            ModelRoleDto::Embedder => Role::Embedder,
            ModelRoleDto::Reranker => Role::Reranker,
            ModelRoleDto::Image => Role::Image,
            ModelRoleDto::Llm => Role::Llm,
        }
    }
}

/// One model of the catalog (the Models page).
#[derive(Debug, Serialize, TS)]
pub struct ModelDto {
    pub id: String,
    pub role: ModelRoleDto,
    pub name: String,
    pub languages: Vec<String>,
    #[ts(type = "number")]
    pub size_bytes: u64,
    pub license: String,
    pub description: String,
    pub installed: bool,
    pub active: bool,
    pub downloadable: bool,
}

impl From<&kea_engine::model::manager::ModelListing> for ModelDto {
    fn from(m: &kea_engine::model::manager::ModelListing) -> Self {
        ModelDto {
            id: m.id.clone(),
            role: m.role.into(),
            name: m.name.clone(),
            languages: m.languages.clone(),
            size_bytes: m.size_bytes,
            license: m.license.clone(),
            description: m.description.clone(),
            installed: m.installed,
            active: m.active,
            downloadable: m.downloadable,
        }
    }
}

/// One proposed model of the first-run plan.
#[derive(Debug, Serialize, TS)]
pub struct ProposalDto {
    pub role: ModelRoleDto,
    pub id: String,
    pub languages: Vec<String>,
    #[ts(type = "number")]
    pub bytes: u64,
    pub installed: bool,
    /// A running server's OpenAI-compatible base URL, for its model.
    pub base_url: Option<String>,
    #[ts(type = "number | null")]
    pub reembed_seconds: Option<u64>,
    pub reason: String,
}

/// The first-run plan: the folder's languages, the machine, the servers
/// found and one proposed model per role.
#[derive(Debug, Serialize, TS)]
pub struct PlanDto {
    /// Language code and share of the folder's text, largest first.
    pub languages: Vec<(String, f32)>,
    pub documents: usize,
    pub images: usize,
    #[ts(type = "number")]
    pub ram_bytes: u64,
    pub cores: usize,
    /// `kind at base URL` of each model server found on this machine.
    pub servers: Vec<String>,
    pub proposal: Vec<ProposalDto>,
    /// The folder's languages the embedder in use does not read.
    pub uncovered: Vec<String>,
    pub embedder: String,
    /// The languages the embedder reads (empty when many or not known).
    pub embedder_languages: Vec<String>,
    /// Not yet applied, reviewed or skipped for this data folder: the app offers it on launch.
    pub first_run: bool,
    /// The folder the plan sampled (the knowledge folder).
    pub knowledge_dir: String,
}

impl PlanDto {
    /// `first_run`: the data folder's settings say the plan was never applied, reviewed or skipped.
    pub fn new(p: &kea_engine::setup::Plan, first_run: bool, knowledge_dir: &std::path::Path) -> Self {
        let mut languages: Vec<(String, f32)> = p.languages.iter().map(|(l, s)| (l.clone(), *s)).collect();
        languages.sort_by(|a, b| b.1.total_cmp(&a.1));
        PlanDto {
            languages,
            documents: p.documents,
            images: p.images,
            ram_bytes: p.machine.ram_bytes,
            cores: p.machine.cores,
            servers: p.servers.iter().map(|s| format!("{} at {}", s.kind, s.base_url)).collect(),
            proposal: p
                .proposal
                .iter()
                .map(|m| ProposalDto {
                    role: m.role.into(),
                    id: m.id.clone(),
                    languages: m.languages.clone(),
                    bytes: m.bytes,
                    installed: m.installed,
                    base_url: m.base_url.clone(),
                    reembed_seconds: m.reembed_seconds,
                    reason: m.reason.clone(),
                })
                .collect(),
            uncovered: p.uncovered.clone(),
            embedder: p.embedder.clone(),
            embedder_languages: p.embedder_languages.clone(),
            first_run,
            knowledge_dir: knowledge_dir.display().to_string(),
        }
    }
}

/// Download progress of one model or several installed together (over the
/// install command's Channel): bytes across all of them, `models_done` of
/// `models` finished, the model and file being fetched now.
#[derive(Debug, Clone, Serialize, TS)]
pub struct DownloadDto {
    pub model: String,
    pub file: String,
    #[ts(type = "number")]
    pub done_bytes: u64,
    #[ts(type = "number")]
    pub total_bytes: u64,
    pub models_done: usize,
    pub models: usize,
}

impl From<&kea_engine::model::download::DownloadProgress> for DownloadDto {
    fn from(p: &kea_engine::model::download::DownloadProgress) -> Self {
        DownloadDto {
            model: p.model.clone(),
            file: p.file.clone(),
            done_bytes: p.done_bytes,
            total_bytes: p.total_bytes,
            models_done: p.models_done,
            models: p.models,
        }
    }
}

/// A remote embedder as the Models page enters it.
#[derive(Debug, Deserialize, TS)]
pub struct RemoteEmbedderDto {
    pub base_url: String,
    pub model: String,
    pub api_key: Option<String>,
    #[ts(type = "\"openai\" | \"ollama\"")]
    pub api: String,
    /// Comma-separated, e.g. `zh,en`; empty means many.
    pub languages: String,
}

impl RemoteEmbedderDto {
    pub fn into_config(self) -> kea_engine::remote_embed::RemoteEmbedConfig {
        use kea_engine::remote_embed::{RemoteApi, RemoteEmbedConfig};
        RemoteEmbedConfig {
            base_url: self.base_url.trim().to_string(),
            model: self.model.trim().to_string(),
            api_key: self.api_key.map(|k| k.trim().to_string()).filter(|k| !k.is_empty()),
            api: if self.api == "ollama" { RemoteApi::Ollama } else { RemoteApi::Openai },
            languages: self.languages.split(',').map(|l| l.trim().to_string()).filter(|l| !l.is_empty()).collect(),
            ..Default::default()
        }
    }
}

/// What switching the embedder would cost.
#[derive(Debug, Serialize, TS)]
pub struct ReembedCostDto {
    pub indexed_model: Option<String>,
    pub documents: usize,
    pub chunks: usize,
    pub estimated_seconds: f64,
}

impl From<kea_engine::ReembedCost> for ReembedCostDto {
    fn from(c: kea_engine::ReembedCost) -> Self {
        ReembedCostDto { indexed_model: c.indexed_model, documents: c.documents, chunks: c.chunks, estimated_seconds: c.estimated_seconds }
    }
}
