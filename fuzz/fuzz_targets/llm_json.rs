//! What a language model may say, parsed: the router's route, the
//! identification decision, and the JSON object finder they share.
#![no_main]
use kea_engine::chat::router::parse_route;
use kea_engine::identify::{parse_decision, Candidate};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let _ = kea_llm::json::extract_object(text);
    let _ = parse_route(text);
    let candidates = [
        Candidate { name: "Cockatiel".into(), zh: Some("玄凤鹦鹉".into()), latin: None, probability: 0.6 },
        Candidate { name: "Budgerigar".into(), zh: None, latin: Some("Melopsittacus undulatus".into()), probability: 0.4 },
    ];
    if let Some(decision) = parse_decision(text, &candidates) {
        let name = decision.final_name.as_str();
        assert!(name == "uncertain" || candidates.iter().any(|c| c.name == name), "invented name {name}");
    }
});
