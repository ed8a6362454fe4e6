//! Chat history in the store: conversations (with their current subject)
//! and messages (with citations, the route taken and what an answer showed),
//! as JSON text columns.

use rusqlite::{params, OptionalExtension};

use kea_llm::Role;

use super::Store;
use crate::error::Result;

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Conversation {
    pub id: i64,
    pub title: String,
    pub subject: Option<String>,
    pub updated_at: i64,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct StoredMessage {
    pub id: i64,
    pub role: Role,
    pub content: String,
    pub citations: serde_json::Value,
    pub route: Option<serde_json::Value>,
    /// What an answer showed besides its text (see `chat::Shown`); `None`
    /// for a question, an identification, or an answer saved before schema 4.
    pub shown: Option<serde_json::Value>,
}

/// One message to add to a conversation, its JSON columns as values.
pub struct NewMessage<'a> {
    pub role: Role,
    pub content: &'a str,
    pub citations: &'a serde_json::Value,
    pub route: Option<&'a serde_json::Value>,
    pub shown: Option<&'a serde_json::Value>,
}

fn now() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64)
}

impl Store {
    pub fn create_conversation(&self, title: &str) -> Result<i64> {
        let t = now();
        self.conn.execute("INSERT INTO conversations(title, created_at, updated_at) VALUES (?1, ?2, ?2)", params![title, t])?;
        Ok(self.conn.last_insert_rowid())
    }

    pub fn conversation(&self, id: i64) -> Result<Option<Conversation>> {
        Ok(self
            .conn
            .query_row("SELECT id, title, subject, updated_at FROM conversations WHERE id = ?1", [id], |r| {
                Ok(Conversation { id: r.get(0)?, title: r.get(1)?, subject: r.get(2)?, updated_at: r.get(3)? })
            })
            .optional()?)
    }

    pub fn conversations(&self) -> Result<Vec<Conversation>> {
        let mut stmt = self.conn.prepare("SELECT id, title, subject, updated_at FROM conversations ORDER BY updated_at DESC, id DESC")?;
        let rows = stmt.query_map([], |r| Ok(Conversation { id: r.get(0)?, title: r.get(1)?, subject: r.get(2)?, updated_at: r.get(3)? }))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    pub fn rename_conversation(&self, id: i64, title: &str) -> Result<()> {
        self.conn.execute("UPDATE conversations SET title = ?1 WHERE id = ?2", params![title, id])?;
        Ok(())
    }

    pub fn delete_conversation(&self, id: i64) -> Result<()> {
        self.conn.execute("DELETE FROM conversations WHERE id = ?1", [id])?;
        Ok(())
    }

    pub fn set_subject(&self, id: i64, subject: &str) -> Result<()> {
        self.conn.execute("UPDATE conversations SET subject = ?1, updated_at = ?2 WHERE id = ?3", params![subject, now(), id])?;
        Ok(())
    }

    /// Adds `message` to `conversation` (with what it showed, in one transaction).
    pub fn add_message(&self, conversation: i64, message: &NewMessage) -> Result<i64> {
        let t = now();
        let tx = self.conn.unchecked_transaction()?;
        tx.execute(
            "INSERT INTO messages(conversation_id, role, content, citations, route, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![conversation, message.role.as_str(), message.content, message.citations.to_string(), message.route.map(|r| r.to_string()), t],
        )?;
        let id = tx.last_insert_rowid();
        if let Some(shown) = message.shown {
            tx.execute("INSERT INTO answers_shown(message_id, shown) VALUES (?1, ?2)", params![id, shown.to_string()])?;
        }
        tx.execute("UPDATE conversations SET updated_at = ?1 WHERE id = ?2", params![t, conversation])?;
        tx.commit()?;
        Ok(id)
    }

    /// The last `limit` messages of a conversation, oldest first.
    pub fn recent_messages(&self, conversation: i64, limit: usize) -> Result<Vec<StoredMessage>> {
        let mut stmt = self.conn.prepare(
            "SELECT m.id, m.role, m.content, m.citations, m.route, s.shown FROM messages m LEFT JOIN answers_shown s ON s.message_id = m.id
             WHERE m.conversation_id = ?1 ORDER BY m.id DESC LIMIT ?2",
        )?;
        let rows = stmt.query_map(params![conversation, limit as i64], |r| {
            let citations: String = r.get(3)?;
            let route: Option<String> = r.get(4)?;
            let shown: Option<String> = r.get(5)?;
            let role: String = r.get(1)?;
            Ok(StoredMessage {
                id: r.get(0)?,
                role: if role == Role::Assistant.as_str() { Role::Assistant } else { Role::User },
                content: r.get(2)?,
                citations: serde_json::from_str(&citations).unwrap_or_default(),
                route: route.and_then(|r| serde_json::from_str(&r).ok()),
                shown: shown.and_then(|s| serde_json::from_str(&s).ok()),
            })
        })?;
        let mut messages: Vec<StoredMessage> = rows.collect::<rusqlite::Result<_>>()?;
        messages.reverse();
        Ok(messages)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversations_keep_messages_and_subject() {
        let store = Store::open_in_memory().unwrap();
        let id = store.create_conversation("Cockatiels").unwrap();
        let none = serde_json::json!([]);
        store.add_message(id, &NewMessage { role: Role::User, content: "what do cockatiels eat?", citations: &none, route: None, shown: None }).unwrap();
        let (route, shown, cited) = (serde_json::json!({"use_rag": true}), serde_json::json!({"outcome": "unsure"}), serde_json::json!([{"id": "S1"}]));
        let reply = NewMessage { role: Role::Assistant, content: "Seeds and pellets [S1].", citations: &cited, route: Some(&route), shown: Some(&shown) };
        store.add_message(id, &reply).unwrap();
        store.set_subject(id, "玄凤鹦鹉").unwrap();
        let messages = store.recent_messages(id, 10).unwrap();
        assert_eq!(messages.iter().map(|m| m.role).collect::<Vec<_>>(), [Role::User, Role::Assistant]);
        assert_eq!(messages[1].citations[0]["id"], "S1");
        assert_eq!(messages[1].route.as_ref().unwrap()["use_rag"], true);
        assert_eq!((messages[0].shown.as_ref(), messages[1].shown.as_ref()), (None, Some(&shown)));
        assert_eq!(store.conversation(id).unwrap().unwrap().subject.as_deref(), Some("玄凤鹦鹉"));
        store.rename_conversation(id, "Birds").unwrap();
        assert_eq!(store.conversations().unwrap()[0].title, "Birds");
        store.delete_conversation(id).unwrap();
        assert!(store.conversation(id).unwrap().is_none());
        assert!(store.recent_messages(id, 10).unwrap().is_empty(), "messages go with their conversation");
        let left: i64 = store.conn.query_row("SELECT count(*) FROM answers_shown", [], |r| r.get(0)).unwrap();
        assert_eq!(left, 0, "and what they showed with them");
    }
}
