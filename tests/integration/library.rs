//! Questions about whole documents and the collection, without a model
//! (issue 63): the list of every document, one document's overview citing
//! only that document, a name that fits none said so (never another
//! document summarized), a name that fits several offered as a choice,
//! two documents side by side, and passage questions left to the passages.

use serde_json::Value;

use super::util::Sandbox;

/// A small mixed folder: two manuals, a Chinese warranty, two policies
/// that differ in a year, in a subfolder.
fn folder() -> Sandbox {
    let sandbox = Sandbox::empty();
    std::fs::create_dir_all(sandbox.path("policies")).unwrap();
    for (file, text) in [
        (
            "lamp.md",
            "# Desk lamp manual\n\n## Bulbs\n\nThe desk lamp takes an E14 bulb of at most 40 watts. Warm white bulbs suit reading at night.\n\n\
             ## Cleaning\n\nWipe the lamp shade with a dry cloth once a month. Unplug the lamp before cleaning it.\n\n\
             ## Safety\n\nKeep the lamp away from water and curtains. Never cover the lamp shade while the lamp is on.\n",
        ),
        (
            "kettle.md",
            "# Kettle manual\n\n## Descaling\n\nDescale the kettle every four weeks with citric acid. Rinse the kettle twice after descaling.\n\n\
             ## Filling\n\nFill the kettle between the minimum and maximum marks. The kettle holds 1.7 litres of water.\n",
        ),
        ("保修条款.md", "# 保修条款\n\n## 保修期\n\n本产品的保修期为两年，自购买之日起计算。\n\n## 不保修的情况\n\n人为损坏和进水造成的故障不在保修范围内。\n"),
        ("policies/travel-2024.md", "# Travel policy 2024\n\n## Hotels\n\nHotel rooms are refunded up to 120 euros a night.\n\n## Trains\n\nSecond class train tickets are refunded.\n"),
        ("policies/travel-2025.md", "# Travel policy 2025\n\n## Hotels\n\nHotel rooms are refunded up to 150 euros a night.\n\n## Trains\n\nFirst class train tickets are refunded on trips over four hours.\n"),
    ] {
        std::fs::write(sandbox.path(file), text).unwrap();
    }
    sandbox.index();
    sandbox
}

fn ask(sandbox: &Sandbox, question: &str) -> Value {
    sandbox.json(&["ask", question, "--provider", "none", "--json"])
}

fn cited_sources(answer: &Value) -> Vec<String> {
    answer["citations"].as_array().unwrap().iter().map(|c| c["source"].as_str().unwrap().to_string()).collect()
}

#[test]
fn questions_about_documents_and_the_collection_are_answered_from_the_documents() {
    let sandbox = folder();

    let list = ask(&sandbox, "What documents do I have?");
    assert_eq!((list["outcome"].as_str(), list["library"]["scope"]["kind"].as_str()), (Some("answered"), Some("collection")), "{list}");
    let text = list["answer"].as_str().unwrap();
    for name in ["Desk lamp manual", "Kettle manual", "保修条款", "Travel policy 2024", "Travel policy 2025", "policies/"] {
        assert!(text.contains(name), "the list names {name}: {text}");
    }
    assert_eq!(ask(&sandbox, "我有哪些文档？")["library"]["scope"]["kind"], "collection");

    let lamp = ask(&sandbox, "Summarize the desk lamp manual");
    assert_eq!(lamp["outcome"], "answered", "{lamp}");
    assert_eq!(lamp["library"]["resolved"], serde_json::json!(["lamp.md"]));
    let sources = cited_sources(&lamp);
    assert!(sources.len() >= 2 && sources.iter().all(|s| s == "lamp.md"), "an overview cites only its document: {sources:?}");
    let text = lamp["answer"].as_str().unwrap();
    assert!(text.contains("Bulbs") && text.contains("Cleaning") && text.contains("Safety"), "the outline: {text}");

    let zh = ask(&sandbox, "总结一下保修条款");
    assert_eq!(zh["library"]["resolved"], serde_json::json!(["保修条款.md"]), "{zh}");
    assert!(zh["answer"].as_str().unwrap().contains("要点"), "answered in Chinese: {zh}");

    let missing = ask(&sandbox, "Summarize the insurance contract");
    assert_eq!(missing["outcome"], "refused", "{missing}");
    assert!(missing["citations"].as_array().unwrap().is_empty(), "nothing else is summarized: {missing}");
    assert!(missing["answer"].as_str().unwrap().contains("no document called"), "{missing}");

    let several = ask(&sandbox, "Give me an overview of the travel policy");
    assert_eq!(several["outcome"], "unsure", "{several}");
    let text = several["answer"].as_str().unwrap();
    assert!(text.contains("travel-2024.md") && text.contains("travel-2025.md"), "a choice, not a guess: {text}");

    let both = ask(&sandbox, "What changed between travel policy 2024 and travel policy 2025?");
    assert_eq!(both["library"]["resolved"], serde_json::json!(["policies/travel-2024.md", "policies/travel-2025.md"]), "{both}");
    let text = both["answer"].as_str().unwrap();
    assert!(text.contains("120 euros") && text.contains("150 euros"), "{text}");

    let about = ask(&sandbox, "Which documents are about descaling?");
    assert_eq!(cited_sources(&about).first().map(String::as_str), Some("kettle.md"), "{about}");

    let passage = ask(&sandbox, "What's the difference between warm and cold bulbs?");
    assert!(passage.get("library").is_none(), "a passage question goes to the passages: {passage}");
}

