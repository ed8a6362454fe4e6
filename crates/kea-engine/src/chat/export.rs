//! A conversation as Markdown (`kea chat export`, the app's Export): each
//! question and reply in order, a reply's citation markers turned into
//! footnotes that name the document's title, the heading and the page,
//! numbered across the conversation (one footnote per cited place), and
//! what each answer showed besides: its outcome, related passages and the
//! sentences left out as unsupported. Every text that is not Kea's own
//! (a document's name, title, heading or sentence, a question, a model's
//! reply) is written as inline text: control characters and line breaks
//! dropped, Markdown's active characters escaped, so it cannot open a
//! heading, a link, an image, HTML or a footnote of its own, and the marks
//! GFM turns into links by themselves (`://`, `www.`, `@`) escaped too, so
//! a bare address stays text.

use super::answer::Citation;
use super::markers::map_markers;
use super::Shown;
use crate::retrieve::calibration::Outcome;
use crate::store::{Conversation, StoredMessage};
use kea_llm::Role;

/// `text` as inline Markdown text (see the module docs).
pub fn inline(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let chars: Vec<char> = text.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        match c {
            '\n' | '\r' | '\t' | '\u{2028}' | '\u{2029}' => out.push(' '),
            // Direction overrides would disguise a file name's end.
            c if c.is_control() || crate::import::is_bidi_control(c) => {}
            '<' => out.push_str("&lt;"),
            // A quote only where a line starts.
            '>' if out.is_empty() => out.push_str("\\>"),
            '\\' | '`' | '*' | '_' | '[' | ']' | '#' | '@' => {
                out.push('\\');
                out.push(c);
            }
            // A bare address GFM would link: `https://…`, `www.…`.
            ':' if chars[i + 1..].starts_with(&['/', '/']) => out.push_str("\\:"),
            '.' if i >= 3 && chars[i - 3..i].iter().collect::<String>().eq_ignore_ascii_case("www") => out.push_str("\\."),
            c => out.push(c),
        }
    }
    out
}

/// `text` as inline Markdown with each citation marker replaced by what
/// `replace` makes of its labels (Kea's own Markdown, kept as it is).
fn inline_with_markers(text: &str, mut replace: impl FnMut(Vec<&str>) -> String) -> String {
    let mut kept: Vec<String> = Vec::new();
    let marked = map_markers(&text.replace(['\u{E000}', '\u{E001}'], ""), |labels| {
        kept.push(replace(labels));
        format!("\u{E000}{}\u{E001}", kept.len() - 1)
    });
    let mut out = inline(&marked);
    for (i, markdown) in kept.iter().enumerate() {
        out = out.replacen(&format!("\u{E000}{i}\u{E001}"), markdown, 1);
    }
    out
}

/// Where a footnote points: the document (its title when known), heading, page.
fn footnote_text(citation: &Citation, title: Option<&str>) -> String {
    let document = match title.filter(|t| !t.trim().is_empty()) {
        Some(title) => format!("{} ({})", inline(title), inline(&citation.source)),
        None => inline(&citation.source),
    };
    let collection = citation.collection.as_ref().map(|c| format!("{} › ", inline(c))).unwrap_or_default();
    let heading = Some(citation.heading_path.as_str()).filter(|h| !h.is_empty()).map(|h| format!(" › {}", inline(h))).unwrap_or_default();
    let page = citation.page.map(|p| format!(", p. {p}")).unwrap_or_default();
    format!("{collection}{document}{heading}{page}")
}

/// Footnotes numbered across the conversation, one per cited place.
#[derive(Default)]
struct Footnotes(Vec<String>);

impl Footnotes {
    /// The marker of the footnote `text` (numbered when first seen).
    fn marker(&mut self, text: String) -> String {
        let number = self.0.iter().position(|n| *n == text).unwrap_or_else(|| {
            self.0.push(text);
            self.0.len() - 1
        });
        format!("[^{}]", number + 1)
    }
}

