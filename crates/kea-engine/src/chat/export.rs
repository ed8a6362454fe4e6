//! A conversation as Markdown (`kea chat export`, the app's Export): each
//! question and reply in order, a reply's citation markers turned into
//! footnotes that name the document's title, the heading and the page,
//! numbered across the conversation (one footnote per cited place).

use super::answer::{map_markers, Citation};
use crate::store::{Conversation, StoredMessage};
use kea_llm::Role;

/// Where a footnote points: the document (its title when known), heading, page.
fn footnote_text(citation: &Citation, title: Option<&str>) -> String {
    let document = match title.filter(|t| !t.trim().is_empty()) {
        Some(title) => format!("{title} ({})", citation.source),
        None => citation.source.clone(),
    };
    let collection = citation.collection.as_ref().map(|c| format!("{c} › ")).unwrap_or_default();
    let heading = Some(citation.heading_path.as_str()).filter(|h| !h.is_empty()).map(|h| format!(" › {h}")).unwrap_or_default();
    let page = citation.page.map(|p| format!(", p. {p}")).unwrap_or_default();
    format!("{collection}{document}{heading}{page}")
}

/// The conversation as a Markdown document; `title_of` gives a document's
/// title by its key.
pub fn to_markdown(conversation: &Conversation, messages: &[StoredMessage], title_of: &dyn Fn(&str) -> Option<String>) -> String {
    let mut out = format!("# {}\n\n", conversation.title.trim());
    let mut notes: Vec<String> = Vec::new();
    for message in messages {
        match message.role {
            Role::User => out.push_str(&format!("**Question:** {}\n\n", message.content.trim())),
            _ => {
                let citations: Vec<Citation> = serde_json::from_value(message.citations.clone()).unwrap_or_default();
                let reply = map_markers(message.content.trim(), |labels| {
                    let numbers: Vec<String> = labels
                        .iter()
                        .filter_map(|label| citations.iter().find(|c| c.id.eq_ignore_ascii_case(label)))
                        .map(|c| {
                            let text = footnote_text(c, title_of(&c.source).as_deref());
                            let number = notes.iter().position(|n| *n == text).unwrap_or_else(|| {
                                notes.push(text);
                                notes.len() - 1
                            });
                            format!("[^{}]", number + 1)
                        })
                        .collect();
                    numbers.concat()
                });
                out.push_str(&format!("**Answer:** {reply}\n\n"));
            }
        }
    }
    for (i, note) in notes.iter().enumerate() {
        out.push_str(&format!("[^{}]: {note}\n", i + 1));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(role: Role, content: &str, citations: serde_json::Value) -> StoredMessage {
        StoredMessage { id: 0, role, content: content.into(), citations, route: None }
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
             **Answer:** It sleeps [^2]; see [the guide].\n\n[^1]: Care sheet (a.md) › A > Diet\n[^2]: b.pdf › B, p. 3\n"
        );
    }
}
