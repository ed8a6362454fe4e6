//! `kea identify` with the generated CLIP fixture models (see
//! scripts/make_fixture_models.py: mean colour vs colours assigned to four
//! species names), so each branch is reached by a solid-colour photo:
//! green → a clear budgerigar; yellow-green → a doubtful sun conure /
//! budgerigar checked against the knowledge base and decided by the
//! embedded LLM; magenta → no plausible label.

use serde_json::Value;

use super::util::{solid_png, Sandbox};

fn identify(sandbox: &Sandbox, image: &[u8], extra: &[&str]) -> Value {
    let path = sandbox.data.parent().unwrap().join("photo.png");
    std::fs::write(&path, image).unwrap();
    let mut args = vec!["identify", path.to_str().unwrap(), "--image-model", "fixture-clip-vision", "--json"];
    args.extend_from_slice(extra);
    sandbox.json(&args)
}

fn indexed() -> Sandbox {
    let sandbox = Sandbox::with_samples();
    sandbox.index();
    sandbox
}

#[test]
fn a_clear_photo_is_answered_directly() {
    let sandbox = indexed();
    let r = identify(&sandbox, &solid_png(64, [0, 255, 0]), &["--provider", "none"]);
    assert_eq!(r["level"], "High");
    assert_eq!(r["used_retrieval"], false);
    assert_eq!(r["candidates"][0]["name"], "Budgerigar");
    assert_eq!(r["candidates"][0]["zh"], "虎皮鹦鹉");
    assert!(r["candidates"].as_array().unwrap().len() == 3);
    assert_eq!(r["visual_description"], "green");
    let reply = r["reply"].as_str().unwrap();
    assert!(reply.starts_with("Result: Budgerigar"), "{reply}");
    assert!(reply.contains("[S"), "a confident result quotes the knowledge base: {reply}");
    assert!(r["evidence"].as_array().unwrap().iter().any(|e| e["source"] == "parrots/budgerigar.md"), "{}", r["evidence"]);
}

