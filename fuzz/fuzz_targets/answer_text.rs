//! libFuzzer's entry for `kea_fuzz::answer_text` (see fuzz/src/lib.rs).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| kea_fuzz::answer_text(data));
