//! Tables (a spreadsheet's sheets, a CSV file) as text for retrieval. Each
//! row becomes one line of `Header: value` pairs joined by ` | ` (the header
//! repeated on every row, so a row reads alone; a sheet whose first row is
//! not header-like gives its values alone). Rows are packed into groups of
//! at most [`GROUP_CHARS`], each a table block under a heading naming its
//! rows (`rows 2–9`), below a heading naming its sheet: one group is one
//! chunk, and its heading path cites the sheet and the rows. Empty rows and
//! cells are skipped; cells, columns and text per file are bounded.

use std::collections::{BTreeMap, HashSet};

use super::{push_block, truncate_chars, Block, BlockKind, Extracted};

/// A row group's most characters: the default chunk's target, so a group
/// is one chunk (a heading ends a chunk, and a table block is kept whole).
pub(super) const GROUP_CHARS: usize = 500;
/// The most characters kept of one cell.
pub(super) const MAX_CELL_CHARS: usize = 300;
/// Cells right of this many columns are not read.
pub(super) const MAX_COLUMNS: u32 = 256;
/// The most non-empty cells read from one file.
pub(super) const MAX_CELLS: usize = 200_000;
/// The most text (bytes) read from one file's cells.
pub(super) const MAX_TEXT_BYTES: usize = 16 << 20;
/// The longest cell that can be a column's name.
const MAX_HEADER_CHARS: usize = 80;

/// One non-empty cell: its 0-based position and its text (white space
/// collapsed, cut to [`MAX_CELL_CHARS`]); `is_text` is false for numbers,
/// dates and booleans (which never name a column).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Cell {
    pub row: u32,
    pub col: u32,
    pub text: String,
    pub is_text: bool,
}

impl Cell {
    /// The cell at `row`, `col` holding `raw`, unless it is blank or right
    /// of [`MAX_COLUMNS`].
    pub fn new(row: u32, col: u32, raw: &str, is_text: bool) -> Option<Cell> {
        if col >= MAX_COLUMNS {
            return None;
        }
        let mut text = String::new();
        for word in raw.split_whitespace() {
            if !text.is_empty() {
                text.push(' ');
            }
            text.push_str(word);
            if text.len() > MAX_CELL_CHARS * 4 {
                break;
            }
        }
        truncate_chars(&mut text, MAX_CELL_CHARS);
        (!text.is_empty()).then_some(Cell { row, col, text, is_text })
    }
}

/// One sheet's cells, in any order; `name` is `None` for a CSV file.
pub(super) struct Sheet {
    pub name: Option<String>,
    pub cells: Vec<Cell>,
}

/// What one file may still read: cells and bytes of text.
pub(super) struct Budget {
    cells: usize,
    bytes: usize,
}

impl Budget {
    pub fn new() -> Budget {
        Budget { cells: MAX_CELLS, bytes: MAX_TEXT_BYTES }
    }

    /// Counts `cell` against the file's limits: false once they are reached
    /// (the caller stops reading).
    pub fn take(&mut self, cell: &Cell) -> bool {
        if self.cells == 0 || self.bytes < cell.text.len() {
            self.cells = 0;
            return false;
        }
        self.cells -= 1;
        self.bytes -= cell.text.len();
        true
    }
}

/// A row with content: its 1-based number and its cells left to right.
struct Row {
    number: u32,
    cells: Vec<Cell>,
}

/// The document of `sheets`: per sheet a heading with its name, then its
/// row groups. An error when no sheet has any text.
pub(super) fn build(sheets: Vec<Sheet>) -> Result<Extracted, String> {
    let mut doc = Extracted::default();
    for (index, sheet) in sheets.into_iter().enumerate() {
        let rows = rows_of(sheet.cells);
        if rows.is_empty() {
            continue;
        }
        if let Some(name) = sheet.name {
            let name = if name.trim().is_empty() { format!("Sheet {}", index + 1) } else { name.trim().to_string() };
            push_heading(&mut doc, 1, name);
        }
        let header = header_of(&rows);
        let body = if header.is_some() { &rows[1..] } else { &rows[..] };
        push_groups(&mut doc, body.iter().map(|row| (row.number, line(row, header.as_ref()))));
    }
    if doc.blocks.is_empty() {
        return Err("no text found in this table".into());
    }
    Ok(doc)
}

/// The cells grouped into rows, top to bottom (one cell per position).
fn rows_of(mut cells: Vec<Cell>) -> Vec<Row> {
    cells.sort_by_key(|c| (c.row, c.col));
    cells.dedup_by_key(|c| (c.row, c.col));
    let mut rows: Vec<Row> = Vec::new();
    for cell in cells {
        match rows.last_mut() {
            Some(row) if row.number == cell.row.saturating_add(1) => row.cells.push(cell),
            _ => rows.push(Row { number: cell.row.saturating_add(1), cells: vec![cell] }),
        }
    }
    rows
}

/// The column names, when the first row looks like a header: two or more
/// distinct short text cells, no numbers, and rows below it.
fn header_of(rows: &[Row]) -> Option<BTreeMap<u32, String>> {
    let first = rows.first().filter(|_| rows.len() > 1)?;
    let mut seen = HashSet::new();
    let header_like = first.cells.len() >= 2
        && first
            .cells
            .iter()
            .all(|c| c.is_text && c.text.parse::<f64>().is_err() && c.text.chars().count() <= MAX_HEADER_CHARS && seen.insert(c.text.to_lowercase()));
    header_like.then(|| first.cells.iter().map(|c| (c.col, c.text.clone())).collect())
}

