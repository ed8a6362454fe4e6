//! libFuzzer's entry for `kea_fuzz::model_ids_and_paths` (see fuzz/src/lib.rs).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| kea_fuzz::model_ids_and_paths(data));
