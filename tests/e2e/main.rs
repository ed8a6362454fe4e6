//! End-to-end tests of the real desktop app in its real webview (WebKitGTK
//! through tauri-driver), each step saved as a screenshot under
//! `target/tmp/e2e-screenshots/<test>/`. The language model is a scripted
//! OpenAI-compatible endpoint on loopback (a real local model cannot be
//! made to cite a given passage or emit a given payload); everything else
//! is real: the engine, MiniLM, SQLite, usearch and the fixture CLIP model.

mod access;
mod collections;
mod conversation;
mod file_status;
mod first_run;
mod harness;
#[path = "../integration/hub.rs"]
mod hub;
mod keyboard;
mod layout;
mod models;
mod soak;

use std::path::Path;
use std::time::Duration;

use fantoccini::Locator;
use harness::{sample_parrots, App};
use kea_llm::testing::{scripted, sse_stream, sse_tokens};
use serde_json::json;

const INDEXING: Duration = Duration::from_secs(120);
const ANSWER: Duration = Duration::from_secs(60);

fn router_says_retrieve(query: &str) -> Vec<u8> {
    sse_stream(&json!({"use_rag": true, "search_query": query, "is_followup": false}).to_string())
}

#[tokio::test(flavor = "multi_thread")]
// One user journey through the app, step by step, with a screenshot per step.
#[allow(clippy::too_many_lines)]
async fn import_ask_cite_identify_evaluate_and_configure() {
    let answer = ["Cockatiels ", "eat ", "**seeds**, ", "pellets ", "and ", "fresh ", "vegetables ", "[S1]."];
    let llm = scripted(vec![router_says_retrieve("cockatiel diet"), sse_tokens(&answer)]);
    let mut app = App::start("main-flow", Some(&format!("{}/v1", llm.url))).await;

    // The window is interactive as soon as the session starts; the engine
    // opens behind it.
    app.wait_for("[role=tab]", ANSWER).await;
    let interactive = app.launched.elapsed();
    app.wait_text("#engine-state", INDEXING, |t| t.contains("all-minilm")).await;
    eprintln!("cold start: window interactive {interactive:?}, engine ready {:?}", app.launched.elapsed());

    // The empty state teaches what to do.
    app.wait_text("#documents li.empty", INDEXING, |t| t.contains("Drop documents here")).await;
    app.wait_text("#llm-state", INDEXING, |t| t.contains("scripted at http://127.0.0.1")).await;
    app.shot("empty-knowledge").await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (shell, webkit) = app.memory_kib();
    assert!(shell > 0 && webkit > 0, "the app's processes were not found");
    eprintln!("idle memory, empty knowledge: app {} MiB + WebKit processes {} MiB", shell / 1024, webkit / 1024);

    // Drag a folder from a file manager onto the knowledge pane (a real X11
    // drag-and-drop); it is copied in and the watcher indexes it.
    app.drag_files_onto(&[sample_parrots()], "#knowledge").await;
    app.wait_for(r#"#documents li.doc.indexed[data-path="parrots/cockatiel.md"]"#, INDEXING).await;
    app.wait_text("#knowledge-summary", INDEXING, |t| t.starts_with("10 documents")).await;
    app.shot("indexed").await;
    let (shell, webkit) = app.memory_kib();
    eprintln!("memory after indexing 10 documents: app {} MiB + WebKit processes {} MiB", shell / 1024, webkit / 1024);

    // Ask; the answer streams in token by token, then renders with a citation.
    app.client
        .execute("window.__seen = []; new MutationObserver(() => { const b = document.querySelector('.message.streaming .body'); if (b) window.__seen.push(b.textContent); }).observe(document.getElementById('messages'), {subtree: true, childList: true, characterData: true});", vec![])
        .await
        .unwrap();
    app.wait_for("#question", ANSWER).await.send_keys("What do cockatiels eat?\u{E007}").await.unwrap();
    let cite = app.wait_for(r#".message.assistant .answer button.cite[data-cite="S1"]"#, ANSWER).await;
    let seen = app.client.execute("return window.__seen", vec![]).await.unwrap();
    let partial: std::collections::BTreeSet<&str> = seen.as_array().unwrap().iter().filter_map(|v| v.as_str()).filter(|t| !t.is_empty()).collect();
    assert!(partial.len() >= 3, "tokens should arrive one by one, saw {partial:?}");
    assert_eq!(app.text(".message.assistant .answer strong").await, "seeds", "markdown is rendered");
    app.shot("answer-with-citation").await;

    cite.click().await.unwrap();
    app.wait_text("#passage-source", ANSWER, |t| t.ends_with(".md")).await;
    assert!(!app.text("#passage-text").await.is_empty());
    app.shot("passage").await;
    app.click("#close-passage").await;

    // The trace tells how the answer was made, in words: the decision and
    // each retriever's passages by document and heading.
    app.click(".message.assistant details.trace summary").await;
    let trace = app.text(".message.assistant details.trace").await;
    assert!(trace.contains("router") && trace.contains("retrieval"), "{trace}");
    assert!(trace.contains("Found by meaning") && trace.contains("parrots/cockatiel.md › Diet"), "{trace}");

    // The conversation is listed.
    app.wait_for("#conversations li.active .title", ANSWER).await;
    let title = app.client.execute("return document.querySelector('#conversations li.active .title').textContent", vec![]).await.unwrap();
    assert_eq!(title, json!("What do cockatiels eat?"), "the conversation is listed under its question");

    // Identify a picked photo with the fixture CLIP model: green → budgerigar.
    let photo = app.root.path().join("green-bird.png");
    image::RgbImage::from_pixel(64, 64, image::Rgb([0, 255, 0])).save(&photo).unwrap();
    app.client.find(Locator::Css("#pick-image")).await.unwrap().send_keys(photo.to_str().unwrap()).await.unwrap();
    let card = app.wait_text(".id-card", ANSWER, |t| t.contains("%")).await;
    app.wait_for("#send:not([disabled])", ANSWER).await;
    assert!(card.contains("Budgerigar") && card.contains("虎皮鹦鹉"), "{card}");
    assert_eq!(app.client.find_all(Locator::Css(".id-card .candidate")).await.unwrap().len(), 3);
    app.shot("identification-card").await;

    // Evaluate three configurations on the shipped golden set.
    app.click(r#"[role=tab][data-view="eval"]"#).await;
    app.click("#eval-run").await;
    app.wait_for("#eval-chart svg.chart rect", ANSWER).await;
    let table = app.text("#eval-table").await;
    assert!(table.contains("bm25") && table.contains("hybrid") && table.contains("MRR@10"), "{table}");
    let refusal = app.text("#eval-refusal").await;
    assert!(refusal.contains("unanswerable questions"), "the refusal metrics are shown: {refusal}");
    assert!(refusal.contains("k-fold cross-validation"), "with the out-of-fold note: {refusal}");
    app.click("#eval-refusal details summary").await;
    let outcomes = app.text("#eval-refusal table.outcomes").await;
    assert!(outcomes.contains("unsure") && outcomes.contains("%"), "answered / unsure / refused per class: {outcomes}");
    app.shot("evaluation").await;

    // Settings: Chinese and dark theme persist in the data dir.
    app.click(r#"[role=tab][data-view="settings"]"#).await;
    let form = app.wait_for("#settings-form", ANSWER).await;
    form.find(Locator::Css(r#"select[name="language"] option[value="zh"]"#)).await.unwrap().click().await.unwrap();
    form.find(Locator::Css(r#"select[name="theme"] option[value="dark"]"#)).await.unwrap().click().await.unwrap();
    app.click(r#"#settings-form button[type="submit"]"#).await;
    app.wait_text(r#"[role=tab][data-view="chat"]"#, ANSWER, |t| t == "对话").await;
    let theme = app.client.execute("return document.documentElement.dataset.theme", vec![]).await.unwrap();
    assert_eq!(theme, "dark");
    app.shot("settings-chinese-dark").await;
    // Where keys are kept is said next to the API key (no keyring here: a file).
    app.client.execute("document.querySelector('input[name=api_key]').scrollIntoView({block: 'center'})", vec![]).await.unwrap();
    let kept = app.text("#secrets-kept").await;
    assert!(kept.contains("secrets.json"), "{kept}");
    app.shot("settings-keys").await;
    // Other assistants: the MCP entry names the kea program beside the app, over this data folder.
    app.client.execute("document.querySelector('#mcp').scrollIntoView({block: 'center'})", vec![]).await.unwrap();
    let snippet: serde_json::Value = serde_json::from_str(&app.text("#mcp-snippet").await).unwrap();
    let kea = &snippet["mcpServers"]["kea"];
    assert!(kea["command"].as_str().unwrap().ends_with("/kea") && kea["args"].as_array().unwrap().last().unwrap() == "mcp", "{snippet}");
    assert_eq!(kea["args"][1], app.root.path().join("data").display().to_string(), "{snippet}");
    app.wait_for("#mcp-missing[hidden]", ANSWER).await;
    app.shot("settings-mcp").await;
    let saved: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(app.root.path().join("data/settings.json")).unwrap()).unwrap();
    assert_eq!((saved["language"].as_str(), saved["theme"].as_str()), (Some("zh"), Some("dark")));

    // Delete one document: it leaves disk and index.
    app.click(r#"[role=tab][data-view="chat"]"#).await;
    app.click(r#"#documents li[data-path="parrots/eclectus.md"] button[title="删除"]"#).await;
    app.click("dialog.confirm button.danger").await;
    app.wait_text("#knowledge-summary", INDEXING, |t| t.starts_with("9 ")).await;
    assert!(!app.knowledge().join("parrots/eclectus.md").exists());
    app.shot("after-delete").await;

    // Still usable at the smallest supported size.
    app.client.set_window_size(900, 600).await.unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    for css in ["#question", "#send", "#add-menu-button", "#documents", "[role=tab][data-view=\"settings\"]"] {
        let shown = app.client.find(Locator::Css(css)).await.unwrap().is_displayed().await.unwrap();
        assert!(shown, "{css} is hidden at 900×600");
    }
    app.shot("window-900x600").await;
    app.stop().await;
}

/// A Chinese user with no language model: the UI in Chinese, a photo
/// identified in Chinese with a cited passage, then the follow-up 「它吃什么？」
/// answered from the Chinese page with quoted, cited sentences.
#[tokio::test(flavor = "multi_thread")]
async fn chinese_photo_then_follow_up_without_a_language_model() {
    let mut app = App::start("chinese-photo-follow-up", None).await;
    app.wait_text("#engine-state", INDEXING, |t| t.contains("all-minilm")).await;
    let chinese = sample_parrots().parent().unwrap().join("鹦鹉");
    app.import(&[sample_parrots(), chinese]).await;
    app.wait_text("#knowledge-summary", INDEXING, |t| t.starts_with("20 ")).await;

    app.click(r#"[role=tab][data-view="settings"]"#).await;
    let form = app.wait_for("#settings-form", ANSWER).await;
    form.find(Locator::Css(r#"select[name="language"] option[value="zh"]"#)).await.unwrap().click().await.unwrap();
    app.click(r#"#settings-form button[type="submit"]"#).await;
    app.wait_text(r#"[role=tab][data-view="chat"]"#, ANSWER, |t| t == "对话").await;
    app.click(r#"[role=tab][data-view="chat"]"#).await;

    // Half the folder is Chinese and the embedder reads English only: the
    // notice queue says so behind the first-run card, and the setup proposes
    // a multilingual embedder.
    app.click("#notice-pager:not([hidden]) #notice-next").await;
    let notice = app.wait_text("#language-notice", ANSWER, |t| t.contains("multilingual-e5-small")).await;
    assert!(notice.contains("中文") && notice.contains("all-minilm-l6-v2"), "{notice}");
    app.click("#language-notice button").await;
    app.wait_text(r#"#setup-list .proposal[data-role="embedder"]"#, ANSWER, |t| t.contains("multilingual-e5-small") && t.contains("下载并使用")).await;
    app.shot("setup-proposes-a-multilingual-embedder").await;
    app.click(r#"[role=tab][data-view="chat"]"#).await;

    let photo = app.root.path().join("green-bird.png");
    image::RgbImage::from_pixel(64, 64, image::Rgb([0, 255, 0])).save(&photo).unwrap();
    app.client.find(Locator::Css("#pick-image")).await.unwrap().send_keys(photo.to_str().unwrap()).await.unwrap();
    app.wait_text(".id-card", ANSWER, |t| t.contains("%")).await;
    app.wait_for("#send:not([disabled])", ANSWER).await;
    let reply = app.text(".message.assistant .answer").await;
    assert!(reply.starts_with("识别结果：虎皮鹦鹉"), "the reply speaks the UI language: {reply}");
    app.wait_for(r#".message.assistant .answer button.cite"#, ANSWER).await;
    app.shot("photo-identified-in-chinese").await;

    app.wait_for("#question", ANSWER).await.send_keys("它吃什么？\u{E007}").await.unwrap();
    let answers = r#".message.assistant:last-child"#;
    app.wait_for(&format!("{answers} .answer button.cite"), ANSWER).await;
    let notice = app.text(&format!("{answers} .notice")).await;
    assert!(notice.starts_with("摘录的回答"), "{notice}");
    let sources = app.text(&format!("{answers} .sources")).await;
    assert!(sources.contains("鹦鹉/虎皮鹦鹉.md"), "the follow-up searched the Chinese name: {sources}");
    app.shot("follow-up-answered-from-the-chinese-page").await;

    // Unsure: no direct answer is claimed; the closest passages are offered as related reading.
    app.click("#new-chat").await;
    app.wait_for("#question", ANSWER).await.send_keys("虎皮鹦鹉能不能放飞到外面\u{E007}").await.unwrap();
    app.wait_text(&format!("{answers} .answer"), ANSWER, |t| t.starts_with("不确定")).await;
    assert!(app.client.find_all(Locator::Css(&format!("{answers} .answer button.cite"))).await.unwrap().is_empty(), "nothing is cited as the answer");
    let related = app.wait_text(&format!("{answers} .related"), ANSWER, |t| t.starts_with("相关段落")).await;
    assert!(related.contains("鹦鹉/虎皮鹦鹉.md") && related.contains(" › "), "each passage by document and heading: {related}");
    app.click(&format!("{answers} .related .related-open")).await;
    // The related passage opens in the passage panel.
    app.wait_text("#passage-source", ANSWER, |t| !t.is_empty() && related.contains(t)).await;
    app.click(&format!("{answers} details.trace summary")).await;
    let inspector = app.wait_text(&format!("{answers} .inspector"), ANSWER, |t| t.contains("不确定：")).await;
    assert!(inspector.contains("鹦鹉/虎皮鹦鹉.md"), "passages are named by document and heading: {inspector}");
    let reason = app.text(&format!("{answers} .decision .reason")).await;
    assert!(reason.contains("覆盖了问题关键词") && reason.contains("校准概率"), "the decision's reasons in the user's language: {reason}");
    assert!(!reason.chars().any(|c| c.is_ascii_alphabetic()), "no English in the Chinese reasons: {reason}");
    assert!(!inspector.split_whitespace().any(|w| w.starts_with('#') && w[1..].chars().all(|c| c.is_ascii_digit())), "no bare chunk ids: {inspector}");
    app.shot("unsure-with-related-reading").await;

    // Refused: it says so and cites nothing.
    app.click("#new-chat").await;
    app.wait_for("#question", ANSWER).await.send_keys("手机屏幕碎了怎么办？\u{E007}").await.unwrap();
    let refusal = app.wait_text(&format!("{answers} .answer"), ANSWER, |t| t.contains("没有找到")).await;
    assert!(refusal.contains("手机屏幕"), "the refusal names what was searched: {refusal}");
    assert!(app.client.find_all(Locator::Css(&format!("{answers} .answer button.cite"))).await.unwrap().is_empty());
    app.stop().await;
}

/// The XSS corpus (tests/xss/payloads.txt, 102 payloads) placed in a document
/// and in the language model's answer: nothing may run in the real webview.
#[tokio::test(flavor = "multi_thread")]
async fn markup_in_documents_and_answers_never_runs_in_the_webview() {
    let corpus = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/xss/payloads.txt")).unwrap();
    let payloads: Vec<String> = corpus.lines().filter(|l| !l.is_empty() && !l.starts_with('#')).map(|l| l.replace("\\n", "\n")).collect();
    assert!(payloads.len() >= 100);
    let answer = format!("Here is what the notes say [S1].\n\n{}", payloads.join("\n\n"));
    let llm = scripted(vec![router_says_retrieve("hostile notes"), sse_stream(&answer)]);
    let mut app = App::start("xss", Some(&format!("{}/v1", llm.url))).await;
    app.client
        .execute("window.__xssFired = []; window.__xss = (n) => window.__xssFired.push(n); window.alert = (m) => window.__xssFired.push('alert:' + m);", vec![])
        .await
        .unwrap();

    let source = app.root.path().join("hostile notes.md");
    std::fs::write(&source, format!("# Hostile notes\n\n{}\n", payloads.join("\n\n"))).unwrap();
    app.import(&[source]).await;
    app.wait_for(r#"#documents li.doc.indexed[data-path="hostile notes.md"]"#, INDEXING).await;

    app.wait_for("#question", ANSWER).await.send_keys("What do the hostile notes say?\u{E007}").await.unwrap();
    app.wait_for(".message.assistant .copy", ANSWER).await;
    app.wait_for(r#".message.assistant .answer button.cite"#, ANSWER).await.click().await.unwrap();
    app.wait_text("#passage-source", ANSWER, |t| t.contains("hostile")).await;
    // Give handlers (onerror, onload, autofocus, animations) time to fire.
    tokio::time::sleep(Duration::from_secs(2)).await;
    // Links carry no href (a click asks the shell, which opens only http(s)).
    let with_href = app.client.execute("return document.querySelectorAll('#messages a[href], #passage a[href]').length", vec![]).await.unwrap();
    assert_eq!(with_href, json!(0));
    app.shot("payloads-rendered").await;
    let fired = app.client.execute("return window.__xssFired", vec![]).await.unwrap();
    assert_eq!(fired, json!([]), "payloads ran in the webview");
    let live = app.client.execute("return document.querySelectorAll('#messages script, #messages iframe, #messages img[onerror], #messages svg, #messages [onload], #passage script, #passage iframe, #passage svg').length", vec![]).await.unwrap();
    assert_eq!(live, json!(0));
    let url = app.client.current_url().await.unwrap();
    assert!(url.as_str().starts_with("tauri://localhost"), "the webview navigated away: {url}");
    app.stop().await;
}

/// A citation of a PDF shows its page, rendered by pdf.js, with the cited
/// passage highlighted (screenshots `pdf-page-*`).
#[tokio::test(flavor = "multi_thread")]
async fn a_cited_pdf_page_is_shown_with_the_passage_highlighted() {
    let llm = scripted(vec![router_says_retrieve("cage bar spacing"), sse_stream("The bar spacing depends on the bird's size [S1].")]);
    let mut app = App::start("pdf-page", Some(&format!("{}/v1", llm.url))).await;
    let pdf = Path::new(env!("CARGO_MANIFEST_DIR")).join("knowledge/guides/cage-setup.pdf");
    app.import(&[pdf]).await;
    app.wait_for(r#"#documents li.doc.indexed[data-path="cage-setup.pdf"]"#, INDEXING).await;

    app.wait_for("#question", ANSWER).await.send_keys("How far apart should the bars of a cage be?\u{E007}").await.unwrap();
    app.wait_for(r#".message.assistant .answer button.cite[data-cite="S1"]"#, ANSWER).await.click().await.unwrap();
    app.wait_text("#passage-source", ANSWER, |t| t == "cage-setup.pdf").await;
    app.wait_for("#passage-page[data-highlights] canvas", ANSWER).await;
    let highlights: usize =
        app.client.execute("return Number(document.getElementById('passage-page').dataset.highlights)", vec![]).await.unwrap().as_u64().unwrap() as usize;
    assert!(highlights > 0, "the cited passage is highlighted on its page");
    let marks = app.client.execute("return document.querySelectorAll('#passage-page .pdf-highlight').length", vec![]).await.unwrap();
    assert_eq!(marks, json!(highlights));
    app.shot("pdf-page-highlight").await;
    app.stop().await;
}
