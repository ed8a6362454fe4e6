//! The answer / unsure / refuse decision (issue 25) through the CLI: each
//! outcome is reachable with its own wording; the calibration Kea ships
//! keeps its figures on the held-out questions it was never fitted on; and
//! a collection's own golden set (here not about parrots) calibrates the
//! decision for that collection.

use std::path::Path;

use serde_json::Value;

use crate::decisions::Expect;
use crate::util::{repo_root, Sandbox};

fn ask(sandbox: &Sandbox, question: &str, expected: Expect) -> Value {
    sandbox.decided(&["ask", question, "--provider", "none", "--json"], expected)
}

#[test]
fn every_outcome_is_reachable_from_the_command_line() {
    let sandbox = Sandbox::with_samples();
    sandbox.index();
    let answered = ask(&sandbox, "Does a budgie need a cuttlebone?", Expect::Is("answered"));
    assert_eq!(answered["retrieval"]["relevance"]["outcome"], "answered");
    assert!(answered["related"].as_array().unwrap().is_empty());
    assert_eq!(answered["citations"][0]["source"], "parrots/budgerigar.md");

    // The shipped refusal threshold lies closer to zero than the margin a
    // single example needs (Kea refuses only what looks unrelated to all it
    // has): what a refusal shows is asserted with the threshold raised
    // around the question (how many are refused is the held-out test's).
    sandbox.with_thresholds("all-minilm-l6-v2", 0.3, 0.95);
    let refused = ask(&sandbox, "How do I reset my router password?", Expect::Is("refused"));
    assert!(refused["related"].as_array().unwrap().is_empty());
    assert!(refused["citations"].as_array().unwrap().is_empty());
    assert_eq!(refused["retrieval"]["relevance"]["outcome"], "refused");

    // The shipped unsure band is narrower than twice the margin a single
    // example needs: what an unsure outcome shows is asserted with the band
    // widened around the question (the band's place is the held-out test's).
    sandbox.with_thresholds("all-minilm-l6-v2", 0.05, 0.95);
    let unsure = ask(&sandbox, "what size cage does a rabbit need", Expect::Is("unsure"));
    assert!(unsure["answer"].as_str().unwrap().starts_with("Not sure: I found no direct answer"), "{unsure}");
    assert!(unsure["citations"].as_array().unwrap().is_empty(), "nothing is cited as an answer: {unsure}");
    let related = unsure["related"].as_array().unwrap();
    assert!(!related.is_empty() && related.len() <= 3, "the closest passages are offered: {unsure}");
    for r in related {
        assert!(r["source"].as_str().is_some_and(|s| !s.is_empty()) && r["heading_path"].is_string() && r["chunk_id"].is_i64(), "{r}");
        // The snippet is a sentence of the passage as stored.
        let db = rusqlite::Connection::open(sandbox.data.join("kea.sqlite3")).unwrap();
        let chunk_text =
            |id: &serde_json::Value| -> String { db.query_row("SELECT text FROM chunks WHERE id = ?1", [id.as_i64().unwrap()], |row| row.get(0)).unwrap() };
        let words = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
        let text = words(&r["chunk_ids"].as_array().unwrap().iter().map(chunk_text).collect::<Vec<_>>().join(" "));
        let snippet = words(r["snippet"].as_str().unwrap().trim_end_matches('…'));
        assert!(!snippet.is_empty() && text.contains(&snippet), "{r} not in {text}");
    }
    let reason = unsure["retrieval"]["relevance"]["reason"].as_str().unwrap();
    assert!(reason.contains("calibrated probability") && reason.contains("→ unsure"), "{reason}");
}

/// Figures of the shipped calibration on the held-out split when it was
/// fitted (`kea eval --calibrate`, see the calibration file's report).
/// A refused answerable question hides a page the user asked about: the
/// decision refuses almost none (an unanswerable one is mostly left unsure
/// instead, with its closest passages and no answer claimed).
const HELD_OUT_ANSWERABLE_REFUSED: f64 = 0.0;
const HELD_OUT_UNANSWERABLE_REFUSED: f64 = 0.12;
const HELD_OUT_UNANSWERABLE_ANSWERED: f64 = 0.024;
/// Answerable questions whose right document is shown (answered from, or
/// a related passage of an unsure outcome).
const HELD_OUT_RIGHT_DOCUMENT_SHOWN: f64 = 0.83;
/// Answerable questions not refused whose evidence phrase is among the
/// sentences a language model reads (71 of 81 when measured).
const HELD_OUT_EVIDENCE_READ: f64 = 0.88;