/// The conversation as a Markdown document; `title_of` gives a document's
/// title by its key. An answer that was not answered outright says so, and
/// what it showed besides its text follows it: the related passages (each
/// sentence with its footnote) and the sentences left out as unsupported.
pub fn to_markdown(conversation: &Conversation, messages: &[StoredMessage], title_of: &dyn Fn(&str) -> Option<String>) -> String {
    let mut out = format!("# {}\n\n", inline(conversation.title.trim()));
    let mut notes = Footnotes::default();
    let mut note = |c: &Citation| notes.marker(footnote_text(c, title_of(&c.source).as_deref()));
    for message in messages {
        if message.role == Role::User {
            out.push_str(&format!("**Question:** {}\n\n", inline(message.content.trim())));
            continue;
        }
        let citations: Vec<Citation> = serde_json::from_value(message.citations.clone()).unwrap_or_default();
        let reply = inline_with_markers(message.content.trim(), |labels| {
            labels.iter().filter_map(|label| citations.iter().find(|c| c.id.eq_ignore_ascii_case(label))).map(&mut note).collect::<String>()
        });
        let shown: Option<Shown> = message.shown.clone().and_then(|s| serde_json::from_value(s).ok());
        let outcome = match shown.as_ref().map(|s| s.outcome) {
            Some(Outcome::Unsure) => " (unsure)",
            Some(Outcome::Refused) => " (refused)",
            _ => "",
        };
        out.push_str(&format!("**Answer{outcome}:** {reply}\n\n"));
        let Some(shown) = shown else { continue };
        if !shown.related.is_empty() {
            out.push_str("Related passages:\n\n");
            for r in &shown.related {
                out.push_str(&format!("- {}{}\n", inline(r.snippet.trim()), note(&r.passage)));
            }
            out.push('\n');
        }
        if !shown.unsupported.is_empty() {
            out.push_str("Left out, not supported by the passages:\n\n");
            for sentence in &shown.unsupported {
                out.push_str(&format!("- {}\n", inline(map_markers(sentence.trim(), |_| String::new()).replace(" .", ".").trim())));
            }
            out.push('\n');
        }
    }
    for (i, note) in notes.0.iter().enumerate() {
        out.push_str(&format!("[^{}]: {note}\n", i + 1));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(role: Role, content: &str, citations: serde_json::Value) -> StoredMessage {
        StoredMessage { id: 0, role, content: content.into(), citations, route: None, shown: None }
    }

    #[test]
    fn markers_become_footnotes_numbered_across_the_conversation() {
        let conversation = Conversation { id: 1, title: "Feeding".into(), subject: None, updated_at: 0 };
        let cite = |id: &str, source: &str, heading: &str, page: Option<u32>| serde_json::json!({"id": id, "source": source, "heading_path": heading, "page": page, "chunk_id": 1, "chunk_ids": [1]});
        let messages = [
            message(Role::User, "What does it eat?", serde_json::Value::Null),
            message(
                Role::Assistant,
                "Seeds [S1] and fruit [S2, S1].",
                serde_json::json!([cite("S1", "a.md", "A > Diet", None), cite("S2", "b.pdf", "B", Some(3))]),
            ),
            message(Role::User, "And at night?", serde_json::Value::Null),
            message(Role::Assistant, "It sleeps [S1]; see [the guide].", serde_json::json!([cite("S1", "b.pdf", "B", Some(3))])),
        ];
        let titles = |path: &str| (path == "a.md").then(|| "Care sheet".to_string());
        let markdown = to_markdown(&conversation, &messages, &titles);
        assert_eq!(
            markdown,
            "# Feeding\n\n**Question:** What does it eat?\n\n**Answer:** Seeds [^1] and fruit [^2][^1].\n\n**Question:** And at night?\n\n\
             **Answer:** It sleeps [^2]; see \\[the guide\\].\n\n[^1]: Care sheet (a.md) › A > Diet\n[^2]: b.pdf › B, p. 3\n"
        );
    }

    #[test]
    fn what_documents_and_models_wrote_stays_inline_text() {
        let conversation = Conversation { id: 1, title: "# Hi\n[^9]: forged".into(), subject: None, updated_at: 0 };
        let forged = serde_json::json!({"id": "S1", "source": "a\n[^1]: [Open the report](https://evil.example/login).\u{202E}dm", "heading_path": "<img src=x onerror=alert(1)>", "page": null, "chunk_id": 1, "chunk_ids": [1]});
        let messages = [
            message(Role::User, "what?\u{1b}[31m", serde_json::Value::Null),
            message(Role::Assistant, "See [this](https://evil.example) ![x](y) [S1]\n# Heading", serde_json::json!([forged])),
        ];
        let markdown = to_markdown(&conversation, &messages, &|_| None);
        assert_eq!(
            markdown,
            "# \\# Hi \\[^9\\]: forged\n\n**Question:** what?\\[31m\n\n\
             **Answer:** See \\[this\\](https\\://evil.example) !\\[x\\](y) [^1] \\# Heading\n\n\
             [^1]: a \\[^1\\]: \\[Open the report\\](https\\://evil.example/login).dm › &lt;img src=x onerror=alert(1)>\n"
        );
    }

    #[test]
    fn a_bare_address_stays_text() {
        assert_eq!(
            inline("see https://evil.example/login or WWW.evil.example, mail x@evil.example"),
            "see https\\://evil.example/login or WWW\\.evil.example, mail x\\@evil.example"
        );
        assert_eq!(inline("ratio 3:2, a.b, //"), "ratio 3:2, a.b, //");
    }

    #[test]
    fn what_an_answer_showed_follows_it() {
        let conversation = Conversation { id: 1, title: "Care".into(), subject: None, updated_at: 0 };
        let place = serde_json::json!({"id": "R1", "source": "a.md", "heading_path": "A > Diet", "page": null, "chunk_id": 1, "chunk_ids": [1], "snippet": "Seeds and greens."});
        let unsure = serde_json::json!({"outcome": "unsure", "notice": null, "related": [place], "unsupported": []});
        let answered = serde_json::json!({"outcome": "answered", "notice": "quoted", "related": [], "unsupported": ["They live 90 years [S1]."]});
        let mut messages = vec![message(Role::User, "Greens?", serde_json::Value::Null), message(Role::Assistant, "Not sure.", serde_json::json!([]))];
        messages[1].shown = Some(unsure);
        let mut cited = place.clone();
        cited["id"] = "S1".into();
        messages.push(message(Role::Assistant, "Seeds [S1].", serde_json::json!([cited])));
        messages[2].shown = Some(answered);
        let markdown = to_markdown(&conversation, &messages, &|_| None);
        assert_eq!(
            markdown,
            "# Care\n\n**Question:** Greens?\n\n**Answer (unsure):** Not sure.\n\nRelated passages:\n\n- Seeds and greens.[^1]\n\n\
             **Answer:** Seeds [^1].\n\nLeft out, not supported by the passages:\n\n- They live 90 years.\n\n[^1]: a.md › A > Diet\n"
        );
    }
}
