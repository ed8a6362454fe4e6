//! The question router: decides per message whether the knowledge base is
//! needed (`use_rag`), whether it continues the conversation's subject
//! (`is_followup`), and what to search for; when no document is in the
//! question's language, also that search in the documents' language
//! (`translated_query`). An LLM answers a few-shot prompt under a JSON
//! schema (a grammar on llama.cpp); when it fails or returns junk, keyword
//! rules in Chinese and English decide instead (and nothing is translated).

use super::question::Question;
use crate::language::Language;
use kea_llm::{json::extract_object, Message, Provider, Request, Role};
use serde::{Deserialize, Serialize};
use serde_json::json;

/// How routing decisions are made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RouterMode {
    /// The LLM, with the keyword rules as fallback.
    #[default]
    Llm,
    /// The keyword rules only (measured better than 135M–270M models).
    Keywords,
}

impl RouterMode {
    /// The `auto` choice: the LLM for server models; the keyword rules for
    /// the tiny embedded models, which routed worse than the rules
    /// (tests/golden/routing.jsonl: rules 100%, SmolLM2 47%, gemma 44%).
    pub fn for_provider(kind: kea_llm::ProviderKind) -> RouterMode {
        if kind == kea_llm::ProviderKind::Openai {
            RouterMode::Llm
        } else {
            RouterMode::Keywords
        }
    }
}

/// What the router is told besides the question.
#[derive(Debug, Clone, Copy, Default)]
pub struct RouteContext<'a> {
    /// What the collection is about.
    pub topic: Option<&'a str>,
    /// The documents' language when none of them is
    /// in the question's: the query is also asked for in that language.
    pub documents_language: Option<Language>,
}

/// Routes `question` the way `mode` says.
pub fn decide(
    mode: RouterMode,
    llm: &dyn Provider,
    question: &Question,
    context: &RouteContext,
    cancelled: &(dyn Fn() -> bool + Sync),
) -> (Route, Option<String>) {
    match mode {
        RouterMode::Llm => route(llm, question, context, cancelled),
        RouterMode::Keywords => (keyword_route(question), None),
    }
}

/// Who made the routing decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DecidedBy {
    Llm,
    Keywords,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Route {
    pub is_followup: bool,
    pub use_rag: bool,
    pub search_query: String,
    /// The search query in the documents' language, asked for when they
    /// are in another language than the question.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub translated_query: Option<String>,
    pub decided_by: DecidedBy,
    /// How a follow-up was checked against the question's own subject
    /// (see `Answerer::ask`), in English, for the trace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub followup_check: Option<String>,
}

impl Route {
    /// This route as a new question: searched as asked, not as a follow-up.
    pub fn standing_alone(self, question: &Question, why: String) -> Route {
        Route { is_followup: false, search_query: question.text.clone(), followup_check: Some(why), ..self }
    }
}

/// The JSON schema the router's answer must follow (`translated`: with
/// the query in the documents' language).
pub fn route_schema(translated: bool) -> serde_json::Value {
    let mut schema = json!({
        "type": "object",
        "properties": {
            "is_followup": {"type": "boolean"},
            "use_rag": {"type": "boolean"},
            "search_query": {"type": "string"}
        },
        "required": ["is_followup", "use_rag", "search_query"],
        "additionalProperties": false
    });
    if translated {
        schema["properties"]["translated_query"] = json!({"type": "string"});
        schema["required"].as_array_mut().expect("a list").push("translated_query".into());
    }
    schema
}

const INSTRUCTIONS: &str = "You route questions for an assistant that answers from the user's documents{topic}. \
For each question output JSON: use_rag is true when the answer needs facts from the documents, false for greetings, thanks and small talk; \
is_followup is true when the question refers to the last subject (it, this one, 它, 这只); \
search_query is a short keyword query in the question's language, with the subject's name for follow-ups, empty when use_rag is false.";

