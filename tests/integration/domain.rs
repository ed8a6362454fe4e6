//! A second, non-parrot collection (mushrooms) drives the same pipeline:
//! its kea.toml names the kind of thing, names from front matter are
//! searchable (Latin names, aliases), a GBK-encoded note is decoded, and
//! off-topic questions are refused while the extractive answer cites.

use serde_json::Value;

use crate::decisions::Expect;
use crate::util::Sandbox;

const PAGES: &[(&str, &str)] = &[
    (
        "mushrooms/chanterelle.md",
        "---\nzh: 鸡油菌\nen: Chanterelle\nlatin: Cantharellus cibarius\naliases: [Girolle, 杏黄菌]\n---\n# Chanterelle\n\n## Identification\nA golden, funnel-shaped cap with false gills that run down the stem. It smells faintly of apricots.\n\n## Edibility\nA prized edible mushroom. Cook it well; it is rarely eaten raw.\n",
    ),
    (
        "mushrooms/death-cap.md",
        "---\nzh: 毒鹅膏\nen: Death cap\nlatin: Amanita phalloides\naliases: [毒伞]\n---\n# Death cap\n\n## Identification\nA greenish cap, white gills, a ring on the stem and a cup-like volva at the base.\n\n## Edibility\nDeadly poisonous: one cap can kill an adult. Symptoms appear only after six to twelve hours.\n",
    ),
    (
        "蘑菇/鸡油菌.md",
        "---\nzh: 鸡油菌\nen: Chanterelle\nlatin: Cantharellus cibarius\n---\n# 鸡油菌\n\n## 识别\n菌盖金黄色，呈漏斗状，假菌褶沿菌柄下延，有淡淡的杏子香味。\n\n## 食用\n著名的食用菌，需要充分加热后食用。\n",
    ),
];

const PROFILE: &str = "[collection]\nkind = \"mushroom\"\nkind_zh = \"蘑菇\"\ntopic = \"wild mushrooms\"\n";

pub(crate) fn mushrooms() -> Sandbox {
    let sandbox = Sandbox::empty();
    for (path, text) in PAGES {
        let file = sandbox.path(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, text).unwrap();
    }
    std::fs::write(sandbox.path("kea.toml"), PROFILE).unwrap();
    let (gbk, _, unmappable) = encoding_rs::GBK.encode("采集笔记\n\n雨后第三天在松树林边采到一篮牛肝菌，菌盖褐色，菌管黄色，切开后不变蓝。\n");
    assert!(!unmappable);
    std::fs::create_dir_all(sandbox.path("notes")).unwrap();
    std::fs::write(sandbox.path("notes/采集笔记.txt"), &gbk).unwrap();
    let report = sandbox.index();
    assert_eq!(report["errors"].as_array().map_or(0, Vec::len), 0, "{report}");
    sandbox
}

fn top_source(sandbox: &Sandbox, query: &str) -> String {
    sandbox.search(query, 3).first().map(|h| h["source"].as_str().unwrap().to_string()).unwrap_or_default()
}

#[test]
fn names_from_front_matter_find_their_documents() {
    let sandbox = mushrooms();
    for (query, expected) in [
        ("Cantharellus cibarius", "chanterelle"),
        ("Girolle", "chanterelle"),
        ("Amanita phalloides", "death-cap"),
        ("毒伞", "death-cap"),
        ("杏黄菌", "chanterelle"),
    ] {
        let top = top_source(&sandbox, query);
        assert!(top.contains(expected) || (expected == "chanterelle" && top.contains("鸡油菌")), "{query} → {top}");
    }
}

#[test]
fn a_gbk_text_file_is_decoded_and_searchable() {
    let sandbox = mushrooms();
    let hits = sandbox.search("牛肝菌 菌管", 3);
    let hit: &Value = hits.iter().find(|h| h["source"] == "notes/采集笔记.txt").expect("the GBK note is found");
    assert!(hit["text"].as_str().unwrap().contains("切开后不变蓝"), "{hit}");
}

#[test]
fn off_topic_questions_are_refused_and_answers_quote_with_citations() {
    let sandbox = mushrooms();
    let a = sandbox.decided(&["ask", "Is the death cap poisonous?", "--provider", "none", "--json"], Expect::Is("answered"));
    let answer = a["answer"].as_str().unwrap();
    assert!(answer.contains("Deadly poisonous") && answer.contains("[S1]"), "{answer}");
    assert!(a["notice"].as_str().unwrap().starts_with("Extractive answer"), "{a}");
    let zh = sandbox.json(&["ask", "鸡油菌怎么识别？", "--provider", "none", "--json"]);
    assert!(zh["answer"].as_str().unwrap().contains("漏斗"), "the Chinese page answers a Chinese question: {zh}");
    assert!(zh["notice"].as_str().unwrap().starts_with("摘录"), "{zh}");
    // The refusal threshold raised around the questions (see answers.rs: the shipped one is within the margin of zero).
    sandbox.with_thresholds("all-minilm-l6-v2", 0.3, 0.95);
    for question in ["What do penguins eat?", "企鹅吃什么？", "How do I reset my router password?"] {
        sandbox.decided(&["ask", question, "--provider", "none", "--json"], Expect::Is("refused"));
    }
}
