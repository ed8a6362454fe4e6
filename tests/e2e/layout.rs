//! The window's layout as a newcomer first sees it, measured in the real
//! webview: on first launch with the sample folder at 1100×720 the chat
//! takes most of the width, one notice shows (the others one step away), and
//! the knowledge rail lists at least 12 documents; at 900×600, with an
//! answer in the thread, no region or control overlaps another or leaves the
//! window; the rail collapses to give the chat the whole width, and stays so.

use std::time::Duration;

use serde_json::Value;

use crate::harness::{sample_parrots, App};

const INDEXING: Duration = Duration::from_secs(120);

/// What the page measures of itself: the chat's share of the width, the
/// document rows wholly in view, the notices shown, and every overlap or
/// overflow among regions and among the controls inside each region.
const MEASURE: &str = r#"
const shown = (e) => e && e.getClientRects().length > 0;
const box = (e) => e.getBoundingClientRect();
const name = (e) => e.id ? `#${e.id}` : `${e.tagName.toLowerCase()}.${e.className}`;
const overlap = (a, b) => Math.max(0, Math.min(a.right, b.right) - Math.max(a.left, b.left)) * Math.max(0, Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top)) > 1;
const problems = [];
// Each element must lie inside `within` (its region, else the window), which must not clip it.
const disjoint = (elements, within) => {
  const list = elements.filter(shown);
  const outer = within ? box(within) : { left: 0, top: 0, right: innerWidth, bottom: innerHeight };
  for (const e of list) {
    const r = box(e);
    if (r.left < outer.left - 0.5 || r.top < outer.top - 0.5 || r.right > outer.right + 0.5 || r.bottom > outer.bottom + 0.5)
      problems.push(`${name(e)} is cut off by ${within ? name(within) : 'the window'}`);
  }
  for (let i = 0; i < list.length; i++) for (let j = i + 1; j < list.length; j++)
    if (overlap(box(list[i]), box(list[j]))) problems.push(`${name(list[i])} overlaps ${name(list[j])}`);
};
const $ = (css) => document.querySelector(css);
disjoint([$('header'), $('main')]);
disjoint([$('#knowledge'), $('#view-chat'), $('#passage')]);
disjoint(['#collection-bar', '#knowledge-summary', '#knowledge-folder', '#documents', '#new-chat', '#conversations'].map($), $('#knowledge'));
disjoint(['#chat-title', '#notices', '#messages', '#ask-form'].map($), $('#view-chat'));
for (const region of ['header', '#collection-bar', '#notices', '#ask-form'])
  disjoint([...document.querySelectorAll(`${region} :is(button, select, textarea, input, label.button, [role=tab])`)].filter((e) => !e.closest('[role=menu]') && !e.closest('label.button input')), $(region));
for (const scroller of ['#knowledge', '#view-chat', '#messages'])
  if ($(scroller).scrollWidth > $(scroller).clientWidth + 1) problems.push(`${scroller} scrolls sideways`);
// The chat itself never scrolls as a whole: the thread scrolls, the question box stays in view.
if ($('#view-chat').scrollHeight > $('#view-chat').clientHeight + 1) problems.push('#view-chat scrolls: the question box can leave the view');
const list = box($('#documents'));
const rows = [...document.querySelectorAll('#documents li.doc')].filter((li) => { const r = box(li); return r.top >= list.top - 0.5 && r.bottom <= list.bottom + 0.5; }).length;
return { width: innerWidth, height: innerHeight, chat: box($('#view-chat')).width, rows,
  notices: [...document.querySelectorAll('#notices .notice')].filter(shown).map((e) => e.id), pager: $('#notice-pager').hidden ? '' : $('#notice-count').textContent, problems };
"#;

async fn measure(app: &App) -> Value {
    app.eval(MEASURE).await
}

