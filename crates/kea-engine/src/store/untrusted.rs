//! A store copied from a file Kea did not write (an imported collection
//! file). The file is opened read-only and immutable, with
//! `trusted_schema` off, `query_only` on and SQLite's defensive mode; it
//! must pass `quick_check`, and its schema must be exactly the one Kea
//! creates (no trigger, view, table or index of its own). Its rows are then
//! copied, by the columns of the tables Kea made, into a store Kea creates,
//! each value checked against its column's type and every vector against
//! the dimension. Nothing in the file runs, and nothing Kea does not know
//! (a hidden table, conversations, team state) survives into the copy.

use std::path::Path;

use rusqlite::{Connection, OpenFlags};

use super::{MetaKey, Store};
use crate::error::{Error, Result};

/// The tables whose rows are copied, parents first (the full-text index's
/// own tables too: its tokens cannot be read back from a contentless table).
const COPIED_TABLES: [&str; 6] = ["documents", "chunks", "chinese_chunks", "chunks_fts_data", "chunks_fts_idx", "chunks_fts_docsize"];

/// The `meta` keys carried over (the schema version is the new store's own).
fn copied_meta() -> [MetaKey; 6] {
    [MetaKey::Generation, MetaKey::ModelId, MetaKey::Dim, MetaKey::EmbedMsPerChunk, MetaKey::ChunkFormat, MetaKey::ChineseChunks]
}

/// Tables Kea makes that an archive may lack: added after schema 3, and
/// never in a shared copy ([`Store::export_copy`]).
const MAY_LACK: [&str; 1] = ["answers_shown"];

fn refused(why: impl std::fmt::Display) -> Error {
    Error::InvalidInput(why.to_string())
}

/// `path` as a read-only, immutable SQLite URI (`%`, `?` and `#` escaped).
fn immutable_uri(path: &Path) -> String {
    let escaped = path.to_string_lossy().replace('%', "%25").replace('?', "%3F").replace('#', "%23");
    format!("file:{escaped}?mode=ro&immutable=1")
}

/// Makes `conn` treat schemas as untrusted (no function with side effects
/// called from them) and check every cell it reads.
fn distrust(conn: &Connection) -> Result<()> {
    conn.pragma_update(None, "trusted_schema", "OFF")?;
    conn.pragma_update(None, "cell_size_check", "ON")?;
    Ok(())
}

/// A schema entry (type, name, table, SQL with comments and spacing
/// normalised), as `sqlite_schema` of `schema` lists it.
type Entry = (String, String, String, String);

fn schema_of(conn: &Connection, schema: &str) -> Result<Vec<Entry>> {
    let mut stmt = conn.prepare(&format!("SELECT type, name, tbl_name, COALESCE(sql, '') FROM {schema}.sqlite_schema"))?;
    let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get::<_, String>(2)?, normalised_sql(&r.get::<_, String>(3)?))))?;
    let mut entries = rows.collect::<rusqlite::Result<Vec<Entry>>>()?;
    entries.sort();
    Ok(entries)
}