#[test]
fn the_shipped_decision_keeps_its_figures_on_held_out_questions() {
    let sandbox = Sandbox::with_samples();
    sandbox.index();
    let golden: Vec<String> = ["new-en-answerable.jsonl", "new-en-unanswerable.jsonl", "zh-paraphrases.jsonl", "zh-owners.jsonl"]
        .iter()
        .map(|f| repo_root().join("tests/golden").join(f).display().to_string())
        .collect();
    let mut args: Vec<&str> = vec!["eval"];
    args.extend(golden.iter().map(String::as_str));
    args.extend(["--split", "test", "--json"]);
    let out = sandbox.json(&args);
    let full = out["results"].as_array().unwrap().iter().find(|r| r["name"] == "full").expect("the full pipeline is evaluated");
    let (answerable, unanswerable) = (&full["refusal"]["outcomes"][0], &full["refusal"]["outcomes"][1]);
    assert!(answerable["questions"].as_u64().unwrap() >= 80 && unanswerable["questions"].as_u64().unwrap() >= 40, "{full}");
    let rate = |v: &Value, k: &str| v[k].as_f64().unwrap();
    assert!(rate(answerable, "refused") <= HELD_OUT_ANSWERABLE_REFUSED + 0.03, "more answerable questions refused: {answerable}");
    assert!(rate(unanswerable, "refused") >= HELD_OUT_UNANSWERABLE_REFUSED - 0.03, "fewer off-topic questions refused: {unanswerable}");
    assert!(rate(unanswerable, "answered") <= HELD_OUT_UNANSWERABLE_ANSWERED + 0.03, "off-topic questions answered outright: {unanswerable}");
    let seen = &full["answers"]["all"];
    assert!(rate(seen, "shown") >= HELD_OUT_RIGHT_DOCUMENT_SHOWN - 0.03, "fewer right documents shown: {seen}");
    assert!(rate(seen, "read") >= HELD_OUT_EVIDENCE_READ - 0.05, "fewer answers among the sentences a model reads: {seen}");
}

