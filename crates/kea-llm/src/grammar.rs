//! JSON Schema to GBNF, the grammar llama.cpp constrains sampling with, for
//! the subset of JSON Schema Kea's requests use: objects (properties,
//! required, no additional properties), arrays (items, minItems, maxItems),
//! strings (enum, minLength, maxLength), integers (unbounded, or a range of
//! at most [`MAX_ENUMERATED`] values), numbers, booleans, null and
//! anyOf/oneOf. Anything else is refused with a message, never ignored.
//!
//! The grammars accept the same language as llama.cpp's own converter (its
//! `common` library, which Kea no longer builds): the same white space
//! between tokens, required properties first then optional ones in order,
//! values without leading zeros. Same language, same sampling.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::LlmError;

/// The widest integer range written out as alternatives.
const MAX_ENUMERATED: i64 = 10_000;

/// The largest count (`maxLength`, `maxItems`…): llama.cpp writes a
/// repetition out as one rule per repeat.
const MAX_REPEATED: u64 = 10_000;

/// Keywords that describe a schema without constraining it.
const ANNOTATIONS: &[&str] = &["title", "description", "$schema", "$id", "default", "examples", "$comment"];

const SPACE: &str = r#"| " " | "\n"{1,2} [ \t]{0,20}"#;
const CHAR: &str = r#"[^"\\\x7F\x00-\x1F] | [\\] (["\\bfnrt] | "u" [0-9a-fA-F]{4})"#;
const INTEGRAL: &str = "[0] | [1-9] [0-9]{0,15}";
const NUMBER: &str = r#"("-"? integral-part) ("." decimal-part)? ([eE] [-+]? integral-part)?"#;

/// A GBNF grammar whose `root` rule is JSON matching `schema`.
pub fn for_schema(schema: &Value) -> Result<String, LlmError> {
    let mut grammar = Grammar::default();
    let root = grammar.visit(schema, "root")?;
    grammar.rules.insert("root".into(), root);
    Ok(grammar.rules.iter().map(|(name, body)| format!("{name} ::= {body}\n")).collect())
}

/// Rules by name, each written once.
#[derive(Default)]
struct Grammar {
    rules: BTreeMap<String, String>,
}

impl Grammar {
    /// Adds the rule `name` (a built-in or a schema's) and returns its name:
    /// `name` again for the same body, a numbered name when another part
    /// (`a-b` beside `a_b`) already took it.
    fn rule(&mut self, name: &str, body: &str) -> String {
        let mut unique = name.to_string();
        for n in 2.. {
            match self.rules.get(&unique) {
                Some(existing) if existing != body => unique = format!("{name}-{n}"),
                Some(_) => break,
                None => {
                    self.rules.insert(unique.clone(), body.to_string());
                    break;
                }
            }
        }
        unique
    }

    fn space(&mut self) -> String {
        self.rule("space", SPACE)
    }

