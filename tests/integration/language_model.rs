//! A real language model on the chat path: Qwen2.5-Coder-0.5B-Instruct
//! (installed by `make models`), run in-process by llama.cpp. What no
//! scripted model can show: a written answer that cites its passage and is
//! in the question's language; a Chinese question answered in Chinese from
//! its page, whether the model's reply stands or the quoted sentences do; a
//! follow-up that keeps its subject; a question its passages do not
//! answer, not answered though the model read them. A written answer is
//! told from the quoted floor by the absence of the floor's notice.

use serde_json::Value;

use super::util::Sandbox;

const MODEL: &str = "qwen2.5-coder-0.5b-instruct";

fn ask(sandbox: &Sandbox, question: &str, chat: Option<&Value>) -> Value {
    let chat = chat.map(|c| c["chat_id"].to_string());
    let mut args = vec!["ask", question, "--provider", "embedded", "--embedded", MODEL, "--json"];
    if let Some(id) = &chat {
        args.extend(["--chat", id.as_str()]);
    }
    sandbox.json(&args)
}

/// The model read the passages: its generation is on record.
fn assert_read(answer: &Value) {
    assert!(answer["model"]["tokens"].as_u64().unwrap_or(0) > 0, "the model was asked: {answer}");
}

fn cited_sources(answer: &Value) -> Vec<String> {
    answer["citations"].as_array().unwrap().iter().map(|c| c["source"].as_str().unwrap().to_string()).collect()
}

fn has_chinese(text: &str) -> bool {
    text.chars().any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c))
}

fn is_budgerigars(source: &str) -> bool {
    source.contains("budgerigar") || source.contains("虎皮")
}

#[test]
fn a_real_model_answers_in_the_question_language_citing_its_passage_and_keeps_the_subject_of_a_follow_up() {
    let sandbox = Sandbox::with_samples();
    sandbox.index();

    let lifespan = ask(&sandbox, "How many years do budgerigars live?", None);
    assert_read(&lifespan);
    assert_eq!(lifespan["outcome"], "answered", "{lifespan}");
    assert!(lifespan["notice"].is_null(), "the model's own answer stood, not the quoted floor: {lifespan}");
    let text = lifespan["answer"].as_str().unwrap();
    assert!(!has_chinese(text) && text.contains("years") && text.chars().any(|c| c.is_ascii_digit()), "an English answer with its number: {text}");
    assert!(cited_sources(&lifespan).iter().all(|s| is_budgerigars(s)), "{lifespan}");

    let years = ask(&sandbox, "玄凤鹦鹉能活多少年？", None);
    assert_read(&years);
    assert_eq!(years["outcome"], "answered", "{years}");
    let text = years["answer"].as_str().unwrap();
    assert!(has_chinese(text) && text.contains('年'), "a Chinese answer with its years: {years}");
    assert!(cited_sources(&years).iter().all(|s| s.contains("玄凤") || s.contains("cockatiel")), "{years}");

    let follow = ask(&sandbox, "what does it eat?", Some(&lifespan));
    assert_read(&follow);
    assert_eq!(follow["route"]["is_followup"], true, "{follow}");
    assert!(follow["route"]["search_query"].as_str().unwrap().contains("Budgerigar"), "{}", follow["route"]);
    assert!(!cited_sources(&follow).is_empty() && cited_sources(&follow).iter().all(|s| is_budgerigars(s)), "the budgerigar's diet: {follow}");
}

#[test]
fn a_real_model_does_not_answer_what_its_passages_do_not_say() {
    let sandbox = Sandbox::with_samples();
    sandbox.index();
    let price = ask(&sandbox, "虎皮鹦鹉多少钱一只？", None);
    assert_read(&price);
    assert_eq!(price["outcome"], "unsure", "the budgerigar's pages hold no price: {price}");
    assert!(price["citations"].as_array().unwrap().is_empty() && !price["related"].as_array().unwrap().is_empty(), "{price}");
}

/// A prompt the model's context cannot hold is never an error (issue 62):
/// a document whose ten headings are each hundreds of characters long is
/// read within the budget; a question padded with 1,940 emoji (under the
/// 2,000-character limit), too long for the context however few sentences
/// it comes with, gets the floor's answer with a notice saying why; a
/// message of symbols routed as small talk is told it is too long.
#[test]
fn a_prompt_too_long_for_the_context_falls_back_to_the_floor_with_a_notice() {
    let sandbox = Sandbox::empty();
    let mut text = String::new();
    for n in 0..10 {
        let heading = format!("Section {n} {}", "of the very long heading that names everything ".repeat(12));
        text.push_str(&format!(
            "{} {heading}\n\nThe pump of model {n} runs at {} bar and needs oil every {} weeks.\n\n",
            "#".repeat(1 + n.min(5)),
            n + 2,
            n + 3
        ));
    }
    std::fs::write(sandbox.path("pumps.md"), text).unwrap();
    sandbox.index();
    let question = "How often does the pump of model 4 need oil?";
    let answer = ask(&sandbox, question, None);
    assert!(answer["answer"].as_str().is_some_and(|a| !a.is_empty()), "answered, not an error: {answer}");
    assert!(!answer["notice"].as_str().unwrap_or_default().contains("do not fit"), "the long headings fit the budget: {answer}");

    // About 4,600 of the model's tokens: more than its context holds.
    let padded = format!("{question} {}", "🦜".repeat(1940));
    let answer = ask(&sandbox, &padded, None);
    let notice = answer["notice"].as_str().unwrap_or_default();
    assert!(notice.contains("do not fit the language model's context"), "{answer}");
    assert!(answer["answer"].as_str().is_some_and(|a| !a.is_empty()), "{answer}");

    // Small talk searches nothing: too long for the model, it is told so.
    let symbols: String = (0..1994).map(|i| char::from_u32(0x1F700 + i % 0x70).unwrap()).collect();
    let answer = ask(&sandbox, &format!("hello {symbols}"), None);
    assert!(answer["answer"].as_str().is_some_and(|a| a.contains("too long for the language model's context")), "{answer}");
}