#[test]
fn a_collections_own_golden_set_calibrates_its_decision() {
    let sandbox = crate::domain::mushrooms();
    let questions = [
        ("Is the death cap poisonous?", Some("mushrooms/death-cap.md")),
        ("what colour is a chanterelle cap", Some("mushrooms/chanterelle.md")),
        ("how soon do death cap symptoms show", Some("mushrooms/death-cap.md")),
        ("does a chanterelle smell of anything", Some("mushrooms/chanterelle.md")),
        ("can you eat chanterelles raw", Some("mushrooms/chanterelle.md")),
        ("鸡油菌长什么样", Some("蘑菇/鸡油菌.md")),
        ("What do penguins eat?", None),
        ("How do I reset my router password?", None),
        ("how long do cats live", None),
        ("what is the capital of France", None),
        ("企鹅吃什么？", None),
        ("how do I bake bread", None),
    ];
    let golden: String = questions
        .iter()
        .map(|(q, relevant)| {
            serde_json::json!({"query": q, "answerable": relevant.is_some(), "relevant": relevant.iter().collect::<Vec<_>>()}).to_string() + "\n"
        })
        .collect();
    let file = sandbox.data.join("mine.jsonl");
    std::fs::write(&file, golden).unwrap();
    let shown = sandbox.json(&["eval", file.to_str().unwrap(), "--calibrate", "--folds", "3", "--json"]);
    assert!(!sandbox.data.join("relevance-calibration.json").exists(), "a fit is only shown unless --install: {shown}");
    let out = sandbox.json(&["eval", file.to_str().unwrap(), "--calibrate", "--folds", "3", "--install", "--json"]);
    assert_eq!(out["model"], "all-minilm-l6-v2", "fitted for this index's embedder: {out}");
    let saved: Value = serde_json::from_slice(&std::fs::read(sandbox.data.join("relevance-calibration.json")).unwrap()).unwrap();
    assert_eq!(saved, out, "written to the data folder");
    let reason = sandbox.json(&["search", "Is the death cap poisonous?", "--trace", "--json"])["trace"]["relevance"]["reason"].as_str().unwrap().to_string();
    let shipped: Value =
        serde_json::from_str(&std::fs::read_to_string(repo_root().join("crates/kea-engine/calibration/all-minilm-l6-v2.json")).unwrap()).unwrap();
    let threshold = |c: &Value, k: &str| format!("{:.2}", c[k].as_f64().unwrap());
    assert_ne!(threshold(&saved, "answer_at"), threshold(&shipped, "answer_at"), "a fit of its own, not the shipped one");
    let own = [threshold(&saved, "answer_at"), threshold(&saved, "refuse_below")];
    assert!(own.iter().any(|t| reason.contains(t.as_str())), "the collection's own thresholds decide: {reason} ({own:?})");
    for (folds, refusal) in [("0", "at least 2 folds"), ("1", "at least 2 folds"), ("1000000", "at most 20 folds")] {
        let out = sandbox.run(&["eval", file.to_str().unwrap(), "--calibrate", "--folds", folds, "--install"]);
        assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains(refusal), "--folds {folds}");
    }
    let lexical = sandbox.run(&["eval", file.to_str().unwrap(), "--calibrate", "--folds", "3", "--lexical", "--install"]);
    assert!(!lexical.status.success() && String::from_utf8_lossy(&lexical.stderr).contains("--out instead"), "a fit this index would not use");
    let store = sandbox.data.join("kea.sqlite3");
    let inside = sandbox.run(&["eval", file.to_str().unwrap(), "--calibrate", "--folds", "3", "--out", store.to_str().unwrap(), "--force"]);
    assert!(!inside.status.success() && String::from_utf8_lossy(&inside.stderr).contains("inside Kea's data folder"));
    refuses_to_replace_a_database_ignore_a_flag_or_print_escapes(&sandbox, &file, &store);
    refuses_an_output_before_the_work_and_prints_paths_without_escapes(&sandbox, &file);
    let kept: Value = serde_json::from_slice(&std::fs::read(sandbox.data.join("relevance-calibration.json")).unwrap()).unwrap();
    assert_eq!(kept, saved, "the collection's own fit stays in use");
    assert!(sandbox.json(&["status", "--json"])["chunks"].as_u64().unwrap() > 0, "the index is intact");
    let with_a_file = sandbox.run(&["eval", file.to_str().unwrap(), "--reset-calibration"]);
    assert!(!with_a_file.status.success() && sandbox.data.join("relevance-calibration.json").exists(), "a golden file is no part of a reset");
    let reset = sandbox.run(&["eval", "--reset-calibration"]);
    assert!(reset.status.success(), "{}", String::from_utf8_lossy(&reset.stderr));
    assert!(!sandbox.data.join("relevance-calibration.json").exists(), "reset to Kea's own fit");
}

