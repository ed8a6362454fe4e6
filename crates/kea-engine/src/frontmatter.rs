//! Front matter: the `---`-fenced `key: value` header at the top of a markdown
//! or text document (a small YAML subset: scalars, `[a, b]` and `- item` lists).
//! Labelled documents use it to declare their names, e.g. `zh: 玄凤鹦鹉`
//! (which keys hold names is the collection profile's choice).

use std::collections::BTreeMap;

/// Parsed front matter, keys in order of name. Values are strings or lists.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FrontMatter(pub BTreeMap<String, FrontMatterValue>);

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(untagged)]
pub enum FrontMatterValue {
    Text(String),
    List(Vec<String>),
}

impl FrontMatter {
    /// The value of `key` as one string (a list is joined with ", ").
    pub fn get(&self, key: &str) -> Option<String> {
        match self.0.get(key)? {
            FrontMatterValue::Text(s) => Some(s.clone()),
            FrontMatterValue::List(items) => Some(items.join(", ")),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Splits `text` into its front matter and the byte offset where the body
/// starts. Text without a well-formed header returns empty front matter and 0.
pub fn split_front_matter(text: &str) -> (FrontMatter, usize) {
    let body = text.strip_prefix('\u{feff}').unwrap_or(text);
    let Some(rest) = body.strip_prefix("---") else { return (FrontMatter::default(), 0) };
    let Some(rest) = rest.strip_prefix("\r\n").or_else(|| rest.strip_prefix('\n')) else {
        return (FrontMatter::default(), 0);
    };
    let header_start = text.len() - rest.len();
    let mut offset = header_start;
    let mut header_end = None;
    for line in rest.split_inclusive('\n') {
        let trimmed = line.trim_end();
        if trimmed == "---" || trimmed == "..." {
            header_end = Some((offset, offset + line.len()));
            break;
        }
        offset += line.len();
    }
    let Some((end, body_start)) = header_end else { return (FrontMatter::default(), 0) };
    (parse_header(&text[header_start..end]), body_start)
}

fn parse_header(header: &str) -> FrontMatter {
    let mut map = BTreeMap::new();
    let mut list_key: Option<String> = None;
    for line in header.lines() {
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        let trimmed = line.trim();
        if let (Some(key), Some(item)) = (&list_key, trimmed.strip_prefix("- ")) {
            if let Some(FrontMatterValue::List(items)) = map.get_mut(key) {
                items.push(unquote(item));
            }
            continue;
        }
        list_key = None;
        let Some((key, value)) = line.split_once(':') else { continue };
        let key = key.trim().to_string();
        if key.is_empty() || key.contains(' ') {
            continue;
        }
        let value = value.trim();
        if value.is_empty() {
            map.insert(key.clone(), FrontMatterValue::List(Vec::new()));
            list_key = Some(key);
        } else if let Some(inner) = value.strip_prefix('[').and_then(|v| v.strip_suffix(']')) {
            let items = inner.split(',').map(unquote).filter(|s| !s.is_empty()).collect();
            map.insert(key, FrontMatterValue::List(items));
        } else {
            map.insert(key, FrontMatterValue::Text(unquote(value)));
        }
    }
    FrontMatter(map)
}

fn unquote(value: &str) -> String {
    let v = value.trim();
    let stripped = v.strip_prefix('"').and_then(|s| s.strip_suffix('"')).or_else(|| v.strip_prefix('\'').and_then(|s| s.strip_suffix('\'')));
    stripped.unwrap_or(v).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_scalars_inline_lists_and_block_lists() {
        let text =
            "---\nspecies: 玄凤鹦鹉\nen: \"Cockatiel\"\nlatin: Nymphicus hollandicus\naliases: [Quarrion, Weero]\ntags:\n  - pet\n  - crest\n---\n# Body\n";
        let (fm, body) = split_front_matter(text);
        assert_eq!(fm.get("species").as_deref(), Some("玄凤鹦鹉"));
        assert_eq!(fm.get("en").as_deref(), Some("Cockatiel"));
        assert_eq!(fm.get("aliases").as_deref(), Some("Quarrion, Weero"));
        assert_eq!(fm.0["tags"], FrontMatterValue::List(vec!["pet".into(), "crest".into()]));
        assert_eq!(&text[body..], "# Body\n");
    }

    #[test]
    fn text_without_header_is_left_alone() {
        for text in ["# Title\n---\n", "---\nunterminated: yes\n", "", "---"] {
            let (fm, body) = split_front_matter(text);
            assert!(fm.is_empty(), "{text:?}");
            assert_eq!(body, 0);
        }
    }

    #[test]
    fn crlf_and_bom_are_accepted() {
        let text = "\u{feff}---\r\nen: Budgerigar\r\n---\r\nbody";
        let (fm, body) = split_front_matter(text);
        assert_eq!(fm.get("en").as_deref(), Some("Budgerigar"));
        assert_eq!(&text[body..], "body");
    }
}
