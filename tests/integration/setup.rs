//! `kea setup`: the first-run plan proposes models for the languages the
//! folder is written in, and a model server running on this machine instead
//! of a download; `--yes` installs and uses them.

use serde_json::Value;

use super::util::{LlamaServer, Sandbox};

fn plan(sandbox: &Sandbox, extra: &[&str]) -> Value {
    let mut args = vec!["setup", "--plan", "--json"];
    args.extend_from_slice(extra);
    sandbox.json(&args)
}

/// A folder of English notes.
fn english_folder() -> Sandbox {
    let sandbox = Sandbox::empty();
    std::fs::write(
        sandbox.path("notes.md"),
        "# Kitchen\n\nThe oven needs ten minutes to heat up before baking bread.\n\nClean the filter of the extractor hood every month.\n",
    )
    .unwrap();
    sandbox
}

fn proposed<'a>(plan: &'a Value, role: &str) -> Option<&'a Value> {
    plan["proposal"].as_array().unwrap().iter().find(|p| p["role"] == role)
}

#[test]
fn a_chinese_and_english_folder_gets_an_embedder_that_reads_both() {
    let sandbox = Sandbox::with_samples();
    let plan = plan(&sandbox, &[]);
    let share = |l: &str| plan["languages"][l].as_f64().unwrap_or(0.0);
    assert!(share("zh") > 0.3 && share("en") > 0.3, "the samples are about half Chinese: {}", plan["languages"]);
    let embedder = proposed(&plan, "embedder").unwrap();
    let languages = embedder["languages"].to_string();
    assert!(languages.contains("multilingual") || (languages.contains("zh") && languages.contains("en")), "{embedder}");
    assert!(embedder["reason"].as_str().unwrap().contains("Chinese"), "{embedder}");
    assert!(embedder["reembed_seconds"].as_u64().unwrap() > 0, "the cost of re-embedding is shown: {embedder}");
    assert!(plan["machine"]["ram_bytes"].as_u64().unwrap() > 0 && plan["machine"]["cores"].as_u64().unwrap() > 0);
    let settings = sandbox.data.join("settings.json");
    assert!(!settings.exists() || !std::fs::read_to_string(&settings).unwrap().contains("multilingual"), "--plan changes nothing");
}

#[test]
fn an_english_folder_keeps_the_bundled_english_embedder() {
    let sandbox = english_folder();
    std::fs::write(sandbox.path("garden.txt"), "Water the tomatoes in the evening, never in the midday sun, and mulch the beds in May.\n").unwrap();
    let plan = plan(&sandbox, &[]);
    assert_eq!(plan["languages"].as_object().unwrap().keys().collect::<Vec<_>>(), ["en"], "{}", plan["languages"]);
    let embedder = proposed(&plan, "embedder").unwrap();
    assert_eq!(embedder["id"], "all-minilm-l6-v2");
    assert_eq!((embedder["installed"].as_bool(), embedder["bytes"].as_u64()), (Some(true), Some(0)), "nothing to download: {embedder}");
}

#[test]
fn a_model_server_running_here_is_proposed_as_the_language_model() {
    let sandbox = Sandbox::with_samples();
    let server = LlamaServer::start();
    let plan = plan(&sandbox, &["--server", &server.base_url]);
    let llm = proposed(&plan, "llm").expect("a language model is proposed");
    assert_eq!(llm["base_url"], server.base_url.as_str(), "{llm}");
    assert!(llm["id"].as_str().unwrap().contains("smollm2"), "the model the server lists: {llm}");
    assert_eq!(llm["bytes"], 0);
    let listed = plan["servers"].as_array().unwrap();
    assert!(listed.iter().any(|s| s["base_url"] == server.base_url.as_str()), "{listed:?}");
}

/// `kea setup --yes` installs what the plan proposes from the hub (a local
/// one serving the fixture cross-encoder where the catalog's reranker
/// lives), makes it active, and re-embeds nothing when the embedder stays.
#[test]
fn setup_yes_installs_and_uses_the_proposed_models() {
    let sandbox = english_folder();
    sandbox.index();
    let hub = super::hub::LocalHub::start(super::models::reranker_files(), std::collections::HashMap::new());
    let models = sandbox.data.join("models").display().to_string();
    let planned = plan(&sandbox, &[]);
    let out = sandbox.command(&["--models-dir", &models, "setup", "--yes", "--skip", "llm"]).env("HF_ENDPOINT", &hub.endpoint).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let rows = sandbox.json(&["--models-dir", &models, "models", "list", "--json"]);
    let active = |id: &str| rows.as_array().unwrap().iter().any(|r| r["id"] == id && r["active"] == true);
    let applied: Vec<&Value> = planned["proposal"].as_array().unwrap().iter().filter(|p| p["role"] != "llm").collect();
    assert!(!applied.is_empty());
    for p in applied {
        assert!(active(p["id"].as_str().unwrap()), "{} is in use after --yes: {rows}", p["id"]);
    }
    let downloaded = proposed(&planned, "reranker").is_some();
    assert_eq!(hub.log().iter().any(|r| r.starts_with("GET")), downloaded, "the reranker, and only it, came from the hub: {:?}", hub.log());
    assert_eq!(sandbox.index()["embedded"], 0, "the embedder stayed: nothing re-embedded");
    let settings: Value = serde_json::from_str(&std::fs::read_to_string(sandbox.data.join("settings.json")).unwrap()).unwrap();
    assert_eq!(settings["setup_done"], true, "the app does not offer the plan again: {settings}");
    assert!(!super::util::repo_root().join("models/bge-reranker-base").exists(), "installed into --models-dir only");
}
