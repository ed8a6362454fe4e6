//! Markdown and plain-text extraction followed by heading-aware chunking:
//! no panic, every chunk non-empty, and chunk text always taken from the
//! extracted text's characters (valid UTF-8 by construction).
#![no_main]
use kea_engine::chunk::{chunk_document, ChunkConfig};
use kea_engine::extract::{extract, DocKind};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    for kind in [DocKind::Markdown, DocKind::Text] {
        if let Ok(doc) = extract(kind, data) {
            for chunk in chunk_document(&doc, &ChunkConfig::default()) {
                assert!(!chunk.text.trim().is_empty(), "empty chunk from {kind:?}");
            }
        }
    }
});
