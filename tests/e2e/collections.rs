//! Collections in the real app: create a second collection from the
//! knowledge pane, drop a file into it (a real X11 drag-and-drop), ask it,
//! ask across every collection, and switch back to the first one.

use std::time::Duration;

use fantoccini::Locator;

use crate::harness::{sample_parrots, App};

const INDEXING: Duration = Duration::from_secs(120);
const ANSWER: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread")]
async fn create_a_second_collection_drop_a_file_into_it_ask_and_switch_back() {
    let mut app = App::start_with("collections", None, &[], &[sample_parrots()]).await;
    app.wait_text("#knowledge-summary", INDEXING, |t| t.starts_with("10 documents")).await;

    app.click("#new-collection").await;
    app.wait_for("#new-collection-name", ANSWER).await.send_keys("Kitchen").await.unwrap();
    app.click("#create-collection").await;
    app.wait_text("#collection option:checked", ANSWER, |t| t == "Kitchen").await;
    let empty = app.wait_text("#documents li.empty", INDEXING, |t| !t.is_empty()).await;
    assert!(empty.contains("Drop documents here"), "the new collection starts empty: {empty}");
    assert!(app.root.path().join("Kitchen").is_dir(), "a folder of its own, beside the first collection's");

    let recipe = app.root.path().join("sourdough.md");
    std::fs::write(&recipe, "# Sourdough starter\n\n## Feeding\nFeed the starter once a day with equal weights of flour and water.\n").unwrap();
    app.import(std::slice::from_ref(&recipe)).await;
    app.wait_for(r#"#documents li.doc.indexed[data-path="sourdough.md"]"#, INDEXING).await;
    assert!(app.root.path().join("Kitchen/sourdough.md").is_file(), "dropped into the selected collection's folder");
    assert!(!app.knowledge().join("sourdough.md").exists());
    app.shot("second-collection-with-a-dropped-file").await;

    let last = ".message.assistant:last-child";
    app.wait_for("#question", ANSWER).await.send_keys("What should I feed my sourdough starter?\u{E007}").await.unwrap();
    app.wait_for(&format!("{last} .answer button.cite[data-cite=\"S1\"]"), ANSWER).await;
    let sources = app.text(&format!("{last} .sources")).await;
    assert!(sources.contains("sourdough.md") && !sources.contains("parrots/"), "{sources}");
    app.shot("answered-from-the-second-collection").await;

    // Across every collection: the answer comes from the first one and says so.
    app.wait_for("#toast[hidden]", ANSWER).await; // the import's note covers the form for a few seconds
    app.client.find(Locator::Css("#ask-scope")).await.unwrap().select_by_value("all").await.unwrap();
    app.wait_for("#send:not([disabled])", ANSWER).await;
    app.wait_for("#question", ANSWER).await.send_keys("What do cockatiels eat?\u{E007}").await.unwrap();
    let across = app.wait_text(&format!("{last} .sources"), ANSWER, |t| t.contains("cockatiel")).await;
    assert!(across.contains("My documents › parrots/cockatiel.md"), "{across}");
    app.shot("answered-across-collections").await;

    app.wait_for("#toast[hidden]", ANSWER).await;
    app.client.find(Locator::Css("#collection")).await.unwrap().select_by_value("default").await.unwrap();
    app.wait_text("#knowledge-summary", INDEXING, |t| t.starts_with("10 documents")).await;
    app.wait_for(r#"#documents li.doc.indexed[data-path="parrots/cockatiel.md"]"#, INDEXING).await;
    assert!(app.client.find_all(Locator::Css(r#"#documents li[data-path="sourdough.md"]"#)).await.unwrap().is_empty());
    app.shot("switched-back").await;
    app.stop().await;
}
