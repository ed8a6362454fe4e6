//! One server-sent-events line of a chat-completions stream.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(line) = std::str::from_utf8(data) {
        let _ = kea_llm::openai::parse_sse_line(line);
    }
});