/// (last subject, question, answer) worked examples, Chinese and English.
/// Examples from unrelated collections, so no domain is built in.
const EXAMPLES: &[(&str, &str, &str)] = &[
    ("none", "绿萝叶子发黄怎么办？", r#"{"is_followup": false, "use_rag": true, "search_query": "绿萝 叶子发黄"}"#),
    ("none", "hello, how are you today?", r#"{"is_followup": false, "use_rag": false, "search_query": ""}"#),
    ("鸡油菌 (Chanterelle)", "它有毒吗？", r#"{"is_followup": true, "use_rag": true, "search_query": "鸡油菌 毒性"}"#),
    ("none", "How long does a warranty repair take?", r#"{"is_followup": false, "use_rag": true, "search_query": "warranty repair duration"}"#),
    ("Boston fern", "how often should I water it?", r#"{"is_followup": true, "use_rag": true, "search_query": "Boston fern watering"}"#),
    ("none", "谢谢你的帮助！", r#"{"is_followup": false, "use_rag": false, "search_query": ""}"#),
    ("Quartz", "tell me a joke", r#"{"is_followup": false, "use_rag": false, "search_query": ""}"#),
    ("none", "怎么区分石英和方解石？", r#"{"is_followup": false, "use_rag": true, "search_query": "石英 方解石 区别"}"#),
];

fn user_turn(subject: &str, question: &str) -> String {
    format!("Last subject: {subject}\nQuestion: {question}")
}

/// The few-shot conversation for a question. The examples come first and
/// never change, so llama.cpp reuses their cached keys and values; a
/// request for the query in the documents' language ends the last turn.
pub fn router_messages(question: &Question, context: &RouteContext) -> Vec<Message> {
    let topic = context.topic.map_or_else(String::new, |t| format!(" about {t}"));
    let mut messages = vec![Message::new(Role::System, INSTRUCTIONS.replace("{topic}", &topic))];
    for (s, q, a) in EXAMPLES {
        messages.push(Message::new(Role::User, user_turn(s, q)));
        messages.push(Message::new(Role::Assistant, *a));
    }
    let mut last = user_turn(question.subject.as_deref().unwrap_or("none"), &question.text);
    if let Some(language) = context.documents_language.map(Language::name) {
        last.push_str(&format!(
            "\nThe documents are in {language}, not in the question's language: also output translated_query, search_query translated into {language}."
        ));
    }
    messages.push(Message::new(Role::User, last));
    messages
}

/// Parses the router's output (tolerantly: the first `{` to the last `}`).
pub fn parse_route(text: &str) -> Option<Route> {
    let v = extract_object(text)?;
    let text_of = |key: &str| v.get(key).and_then(|t| t.as_str()).map(|t| t.trim().to_string());
    Some(Route {
        is_followup: v.get("is_followup")?.as_bool()?,
        use_rag: v.get("use_rag")?.as_bool()?,
        search_query: text_of("search_query")?,
        translated_query: text_of("translated_query").filter(|t| !t.is_empty()),
        decided_by: DecidedBy::Llm,
        followup_check: None,
    })
}

const SMALL_TALK: &[&str] = &[
    "hello",
    "hi",
    "hey",
    "thanks",
    "thank you",
    "good morning",
    "good night",
    "bye",
    "joke",
    "how are you",
    "who are you",
    "你好",
    "您好",
    "谢谢",
    "多谢",
    "再见",
    "早上好",
    "晚安",
    "笑话",
    "你是谁",
    "哈哈",
];
const FOLLOWUP_ZH: &[&str] = &["它", "它们", "这只", "那只", "这种", "那种", "刚才", "上面"];
const FOLLOWUP_EN: &[&str] = &["it", "its", "it's", "this one", "that one", "they", "them", "their"];

fn has_word(text: &str, word: &str) -> bool {
    let lower = text.to_lowercase();
    lower.match_indices(word).any(|(i, _)| {
        let before = lower[..i].chars().next_back();
        let after = lower[i + word.len()..].chars().next();
        !before.is_some_and(|c| c.is_alphanumeric()) && !after.is_some_and(|c| c.is_alphanumeric())
    })
}

/// The keyword rules: small talk → no retrieval; anything else is a
/// question for the documents; pronouns with a known subject → follow-up.
pub fn keyword_route(question: &Question) -> Route {
    let lower = question.text.to_lowercase();
    // Whole words: "they" is not "hey".
    let says = |marker: &str| if marker.is_ascii() { has_word(&lower, marker) } else { lower.contains(marker) };
    let small_talk = SMALL_TALK.iter().any(|m| says(m)) && lower.chars().filter(|c| c.is_alphanumeric()).count() < 40;
    let named = question.subject_name();
    let followup = named.is_some() && (FOLLOWUP_ZH.iter().any(|m| question.text.contains(m)) || FOLLOWUP_EN.iter().any(|w| has_word(&lower, w)));
    let use_rag = !small_talk;
    let search_query = match (use_rag, followup, named) {
        (false, _, _) => String::new(),
        (true, true, Some(name)) => format!("{name} {}", question.text),
        _ => question.text.clone(),
    };
    Route { is_followup: followup && use_rag, use_rag, search_query, translated_query: None, decided_by: DecidedBy::Keywords, followup_check: None }
}

/// Routes with the LLM, falling back to keywords; the error (if any) says
/// why the fallback was used.
pub fn route(llm: &dyn Provider, question: &Question, context: &RouteContext, cancelled: &(dyn Fn() -> bool + Sync)) -> (Route, Option<String>) {
    let mut request = Request::new(router_messages(question, context));
    request.max_tokens = if context.documents_language.is_some() { 160 } else { 96 };
    request.json_schema = Some(route_schema(context.documents_language.is_some()));
    request.stop = vec!["\nUser:".into()];
    let completion = match llm.complete(&request, &mut |_| {}, cancelled) {
        Ok(completion) => completion,
        Err(e) => return (keyword_route(question), Some(e.to_string())),
    };
    let Some(mut route) = parse_route(&completion.text) else {
        let shown: String = completion.text.chars().take(120).collect();
        return (keyword_route(question), Some(format!("unparseable router output: {shown:?}")));
    };
    if route.use_rag && route.search_query.is_empty() {
        route.search_query = question.text.clone();
    }
    if let (true, Some(name)) = (route.is_followup, question.subject_name()) {
        if !route.search_query.contains(name) {
            route.search_query = format!("{name} {}", route.search_query);
        }
    }
    route.is_followup &= question.subject.is_some();
    if !route.use_rag || context.documents_language.is_none() {
        route.translated_query = None;
    }
    (route, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn asked(text: &str, subject: Option<&str>) -> Question {
        Question::new(text, subject.map(str::to_string))
    }

    #[test]
    fn keyword_rules_in_both_languages() {
        let r = keyword_route(&asked("玄凤鹦鹉吃什么？", None));
        assert!(r.use_rag && !r.is_followup);
        assert!(!keyword_route(&asked("你好！", None)).use_rag);
        assert!(!keyword_route(&asked("Thanks a lot!", None)).use_rag);
        let f = keyword_route(&asked("它能活多久？", Some("玄凤鹦鹉")));
        assert!(f.is_followup && f.use_rag);
        assert_eq!(f.search_query, "玄凤鹦鹉 它能活多久？");
        let both = "玄凤鹦鹉 (Cockatiel)";
        assert_eq!(keyword_route(&asked("它吃什么？", Some(both))).search_query, "玄凤鹦鹉 它吃什么？");
        assert_eq!(keyword_route(&asked("What does it eat?", Some(both))).search_query, "Cockatiel What does it eat?");
        let en = keyword_route(&asked("What does it eat?", Some("Budgerigar")));
        assert!(en.is_followup);
        assert!(en.search_query.starts_with("Budgerigar"));
        assert!(!keyword_route(&asked("What does it eat?", None)).is_followup, "no subject, no follow-up");
        assert!(!keyword_route(&asked("Is the kite bird a parrot?", Some("Budgerigar"))).is_followup, "'it' inside a word is not a pronoun");
        let they = keyword_route(&asked("What do they eat?", Some("Budgerigar")));
        assert!(they.use_rag && they.is_followup, "'they' is a pronoun, not the greeting 'hey': {they:?}");
        assert_eq!(keyword_route(&asked("hi", None)).decided_by, DecidedBy::Keywords);
    }

    #[test]
    fn router_output_parses_tolerantly() {
        let parsed = parse_route(r#" {"is_followup": false, "use_rag": true, "search_query": " cockatiel diet "}"#).unwrap();
        assert_eq!((parsed.is_followup, parsed.use_rag, parsed.search_query.as_str(), parsed.translated_query), (false, true, "cockatiel diet", None));
        let translated =
            parse_route(r#"{"is_followup": false, "use_rag": true, "search_query": "石英 硬度", "translated_query": " quartz hardness "}"#).unwrap();
        assert_eq!(translated.translated_query.as_deref(), Some("quartz hardness"));
        assert_eq!(parse_route("Sure: {\"use_rag\": true}"), None, "missing fields are junk");
        assert_eq!(parse_route("no json at all"), None);
    }

    #[test]
    fn prompt_ends_with_the_question_and_keeps_a_stable_prefix() {
        let a = router_messages(&asked("Q1", None), &RouteContext { topic: Some("minerals"), ..RouteContext::default() });
        let b = router_messages(&asked("Q2", Some("Cockatiel")), &RouteContext { topic: Some("minerals"), documents_language: None });
        let c = router_messages(&asked("Q3", None), &RouteContext { topic: Some("minerals"), documents_language: Some(Language::English) });
        assert!(a[0].content.contains("documents about minerals."));
        assert_eq!(a[..a.len() - 1], b[..b.len() - 1]);
        assert_eq!(a[..a.len() - 1], c[..c.len() - 1], "asking for a translation keeps the cached prefix");
        assert_eq!(b.last().unwrap().content, "Last subject: Cockatiel\nQuestion: Q2");
        assert!(c.last().unwrap().content.ends_with("also output translated_query, search_query translated into English."));
        assert!(route_schema(true)["required"].as_array().unwrap().contains(&"translated_query".into()));
        assert!(route_schema(false)["properties"].get("translated_query").is_none());
    }

    #[test]
    fn a_failing_llm_falls_back_to_keywords() {
        let (route, why) = route(&kea_llm::select::NoProvider, &asked("what do lovebirds eat?", None), &RouteContext::default(), &|| false);
        assert_eq!(route.decided_by, DecidedBy::Keywords);
        assert!(route.use_rag);
        assert!(why.unwrap().contains("no language model"));
    }
}
