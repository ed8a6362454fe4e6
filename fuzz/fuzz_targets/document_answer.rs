//! libFuzzer's entry for `kea_fuzz::document_answer` (see fuzz/src/lib.rs).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| kea_fuzz::document_answer(data));
