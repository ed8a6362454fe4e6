//! Chat history in the store: conversations (with their current subject)
//! and messages (with citations and the route taken), as JSON text columns.

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

    pub fn add_message(&self, conversation: i64, role: Role, content: &str, citations: &serde_json::Value, route: Option<&serde_json::Value>) -> Result<i64> {
        let t = now();
        self.conn.execute(
            "INSERT INTO messages(conversation_id, role, content, citations, route, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![conversation, role.as_str(), content, citations.to_string(), route.map(|r| r.to_string()), t],
        )?;
        let id = self.conn.last_insert_rowid();
        self.conn.execute("UPDATE conversations SET updated_at = ?1 WHERE id = ?2", params![t, conversation])?;
        Ok(id)
    }

    /// The last `limit` messages of a conversation, oldest first.
    pub fn recent_messages(&self, conversation: i64, limit: usize) -> Result<Vec<StoredMessage>> {
        let mut stmt = self.conn.prepare("SELECT id, role, content, citations, route FROM messages WHERE conversation_id = ?1 ORDER BY id DESC LIMIT ?2")?;
        let rows = stmt.query_map(params![conversation, limit as i64], |r| {
            let citations: String = r.get(3)?;
            let route: Option<String> = r.get(4)?;
            let role: String = r.get(1)?;
            Ok(StoredMessage {
                id: r.get(0)?,
                role: if role == Role::Assistant.as_str() { Role::Assistant } else { Role::User },
                content: r.get(2)?,
                citations: serde_json::from_str(&citations).unwrap_or_default(),
                route: route.and_then(|r| serde_json::from_str(&r).ok()),
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
        store.add_message(id, Role::User, "what do cockatiels eat?", &serde_json::json!([]), None).unwrap();
        let route = serde_json::json!({"use_rag": true});
        store.add_message(id, Role::Assistant, "Seeds and pellets [S1].", &serde_json::json!([{"id": "S1"}]), Some(&route)).unwrap();
        store.set_subject(id, "玄凤鹦鹉").unwrap();
        let messages = store.recent_messages(id, 10).unwrap();
        assert_eq!(messages.iter().map(|m| m.role).collect::<Vec<_>>(), [Role::User, Role::Assistant]);
        assert_eq!(messages[1].citations[0]["id"], "S1");
        assert_eq!(messages[1].route.as_ref().unwrap()["use_rag"], true);
        assert_eq!(store.conversation(id).unwrap().unwrap().subject.as_deref(), Some("玄凤鹦鹉"));
        store.rename_conversation(id, "Birds").unwrap();
        assert_eq!(store.conversations().unwrap()[0].title, "Birds");
        store.delete_conversation(id).unwrap();
        assert!(store.conversation(id).unwrap().is_none());
        assert!(store.recent_messages(id, 10).unwrap().is_empty(), "messages go with their conversation");
    }
}