/// SQL without comments, its whitespace collapsed (stores made by older
/// Kea versions carry older comments in their `CREATE` statements).
fn normalised_sql(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut rest = sql;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix("--") {
            rest = after.find('\n').map_or("", |end| &after[end..]);
        } else if let Some(after) = rest.strip_prefix("/*") {
            rest = after.find("*/").map_or("", |end| &after[end + 2..]);
        } else {
            let c = rest.chars().next().expect("not empty");
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Opens the untrusted store at `archive` read-only, checks it is sound
/// and has exactly `expected`'s schema.
fn check_untrusted(archive: &Path, expected: &[Entry]) -> Result<()> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(immutable_uri(archive), flags)?;
    distrust(&conn)?;
    conn.pragma_update(None, "query_only", "ON")?;
    // Shadow tables read-only, no schema writes: nothing it holds can act.
    conn.set_db_config(rusqlite::config::DbConfig::SQLITE_DBCONFIG_DEFENSIVE, true)?;
    let check: String = conn.query_row("PRAGMA quick_check", [], |r| r.get(0))?;
    if check != "ok" {
        return Err(refused(format!("its index is damaged ({})", check.chars().take(200).collect::<String>())));
    }
    let found = schema_of(&conn, "main")?;
    if let Some(extra) = found.iter().find(|e| !expected.contains(e)) {
        return Err(refused(format!("its index holds a {} Kea does not make: {:?}", extra.0, extra.1.chars().take(100).collect::<String>())));
    }
    if let Some(missing) = expected.iter().find(|e| !found.contains(e) && !MAY_LACK.contains(&e.2.as_str())) {
        return Err(refused(format!("its index lacks Kea's {} {}", missing.0, missing.1)));
    }
    Ok(())
}

/// A condition true of a value that fits the column `name` declared as
/// `declared` (`NOT NULL` when `not_null`); `None`: any value fits.
fn fits(name: &str, declared: &str, not_null: bool) -> Option<String> {
    let kind = match declared.to_ascii_uppercase().as_str() {
        "INTEGER" => "integer",
        "TEXT" => "text",
        "BLOB" => "blob",
        _ => return None,
    };
    let null = if not_null { "" } else { ", 'null'" };
    Some(format!("typeof(\"{name}\") IN ('{kind}'{null})"))
}

/// The columns of the table `table` Kea made, and how many rows of the
/// archive's table do not fit them (a vector not `dim` floats long included).
fn columns_and_misfits(conn: &Connection, table: &str, dim: usize) -> Result<(Vec<String>, i64)> {
    let mut stmt = conn.prepare(&format!("SELECT name, type, \"notnull\" FROM main.pragma_table_info('{table}')"))?;
    let columns = stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get::<_, bool>(2)?)))?.collect::<rusqlite::Result<Vec<_>>>()?;
    let mut conditions: Vec<String> = columns.iter().filter_map(|(name, declared, not_null)| fits(name, declared, *not_null)).collect();
    if table == "chunks" {
        conditions.push(format!("length(embedding) = {}", dim * 4));
        // Positions Kea reads as unsigned: a negative one would fail every search later.
        conditions.push("chunk_index >= 0 AND total_chunks >= 0 AND coalesce(page, 0) >= 0 AND byte_start >= 0 AND byte_end >= byte_start".into());
        // No longer than indexing makes a chunk or its heading path (a huge one would stall every view of it).
        conditions.push(format!("length(text) <= {MAX_IMPORTED_CHUNK_CHARS} AND length(heading_path) <= {}", crate::chunk::MAX_HEADING_PATH_CHARS));
    }
    let misfits = match conditions.is_empty() {
        true => 0,
        false => conn.query_row(&format!("SELECT count(*) FROM arch.\"{table}\" WHERE NOT ({})", conditions.join(" AND ")), [], |r| r.get(0))?,
    };
    Ok((columns.into_iter().map(|(name, _, _)| format!("\"{name}\"")).collect(), misfits))
}

/// The longest chunk text an imported store may hold, far longer than any
/// chunk indexing makes (1,500 characters by default).
pub const MAX_IMPORTED_CHUNK_CHARS: usize = 100_000;

/// Copies the known rows of the attached `arch` into `main`, in one transaction.
fn copy_rows(conn: &mut Connection, dim: usize) -> Result<()> {
    let tx = conn.transaction()?;
    tx.execute_batch("DELETE FROM main.chunks_fts_data; DELETE FROM main.chunks_fts_idx; DELETE FROM main.chunks_fts_docsize;")?;
    for table in COPIED_TABLES {
        let (columns, misfits) = columns_and_misfits(&tx, table, dim)?;
        if misfits > 0 {
            let what = match table == "chunks" {
                true => {
                    format!(" (or a position out of range, a text longer than {MAX_IMPORTED_CHUNK_CHARS} characters, or a vector that is not {dim} numbers)")
                }
                false => String::new(),
            };
            return Err(refused(format!("{misfits} rows of its table {table} hold values of the wrong type{what}")));
        }
        let columns = columns.join(", ");
        tx.execute(&format!("INSERT INTO main.\"{table}\"({columns}) SELECT {columns} FROM arch.\"{table}\""), [])?;
    }
    let keys: Vec<String> = copied_meta().iter().map(|k| format!("'{}'", k.name())).collect();
    tx.execute(
        &format!(
            "INSERT INTO main.meta(key, value) SELECT key, CAST(value AS TEXT) FROM arch.meta WHERE key IN ({}) AND value IS NOT NULL
             ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            keys.join(", ")
        ),
        [],
    )?;
    tx.commit()?;
    Ok(())
}

