//! FTS5's own tokenizer, the one definition of a full-text token: the index
//! (FTS5 tokenizes what the store writes), the postings held in memory
//! (`term_index`, which follows a change with the tokens this returns) and
//! queries (every term a search looks up is put through this first) all
//! take their tokens from it, so they agree by construction. FTS5 has no
//! SQL function that tokenizes, so a one-column FTS5 table with the same
//! `tokenize` option, on a private in-memory connection, is written inside a
//! transaction, its tokens read through `fts5vocab`, and the transaction
//! rolled back.

use std::cell::OnceCell;

use rusqlite::Connection;

use crate::error::Result;

/// The `tokenize` option of `chunks_fts` (schema.sql; a unit test keeps the two equal).
pub(super) const TOKENIZE: &str = "unicode61 remove_diacritics 2";

/// FTS5 cuts a token to this many bytes before indexing it (`FTS5_MAX_TOKEN_SIZE`).
const LONGEST_TOKEN: usize = 32_768;

/// A private FTS5 table that tokenizes texts as `chunks_fts` does.
#[derive(Default)]
pub(super) struct Fts5Tokenizer {
    conn: OnceCell<Connection>,
}

impl Fts5Tokenizer {
    fn conn(&self) -> Result<&Connection> {
        if let Some(conn) = self.conn.get() {
            return Ok(conn);
        }
        let conn = Connection::open_in_memory()?;
        conn.execute_batch(&format!(
            "CREATE VIRTUAL TABLE texts USING fts5(text, tokenize='{TOKENIZE}');
             CREATE VIRTUAL TABLE temp.text_tokens USING fts5vocab(main, texts, instance);"
        ))?;
        Ok(self.conn.get_or_init(|| conn))
    }

    /// The tokens FTS5 makes of each of `texts`, in the order they occur.
    pub(super) fn tokens<S: AsRef<str>>(&self, texts: &[S]) -> Result<Vec<Vec<String>>> {
        let mut out: Vec<Vec<String>> = texts.iter().map(|t| plain_tokens(t.as_ref()).unwrap_or_default()).collect();
        let asked: Vec<usize> = (0..texts.len()).filter(|&i| plain_tokens(texts[i].as_ref()).is_none()).collect();
        if asked.is_empty() {
            return Ok(out);
        }
        let conn = self.conn()?;
        let tx = conn.unchecked_transaction()?;
        {
            let mut insert = tx.prepare_cached("INSERT INTO texts(rowid, text) VALUES (?1, ?2)")?;
            for &i in &asked {
                insert.execute(rusqlite::params![i as i64, texts[i].as_ref()])?;
            }
            let mut read = tx.prepare_cached("SELECT doc, offset, term FROM temp.text_tokens")?;
            let mut found: Vec<(i64, i64, String)> =
                read.query_map([], |r| Ok((r.get(0)?, r.get(1)?, term(r.get_ref(2)?)?.into_owned())))?.collect::<rusqlite::Result<_>>()?;
            found.sort_unstable();
            for (doc, _, term) in found {
                out[doc as usize].push(term);
            }
        }
        tx.rollback()?;
        Ok(out)
    }

    /// FTS5's tokens of `text`, always asking FTS5 (the reference of the plain path).
    #[cfg(test)]
    fn asked(&self, text: &str) -> Result<Vec<String>> {
        Ok(self.tokens(&[format!("{text} Ä")])?.remove(0).into_iter().filter(|t| t != "a").collect())
    }

    /// Each of `terms` as FTS5's tokens, all in one list without repeats, in order.
    pub(super) fn distinct_tokens(&self, terms: &[String]) -> Result<Vec<String>> {
        let mut seen = std::collections::HashSet::new();
        Ok(self.tokens(terms)?.into_iter().flatten().filter(|t| seen.insert(t.clone())).collect())
    }
}

/// A term as FTS5 stored it: text, except that FTS5 cuts a token at
/// [`LONGEST_TOKEN`] bytes even inside a character; the bytes it kept are
/// read the same lossy way wherever a term is read, so both sides agree.
pub(super) fn term(value: rusqlite::types::ValueRef<'_>) -> rusqlite::Result<std::borrow::Cow<'_, str>> {
    Ok(String::from_utf8_lossy(value.as_bytes().map_err(|e| rusqlite::Error::FromSqlConversionFailure(0, value.data_type(), Box::new(e)))?))
}

/// The tokens of a text FTS5 would leave as they are (ASCII lower-case
/// letters, digits and the main blocks of CJK ideographs, which have no
/// case or marks, between spaces; none too long), without asking it.
fn plain_tokens(text: &str) -> Option<Vec<String>> {
    let kept = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == ' ' || c == '\n' || matches!(c as u32, 0x3400..=0x4DBF | 0x4E00..=0x9FFF);
    let plain = text.len() <= LONGEST_TOKEN && text.chars().all(kept);
    plain.then(|| text.split_whitespace().map(String::from).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_index_is_declared_with_this_tokenizer() {
        assert!(include_str!("schema.sql").contains(&format!("tokenize='{TOKENIZE}'")));
    }

    #[test]
    fn texts_are_tokenized_as_fts5_tokenizes_them() {
        let tokenizer = Fts5Tokenizer::default();
        let texts = ["kea eats 2 roots", "Café ÉTÉ", "йогурт ёлка", "άλφα", "서울은", "", "!!! ---", "咖啡 水壶"];
        let tokens = tokenizer.tokens(&texts).unwrap();
        let expected: Vec<Vec<&str>> = vec![
            vec!["kea", "eats", "2", "roots"],
            vec!["cafe", "ete"],
            vec!["йогурт", "ёлка"],
            vec!["άλφα"],
            vec!["서울은"],
            vec![],
            vec![],
            vec!["咖啡", "水壶"],
        ];
        assert_eq!(tokens, expected);
        assert_eq!(tokenizer.tokens(&texts).unwrap(), tokens, "asked again, the same (nothing is kept between calls)");
        // What passes without asking FTS5 is what FTS5 would make of it.
        for plain in ["kea eats 2 roots", "咖啡 水壶 2024年 abc咖啡", "㐀㐁 鿏"] {
            let fts5 = Fts5Tokenizer::default().asked(plain).unwrap();
            assert_eq!(plain_tokens(plain).unwrap(), fts5, "{plain}");
        }
    }
}
