//! CSV and TSV files: text decoded like any text file, the delimiter
//! sniffed (comma, tab, semicolon or bar: whichever splits the first records
//! into the most consistent number of fields), records parsed the RFC 4180
//! way (a quoted field may hold delimiters, doubled quotes and line breaks;
//! a stray quote is kept as text), then laid out as rows by [`super::rows`].

use super::rows::{self, Budget, Cell, Sheet, MAX_CELL_CHARS, MAX_COLUMNS};
use super::{decode_text, Extracted};

/// The delimiters tried, in order of preference when they score the same.
const DELIMITERS: [char; 4] = [',', '\t', ';', '|'];
/// How much of the file the delimiter is sniffed from.
const SNIFF_BYTES: usize = 64 << 10;
/// How many records the delimiter is sniffed from.
const SNIFF_RECORDS: usize = 20;

pub(super) fn extract(bytes: &[u8]) -> Result<Extracted, String> {
    let text = decode_text(bytes)?;
    let mut records = Records { text: &text, pos: 0, delimiter: sniff(&text) };
    let mut budget = Budget::new();
    let mut cells = Vec::new();
    let mut row = 0u32;
    'file: while let Some(fields) = records.next_record() {
        for (col, field) in (0u32..).zip(fields) {
            let Some(cell) = Cell::new(row, col, &field, true) else { continue };
            if !budget.take(&cell) {
                break 'file;
            }
            cells.push(cell);
        }
        row = row.saturating_add(1);
    }
    rows::build(vec![Sheet { name: None, cells }])
}

/// The delimiter that splits the first records into the same number of
/// fields (two or more) most often; a comma when none does.
fn sniff(text: &str) -> char {
    let mut end = text.len().min(SNIFF_BYTES);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let sample = &text[..end];
    let mut best = (',', (0, 0));
    for delimiter in DELIMITERS {
        let score = consistency(sample, delimiter);
        if score > best.1 {
            best = (delimiter, score);
        }
    }
    best.0
}

/// (records with as many fields as the first, fields in the first), or
/// zeros when the first record has a single field.
fn consistency(sample: &str, delimiter: char) -> (usize, usize) {
    let mut records = Records { text: sample, pos: 0, delimiter };
    let counts: Vec<usize> = std::iter::from_fn(|| records.next_record())
        .filter(|fields| fields.iter().any(|f| !f.trim().is_empty()))
        .take(SNIFF_RECORDS)
        .map(|fields| fields.len())
        .collect();
    match counts.first() {
        Some(&first) if first >= 2 => (counts.iter().filter(|&&c| c == first).count(), first),
        _ => (0, 0),
    }
}

/// A reader of delimited records from `text`, starting at byte `pos`.
struct Records<'a> {
    text: &'a str,
    pos: usize,
    delimiter: char,
}

/// What ended a field.
enum End {
    Delimiter,
    Line,
    Eof,
}

