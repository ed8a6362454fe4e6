//! [`Conversations`]: the one conversation store. A chat's answer and a
//! photo's identification are opened, saved and given their subject here
//! the same way; the app and the CLI list, reopen, rename and delete them
//! through it.

use std::sync::{Mutex, MutexGuard};

use kea_llm::Role;

use crate::error::{Error, Result};
use crate::store::{Conversation, NewMessage, Store, StoredMessage};

/// The saved conversations, over the store's writing connection.
pub struct Conversations<'a> {
    pub(crate) store: &'a Mutex<Store>,
    /// Whether exchanges are kept (a read-only engine answers without).
    pub(crate) kept: bool,
}

/// One exchange to save: what the user sent and what Kea replied.
pub(crate) struct Exchange<'a> {
    pub user: &'a str,
    pub reply: &'a str,
    /// The reply's citations or evidence, as stored JSON.
    pub citations: serde_json::Value,
    /// The route a chat answer took (`None` for an identification).
    pub route: Option<serde_json::Value>,
    /// What a chat answer showed ([`super::Shown`]; `None` for an identification).
    pub shown: Option<serde_json::Value>,
    /// What was just talked about, the subject of follow-ups (`None` keeps the last one).
    pub subject: Option<String>,
}

impl Conversations<'_> {
    fn store(&self) -> MutexGuard<'_, Store> {
        self.store.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Every conversation, the most recent first.
    pub fn list(&self) -> Result<Vec<Conversation>> {
        self.store().conversations()
    }

    /// All messages of a conversation, oldest first.
    pub fn messages(&self, id: i64) -> Result<Vec<StoredMessage>> {
        let store = self.store();
        if store.conversation(id)?.is_none() {
            return Err(Error::NotFound(format!("conversation {id}")));
        }
        store.recent_messages(id, usize::MAX >> 1)
    }

    /// A conversation as Markdown, its citations as footnotes (see [`super::export`]).
    pub fn export_markdown(&self, id: i64) -> Result<String> {
        let store = self.store();
        let conversation = store.conversation(id)?.ok_or_else(|| Error::NotFound(format!("conversation {id}")))?;
        let messages = store.recent_messages(id, usize::MAX >> 1)?;
        Ok(super::export::to_markdown(&conversation, &messages, &|path| store.document_title(path).ok().flatten()))
    }

    pub fn rename(&self, id: i64, title: &str) -> Result<()> {
        let title = title.trim();
        if title.is_empty() {
            return Err(Error::InvalidInput("a conversation needs a title".into()));
        }
        self.store().rename_conversation(id, title)
    }

    pub fn delete(&self, id: i64) -> Result<()> {
        self.store().delete_conversation(id)
    }

    /// Conversation `id` (which must exist) with its subject, or a new one
    /// titled `title` when `None`.
    pub(crate) fn open(&self, id: Option<i64>, title: &str) -> Result<(i64, Option<String>)> {
        let store = self.store();
        if !self.kept && id.is_none() {
            return Ok((0, None));
        }
        match id {
            Some(id) => {
                let c = store.conversation(id)?.ok_or_else(|| Error::InvalidInput(format!("no conversation {id}")))?;
                Ok((c.id, c.subject))
            }
            None => Ok((store.create_conversation(&title.chars().take(60).collect::<String>())?, None)),
        }
    }

    /// The last `limit` messages of conversation `id`, oldest first.
    pub(crate) fn recent(&self, id: i64, limit: usize) -> Result<Vec<StoredMessage>> {
        self.store().recent_messages(id, limit)
    }

    /// Saves an exchange in conversation `id` and makes its subject the conversation's.
    pub(crate) fn record(&self, id: i64, exchange: &Exchange) -> Result<()> {
        if !self.kept {
            return Ok(());
        }
        let store = self.store();
        if let Some(subject) = &exchange.subject {
            store.set_subject(id, subject)?;
        }
        let asked = NewMessage { role: Role::User, content: exchange.user, citations: &serde_json::json!([]), route: None, shown: None };
        store.add_message(id, &asked)?;
        let reply = NewMessage {
            role: Role::Assistant,
            content: exchange.reply,
            citations: &exchange.citations,
            route: exchange.route.as_ref(),
            shown: exchange.shown.as_ref(),
        };
        store.add_message(id, &reply)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversations_are_listed_renamed_reopened_and_deleted() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join("k")).unwrap();
        let engine = crate::Engine::open(crate::EngineConfig::new(tmp.path().join("k"), tmp.path().join("d"))).unwrap();
        let conversations = engine.conversations();
        let (id, subject) = conversations.open(None, "What do cockatiels eat?").unwrap();
        assert_eq!(subject, None);
        let reply = Exchange {
            user: "What do cockatiels eat?",
            reply: "Seeds [S1].",
            citations: serde_json::json!([{"id": "S1"}]),
            route: None,
            shown: None,
            subject: Some("Cockatiel".into()),
        };
        conversations.record(id, &reply).unwrap();
        assert_eq!(conversations.open(Some(id), "ignored").unwrap(), (id, Some("Cockatiel".into())), "an exchange's subject becomes the conversation's");
        assert_eq!(conversations.open(Some(id + 1), "x").unwrap_err().kind(), crate::ErrorKind::InvalidInput);
        conversations.rename(id, "  Cockatiel diet ").unwrap();
        assert_eq!(conversations.list().unwrap()[0].title, "Cockatiel diet");
        assert_eq!(conversations.rename(id, " ").unwrap_err().kind(), crate::ErrorKind::InvalidInput);
        let messages = conversations.messages(id).unwrap();
        assert_eq!(
            messages.iter().map(|m| (m.role, m.citations.clone())).collect::<Vec<_>>(),
            [(Role::User, serde_json::json!([])), (Role::Assistant, serde_json::json!([{"id": "S1"}]))]
        );
        conversations.delete(id).unwrap();
        assert!(conversations.list().unwrap().is_empty());
        assert_eq!(conversations.messages(id).unwrap_err().kind(), crate::ErrorKind::NotFound);
    }
}
