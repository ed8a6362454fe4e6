//! Tolerant JSON extraction from model output: the text from the first `{`
//! to the last `}` is parsed, so prose or code fences around the object do
//! not matter. [`complete_json`] asks a model for one schema-shaped object.

use crate::{Message, Provider, Request, Role};

/// The JSON object inside `text`, if there is one that parses.
pub fn extract_object(text: &str) -> Option<serde_json::Value> {
    let start = text.find('{')?;
    let end = text.rfind('}')?;
    if end < start {
        return None;
    }
    let value: serde_json::Value = serde_json::from_str(&text[start..=end]).ok()?;
    value.is_object().then_some(value)
}

/// Asks `llm` (system + user message, constrained by `schema` where the
/// provider supports it) and returns the object in its answer; `None` when
/// the model fails or answers no JSON object.
pub fn complete_json(llm: &dyn Provider, system: &str, user: String, schema: serde_json::Value, max_tokens: usize) -> Option<serde_json::Value> {
    let mut request = Request::new(vec![Message::new(Role::System, system), Message::new(Role::User, user)]);
    request.json_schema = Some(schema);
    request.max_tokens = max_tokens;
    let done = llm.complete(&request, &mut |_| {}, &|| false).ok()?;
    extract_object(&done.text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_objects_inside_prose_and_fences() {
        let v = extract_object("Sure! ```json\n{\"use_rag\": true, \"q\": \"a}b\"}\n``` done").unwrap();
        assert_eq!(v["use_rag"], true);
        assert_eq!(v["q"], "a}b");
        assert!(extract_object("no json").is_none());
        assert!(extract_object("} backwards {").is_none());
        assert!(extract_object("[1, 2]").is_none());
        assert!(extract_object("{\"unterminated\": ").is_none());
    }
}
