//! Keyboard only: after launch nothing is clicked. Each step is a key press
//! on whatever has the focus (WebDriver key actions), and the system's file
//! dialog is typed into with xdotool. A person creates a collection from the
//! collection menu, adds a file through the Add menu and the file dialog,
//! asks, opens the citation and closes it again, switches back to the
//! first collection and opens the photo chooser; every control reached
//! shows its focus.

use std::time::Duration;

use fantoccini::actions::{InputSource, KeyAction, KeyActions};
use fantoccini::key::Key;

use crate::harness::{sample_parrots, xdotool, App};

const WAIT: Duration = Duration::from_secs(120);
/// More Tab presses than the window has controls before the thread.
const MOST_TABS: usize = 60;

/// Presses and releases `key` on whatever has the focus.
async fn press(app: &App, key: Key) {
    let value = key.chars().next().expect("a key's code point");
    let keys = KeyActions::new("keyboard".into()).then(KeyAction::Down { value }).then(KeyAction::Up { value });
    app.client.perform_actions(keys).await.expect("a key press");
}

/// Types `text` into whatever has the focus.
async fn type_text(app: &App, text: &str) {
    let mut keys = KeyActions::new("keyboard".into());
    for value in text.chars() {
        keys = keys.then(KeyAction::Down { value }).then(KeyAction::Up { value });
    }
    app.client.perform_actions(keys).await.expect("typing");
}

/// What has the focus: whether it matches `css`, and its description.
async fn focus_is(app: &App, css: &str) -> (bool, String) {
    let script = format!(
        "const e = document.activeElement; return [e.matches({css}), e.matches(':focus-visible') || e.tagName === 'BODY', `${{e.tagName}}#${{e.id}}.${{e.className}}`];",
        css = serde_json::to_string(css).unwrap()
    );
    let found = app.eval(&script).await;
    let (matches, visible, name) = (found[0].as_bool().unwrap(), found[1].as_bool().unwrap(), found[2].as_str().unwrap().to_string());
    assert!(visible, "{name} has the focus but does not show it");
    (matches, name)
}

/// Presses Tab until the focus is on `css`; fails naming where it went.
async fn tab_to(app: &App, css: &str) {
    let mut path = Vec::new();
    for _ in 0..MOST_TABS {
        let (there, name) = focus_is(app, css).await;
        if there {
            return;
        }
        path.push(name);
        press(app, Key::Tab).await;
    }
    app.fail(&format!("{css} was not reached by Tab; the focus went {}", path.join(" → "))).await;
}

/// The visible windows' ids and titles.
fn windows() -> Vec<(String, String)> {
    let found = std::process::Command::new("xdotool").args(["search", "--onlyvisible", "--name", "."]).output().expect("xdotool");
    let title =
        |id: &str| std::process::Command::new("xdotool").args(["getwindowname", id]).output().map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    String::from_utf8_lossy(&found.stdout).lines().map(|id| (id.to_string(), title(id).unwrap_or_default())).collect()
}