    /// The expression for `schema`; `name` names the rules made for its parts.
    fn visit(&mut self, schema: &Value, name: &str) -> Result<String, LlmError> {
        let Some(map) = schema.as_object() else { return Err(unsupported(schema, "a schema must be an object")) };
        if let Some(unknown) = map.keys().find(|k| !ANNOTATIONS.contains(&k.as_str()) && !KNOWN.contains(&k.as_str())) {
            return Err(unsupported(schema, &format!("the keyword {unknown:?}")));
        }
        if let Some(alternatives) = map.get("anyOf").or_else(|| map.get("oneOf")) {
            return self.alternatives(alternatives, name);
        }
        if let Some(values) = map.get("enum") {
            let values = values.as_array().ok_or_else(|| unsupported(schema, "enum must be a list"))?;
            return Ok(format!("({})", values.iter().map(|v| literal(&v.to_string())).collect::<Vec<_>>().join(" | ")));
        }
        if let Some(value) = map.get("const") {
            return Ok(literal(&value.to_string()));
        }
        match map.get("type").and_then(Value::as_str) {
            Some("object") => self.object(map, name),
            Some("array") => self.array(map, name),
            Some("string") => self.string(map),
            Some("integer") => self.integer(map),
            Some("number") => Ok(self.number()),
            Some("boolean") => Ok(self.rule("boolean", r#"("true" | "false")"#)),
            Some("null") => Ok(self.rule("null", r#""null""#)),
            None if map.keys().all(|k| ANNOTATIONS.contains(&k.as_str())) => Ok(self.any_value()),
            _ => Err(unsupported(schema, "its type")),
        }
    }

    fn alternatives(&mut self, alternatives: &Value, name: &str) -> Result<String, LlmError> {
        let list = alternatives.as_array().filter(|l| !l.is_empty()).ok_or_else(|| unsupported(alternatives, "anyOf must be a non-empty list"))?;
        let mut names = Vec::new();
        for (i, alternative) in list.iter().enumerate() {
            let part = format!("{}alternative-{i}", prefix(name));
            let body = self.visit(alternative, &part)?;
            names.push(self.rule(&part, &body));
        }
        Ok(format!("({})", names.join(" | ")))
    }

    /// `{ required…, optional… }`: required properties first, in the order
    /// they are declared, then any of the optional ones, in order.
    fn object(&mut self, map: &serde_json::Map<String, Value>, name: &str) -> Result<String, LlmError> {
        let Some(properties) = map.get("properties").and_then(Value::as_object) else {
            return Ok(self.any_object());
        };
        if map.get("additionalProperties").is_some_and(|a| a != &Value::Bool(false)) {
            return Err(unsupported(&Value::Object(map.clone()), "additionalProperties other than false"));
        }
        let required: Vec<&str> = map.get("required").and_then(Value::as_array).map(|r| r.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
        let space = self.space();
        let (mut first, mut optional) = (Vec::new(), Vec::new());
        for (key, value) in properties {
            let part = format!("{}{}", prefix(name), rule_name(key));
            let body = self.visit(value, &part)?;
            let kv = self.rule(&format!("{part}-kv"), &format!("{} {space} \":\" {space} {body}", literal(&Value::String(key.clone()).to_string())));
            if required.contains(&key.as_str()) {
                first.push(kv);
            } else {
                optional.push((part, kv));
            }
        }
        let mut body = format!("\"{{\" {space} {}", first.join(&format!(" \",\" {space} ")));
        if !optional.is_empty() {
            let any = self.optional_in_order(&optional, &space);
            body.push_str(&if first.is_empty() { format!(" {any}?") } else { format!(" ( \",\" {space} {any} )?") });
        }
        Ok(format!("{body} {space} \"}}\""))
    }

    /// Any non-empty run of `optional` in order, as alternatives by the
    /// first one present: `(a a-rest | b b-rest | c)`.
    fn optional_in_order(&mut self, optional: &[(String, String)], space: &str) -> String {
        let mut rest = String::new();
        let mut alternatives = Vec::new();
        for (i, (part, kv)) in optional.iter().enumerate().rev() {
            if i + 1 == optional.len() {
                alternatives.push(kv.clone());
            } else {
                let next = &optional[i + 1].1;
                let body = format!("( \",\" {space} {next} )? {rest}");
                rest = self.rule(&format!("{part}-rest"), body.trim_end());
                alternatives.push(format!("{kv} {rest}"));
            }
        }
        alternatives.reverse();
        format!("({})", alternatives.join(" | "))
    }

    fn array(&mut self, map: &serde_json::Map<String, Value>, name: &str) -> Result<String, LlmError> {
        let item = match map.get("items") {
            Some(items) => {
                let part = format!("{}item", prefix(name));
                let body = self.visit(items, &part)?;
                self.rule(&part, &body)
            }
            None => self.any_value(),
        };
        let space = self.space();
        let (min, max) = (count(map, "minItems")?.unwrap_or(0), count(map, "maxItems")?);
        let more = match max {
            Some(max) if max < min => return Err(unsupported(&Value::Object(map.clone()), "maxItems below minItems")),
            Some(0 | 1) => String::new(),
            Some(max) => format!(" (\",\" {space} {item}){{{},{}}}", min.saturating_sub(1), max - 1),
            None => format!(" (\",\" {space} {item}){{{},}}", min.saturating_sub(1)),
        };
        let items = format!("{item}{more}");
        let items = match (min, max) {
            (_, Some(0)) => String::new(),
            (0, _) => format!("({items})?"),
            _ => items,
        };
        Ok(format!("\"[\" {space} {items} {space} \"]\""))
    }

    fn string(&mut self, map: &serde_json::Map<String, Value>) -> Result<String, LlmError> {
        let char = self.rule("char", CHAR);
        let repeat = match (count(map, "minLength")?.unwrap_or(0), count(map, "maxLength")?) {
            (_, Some(0)) => return Ok(r#""\"" "\"""#.to_string()),
            (0, None) => "*".to_string(),
            (1, None) => "+".to_string(),
            (min, None) => format!("{{{min},}}"),
            (min, Some(max)) if max >= min => format!("{{{min},{max}}}"),
            _ => return Err(unsupported(&Value::Object(map.clone()), "maxLength below minLength")),
        };
        Ok(format!(r#""\"" {char}{repeat} "\"""#))
    }

    /// An integer between the schema's bounds, as its decimal alternatives;
    /// without bounds, any integer.
    fn integer(&mut self, map: &serde_json::Map<String, Value>) -> Result<String, LlmError> {
        match (map.get("minimum").and_then(Value::as_i64), map.get("maximum").and_then(Value::as_i64)) {
            (None, None) if !map.contains_key("minimum") && !map.contains_key("maximum") => {
                let integral = self.rule("integral-part", INTEGRAL);
                Ok(format!(r#"("-"? {integral})"#))
            }
            (Some(min), Some(max)) if min <= max && max - min < MAX_ENUMERATED => {
                Ok(format!("({})", (min..=max).map(|n| literal(&n.to_string())).collect::<Vec<_>>().join(" | ")))
            }
            _ => Err(unsupported(&Value::Object(map.clone()), &format!("integer bounds other than both, at most {MAX_ENUMERATED} apart"))),
        }
    }

    fn number(&mut self) -> String {
        self.rule("integral-part", INTEGRAL);
        self.rule("decimal-part", "[0-9]{1,16}");
        self.rule("number", NUMBER)
    }

    /// Any JSON value (`value`), with the rules for each kind of value.
    fn any_value(&mut self) -> String {
        let space = self.space();
        let char = self.rule("char", CHAR);
        self.rule("string", &format!(r#""\"" {char}* "\"""#));
        self.number();
        self.rule("boolean", r#"("true" | "false")"#);
        self.rule("null", r#""null""#);
        self.rule("array", &format!(r#""[" {space} ( value ("," {space} value)* )? {space} "]""#));
        self.rule("object", &format!(r#""{{" {space} ( string ":" {space} value ("," {space} string ":" {space} value)* )? {space} "}}""#));
        self.rule("value", "object | array | string | number | boolean | null")
    }

    /// Any JSON object (`object`).
    fn any_object(&mut self) -> String {
        self.any_value();
        "object".to_string()
    }
}

/// Keywords [`Grammar::visit`] reads.
const KNOWN: &[&str] = &[
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "minItems",
    "maxItems",
    "minLength",
    "maxLength",
    "minimum",
    "maximum",
    "enum",
    "const",
    "anyOf",
    "oneOf",
];

/// `name-` for the rules of a part of `name`; nothing for the root.
fn prefix(name: &str) -> String {
    if name == "root" {
        String::new()
    } else {
        format!("{name}-")
    }
}

/// A rule name from a property name: letters and digits kept, the rest `-`.
fn rule_name(key: &str) -> String {
    let name: String = key.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '-' }).collect();
    format!("p-{name}")
}

/// A non-negative count keyword (`minItems`, `maxLength`…), if present.
fn count(map: &serde_json::Map<String, Value>, key: &str) -> Result<Option<usize>, LlmError> {
    match map.get(key) {
        None => Ok(None),
        Some(v) => v
            .as_u64()
            .filter(|&n| n <= MAX_REPEATED)
            .map(|n| Some(n as usize))
            .ok_or_else(|| unsupported(v, &format!("{key} other than a whole number up to {MAX_REPEATED}"))),
    }
}

/// `text` as a GBNF string literal.
fn literal(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push_str(&format!("\\x{:02X}", c as u32 & 0xFF)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn unsupported(schema: &Value, what: &str) -> LlmError {
    let shown: String = schema.to_string().chars().take(120).collect();
    LlmError::Generation(format!("schema to grammar: {what} is not supported in {shown}"))
}

#[cfg(test)]
mod tests {
    use super::{for_schema, literal};
    use serde_json::json;

    fn rule<'a>(grammar: &'a str, name: &str) -> &'a str {
        grammar.lines().find_map(|l| l.strip_prefix(&format!("{name} ::= "))).unwrap_or_else(|| panic!("no rule {name} in\n{grammar}"))
    }

    #[test]
    fn required_properties_come_first_and_optional_ones_follow_in_order() {
        let g = for_schema(&json!({"type": "object", "properties": {
            "a": {"type": "string"}, "b": {"type": "boolean"}, "c": {"type": "number"}, "d": {"type": "null"}
        }, "required": ["b"], "additionalProperties": false}))
        .unwrap();
        assert_eq!(rule(&g, "root"), r#""{" space p-b-kv ( "," space (p-a-kv p-a-rest | p-c-kv p-c-rest | p-d-kv) )? space "}""#);
        assert_eq!(rule(&g, "p-a-rest"), r#"( "," space p-c-kv )? p-c-rest"#);
        assert_eq!(rule(&g, "p-c-rest"), r#"( "," space p-d-kv )?"#);
        assert_eq!(rule(&g, "p-b-kv"), r#""\"b\"" space ":" space boolean"#);
    }

    #[test]
    fn counts_and_ranges_bound_what_can_be_written() {
        let g = for_schema(&json!({"type": "object", "properties": {
            "evidence": {"type": "array", "items": {"type": "integer", "minimum": 1, "maximum": 3}, "minItems": 1, "maxItems": 2},
            "none": {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 1}, "maxItems": 0},
            "reply": {"type": "string", "maxLength": 240}, "empty": {"type": "string", "maxLength": 0}
        }, "required": ["evidence", "none", "reply", "empty"]}))
        .unwrap();
        assert_eq!(rule(&g, "p-evidence-item"), r#"("1" | "2" | "3")"#);
        assert_eq!(rule(&g, "p-evidence-kv"), r#""\"evidence\"" space ":" space "[" space p-evidence-item ("," space p-evidence-item){0,1} space "]""#);
        assert_eq!(rule(&g, "p-none-kv"), r#""\"none\"" space ":" space "[" space  space "]""#);
        assert_eq!(rule(&g, "p-reply-kv"), r#""\"reply\"" space ":" space "\"" char{0,240} "\"""#);
        assert_eq!(rule(&g, "p-empty-kv"), r#""\"empty\"" space ":" space "\"" "\"""#);
        let g = for_schema(&json!({"type": "array", "items": {"type": "boolean"}, "maxItems": 1})).unwrap();
        assert_eq!(rule(&g, "root"), r#""[" space (item)? space "]""#);
    }

    #[test]
    fn names_and_values_are_quoted_whatever_they_hold() {
        assert_eq!(literal(r#""a\b"#), r#""\"a\\b""#);
        assert_eq!(literal("x\ny\u{1}"), r#""x\ny\x01""#);
        let g = for_schema(&json!({"type": "string", "enum": ["say \"hi\"\n", "鹦鹉"]})).unwrap();
        assert_eq!(rule(&g, "root"), r#"("\"say \\\"hi\\\"\\n\"" | "\"鹦鹉\"")"#);
        let g = for_schema(&json!({"type": "object", "properties": {"we\"ird ::= name": {"type": "boolean"}}, "required": ["we\"ird ::= name"]})).unwrap();
        assert!(g.lines().all(|l| l.matches("::=").count() == 1 || l.contains(r#"\"we\\\"ird ::= name\""#)), "{g}");
    }

    #[test]
    fn alternatives_stay_together_inside_a_property_and_like_names_stay_apart() {
        let g = for_schema(&json!({"type": "object", "properties": {
            "a-b": {"anyOf": [{"type": "null"}, {"type": "boolean"}]}, "a_b": {"type": "array", "items": {"type": "null"}}
        }, "required": ["a-b", "a_b"]}))
        .unwrap();
        assert_eq!(rule(&g, "p-a-b-kv"), r#""\"a-b\"" space ":" space (p-a-b-alternative-0 | p-a-b-alternative-1)"#);
        assert!(rule(&g, "p-a-b-kv-2").starts_with(r#""\"a_b\"""#), "{g}");
    }

    #[test]
    fn what_the_subset_does_not_cover_is_refused_not_ignored() {
        for schema in [
            json!({"type": "string", "pattern": "^a$"}),
            json!({"type": "integer", "minimum": 0}),
            json!({"type": "integer", "minimum": 0, "maximum": 1_000_000}),
            json!({"type": "object", "properties": {}, "additionalProperties": true}),
            json!({"type": "array", "minItems": 3, "maxItems": 1}),
            json!({"type": "string", "maxLength": 1_000_000_000u64}),
            json!({"$ref": "#/x"}),
            json!("string"),
        ] {
            let error = for_schema(&schema).unwrap_err().to_string();
            assert!(error.contains("not supported"), "{schema}: {error}");
        }
    }

    #[test]
    fn a_schema_without_properties_takes_any_json_of_its_kind() {
        let g = for_schema(&json!({"type": "object"})).unwrap();
        assert_eq!(rule(&g, "root"), "object");
        assert!(rule(&g, "value").contains("object | array | string | number | boolean | null"));
        let g = for_schema(&json!({"type": "array", "maxItems": 2})).unwrap();
        assert_eq!(rule(&g, "root"), r#""[" space (value ("," space value){0,1})? space "]""#);
        assert!(rule(&g, "object").contains("value"));
    }
}