/// A row as one line: `Name: value` pairs (a value alone where its column
/// has no name), joined by ` | `.
fn line(row: &Row, header: Option<&BTreeMap<u32, String>>) -> String {
    let pairs: Vec<String> = row
        .cells
        .iter()
        .map(|cell| match header.and_then(|h| h.get(&cell.col)) {
            Some(name) => format!("{name}: {}", cell.text),
            None => cell.text.clone(),
        })
        .collect();
    pairs.join(" | ")
}

/// Packs numbered lines into groups of at most [`GROUP_CHARS`] (a longer
/// line is a group alone), each pushed under its row-range heading.
fn push_groups(doc: &mut Extracted, lines: impl Iterator<Item = (u32, String)>) {
    let mut group: Vec<(u32, String)> = Vec::new();
    let mut size = 0;
    for (number, line) in lines {
        let len = line.chars().count();
        if !group.is_empty() && size + 1 + len > GROUP_CHARS {
            push_group(doc, &mut group);
            size = 0;
        }
        size += len + usize::from(!group.is_empty());
        group.push((number, line));
    }
    push_group(doc, &mut group);
}

fn push_group(doc: &mut Extracted, group: &mut Vec<(u32, String)>) {
    let (Some((first, _)), Some((last, _))) = (group.first(), group.last()) else { return };
    let heading = if first == last { format!("row {first}") } else { format!("rows {first}–{last}") };
    push_heading(doc, 2, heading);
    let text = group.drain(..).map(|(_, line)| line).collect::<Vec<_>>().join("\n");
    let range = push_block(&mut doc.plain, &text);
    doc.blocks.push(Block { kind: BlockKind::Table, range, page: None });
}

fn push_heading(doc: &mut Extracted, level: u8, mut text: String) {
    truncate_chars(&mut text, super::MAX_HEADING_CHARS);
    let range = push_block(&mut doc.plain, &text);
    doc.blocks.push(Block { kind: BlockKind::Heading { level, text }, range, page: None });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chunk::{chunk_document, ChunkConfig};
    use crate::extract::{extract, DocKind};

    /// The first and last row a group's heading names (`rows 2–9`, `row 4`).
    fn row_range(path: &str) -> (u32, u32) {
        let rows = path.strip_prefix("rows ").or_else(|| path.strip_prefix("row ")).unwrap_or_else(|| panic!("{path}"));
        let (first, last) = rows.split_once('–').unwrap_or((rows, rows));
        (first.parse().unwrap(), last.parse().unwrap())
    }

    #[test]
    fn every_row_carries_the_header_and_each_group_is_one_chunk_naming_its_rows() {
        assert!(GROUP_CHARS <= ChunkConfig::default().target_chars, "a group must fit in one default chunk");
        let mut csv = String::from("Name,City,Age\n");
        for i in 0..60 {
            csv.push_str(&format!("Person {i},Town {i},{}\n", 20 + i));
        }
        let doc = extract(DocKind::Csv, csv.as_bytes()).unwrap();
        assert_eq!(doc.title, None, "a row range is no title: the file name is");
        let tables: Vec<&str> = doc.blocks.iter().filter(|b| b.kind == BlockKind::Table).map(|b| &doc.plain[b.range.clone()]).collect();
        let chunks = chunk_document(&doc, &ChunkConfig::default());
        assert!(chunks.len() > 3, "{} chunks", chunks.len());
        assert_eq!(chunks.iter().map(|c| c.text.as_str()).collect::<Vec<_>>(), tables, "one chunk per group, never split or merged");
        let mut next = 2;
        for chunk in &chunks {
            let (first, last) = row_range(&chunk.heading_path);
            assert_eq!(first, next, "groups follow each other: {}", chunk.heading_path);
            let lines: Vec<&str> = chunk.text.lines().collect();
            assert_eq!(lines.len(), (last - first + 1) as usize);
            for (n, line) in (first..).zip(&lines) {
                let i = n - 2;
                assert_eq!(*line, format!("Name: Person {i} | City: Town {i} | Age: {}", 20 + i));
            }
            assert!(chunk.text.chars().count() <= GROUP_CHARS);
            next = last + 1;
        }
        assert_eq!(next, 62, "every row is in a group");
    }

    #[test]
    fn a_cell_is_collapsed_cut_and_kept_left_of_the_column_limit() {
        let cell = Cell::new(0, 0, "  two\n\tlines  ", true).unwrap();
        assert_eq!(cell.text, "two lines");
        let long = Cell::new(0, 1, &"word ".repeat(100_000), true).unwrap();
        assert_eq!(long.text.chars().count(), MAX_CELL_CHARS);
        assert!(long.text.ends_with('…'));
        assert!(Cell::new(0, MAX_COLUMNS, "far right", true).is_none());
        assert!(Cell::new(0, 2, " \n ", true).is_none());
    }

    #[test]
    fn a_file_with_no_cell_is_an_error() {
        let empty = build(vec![Sheet { name: Some("Empty".into()), cells: Vec::new() }]);
        assert_eq!(empty.unwrap_err(), "no text found in this table");
    }
}
