//! HTML pages are indexed by their main content: a question is answered
//! from the right section of a page, and its navigation and scripts are
//! not searchable.

use super::util::Sandbox;

const PAGE: &str = r#"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Bicycle care</title>
<script>var tracker = "quintessentialtracker";</script><style>.nav { color: teal }</style></head>
<body>
<header><nav><a href="/">Home</a> <a href="/shop">Glockenspiel shop</a></nav></header>
<main>
<h1>Bicycle maintenance</h1>
<p>A short guide to keeping a bicycle in good order.</p>
<h2>Brakes</h2>
<p>Replace the brake pads when their grooves are worn flat. Squealing brakes usually only need their rims cleaned.</p>
<h2>Tyres</h2>
<p>Pump road tyres to between 80 and 100 psi, and check the pressure once a week: tyres lose air slowly even without a puncture.</p>
</main>
<footer>Copyright &copy; the cycling club</footer>
</body></html>"#;

#[test]
fn an_html_page_answers_from_its_main_content_and_its_furniture_is_not_searchable() {
    let sandbox = Sandbox::empty();
    std::fs::write(sandbox.path("bicycle.html"), PAGE).unwrap();
    std::fs::write(sandbox.path("garden.md"), "# Garden\n\n## Watering\n\nWater the tomatoes every evening in summer.\n").unwrap();
    sandbox.index();
    let documents = sandbox.documents();
    let (_, page) = documents.iter().find(|(path, _)| path == "bicycle.html").expect("the page is indexed");
    assert!(page["error"].is_null(), "{page}");

    let hits = sandbox.search("How often should I check the tyre pressure?", 3);
    assert_eq!(hits[0]["source"], "bicycle.html", "{hits:?}");
    assert_eq!(hits[0]["heading_path"], "Bicycle maintenance > Tyres");
    assert!(hits[0]["text"].as_str().unwrap().contains("once a week"), "{}", hits[0]);

    for hidden in ["Glockenspiel", "quintessentialtracker", "teal", "cycling club"] {
        let hits = sandbox.json(&["search", hidden, "--mode", "fts", "--json"]);
        let texts: Vec<&str> = hits.as_array().unwrap().iter().filter_map(|h| h["text"].as_str()).collect();
        assert!(texts.iter().all(|t| !t.to_lowercase().contains(&hidden.to_lowercase())), "{hidden} found in {texts:?}");
    }
}

/// Issue 41: html5ever checks each attribute of a tag against the others,
/// so a tag with 80,000 attributes took 12.5 s and a 6 MB page never
/// finished, in-process and without a deadline. Tags are cut to 64
/// attributes before the page is tokenised: the page is read, its text kept.
#[test]
fn a_tag_with_absurdly_many_attributes_is_cut_and_the_page_read() {
    let sandbox = Sandbox::empty();
    let attributes: String = (0..300_000).map(|n| format!(" a{n}")).collect();
    let page = format!(
        "<html><body><main><p{attributes}>The lighthouse keeper winds the clock at noon.</p><p id=x{attributes}>Second paragraph.</p></main></body></html>"
    );
    std::fs::write(sandbox.path("attributes.html"), page).unwrap();
    std::fs::write(sandbox.path("garden.md"), "# Garden\n\nWater the tomatoes every evening in summer.\n").unwrap();
    sandbox.index();
    assert_eq!(sandbox.error_of("attributes.html"), None);
    let hits = sandbox.search("When does the lighthouse keeper wind the clock?", 1);
    assert_eq!(hits[0]["source"], "attributes.html", "{hits:?}");
    assert!(hits[0]["text"].as_str().unwrap().contains("winds the clock at noon"), "{}", hits[0]);
}

/// Issue 41: HTML was read in-process, without the memory limit of the
/// other complex formats. It is read in the reader process now: a page
/// whose reading needs more than `--file-memory` fails alone, with why.
#[test]
fn an_html_page_over_its_memory_budget_fails_alone() {
    let sandbox = Sandbox::empty();
    std::fs::write(sandbox.path("paragraphs.html"), "<p>x</p>".repeat(2_500_000)).unwrap();
    std::fs::write(sandbox.path("small.html"), PAGE).unwrap();
    let report = sandbox.json(&["index", "--json", "--file-memory", "40"]);
    let error = sandbox.error_of("paragraphs.html").unwrap_or_default();
    assert!(error.starts_with("out of memory: reading this file needed over 40 MB"), "{error} {report}");
    assert_eq!(sandbox.error_of("small.html"), None);
}
