//! Accessibility of the main views in the real webview: axe-core (the npm
//! package the UI's tests install) runs inside the page on the chat view
//! (with the knowledge rail and conversations), the rail's Add menu open,
//! its collection settings open, the evaluation view and the settings view
//! (with the models list), in the light and the dark theme,
//! after two questions so the answers' citations, tags and sources count.
//! Any violation axe rates serious or critical fails the test, named with
//! the elements it was found on.

use std::time::Duration;

use crate::harness::{sample_parrots, App};

const INDEXING: Duration = Duration::from_secs(120);

/// axe-core's violations rated serious or critical on the page as it is now.
async fn serious_violations(app: &App) -> Vec<String> {
    let axe = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("ui/node_modules/axe-core/axe.min.js");
    let source = std::fs::read_to_string(axe).expect("axe-core is installed with the UI's npm packages");
    app.client.execute(&format!("{source}\nreturn typeof axe;"), vec![]).await.expect("axe-core loads in the page");
    let run = "const done = arguments[arguments.length - 1];
        axe.run(document, { resultTypes: ['violations'] })
          .then(r => done(r.violations.filter(v => v.impact === 'serious' || v.impact === 'critical')
            .map(v => `${v.impact} ${v.id}: ${v.help} — ${v.nodes.slice(0, 3).map(n => n.target.join(' ')).join('; ')}`)))
          .catch(e => done([`axe failed: ${e}`]));";
    let found = app.client.execute_async(run, vec![]).await.expect("axe-core runs");
    found.as_array().expect("a list").iter().map(|v| v.as_str().unwrap_or_default().to_string()).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_main_views_have_no_serious_accessibility_violations_in_either_theme() {
    let mut app = App::start_with("access", None, &[("KEA_EMBEDDED_MODEL", String::new())], &[sample_parrots()]).await;
    app.wait_text("#knowledge-summary", INDEXING, |t| t.starts_with("10 documents")).await;
    // An answer in the conversation: its citations, quote tag and sources are checked too.
    crate::conversation::ask(&app, "How long do African grey parrots live?").await;
    crate::conversation::ask(&app, "What do Quaker parrots eat?").await;
    let mut found = Vec::new();
    for theme in ["light", "dark"] {
        app.client.execute(&format!("document.documentElement.dataset.theme = '{theme}';"), vec![]).await.unwrap();
        for view in ["chat", "eval", "settings"] {
            app.click(&format!("nav [data-view=\"{view}\"]")).await;
            app.wait_for(&format!("#view-{view}:not([hidden])"), INDEXING).await;
            found.extend(serious_violations(&app).await.into_iter().map(|v| format!("{theme} {view}: {v}")));
            app.shot(&format!("{view}-{theme}")).await;
        }
        // The knowledge rail with its Add menu open, then with the collection's settings form.
        app.click("nav [data-view=\"chat\"]").await;
        app.click("#add-menu-button").await;
        app.wait_for("#add-menu:not([hidden])", INDEXING).await;
        found.extend(serious_violations(&app).await.into_iter().map(|v| format!("{theme} add menu: {v}")));
        app.shot(&format!("add-menu-{theme}")).await;
        app.click("#add-menu-button").await;
        app.choose("#collection-menu-button", "#collection-settings-toggle").await;
        app.wait_for("#collection-settings:not([hidden])", INDEXING).await;
        found.extend(serious_violations(&app).await.into_iter().map(|v| format!("{theme} collection settings: {v}")));
        app.click("#collection-menu-button").await;
        app.click("[role=menu]:not([hidden]) #collection-settings-toggle").await;
    }
    assert!(found.is_empty(), "serious or critical accessibility violations:\n{}", found.join("\n"));
    app.stop().await;
}
