//! The .docx extractor on arbitrary bytes (zip container and XML): errors
//! are fine, panics and unbounded memory are not (libFuzzer's -rss_limit_mb).
#![no_main]
use kea_engine::extract::{extract, DocKind};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = extract(DocKind::Docx, data);
});