/// Picks `file` in the system's file dialog (the visible window that is not
/// Kea's) by typing its path, as a person can.
async fn type_into_file_dialog(file: &std::path::Path) {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let dialog = loop {
        let all = windows();
        if let Some((id, _)) = all.iter().find(|(_, title)| !title.is_empty() && title != "Kea") {
            break id.clone();
        }
        assert!(std::time::Instant::now() < deadline, "no file dialog opened; windows: {all:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    xdotool(&["windowfocus", "--sync", &dialog]);
    tokio::time::sleep(Duration::from_millis(300)).await;
    xdotool(&["key", "ctrl+l"]);
    xdotool(&["type", "--delay", "20", &file.display().to_string()]);
    tokio::time::sleep(Duration::from_millis(300)).await;
    xdotool(&["key", "Return"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_keyboard_alone_adds_a_file_asks_opens_a_citation_and_switches_collection() {
    let mut app = App::start_with("keyboard", None, &[], &[sample_parrots()]).await;
    app.wait_text("#knowledge-summary", WAIT, |t| t.starts_with("10 documents")).await;

    // A new collection: the collection menu opens on its first item, New collection….
    tab_to(&app, "#collection-menu-button").await;
    press(&app, Key::Enter).await;
    assert!(focus_is(&app, "#new-collection").await.0, "the menu opens with its first item focused");
    press(&app, Key::Enter).await;
    assert!(focus_is(&app, "#new-collection-name").await.0, "the form takes the focus");
    // Escape closes the form back onto the menu button; the menu opens it again.
    press(&app, Key::Escape).await;
    app.wait_for("#new-collection-form[hidden]", WAIT).await;
    assert!(focus_is(&app, "#collection-menu-button").await.0, "Escape gives the focus back to the menu button");
    press(&app, Key::Enter).await;
    press(&app, Key::Enter).await;
    assert!(focus_is(&app, "#new-collection-name").await.0, "the form opens again from the menu");
    type_text(&app, "Kitchen").await;
    press(&app, Key::Enter).await;
    app.wait_text("#collection option:checked", WAIT, |t| t == "Kitchen").await;

    // A file through Add → Add files… and the system's dialog.
    let recipe = app.root.path().join("sourdough.md");
    std::fs::write(&recipe, "# Sourdough starter\n\n## Feeding\nFeed the starter once a day with equal weights of flour and water.\n").unwrap();
    tab_to(&app, "#add-menu-button").await;
    press(&app, Key::Down).await;
    assert!(focus_is(&app, "#add-files").await.0, "ArrowDown opens the Add menu on Add files…");
    app.shot("add-menu-by-keyboard").await;
    press(&app, Key::Enter).await;
    type_into_file_dialog(&recipe).await;
    app.wait_for(r#"#documents li.doc.indexed[data-path="sourdough.md"]"#, WAIT).await;

    // Ask, then open the answer's citation and close it again.
    tab_to(&app, "#question").await;
    type_text(&app, "What should I feed my sourdough starter?").await;
    press(&app, Key::Enter).await;
    app.wait_for(".message.assistant .answer button.cite", WAIT).await;
    app.wait_for("#send:not([disabled])", WAIT).await;
    tab_to(&app, ".message.assistant .answer button.cite").await;
    press(&app, Key::Enter).await;
    app.wait_text("#passage-source", WAIT, |t| t == "sourdough.md").await;
    assert!(focus_is(&app, "#close-passage").await.0, "the opened passage takes the focus");
    app.shot("citation-opened-by-keyboard").await;
    press(&app, Key::Escape).await;
    app.wait_for("#passage[hidden]", WAIT).await;
    assert!(focus_is(&app, "button.cite").await.0, "closing the passage gives the focus back to the citation");

    // Back to the first collection with the switcher's arrow keys.
    tab_to(&app, "#collection").await;
    press(&app, Key::Up).await;
    app.wait_text("#collection option:checked", WAIT, |t| t == "My documents").await;
    app.wait_text("#knowledge-summary", WAIT, |t| t.starts_with("10 documents")).await;
    app.shot("switched-collection-by-keyboard").await;

    // "Identify a photo…" is reached by Tab and opened by Space. (A WebDriver
    // session answers a page's own file chooser itself, with no files; the
    // page sees that as the chooser being cancelled.)
    app.eval("window.chooserClosed = 0; document.getElementById('pick-image').addEventListener('cancel', () => window.chooserClosed++); return true;").await;
    tab_to(&app, "#pick-image").await;
    press(&app, Key::Space).await;
    let opened = crate::harness::retry(WAIT, || async { (app.eval("return window.chooserClosed").await.as_u64() == Some(1)).then_some(()) }).await;
    assert!(opened.is_some(), "Space on the photo button asked for a file chooser");
    app.stop().await;
}
