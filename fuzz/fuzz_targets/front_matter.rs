//! YAML-ish front matter: the body offset must lie on a character boundary
//! inside the text, and lookups never panic.
#![no_main]
use kea_engine::frontmatter::split_front_matter;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let (front, body) = split_front_matter(text);
    assert!(body <= text.len() && text.is_char_boundary(body), "body offset {body} of {}", text.len());
    let _ = front.get("title");
    let _ = front.get("tags");
});
