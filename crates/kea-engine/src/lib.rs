//! Kea's engine: keeps an index of a knowledge folder in step with the disk
//! (extract → chunk → embed only what changed → SQLite + usearch) and
//! searches it. It has no GUI dependency; the CLI and the desktop shell are
//! thin callers of [`Engine`].

pub mod access;
pub mod chat;
pub mod chunk;
pub mod collections;
pub mod embed;
mod engine;
pub mod error;
pub mod eval;
pub mod extract;
pub mod folders;
pub mod frontmatter;
pub mod identify;
pub mod import;
mod ingest;
pub mod keakb;
pub mod labels;
pub mod language;
pub mod lexicon;
pub mod model;
pub mod numbers;
pub mod output;
pub mod profile;
pub mod progress;
pub mod reader;
pub mod remote_embed;
pub mod rerank;
pub mod retrieve;
pub mod scan;
pub mod secrets;
pub mod segment;
pub mod settings;
pub mod setup;
pub mod shell;
pub mod store;
pub mod team;
pub mod vectors;
pub mod viewer;
pub mod watch;
pub mod web;

pub use chat::{Answerer, Conversations};
pub use engine::{Documents, Engine, EngineConfig, Indexer, ReembedCost, Status, TeamStatus, WebPageAdded};
pub use error::{Error, ErrorKind, Result};
pub use identify::Identifier;
pub use ingest::FileBudget;
pub use progress::{CancelToken, FileError, IndexEvent, ProgressSink, SyncReport};
pub use retrieve::{Hit, Retrieval, RetrievalConfig, Retriever, SearchMode};
pub use watch::{watch, WatchHandle};
