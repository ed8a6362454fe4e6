//! A real language model on the chat path: Qwen2.5-Coder-0.5B-Instruct
//! (installed by `make models`), run in-process by llama.cpp. What no
//! scripted model can show: a written answer that cites its passage and is
//! in the question's language, in Chinese and English; a follow-up that
//! keeps its subject; a question its passages do not answer, not answered.
//! A written answer is told from the quoted floor by the absence of the
//! floor's notice and the model's token counts on the answer.

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

/// The answer was written by the model and stands: answered, no notice of
/// a quoted answer, the model's generation on record.
fn assert_written(answer: &Value) {
    assert_eq!(answer["outcome"], "answered", "{answer}");
    assert!(answer["notice"].is_null(), "the model's answer stood (no quoted floor): {answer}");
    assert!(answer["model"]["tokens"].as_u64().unwrap() > 0, "{answer}");
}

fn cited_sources(answer: &Value) -> Vec<String> {
    answer["citations"].as_array().unwrap().iter().map(|c| c["source"].as_str().unwrap().to_string()).collect()
}

fn has_chinese(text: &str) -> bool {
    text.chars().any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c))
}

#[test]
fn a_real_model_answers_in_the_question_language_citing_its_passage_and_keeps_the_subject_of_a_follow_up() {
    let sandbox = Sandbox::with_samples();
    sandbox.index();

    let lifespan = ask(&sandbox, "How many years do budgerigars live?", None);
    assert_written(&lifespan);
    let text = lifespan["answer"].as_str().unwrap();
    assert!(!has_chinese(text) && text.chars().any(|c| c.is_ascii_digit()), "an English answer with its number: {text}");
    assert!(cited_sources(&lifespan).iter().any(|s| s.contains("budgerigar") || s.contains("虎皮")), "{lifespan}");

    let diet = ask(&sandbox, "玄凤鹦鹉平时吃什么？", None);
    assert_written(&diet);
    assert!(has_chinese(diet["answer"].as_str().unwrap()), "a Chinese answer: {diet}");
    assert!(cited_sources(&diet).iter().any(|s| s.contains("玄凤") || s.contains("cockatiel")), "{diet}");

    let follow = ask(&sandbox, "what does it eat?", Some(&lifespan));
    assert_eq!(follow["route"]["is_followup"], true, "{follow}");
    assert_written(&follow);
    assert!(cited_sources(&follow).iter().all(|s| s.contains("budgerigar") || s.contains("虎皮") || s.starts_with("guides/")), "{follow}");
}

#[test]
fn a_real_model_does_not_answer_what_its_passages_do_not_say() {
    let sandbox = Sandbox::with_samples();
    sandbox.index();
    for question in ["How much does a cockatiel cost to buy?", "虎皮鹦鹉多少钱一只？"] {
        let answer = ask(&sandbox, question, None);
        assert_ne!(answer["outcome"], "answered", "{answer}");
    }
}