impl Store {
    /// A new store at `dest` holding the rows of the untrusted store file
    /// `archive` (checked as the module says), its vectors `dim` floats long.
    pub fn copy_untrusted(archive: &Path, dest: &Path, dim: usize) -> Result<Store> {
        let mut store = Store::open(dest)?;
        check_untrusted(archive, &schema_of(&store.conn, "main")?)?;
        distrust(&store.conn)?;
        store.conn.execute("ATTACH DATABASE ?1 AS arch", [immutable_uri(archive)])?;
        let copied = copy_rows(&mut store.conn, dim);
        store.conn.execute_batch("DETACH DATABASE arch")?;
        copied?;
        store
            .conn
            .execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('integrity-check')", [])
            .map_err(|e| refused(format!("its full-text index is damaged: {e}")))?;
        let check: String = store.conn.query_row("PRAGMA quick_check", [], |r| r.get(0))?;
        if check != "ok" {
            return Err(refused(format!("its index does not copy soundly ({check})")));
        }
        Ok(store)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemas_compare_without_comments_or_spacing() {
        let a = "CREATE TABLE t (\n    id INTEGER PRIMARY KEY, -- the key\n    x TEXT /* old note */ NOT NULL\n)";
        assert_eq!(normalised_sql(a), "CREATE TABLE t ( id INTEGER PRIMARY KEY, x TEXT NOT NULL )");
        assert_ne!(normalised_sql(a), normalised_sql("CREATE TABLE t (id INTEGER PRIMARY KEY, x BLOB NOT NULL)"));
    }

    #[test]
    fn a_store_kea_made_copies_and_one_with_a_trigger_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let original = dir.path().join("original.sqlite3");
        Store::open(&original).unwrap().set_meta(&MetaKey::Dim, "4").unwrap();
        let copy = Store::copy_untrusted(&original, &dir.path().join("copy.sqlite3"), 4).unwrap();
        assert_eq!(copy.meta(&MetaKey::Dim).unwrap().as_deref(), Some("4"));
        Connection::open(&original).unwrap().execute_batch("CREATE TRIGGER t AFTER INSERT ON meta BEGIN SELECT 1; END;").unwrap();
        let refused = Store::copy_untrusted(&original, &dir.path().join("again.sqlite3"), 4).err().unwrap();
        assert!(refused.to_string().contains("Kea does not make"), "{refused}");
    }

    #[test]
    fn an_archive_may_lack_only_what_is_never_shared() {
        let dir = tempfile::tempdir().unwrap();
        let shared = dir.path().join("shared.sqlite3");
        Store::open(&dir.path().join("kea.sqlite3")).unwrap().export_copy(&shared).unwrap();
        Store::copy_untrusted(&shared, &dir.path().join("copy.sqlite3"), 4).expect("a shared copy, as an earlier Kea wrote it too");
        Connection::open(&shared).unwrap().execute_batch("DROP TABLE chinese_chunks;").unwrap();
        let refused = Store::copy_untrusted(&shared, &dir.path().join("again.sqlite3"), 4).err().unwrap();
        assert!(refused.to_string().contains("lacks Kea's table chinese_chunks"), "{refused}");
    }

    /// A store holding one chunk of `text` at `page`, as an archive would bring it.
    fn archive_with_chunk(dir: &Path, page: i64, text: &str) -> std::path::PathBuf {
        let original = dir.join(format!("original-{page}-{}.sqlite3", text.len()));
        Store::open(&original).unwrap().set_meta(&MetaKey::Dim, "1").unwrap();
        let conn = Connection::open(&original).unwrap();
        conn.execute("INSERT INTO documents(id, path, kind, size, mtime_ns, status, updated_at) VALUES (1, 'a.md', 'markdown', 1, 1, 'indexed', 1)", [])
            .unwrap();
        conn.execute(
            "INSERT INTO chunks(id, doc_id, chunk_index, total_chunks, heading_path, page, byte_start, byte_end, text, hash, embedding) VALUES (1, 1, 0, 1, '', ?1, 0, 3, ?2, 'x', x'0000803f')",
            rusqlite::params![page, text],
        )
        .unwrap();
        original
    }

    #[test]
    fn a_chunk_with_a_negative_position_or_an_endless_text_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let negative = archive_with_chunk(dir.path(), -1, "abc");
        let refused = Store::copy_untrusted(&negative, &dir.path().join("copy.sqlite3"), 1).err().unwrap();
        assert!(refused.to_string().contains("out of range"), "{refused}");
        let nested = format!("{}deep", "- ".repeat(MAX_IMPORTED_CHUNK_CHARS));
        let endless = archive_with_chunk(dir.path(), 1, &nested);
        let refused = Store::copy_untrusted(&endless, &dir.path().join("copy2.sqlite3"), 1).err().unwrap();
        assert!(refused.to_string().contains("longer than 100000 characters"), "{refused}");
        Store::copy_untrusted(&archive_with_chunk(dir.path(), 1, "abc"), &dir.path().join("copy3.sqlite3"), 1).expect("a chunk of ordinary length");
    }
}
