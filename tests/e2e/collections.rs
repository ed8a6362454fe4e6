//! Collections in the real app: create a second collection from the
//! knowledge pane, drop a file into it (a real X11 drag-and-drop), add a
//! web page to it (from a page server on 127.0.0.1), ask it, ask across
//! every collection, and switch back to the first one.

use std::io::{Read, Write};
use std::time::Duration;

use fantoccini::Locator;

use crate::harness::{sample_parrots, App};

const INDEXING: Duration = Duration::from_secs(120);
const ANSWER: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread")]
async fn create_a_second_collection_drop_a_file_into_it_ask_and_switch_back() {
    let mut app = App::start_with("collections", None, &[], &[sample_parrots()]).await;
    app.wait_text("#knowledge-summary", INDEXING, |t| t.starts_with("10 documents")).await;

    app.choose("#collection-menu-button", "#new-collection").await;
    app.wait_for("#new-collection-name", ANSWER).await.send_keys("Kitchen").await.unwrap();
    app.click("#create-collection").await;
    app.wait_text("#collection option:checked", ANSWER, |t| t == "Kitchen").await;
    // The new collection starts empty.
    app.wait_text("#documents li.empty", INDEXING, |t| t.contains("Drop documents here")).await;
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

    // A web page: refused from this computer until allowed, then kept, listed with its link and cited with it.
    let url = serve_page(PAGE);
    app.choose("#add-menu-button", "#show-web-page").await;
    app.wait_for("#web-page-url", ANSWER).await.send_keys(&url).await.unwrap();
    app.click("#add-web-page").await;
    // The refusal's own toast, not the import's note that may still be showing.
    app.wait_text("#toast:not([hidden])", ANSWER, |t| t.contains("allow local addresses")).await;
    app.wait_for("#toast[hidden]", ANSWER).await;
    app.click("#web-page-local").await;
    app.click("#add-web-page").await;
    let page_row = r#"#documents li.doc.indexed[data-path="Web pages/Bread ovens.html"]"#;
    app.wait_for(&format!("{page_row} button[title^=\"Open http\"]"), INDEXING).await;
    app.wait_for("#toast[hidden]", ANSWER).await;
    app.wait_for("#question", ANSWER).await.send_keys("At what temperature should bread be baked?\u{E007}").await.unwrap();
    let cited = app.wait_text(&format!("{last} .sources"), ANSWER, |t| t.contains("Bread ovens")).await;
    let host = url.trim_start_matches("http://").split('/').next().unwrap().to_string();
    assert!(cited.contains(&format!("↗ {host}")), "the citation links to the page: {cited}");
    app.shot("web-page-added-and-cited").await;

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
    assert_eq!(app.count(r#"#documents li[data-path="sourdough.md"]"#).await, 0);
    // The open conversation was the Kitchen's: the chat starts from this collection's own, and the
    // next question opens a conversation here (its citations point at this collection's passages).
    app.wait_for("#messages p.empty", ANSWER).await;
    assert_eq!(app.count("#messages .message").await, 0, "the other collection's conversation is closed");
    app.wait_for("#question", ANSWER).await.send_keys("What do cockatiels eat?\u{E007}").await.unwrap();
    let here = app.wait_text(&format!("{last} .sources"), ANSWER, |t| t.contains("cockatiel")).await;
    assert!(!here.contains("Bread") && !here.contains("sourdough"), "{here}");
    assert_eq!(app.count("#messages .message.user").await, 1, "a new conversation: {here}");
    app.shot("switched-back").await;
    app.stop().await;
}

const PAGE: &str = "<html><head><title>Bread ovens</title></head><body><nav>Shop</nav><main><h1>Bread ovens</h1>\
<p>Bake bread at a temperature of 230 degrees for the first twenty minutes.</p></main></body></html>";

/// Serves `html` at every path from 127.0.0.1 (as long as the test runs); its address.
fn serve_page(html: &'static str) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/bread", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let mut request = [0u8; 4096];
            let _ = stream.read(&mut request);
            let head = format!("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", html.len());
            let _ = stream.write_all(head.as_bytes()).and_then(|()| stream.write_all(html.as_bytes()));
        }
    });
    url
}