fn chat_share(layout: &Value) -> f64 {
    layout["chat"].as_f64().unwrap() / layout["width"].as_f64().unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn first_launch_is_chat_first_with_one_notice_and_a_long_document_list() {
    let sample = sample_parrots().parent().unwrap().to_path_buf();
    let mut app = App::start_with("layout", None, &[], &[sample.join("parrots"), sample.join("鹦鹉")]).await;
    app.wait_text("#knowledge-summary", INDEXING, |t| t.starts_with("20 documents")).await;
    // Half the folder is Chinese: the first-run card and the language warning both wait.
    app.wait_text("#notice-count", INDEXING, |t| t == "1 of 2").await;
    app.wait_for("#setup-card:not([hidden])", INDEXING).await;
    app.shot("first-launch-1100x720").await;
    let first = measure(&app).await;
    eprintln!("layout at first launch: {first}");
    assert_eq!((first["width"].as_f64(), first["height"].as_f64()), (Some(1100.0), Some(720.0)), "{first}");
    assert!(chat_share(&first) >= 0.6, "the chat is {:.0}% of the window: {first}", chat_share(&first) * 100.0);
    assert_eq!(first["notices"], serde_json::json!(["setup-card"]), "one notice at a time, the first-run card first: {first}");
    assert!(first["rows"].as_u64().unwrap() >= 12, "document rows wholly in view: {first}");
    assert_eq!(first["problems"], serde_json::json!([]), "{first}");

    // The other notice is one step away; the queue wraps back.
    app.click("#notice-pager:not([hidden]) #notice-next").await;
    app.wait_text("#language-notice", INDEXING, |t| t.contains("multilingual-e5-small")).await;
    assert_eq!(measure(&app).await["notices"], serde_json::json!(["language-notice"]));
    app.click("#notice-pager:not([hidden]) #notice-next").await;
    app.wait_for("#setup-card:not([hidden])", INDEXING).await;

    // The smallest supported window, with an answer and the open passage.
    app.client.set_window_size(900, 600).await.unwrap();
    app.wait_for("#documents li.doc", INDEXING).await;
    crate::conversation::ask(&app, "How long do African grey parrots live?").await;
    app.click("#messages .cite").await;
    app.wait_for("#passage:not([hidden])", INDEXING).await;
    app.shot("answer-and-passage-900x600").await;
    let small = measure(&app).await;
    eprintln!("layout at 900×600: {small}");
    assert_eq!(small["width"].as_f64(), Some(900.0), "{small}");
    assert_eq!(small["problems"], serde_json::json!([]), "at 900×600: {small}");
    app.click("#close-passage").await;

    // Collapsed, the rail gives the chat the window; the choice outlives a reload.
    app.click("#toggle-rail").await;
    app.wait_for("#toggle-rail[aria-expanded=false]", INDEXING).await;
    let collapsed = measure(&app).await;
    assert!(chat_share(&collapsed) >= 0.9 && collapsed["problems"] == serde_json::json!([]), "{collapsed}");
    app.eval("location.reload(); return true;").await;
    app.wait_for("#toggle-rail[aria-expanded=false]", INDEXING).await;
    app.shot("rail-collapsed-900x600").await;
    app.click("#toggle-rail").await;
    app.wait_for("#knowledge #documents li.doc", INDEXING).await;
    app.stop().await;
}

/// A folder of a thousand documents keeps a small page: only the rows in
/// view (and a margin) are drawn, and scrolling draws the others.
#[tokio::test(flavor = "multi_thread")]
async fn a_long_document_list_draws_only_the_rows_in_view() {
    let extra = tempfile::tempdir().unwrap();
    let notes = extra.path().join("notes");
    std::fs::create_dir_all(&notes).unwrap();
    for i in 0..1000 {
        std::fs::write(notes.join(format!("note-{i:04}.md")), format!("# Note {i}\n\nShelf {i} holds box {i}.\n")).unwrap();
    }
    let mut app = App::start_with("long-list", None, &[], &[notes]).await;
    app.wait_text("#knowledge-summary", Duration::from_secs(600), |t| t.starts_with("1000 documents")).await;
    app.wait_for(r#"#documents li.doc.indexed[data-path="notes/note-0000.md"]"#, INDEXING).await;
    let drawn = app.count("#documents li").await;
    assert!((12..=80).contains(&drawn), "1000 rows, {drawn} drawn");
    let last = r#"#documents li.doc[data-path="notes/note-0999.md"]"#;
    assert_eq!(app.count(last).await, 0, "the last row is not drawn before it is scrolled to");
    app.eval("const list = document.getElementById('documents'); list.scrollTop = list.scrollHeight; return true;").await;
    let row = app.wait_text(&format!("{last} .detail"), INDEXING, |t| !t.is_empty()).await;
    assert!(row.contains("1 chunks"), "{row}");
    assert!(app.count("#documents li").await <= 80);
    // The list scrolls inside the rail: the conversations stay in view below it.
    assert_eq!(measure(&app).await["problems"], serde_json::json!([]));
    app.shot("end-of-a-long-list").await;
    app.stop().await;
}