#[test]
fn a_doubtful_photo_is_checked_against_the_knowledge_base() {
    let sandbox = indexed();
    let r = identify(&sandbox, &solid_png(64, [128, 255, 0]), &["--provider", "embedded"]);
    assert_eq!(r["level"], "Medium");
    assert_eq!(r["used_retrieval"], true);
    let names: Vec<&str> = r["candidates"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(&names[..2], ["Sun Conure", "Budgerigar"]);
    assert_eq!(r["queries"].as_array().unwrap().len(), 3);
    let evidence = r["evidence"].as_array().unwrap();
    assert!(!evidence.is_empty());
    assert!(evidence.iter().any(|e| e["source"].as_str().unwrap().contains("sun-conure") || e["source"].as_str().unwrap().contains("budgerigar")));
    let decision = &r["decision"];
    let final_name = decision["final_name"].as_str().unwrap();
    if final_name == "uncertain" {
        assert_eq!(decision["need_more_info"], true, "an uncertain decision asks for more: {decision}");
        assert!(!decision["followup"].as_str().unwrap().trim().is_empty(), "with a question for the user: {decision}");
    } else {
        assert!(names[..2].contains(&final_name), "a doubtful photo is decided between the two closest candidates: {decision}");
    }
}

#[test]
fn chinese_replies_and_queries() {
    let sandbox = indexed();
    let r = identify(&sandbox, &solid_png(64, [128, 255, 0]), &["--provider", "none", "--lang", "zh"]);
    assert!(r["queries"][0].as_str().unwrap().contains("太阳锥尾鹦鹉 / 虎皮鹦鹉"));
    assert!(r["reply"].as_str().unwrap().starts_with("识别结果不确定"), "no LLM: the user judges from candidates and evidence");
}

#[test]
fn a_bird_outside_the_knowledge_base_is_said_to_be_so() {
    let sandbox = indexed();
    let r = identify(&sandbox, &solid_png(64, [255, 0, 255]), &["--provider", "none"]);
    assert_eq!(r["in_knowledge_base"], false);
    assert_eq!(r["used_retrieval"], false);
    assert!(r["reply"].as_str().unwrap().contains("not in your knowledge base"));
}

#[test]
fn the_identified_species_becomes_the_conversation_subject() {
    let sandbox = indexed();
    let first = sandbox.json(&["ask", "hello", "--provider", "none", "--json"]);
    let chat = first["chat_id"].to_string();
    identify(&sandbox, &solid_png(64, [0, 255, 0]), &["--provider", "none", "--chat", &chat]);
    let follow = sandbox.json(&["ask", "what does it eat?", "--chat", &chat, "--provider", "none", "--json"]);
    assert_eq!(follow["route"]["is_followup"], true);
    assert!(follow["route"]["search_query"].as_str().unwrap().contains("Budgerigar"));
}

#[test]
fn a_chinese_identification_is_a_message_and_the_follow_up_searches_the_chinese_name() {
    let sandbox = indexed();
    let r = identify(&sandbox, &solid_png(64, [0, 255, 0]), &["--provider", "none", "--lang", "zh"]);
    let reply = r["reply"].as_str().unwrap();
    assert!(reply.starts_with("识别结果：虎皮鹦鹉") && reply.contains("[S"), "{reply}");
    let chat = r["chat_id"].to_string();
    let follow = sandbox.json(&["ask", "它吃什么？", "--chat", &chat, "--provider", "none", "--json"]);
    assert_eq!(follow["route"]["is_followup"], true);
    let query = follow["route"]["search_query"].as_str().unwrap();
    assert!(query.starts_with("虎皮鹦鹉"), "the subject's Chinese name: {query}");
    assert!(follow["answer"].as_str().unwrap().contains("[S1]"), "{}", follow["answer"]);
    let db = rusqlite::Connection::open(sandbox.data.join("kea.sqlite3")).unwrap();
    let photos: i64 = db.query_row("SELECT COUNT(*) FROM messages WHERE role = 'user' AND content = '【照片】'", [], |r| r.get(0)).unwrap();
    assert_eq!(photos, 1, "the photo is a message of the conversation");
}

#[test]
fn bad_images_and_missing_models_fail_clearly() {
    let sandbox = indexed();
    let dir = sandbox.data.parent().unwrap();
    let cases: [(&str, Vec<u8>, &str); 3] = [
        ("notes.png", b"just some text, not an image".to_vec(), "not an image"),
        ("empty.png", Vec::new(), "empty"),
        ("cut.png", solid_png(64, [0, 255, 0])[..200].to_vec(), "truncated"),
    ];
    for (name, bytes, expected) in cases {
        let path = dir.join(name);
        std::fs::write(&path, bytes).unwrap();
        let out = sandbox.run(&["identify", path.to_str().unwrap(), "--image-model", "fixture-clip-vision", "--provider", "none"]);
        assert!(!out.status.success(), "{name} must fail");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(expected), "{name}: {stderr}");
    }
    let photo = dir.join("ok.png");
    std::fs::write(&photo, solid_png(16, [0, 255, 0])).unwrap();
    let out = sandbox.run(&["identify", photo.to_str().unwrap(), "--provider", "none"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("No image model is installed") && stderr.contains("docs/guide.md"), "{stderr}");
}

#[test]
fn a_vision_llm_can_classify_instead_of_clip() {
    // No vision model runs here: a scripted OpenAI-compatible endpoint answers
    // as one would, and records what Kea sent.
    let answer = serde_json::json!({
        "top_candidates": [{"name": "玄凤鹦鹉", "score": 0.9}, {"name": "Budgerigar", "score": 0.1}],
        "visual_features": {"description": "grey body, yellow crest, orange cheek patch"},
        "explanation": "crest and cheek patch", "confidence_level": "High"
    });
    let server = kea_llm::testing::scripted(vec![kea_llm::testing::sse_stream(&answer.to_string())]);
    let sandbox = indexed();
    let base = format!("{}/v1", server.url);
    let r =
        identify(&sandbox, &solid_png(32, [128, 128, 128]), &["--classifier", "vision-llm", "--provider", "openai", "--base-url", &base, "--model", "vision"]);
    assert_eq!(r["candidates"][0]["name"], "Cockatiel", "names are matched back to labels");
    assert_eq!(r["level"], "High");
    assert_eq!(r["visual_description"], "grey body, yellow crest, orange cheek patch");
    let sent = server.bodies.lock().unwrap()[0].clone();
    assert!(sent.contains("data:image/png;base64,"), "the photo is sent as a data URL");
    assert!(sent.contains("Rosy-faced Lovebird"), "the labels are offered");
}
