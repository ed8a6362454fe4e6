//! Issue 29's first run in the real app: a fresh data dir over a Chinese
//! and English folder; the first-run card proposes a set that reads both
//! languages; one click downloads it from a local hub on loopback (one
//! progress across the models, paused and resumed mid-file), switches,
//! re-embeds the folder, and a question is answered with a citation.
//!
//! The hub serves fixture files in the hub's URL layout: no
//! multilingual-e5-small ONNX weights are reachable from this machine, so
//! all-MiniLM's files stand where the catalog's multilingual-e5-small lives,
//! and the generated fixture cross-encoder where bge-reranker-base lives.
//! This checks the flow (plan → download → verify → switch → re-embed →
//! cited answer), not e5's quality: the integration test
//! `a_chinese_question_over_english_documents_shows_the_english_page`
//! checks e5 itself through its real server.

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use kea_llm::testing::{scripted, sse_tokens};

use crate::harness::App;
use crate::hub::{repository, Fault, LocalHub, COMMIT, ONNX_TEXT_MODEL};

const EMBEDDER: &str = "multilingual-e5-small";
const EMBEDDER_REPO: &str = "intfloat/multilingual-e5-small";
const RERANKER: &str = "bge-reranker-base";
const WAIT: Duration = Duration::from_secs(180);

fn hub_files(repo: &Path) -> HashMap<String, Vec<u8>> {
    let mut files = repository(EMBEDDER_REPO, &repo.join("models/all-minilm-l6-v2"), &ONNX_TEXT_MODEL);
    files.extend(repository("BAAI/bge-reranker-base", &repo.join("tests/fixture-models/fixture-reranker"), &ONNX_TEXT_MODEL));
    files
}

#[tokio::test(flavor = "multi_thread")]
async fn the_first_run_card_sets_up_the_proposed_models_in_one_click() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    // The tokenizer trickles out, so the combined progress can be seen.
    let hub = LocalHub::start(hub_files(repo), HashMap::from([(format!("{EMBEDDER_REPO}/tokenizer.json"), Fault::Slow)]));
    let installs = tempfile::tempdir().unwrap();
    let models = std::env::join_paths([installs.path(), &repo.join("models"), &repo.join("tests/fixture-models")]).unwrap();
    let env = [("HF_ENDPOINT", hub.endpoint.clone()), ("KEA_MODELS_DIR", models.to_string_lossy().into_owned())];
    let answer = ["Cockatiels ", "eat ", "seeds, ", "pellets ", "and ", "fresh ", "vegetables ", "[S1]."];
    let llm = scripted(vec![crate::router_says_retrieve("cockatiel diet"), sse_tokens(&answer)]);
    let seed = [repo.join("knowledge/parrots"), repo.join("knowledge/鹦鹉")];
    let mut app = App::start_with("first-run", Some(&format!("{}/v1", llm.url)), &env, &seed).await;

    // The card names the folder's languages and the set that reads them, with the download size on its button.
    let card = app.wait_text("#setup-card", WAIT, |t| t.contains(EMBEDDER)).await;
    assert!(card.contains("Chinese") && card.contains("English") && card.contains(RERANKER), "{card}");
    let apply = app.text("#setup-card button.setup-all").await;
    assert!(apply.starts_with("Download 1.5 GB"), "the two downloads' catalog sizes: {apply}");
    assert!(card.contains("embedded again"), "the re-embedding cost is shown before the click: {card}");
    // It names the folder it read, with the way to choose another (also under the knowledge pane).
    let folder = app.knowledge().display().to_string();
    assert!(card.contains(&format!("Kea reads the documents in {folder}")) && card.contains("Change folder…"), "{card}");
    app.wait_text("#knowledge-folder-path", WAIT, |t| t == folder).await;
    app.shot("first-run-card").await;

    app.click("#setup-card button.setup-all").await;
    let progress = app.wait_text("#setup-card .download span", WAIT, |t| t.contains("(1/2)") && t.contains("tokenizer.json")).await;
    assert!(progress.contains(EMBEDDER) && progress.contains(" of "), "{progress}");
    app.shot("first-run-downloading").await;

    // Paused mid-file, then resumed: the file is fetched on from where it stopped.
    app.click("#setup-card .download button.pause").await;
    app.wait_text("#setup-card .download span", WAIT, |t| t.starts_with("Paused at")).await;
    app.shot("first-run-paused").await;
    app.click("#setup-card .download button.resume").await;
    let resumed = format!("GET /{EMBEDDER_REPO}/resolve/{COMMIT}/tokenizer.json range=");

    // Switched and re-embedded: the index is the new embedder's (switching
    // empties it) and holds every passage again; the card and the language
    // notice are gone.
    let embedded = format!("{EMBEDDER} · ");
    app.wait_text("#engine-state", WAIT, |t| t.starts_with(&embedded)).await;
    app.wait_text("#knowledge-summary", WAIT, |t| t.contains("20 documents · 120 chunks")).await;
    // No index run still going (a second switch may re-open the engine): the question meets the whole index.
    app.wait_for("#progress[hidden]", WAIT).await;
    app.wait_text("#knowledge-summary", WAIT, |t| t.contains("20 documents · 120 chunks")).await;
    app.wait_for("#setup-card[hidden]", WAIT).await;
    app.wait_for("#language-notice[hidden]", WAIT).await;
    app.shot("first-run-done").await;

    assert!(hub.log().iter().any(|r| r.starts_with(&resumed)), "{:?}", hub.log());
    // Installed pinned, from the hub, into the first models folder; in use.
    for id in [EMBEDDER, RERANKER] {
        let manifest: serde_json::Value = serde_json::from_slice(&std::fs::read(installs.path().join(id).join("kea-model.json")).unwrap()).unwrap();
        assert_eq!(manifest["source"]["commit"], COMMIT, "{id}: {manifest}");
    }
    let settings: serde_json::Value = serde_json::from_slice(&std::fs::read(app.root.path().join("data/settings.json")).unwrap()).unwrap();
    assert_eq!((settings["models"]["embedder"].as_str(), settings["models"]["reranker"].as_str()), (Some(EMBEDDER), Some(RERANKER)), "{settings}");

    app.wait_for("#question", WAIT).await.send_keys("What do cockatiels eat?\u{E007}").await.unwrap();
    app.wait_for(r#".message.assistant .answer button.cite[data-cite="S1"]"#, WAIT).await.click().await.unwrap();
    app.wait_text("#passage-source", WAIT, |t| t.ends_with("cockatiel.md")).await;
    app.shot("first-run-answer").await;
    app.stop().await;
}