/// What `kea eval --calibrate` and `kea eval` must not do with `file`, a
/// golden set: replace a database (here a copy of `store`) even with
/// `--force`, ignore `--split`, print a file's escape sequences.
fn refuses_to_replace_a_database_ignore_a_flag_or_print_escapes(sandbox: &Sandbox, file: &Path, store: &Path) {
    // A database is never replaced, even with --force, wherever it is.
    let copy = sandbox.data.with_file_name("index-copy.sqlite3");
    std::fs::copy(store, &copy).unwrap();
    let over = sandbox.run(&["eval", file.to_str().unwrap(), "--calibrate", "--folds", "3", "--out", copy.to_str().unwrap(), "--force"]);
    assert!(!over.status.success() && String::from_utf8_lossy(&over.stderr).contains("part of a database"));
    assert!(std::fs::read(&copy).unwrap().starts_with(b"SQLite format 3\0"));
    // A fit reports on the test split itself: --split is refused, not ignored.
    let split = sandbox.run(&["eval", file.to_str().unwrap(), "--calibrate", "--split", "fit"]);
    assert!(!split.status.success() && String::from_utf8_lossy(&split.stderr).contains("--split"));
    // What a file says reaches the terminal without escape sequences.
    let escaping = sandbox.data.with_file_name("escaping.jsonl");
    let row = serde_json::json!({"query": "q", "lang": "e\u{1b}[5mn", "answerable": true, "relevant": ["mushrooms/death-cap.md"]});
    std::fs::write(&escaping, format!("{row}\n")).unwrap();
    let report = sandbox.run(&["eval", escaping.to_str().unwrap()]);
    assert!(report.status.success() && !report.stdout.contains(&0x1b), "{}", String::from_utf8_lossy(&report.stdout));
    // Nor a line of its own (eighth review: "written to …" looked like an install).
    let query = "q\nwritten to relevance-calibration.json\u{2028}";
    let signals = serde_json::json!({"query": query, "lang": "en", "answerable": true, "embedder": "\u{1b}]0;title\u{7}other", "version": 1, "signals": [["dense", 0.5]]});
    std::fs::write(&escaping, format!("{signals}\n")).unwrap();
    let refused = sandbox.run(&["eval", escaping.to_str().unwrap(), "--calibrate", "--from-signals"]);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success() && !refused.stderr.contains(&0x1b) && stderr.trim_end().lines().count() == 1, "{stderr}");
    // Escapes, an 8-bit CSI and a direction override in questions searched from a file and traced.
    let hostile = "death cap\u{1b}]0;title\u{7} \u{9b}2J poisonous \u{202e}gpj";
    std::fs::write(&escaping, format!("{hostile}\n")).unwrap();
    for args in [vec!["search", "--queries", escaping.to_str().unwrap(), "--top-k", "1"], vec!["search", hostile, "--trace", "--top-k", "1"]] {
        let out = sandbox.run(&args);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success() && !text.contains(['\u{1b}', '\u{9b}', '\u{202e}']), "{args:?}: {text}");
    }
}

