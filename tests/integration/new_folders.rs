//! A new user's first questions, asked of a folder that is not the sample
//! (a recipe page and an inventory CSV), with no language model: an
//! answerable question is never refused, and what Kea shows first (the
//! answer, or an unsure outcome's first related passage) holds the answer.
//! And a conversation that changes subject: a follow-up keeps the subject
//! only when the question names none of its own.

use serde_json::Value;

use crate::decisions::Expect;
use crate::util::Sandbox;

const BREAD: &str = "# Country Loaf\n\n## Method\nMix the flour, water and salt into a shaggy dough. Let the dough rise for twelve hours in a cool kitchen before shaping the loaf. Bake it in a hot oven for forty minutes.\n\n## Storage\nKeep the bread in a linen bag for up to three days.\n";
const STOCK: &str = "code,item,location,quantity\nK-101,copper kettle,shelf 14,3\nK-102,enamel teapot,shelf 9,5\nK-103,cast iron pan,shelf 2,7\nK-104,bamboo steamer,shelf 11,4\n";

fn kitchen() -> Sandbox {
    let sandbox = Sandbox::empty();
    std::fs::write(sandbox.path("country-loaf.md"), BREAD).unwrap();
    std::fs::write(sandbox.path("stock.csv"), STOCK).unwrap();
    let report = sandbox.index();
    assert_eq!(report["errors"].as_array().map_or(0, Vec::len), 0, "{report}");
    sandbox
}

/// What the user reads first: an answer's text, or an unsure outcome's
/// first related passage.
fn shown_first(answer: &Value) -> String {
    match answer["outcome"].as_str() {
        Some("answered") => answer["answer"].as_str().unwrap_or_default().to_string(),
        _ => answer["related"][0]["snippet"].as_str().unwrap_or_default().to_string(),
    }
}

#[test]
fn the_first_questions_in_a_folder_about_something_else_are_not_refused() {
    let sandbox = kitchen();
    for (question, holds) in [("How long should the dough rise?", "twelve hours"), ("Which shelf holds the copper kettle?", "shelf 14")] {
        let answer = sandbox.decided(&["ask", question, "--provider", "none", "--json"], Expect::Not("refused"));
        assert!(shown_first(&answer).contains(holds), "{question} → {answer}");
    }
    sandbox.decided(&["ask", "What is the capital of France?", "--provider", "none", "--json"], Expect::Not("answered"));
}

#[test]
fn an_extractive_answer_quotes_the_sentence_that_answers_and_not_its_neighbours() {
    let sandbox = kitchen();
    let answer = sandbox.decided(&["ask", "How long should the dough rise?", "--provider", "none", "--json"], Expect::Not("refused"));
    if answer["outcome"] == "answered" {
        let text = answer["answer"].as_str().unwrap();
        assert!(text.contains("twelve hours") && !text.contains("forty minutes") && !text.contains("linen bag"), "{text}");
    }
}

/// A folder written in one language, asked in the other, with the default
/// (English-only) embedder and no model: the word lexicon crosses the
/// question over the words the folder holds, so the page that answers is
/// shown; a question about something the folder lacks is not answered.
#[test]
fn a_question_in_the_other_language_than_the_folder_is_crossed_word_by_word() {
    let sandbox = kitchen();
    for (question, holds) in [("面团要发酵多久？", "twelve hours"), ("铜水壶放在哪个货架？", "shelf 14")] {
        let answer = sandbox.decided(&["ask", question, "--provider", "none", "--json"], Expect::Not("refused"));
        assert!(shown_first(&answer).contains(holds), "{question} → {answer}");
        assert!(answer["retrieval"]["query"].as_str().unwrap().contains(" | "), "searched in English too: {answer}");
    }
    sandbox.decided(&["ask", "微波炉的保修期是几年？", "--provider", "none", "--json"], Expect::Not("answered"));

    let chinese = Sandbox::empty();
    std::fs::write(
        chinese.path("红烧肉.md"),
        "# 红烧肉

## 用料
五花肉 500 克，冰糖 30 克，生抽两勺，老抽一勺。

## 做法
五花肉切块焯水，小火炒出糖色后加开水，炖一个小时。
",
    )
    .unwrap();
    std::fs::write(
        chinese.path("番茄炒蛋.md"),
        "# 番茄炒蛋

## 做法
鸡蛋打散炒熟盛出，番茄切块炒软，再倒回鸡蛋，加盐和少许糖。
",
    )
    .unwrap();
    chinese.index();
    let answer = chinese.decided(&["ask", "How much rock sugar goes into the braised pork belly?", "--provider", "none", "--json"], Expect::Not("refused"));
    assert!(shown_first(&answer).contains("冰糖 30 克"), "{answer}");
    chinese.decided(&["ask", "How long do I bake the sourdough?", "--provider", "none", "--json"], Expect::Not("answered"));
}