impl Records<'_> {
    /// The next record's fields (at most [`MAX_COLUMNS`], each at most a
    /// little over [`MAX_CELL_CHARS`]), or `None` at the end of the text.
    fn next_record(&mut self) -> Option<Vec<String>> {
        if self.pos >= self.text.len() {
            return None;
        }
        let mut fields = Vec::new();
        loop {
            let (field, end) = self.field();
            if fields.len() < MAX_COLUMNS as usize {
                fields.push(field);
            }
            if !matches!(end, End::Delimiter) {
                return Some(fields);
            }
        }
    }

    /// Reads one field from `pos`, leaving `pos` after what ended it.
    fn field(&mut self) -> (String, End) {
        let rest = &self.text[self.pos..];
        let mut chars = rest.char_indices().peekable();
        let mut field = String::new();
        let mut kept = 0;
        let mut keep = |field: &mut String, c: char| {
            if kept <= MAX_CELL_CHARS {
                field.push(c);
                kept += 1;
            }
        };
        let mut quoted = rest.starts_with('"');
        if quoted {
            chars.next();
        }
        while let Some((_, c)) = chars.next() {
            let end = match c {
                '"' if quoted => {
                    if chars.next_if(|&(_, n)| n == '"').is_some() {
                        keep(&mut field, '"');
                    } else {
                        quoted = false;
                    }
                    continue;
                }
                _ if quoted => None,
                _ if c == self.delimiter => Some(End::Delimiter),
                '\n' => Some(End::Line),
                '\r' => {
                    chars.next_if(|&(_, n)| n == '\n');
                    Some(End::Line)
                }
                _ => None,
            };
            match end {
                Some(end) => {
                    self.pos += chars.peek().map_or(rest.len(), |&(next, _)| next);
                    return (field, end);
                }
                None => keep(&mut field, c),
            }
        }
        self.pos = self.text.len();
        (field, End::Eof)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chunk::{chunk_document, ChunkConfig};
    use crate::extract::{extract, BlockKind, DocKind};

    /// Each chunk's heading path and text.
    fn chunks(csv: &str) -> Vec<(String, String)> {
        let doc = extract(DocKind::Csv, csv.as_bytes()).unwrap();
        chunk_document(&doc, &ChunkConfig::default()).into_iter().map(|c| (c.heading_path, c.text)).collect()
    }

    fn pairs(expected: &[(&str, &str)]) -> Vec<(String, String)> {
        expected.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
    }

    #[test]
    fn quoted_fields_hold_delimiters_quotes_and_line_breaks() {
        let csv = "Name,Note,City\r\n\"Smith, Jane\",\"said \"\"hi\"\"\nthen left\",Oslo\r\nBob,plain,\"Rome\"\r\n";
        let expected = "Name: Smith, Jane | Note: said \"hi\" then left | City: Oslo\nName: Bob | Note: plain | City: Rome";
        assert_eq!(chunks(csv), pairs(&[("rows 2–3", expected)]));
        // A stray quote inside a field is text; an unclosed one runs to the end.
        assert_eq!(chunks("Key,Value\nx\"y,\"open\nstill"), pairs(&[("row 2", "Key: x\"y | Value: open still")]));
    }

    #[test]
    fn tabs_and_semicolons_are_sniffed() {
        assert_eq!(chunks("Name\tPrice\nTea, green\t3,50\n"), pairs(&[("row 2", "Name: Tea, green | Price: 3,50")]));
        let semicolons = "Name;Price\nTea, green;3,50\nCoffee;2,10\n";
        assert_eq!(chunks(semicolons), pairs(&[("rows 2–3", "Name: Tea, green | Price: 3,50\nName: Coffee | Price: 2,10")]));
    }

    #[test]
    fn empty_rows_and_cells_are_skipped() {
        let csv = "Name,,Age\n\nAna,,7\n , ,\nLi,,\n";
        assert_eq!(chunks(csv), pairs(&[("rows 3–5", "Name: Ana | Age: 7\nName: Li")]));
    }

    #[test]
    fn a_table_without_a_header_row_gives_its_values() {
        assert_eq!(chunks("2023,12.5,up\n2024,13,down\n"), pairs(&[("rows 1–2", "2023 | 12.5 | up\n2024 | 13 | down")]));
        assert_eq!(chunks("x;x\na;b\n"), pairs(&[("rows 1–2", "x | x\na | b")]), "a repeated name is no header");
        assert_eq!(chunks("Name\nAna\nLi\n"), pairs(&[("rows 1–3", "Name\nAna\nLi")]), "one column: no header to tell");
    }

    #[test]
    fn a_huge_table_is_read_within_bounds() {
        let wide = vec!["w"; 1000].join(",");
        let mut csv = format!("{wide}\n\"{}\"\n", "word ".repeat(10_000));
        for i in 0..rows::MAX_CELLS + 10 {
            csv.push_str(&format!("{i}\n"));
        }
        let doc = extract(DocKind::Csv, csv.as_bytes()).unwrap();
        let tables = doc.blocks.iter().filter(|b| b.kind == BlockKind::Table).map(|b| &doc.plain[b.range.clone()]);
        let lines: Vec<&str> = tables.flat_map(str::lines).collect();
        assert_eq!(lines[0].split(" | ").count(), MAX_COLUMNS as usize, "columns past the limit are not read");
        assert_eq!(lines[1].chars().count(), MAX_CELL_CHARS, "a long cell is cut");
        let numbers = rows::MAX_CELLS - MAX_COLUMNS as usize - 1;
        assert_eq!(lines.len(), 2 + numbers, "the file's cells are bounded");
        assert_eq!(lines.last().copied(), Some((numbers - 1).to_string().as_str()));
    }

    #[test]
    fn binary_or_empty_input_is_an_error() {
        assert!(extract(DocKind::Csv, &[0, 1, 2, 0, 0, 3, 0, 4, 0, 0, 0, 5]).is_err());
        assert!(extract(DocKind::Csv, b"\n ,\n").is_err());
    }
}
