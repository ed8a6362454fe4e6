//! Kea's engine: keeps an index of a knowledge folder in step with the disk
//! (extract → chunk → embed only what changed → SQLite + usearch) and
//! searches it. It has no GUI dependency; the CLI and the desktop shell are
//! thin callers of [`Engine`].

pub mod chunk;
pub mod embed;
pub mod error;
pub mod extract;
pub mod frontmatter;
pub mod model;
pub mod store;
pub mod vectors;

pub use error::{Error, ErrorKind, Result};