/// A folder with pages in both languages, and the default embedder, which
/// reads English only: a question whose answer is on a page in the other
/// language is not refused. That page is offered as related reading with
/// its answering sentence (found by the question crossed word for word);
/// a question the folder cannot answer in either language is not answered.
#[test]
fn a_page_in_the_folders_other_language_is_offered_when_the_embedder_cannot_read_it() {
    let sandbox = kitchen();
    std::fs::write(sandbox.path("茶壶保养.md"), "# 茶壶保养\n\n## 清洗\n紫砂茶壶不能用洗洁精清洗，只用热水冲洗。用完后倒掉茶叶，把茶壶倒扣晾干。\n\n## 存放\n长时间不用时，在壶里放一块方糖防止发霉。\n").unwrap();
    sandbox.index();
    for (question, page, holds) in [
        ("Can I wash the teapot with dish soap?", "茶壶保养.md", "不能用洗洁精"),
        ("How should the teapot be stored when it is not used?", "茶壶保养.md", "方糖"),
        ("面包要烤多久？", "country-loaf.md", "forty minutes"),
    ] {
        let answer = sandbox.decided(&["ask", question, "--provider", "none", "--json"], Expect::Not("refused"));
        assert_eq!(answer["outcome"], "unsure", "crossed word for word, at best unsure: {answer}");
        let related = answer["related"].as_array().unwrap();
        assert!(related.iter().any(|r| r["source"] == page && r["snippet"].as_str().unwrap().contains(holds)), "{question} → {answer}");
        let stages = answer["retrieval"]["stages"].as_array().unwrap();
        assert!(stages.iter().any(|s| s["stage"] == "other_language"), "the trace says so: {answer}");
    }
    sandbox.decided(&["ask", "How do I change a car tyre?", "--provider", "none", "--json"], Expect::Not("answered"));
}

fn route_of(answer: &Value) -> &Value {
    &answer["route"]
}

#[test]
fn a_follow_up_keeps_its_subject_only_when_the_question_names_none_of_its_own() {
    let sandbox = Sandbox::with_samples();
    sandbox.index();
    let ask = |question: &str, chat: Option<&str>| -> Value {
        let mut args = vec!["ask", question, "--provider", "none", "--json"];
        args.extend(chat.map(|c| ["--chat", c]).into_iter().flatten());
        sandbox.json(&args)
    };
    let first = ask("How long do African grey parrots live?", None);
    let chat = first["chat_id"].as_i64().unwrap().to_string();
    let second = ask("What do Quaker parrots use to make their homes?", Some(&chat));
    let route = route_of(&second);
    assert_eq!(route["is_followup"], false, "it names its own subject: {route}");
    assert!(route["followup_check"].as_str().unwrap_or_default().contains("names its own subject"), "{route}");
    let sources: Vec<&str> =
        second["citations"].as_array().unwrap().iter().chain(second["related"].as_array().unwrap()).filter_map(|c| c["source"].as_str()).collect();
    assert!(sources.first().is_some_and(|s| s.contains("monk-parakeet") || s.contains("和尚")), "{sources:?}");
    assert!(!sources.iter().any(|s| s.contains("african-grey") || s.contains("非洲灰")), "the last subject is not quoted: {sources:?}");
    let third = ask("What do they eat?", Some(&chat));
    let route = route_of(&third);
    assert_eq!(route["is_followup"], true, "{route}");
    assert!(route["search_query"].as_str().unwrap().contains("Monk Parakeet"), "the subject is the new one: {route}");
}