/// The golden set written blind to the implementation
/// (tests/golden/library/): on its held-out half, the kind of question is
/// told, the document named is found, a document that does not exist is
/// said so, and an overview cites only its document. The floors sit well
/// under the figures measured (in the closing note of the session that
/// added them): they catch a regression, not a machine's arithmetic.
#[test]
fn held_out_golden_questions_are_routed_and_resolved() {
    let sandbox = Sandbox::empty();
    let golden = super::util::repo_root().join("tests/golden/library");
    for entry in std::fs::read_dir(golden.join("docs")).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, sandbox.path(path.file_name().unwrap().to_str().unwrap())).unwrap();
    }
    sandbox.index();
    let questions: Vec<Value> = std::fs::read_to_string(golden.join("questions.jsonl"))
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let (mut asked, mut routed, mut named, mut resolved, mut missing, mut said, mut overviews, mut only_it) = (0, 0, 0, 0, 0, 0, 0, 0);
    for question in questions.iter().filter(|q| q["split"] == "test") {
        let answer = ask(&sandbox, question["query"].as_str().unwrap());
        let library = answer.get("library");
        let kind = library.map_or("passage", |l| l["scope"]["kind"].as_str().unwrap());
        asked += 1;
        routed += usize::from(kind == question["kind"]);
        if question["kind"] != "document" && question["kind"] != "comparison" {
            continue;
        }
        let wanted: Vec<&str> = question["documents"].as_array().unwrap().iter().map(|d| d.as_str().unwrap()).collect();
        if question["exists"] == true {
            named += 1;
            let mut found: Vec<&str> = library.map_or(Vec::new(), |l| l["resolved"].as_array().unwrap().iter().map(|d| d.as_str().unwrap()).collect());
            found.sort_unstable();
            let mut sorted = wanted.clone();
            sorted.sort_unstable();
            if found == sorted {
                resolved += 1;
                if question["kind"] == "document" {
                    overviews += 1;
                    only_it += usize::from(cited_sources(&answer).iter().all(|s| wanted.contains(&s.as_str())));
                }
            }
        } else {
            missing += 1;
            said += usize::from(library.is_some_and(|l| !l["unresolved"].as_array().unwrap().is_empty()) && answer["outcome"] != "answered");
        }
    }
    let rate = |a: usize, b: usize| a as f64 / b.max(1) as f64;
    eprintln!(
        "held out: {asked} questions, routed {:.3}, resolved {:.3} of {named}, missing said {:.3} of {missing}, overviews citing only their document {:.3} of {overviews}",
        rate(routed, asked),
        rate(resolved, named),
        rate(said, missing),
        rate(only_it, overviews)
    );
    assert!(rate(routed, asked) >= 0.85 && rate(resolved, named) >= 0.4 && rate(said, missing) >= 0.5 && rate(only_it, overviews) >= 0.95);
}