/// Fifth review: an output file that cannot be written was found out only
/// after the whole run, and paths from the person's own arguments (a
/// folder's name) reached the terminal raw.
fn refuses_an_output_before_the_work_and_prints_paths_without_escapes(sandbox: &Sandbox, file: &Path) {
    let existing = sandbox.data.with_file_name("existing.json");
    std::fs::write(&existing, "{}").unwrap();
    for flag in [vec!["--calibrate", "--out"], vec!["--label", "x", "--signals-out"]] {
        let mut args = vec!["eval", file.to_str().unwrap()];
        args.extend(&flag);
        args.push(existing.to_str().unwrap());
        let out = sandbox.run(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && stderr.contains("--force") && out.stdout.is_empty(), "{flag:?}: nothing computed first: {stderr}");
    }
    assert_eq!(std::fs::read_to_string(&existing).unwrap(), "{}");
    let folder = sandbox.data.with_file_name("evil\u{1b}]0;title\u{7}\u{202e}folder");
    std::fs::create_dir_all(&folder).unwrap();
    let created = sandbox.run(&["kb", "create", "Evil's; touch pwned", "--folder", folder.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&created.stdout);
    assert!(created.status.success() && text.contains("created") && !text.contains(['\u{1b}', '\u{7}', '\u{202e}']), "{text}");
    // Tenth review: the name in the suggested command is one shell word.
    assert!(text.contains(r#"kea index --kb='Evil'\''s; touch pwned')"#), "{text}");
}

/// Sixth review: a line break in a document's file name printed a forged
/// citation line of its own under the answer.
#[test]
fn a_file_name_never_starts_a_line_of_its_own_under_an_answer() {
    let sandbox = Sandbox::empty();
    let forged = "note\n  [S9] fake.md";
    std::fs::write(sandbox.path(forged), "# Zebra\n\nThe zebra quokka eats seven marigolds daily.\n").unwrap();
    sandbox.index();
    let out = sandbox.run(&["ask", "what does the zebra quokka eat daily", "--provider", "none"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && text.contains("note   [S9] fake.md"), "the name is listed, on one line: {text}");
    assert!(!text.lines().any(|l| l.trim_start().starts_with("[S9]")), "{text}");
}

/// Output nobody reads any more (`kea … | head`) ends the command as it
/// ends other Unix tools, and a full disk is one line: never a panic.
#[test]
fn output_that_cannot_be_written_ends_the_command_without_a_panic() {
    let sandbox = Sandbox::empty();
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let closed = sandbox.command(&["kb", "list"]).stdout(writer).output().unwrap();
    let stderr = String::from_utf8_lossy(&closed.stderr);
    assert_eq!((closed.status.code(), stderr.contains("panicked")), (Some(141), false), "{stderr}");
    let full = sandbox.command(&["kb", "list"]).stdout(std::fs::File::create("/dev/full").unwrap()).output().unwrap();
    let stderr = String::from_utf8_lossy(&full.stderr);
    assert!(full.status.code() == Some(1) && stderr.contains("No space left") && !stderr.contains("panicked"), "{stderr}");
}

/// A conversation exports as Markdown: its questions and answers in order,
/// the citation markers as footnotes naming the document's title and heading,
/// and an answer that was unsure says so and lists its related passages. As
/// JSON, each answer is what `kea ask` showed.
#[test]
fn a_conversation_exports_as_markdown_with_its_citations_as_footnotes() {
    let sandbox = Sandbox::with_samples();
    sandbox.index();
    let first = ask(&sandbox, "What is a cockatiel's diet?", Expect::Is("answered"));
    let chat = first["chat_id"].as_i64().unwrap().to_string();
    sandbox.decided(&["ask", "How long do budgerigars live?", "--chat", &chat, "--provider", "none", "--json"], Expect::Is("answered"));
    sandbox.with_thresholds("all-minilm-l6-v2", 0.05, 0.95);
    let unsure = sandbox.decided(&["ask", "what size cage does a rabbit need", "--chat", &chat, "--provider", "none", "--json"], Expect::Is("unsure"));
    let file = sandbox.data.with_file_name("chat.md");
    let out = sandbox.run(&["chat", "export", &chat, "--out", file.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let markdown = std::fs::read_to_string(&file).unwrap();
    assert!(markdown.starts_with("# What is a cockatiel's diet?\n\n**Question:** What is a cockatiel's diet?\n\n**Answer:** "), "{markdown}");
    assert!(markdown.contains("**Question:** How long do budgerigars live?"), "{markdown}");
    assert!(!markdown.contains("[S1]") && markdown.contains("[^1]") && markdown.contains("\n[^1]: "), "markers become footnotes: {markdown}");
    let notes: Vec<&str> = markdown.lines().filter(|l| l.starts_with("[^")).collect();
    assert!(notes.iter().any(|n| n.contains("Cockatiel (parrots/cockatiel.md) › Cockatiel > Diet")), "{notes:?}");
    assert!(notes.iter().any(|n| n.contains("parrots/budgerigar.md")), "{notes:?}");
    let related = unsure["related"].as_array().unwrap();
    let listed = markdown.split("**Answer (unsure):** Not sure").nth(1).expect("the unsure answer says so").split("\n[^").next().unwrap();
    assert!(listed.contains("Related passages:"), "{markdown}");
    for r in related {
        assert!(listed.contains(r["snippet"].as_str().unwrap().trim()), "{r} is listed: {markdown}");
    }
    let missing = sandbox.run(&["chat", "export", "999"]);
    assert!(!missing.status.success() && String::from_utf8_lossy(&missing.stderr).contains("conversation 999"));
    // An existing file is replaced only when asked; a link to the live store is never written through.
    let again = sandbox.run(&["chat", "export", &chat, "--out", file.to_str().unwrap()]);
    assert!(!again.status.success() && String::from_utf8_lossy(&again.stderr).contains("--force"));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), markdown);
    let link = sandbox.data.with_file_name("innocent.md");
    std::os::unix::fs::symlink(sandbox.data.join("kea.sqlite3"), &link).unwrap();
    let through = sandbox.run(&["chat", "export", &chat, "--out", link.to_str().unwrap(), "--force"]);
    assert!(!through.status.success() && String::from_utf8_lossy(&through.stderr).contains("is a link"));

    let saved = sandbox.run(&["chat", "export", &chat, "--json"]);
    let saved: Value = serde_json::from_slice(&saved.stdout).unwrap();
    let last = &saved.as_array().unwrap()[5]["shown"];
    for field in ["outcome", "notice", "related", "unsupported"] {
        assert_eq!(last[field], unsure[field], "the saved {field} is what was shown");
    }
    assert_eq!(saved[1]["shown"]["outcome"], "answered");
}
