//! IPC shapes for collections: the switcher's list, a collection's own
//! settings as the knowledge pane edits them, and a collection file
//! about to be imported.

use kea_engine::collections::{Collection, CollectionSettings, EmbedderState, Strictness};
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::ErrorDto;

/// How readily a collection answers.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, TS)]
#[serde(rename_all = "lowercase")]
pub enum StrictnessDto {
    Lenient,
    Balanced,
    Strict,
}

/// A collection's own settings (what the app's settings do not decide).
#[derive(Debug, Clone, Serialize, Deserialize, TS)]
pub struct CollectionSettingsDto {
    /// Chunk size in characters (`null`: the default).
    pub chunk_chars: Option<u32>,
    pub chunk_overlap: Option<u32>,
    /// The languages its documents are in: "zh", "en".
    pub languages: Vec<String>,
    /// Rerank with the cross-encoder (`null`: when one is configured).
    pub rerank: Option<bool>,
    pub strictness: StrictnessDto,
}

/// One collection in the switcher.
#[derive(Debug, Clone, Serialize, TS)]
pub struct CollectionDto {
    pub name: String,
    /// The data folder's own collection (cannot be removed or renamed).
    pub default: bool,
    pub selected: bool,
    pub folders: Vec<String>,
    /// The embedder its index is built with (or will be).
    pub embedder: String,
    pub settings: CollectionSettingsDto,
    /// Its documents are in a language its embedder does not read.
    pub warning: Option<String>,
}

impl From<&CollectionSettings> for CollectionSettingsDto {
    fn from(s: &CollectionSettings) -> Self {
        CollectionSettingsDto {
            chunk_chars: s.chunk_chars.map(|c| c as u32),
            chunk_overlap: s.chunk_overlap.map(|c| c as u32),
            languages: s.languages.clone(),
            rerank: s.rerank,
            strictness: match s.strictness {
                Strictness::Lenient => StrictnessDto::Lenient,
                Strictness::Balanced => StrictnessDto::Balanced,
                Strictness::Strict => StrictnessDto::Strict,
            },
        }
    }
}

impl CollectionSettingsDto {
    /// `current` with what the webview edits (the embedder stays).
    pub fn into_settings(self, current: &CollectionSettings) -> Result<CollectionSettings, ErrorDto> {
        let settings = CollectionSettings {
            chunk_chars: self.chunk_chars.map(|c| c as usize),
            chunk_overlap: self.chunk_overlap.map(|c| c as usize),
            languages: self.languages,
            rerank: self.rerank,
            strictness: match self.strictness {
                StrictnessDto::Lenient => Strictness::Lenient,
                StrictnessDto::Balanced => Strictness::Balanced,
                StrictnessDto::Strict => Strictness::Strict,
            },
            ..current.clone()
        };
        settings.validate()?;
        Ok(settings)
    }
}

impl CollectionDto {
    pub fn new(collection: &Collection, selected: bool, state: EmbedderState) -> CollectionDto {
        CollectionDto {
            name: collection.name.clone(),
            default: collection.is_default(),
            selected,
            folders: collection.folders.iter().map(|f| f.display().to_string()).collect(),
            embedder: state.embedder,
            settings: CollectionSettingsDto::from(&collection.settings),
            warning: state.warning,
        }
    }
}

/// A collection file the person picked, as its checked manifest describes
/// it, before it is imported.
#[derive(Debug, Clone, Serialize, TS)]
pub struct CollectionFileDto {
    /// The file (the person chose it: `import_collection` accepts it).
    pub file: String,
    pub name: String,
    pub documents: u32,
    pub has_files: bool,
    /// The remote embedder it names, in full: every question asked of the
    /// collection goes there, so the person confirms it before import.
    pub remote_embedder: Option<String>,
}

impl CollectionFileDto {
    pub fn new(file: &std::path::Path, summary: kea_engine::keakb::Summary) -> CollectionFileDto {
        CollectionFileDto {
            file: file.display().to_string(),
            name: summary.name,
            documents: summary.documents.min(u32::MAX as usize) as u32,
            has_files: summary.has_files,
            remote_embedder: summary.remote_embedder,
        }
    }
}
