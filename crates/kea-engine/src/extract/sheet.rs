//! Spreadsheets (.xlsx, .xls, .ods) through calamine: every worksheet's
//! cells (numbers as numbers, dates as `YYYY-MM-DD`, booleans, formula
//! results), laid out as rows by [`super::rows`]. The format is told by the
//! bytes, not the extension. A .xlsx sheet is streamed cell by cell, so a
//! huge declared range costs nothing; .xls and .ods are read whole by
//! calamine, one reason spreadsheets are read in the limited reader process.

use std::io::{Cursor, Read, Seek};

use calamine::{open_workbook_from_rs, Data, Ods, Reader, SheetType, Xls, Xlsx, XlsxError};

use super::rows::{self, Budget, Cell, Sheet};
use super::Extracted;

/// The most worksheets read from one file.
const MAX_SHEETS: usize = 100;
/// The most cells (empty ones too) looked at in one .xlsx worksheet.
const MAX_SCANNED_CELLS: usize = 2_000_000;

pub(super) fn extract(bytes: &[u8]) -> Result<Extracted, String> {
    // A parser's panic on a hostile file is that file's error.
    let read = std::panic::catch_unwind(|| read_workbook(bytes));
    let sheets = read.map_err(|_| "corrupt spreadsheet: its reader failed on it".to_string())??;
    rows::build(sheets)
}

enum Format {
    Xlsx,
    Xls,
    Ods,
}

/// The workbook format of `bytes`: an OLE file is .xls; a zip is .xlsx or
/// .ods by the parts it holds.
fn format(bytes: &[u8]) -> Result<Format, String> {
    if bytes.starts_with(&[0xD0, 0xCF, 0x11, 0xE0]) {
        return Ok(Format::Xls);
    }
    let zip = zip::ZipArchive::new(Cursor::new(bytes)).map_err(|e| format!("not a spreadsheet (.xlsx, .xls or .ods): {e}"))?;
    if zip.index_for_name("xl/workbook.xml").is_some() {
        Ok(Format::Xlsx)
    } else if zip.index_for_name("content.xml").is_some() {
        Ok(Format::Ods)
    } else {
        Err("not a spreadsheet: a zip file with neither xl/workbook.xml nor content.xml".into())
    }
}

fn read_workbook(bytes: &[u8]) -> Result<Vec<Sheet>, String> {
    let cursor = Cursor::new(bytes);
    match format(bytes)? {
        Format::Xlsx => streamed(open_workbook_from_rs(cursor).map_err(corrupt)?),
        Format::Xls => whole::<_, Xls<_>>(open_workbook_from_rs(cursor).map_err(corrupt)?),
        Format::Ods => whole::<_, Ods<_>>(open_workbook_from_rs(cursor).map_err(corrupt)?),
    }
}

fn corrupt(e: impl std::fmt::Display) -> String {
    format!("corrupt spreadsheet: {e}")
}

/// The names of the workbook's worksheets (not charts or macros), in order.
fn worksheets<RS: Read + Seek>(book: &impl Reader<RS>) -> Vec<String> {
    let sheets = book.sheets_metadata().iter().filter(|s| matches!(s.typ, SheetType::WorkSheet));
    sheets.take(MAX_SHEETS).map(|s| s.name.clone()).collect()
}

/// A .xlsx workbook's sheets, each read cell by cell within the budget.
fn streamed<RS: Read + Seek>(mut book: Xlsx<RS>) -> Result<Vec<Sheet>, String> {
    let mut budget = Budget::new();
    let mut sheets = Vec::new();
    for name in worksheets(&book) {
        let mut reader = match book.worksheet_cells_reader(&name) {
            Ok(reader) => reader,
            // A sheet with no cell data (`<sheetData/>`) reads as this.
            Err(XlsxError::NotAWorksheet(_)) => continue,
            Err(e) => return Err(corrupt(e)),
        };
        let mut cells = Vec::new();
        let mut scanned = 0;
        while let Some(cell) = reader.next_cell().map_err(corrupt)? {
            scanned += 1;
            if scanned > MAX_SCANNED_CELLS {
                break;
            }
            let (row, col) = cell.get_position();
            let Some(cell) = cell_of(row, col, &Data::from(cell.get_value().clone())) else { continue };
            if !budget.take(&cell) {
                break;
            }
            cells.push(cell);
        }
        sheets.push(Sheet { name: Some(name), cells });
    }
    Ok(sheets)
}

/// An .xls or .ods workbook's sheets, each read whole by calamine.
fn whole<RS: Read + Seek, R: Reader<RS>>(mut book: R) -> Result<Vec<Sheet>, String>
where
    R::Error: std::fmt::Display,
{
    let mut budget = Budget::new();
    let mut sheets = Vec::new();
    for name in worksheets(&book) {
        let range = book.worksheet_range(&name).map_err(corrupt)?;
        let (top, left) = range.start().unwrap_or_default();
        let mut cells = Vec::new();
        for (row, col, value) in range.used_cells() {
            let (Ok(row), Ok(col)) = (u32::try_from(row), u32::try_from(col)) else { break };
            let Some(cell) = cell_of(top.saturating_add(row), left.saturating_add(col), value) else { continue };
            if !budget.take(&cell) {
                break;
            }
            cells.push(cell);
        }
        sheets.push(Sheet { name: Some(name), cells });
    }
    Ok(sheets)
}

/// A cell's value as text: numbers as written, dates and times in ISO
/// form, errors (`#DIV/0!`) and empty cells left out.
fn cell_of(row: u32, col: u32, value: &Data) -> Option<Cell> {
    let (text, is_text) = match value {
        Data::Empty | Data::Error(_) => return None,
        Data::String(s) => (s.clone(), true),
        Data::DateTime(date) if date.is_datetime() => (date_text(date.to_ymd_hms_milli()), false),
        other => (other.to_string(), false),
    };
    Cell::new(row, col, &text, is_text)
}

/// `2024-03-15`, or `2024-03-15 09:30` when the time is not midnight.
fn date_text((year, month, day, hour, minute, second, _): (u16, u8, u8, u8, u8, u8, u16)) -> String {
    match (hour, minute, second) {
        (0, 0, 0) => format!("{year:04}-{month:02}-{day:02}"),
        (_, _, 0) => format!("{year:04}-{month:02}-{day:02} {hour:02}:{minute:02}"),
        _ => format!("{year:04}-{month:02}-{day:02} {hour:02}:{minute:02}:{second:02}"),
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::time::{Duration, Instant};

    use rust_xlsxwriter::{ExcelDateTime, Format, Workbook};

    use crate::chunk::{chunk_document, ChunkConfig};
    use crate::extract::{extract, DocKind};

    /// Each chunk's heading path and text.
    fn chunks(bytes: &[u8]) -> Vec<(String, String)> {
        let doc = extract(DocKind::Spreadsheet, bytes).unwrap();
        chunk_document(&doc, &ChunkConfig::default()).into_iter().map(|c| (c.heading_path, c.text)).collect()
    }

    fn pairs(expected: &[(&str, &str)]) -> Vec<(String, String)> {
        expected.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
    }

    #[test]
    fn every_sheet_is_a_section_of_row_groups_with_values_as_shown() {
        let mut book = Workbook::new();
        let staff = book.add_worksheet().set_name("Staff").unwrap();
        for (col, name) in (0..).zip(["Name", "City", "Age", "Joined"]) {
            staff.write_string(0, col, name).unwrap();
        }
        staff.write_string(1, 0, "Alice").unwrap().write_string(1, 1, "Paris").unwrap().write_number(1, 2, 31).unwrap();
        let date = ExcelDateTime::from_ymd(2021, 3, 15).unwrap();
        staff.write_datetime_with_format(1, 3, &date, &Format::new().set_num_format("yyyy-mm-dd")).unwrap();
        staff.write_string(2, 0, "Bob").unwrap().write_number(2, 2, 45.5).unwrap();
        staff.write_string(4, 0, "Chloé").unwrap().write_string(4, 1, "Nantes").unwrap().write_boolean(4, 2, true).unwrap();
        book.add_worksheet().set_name("Empty").unwrap();
        let numbers = book.add_worksheet().set_name("Numbers").unwrap();
        numbers.write_number(0, 0, 1.5).unwrap().write_number(0, 1, 2).unwrap().write_number(1, 0, 3).unwrap();
        let bytes = book.save_to_buffer().unwrap();

        let expected = [
            ("Staff > rows 2–5", "Name: Alice | City: Paris | Age: 31 | Joined: 2021-03-15\nName: Bob | Age: 45.5\nName: Chloé | City: Nantes | Age: true"),
            ("Numbers > rows 1–2", "1.5 | 2\n3"),
        ];
        assert_eq!(chunks(&bytes), pairs(&expected));
        assert_eq!(extract(DocKind::Spreadsheet, &bytes).unwrap().title, None, "the file name is the title, not a sheet's");
    }

    #[test]
    fn a_huge_declared_range_is_read_cell_by_cell_within_bounds() {
        let mut book = Workbook::new();
        let sheet = book.add_worksheet();
        sheet.write_string(0, 0, "Key").unwrap().write_string(0, 1, "Value").unwrap();
        sheet.write_string(1, 0, "a").unwrap().write_string(1, 1, "b").unwrap();
        // The declared range becomes A1:XFD1048576, the largest there is.
        sheet.write_string(1_048_575, 16_383, "far corner").unwrap().write_string(1_048_575, 0, "last row").unwrap();
        let bytes = book.save_to_buffer().unwrap();
        let started = Instant::now();
        let got = chunks(&bytes);
        assert_eq!(got, pairs(&[("Sheet1 > rows 2–1048576", "Key: a | Value: b\nKey: last row")]));
        assert!(started.elapsed() < Duration::from_secs(10), "read in {:?}", started.elapsed());
    }

    /// `bytes` (a zip) with its part `name` replaced by `part`.
    fn with_part(bytes: &[u8], name: &str, part: &[u8]) -> Vec<u8> {
        let mut archive = zip::ZipArchive::new(std::io::Cursor::new(bytes)).unwrap();
        let mut out = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        for i in 0..archive.len() {
            let mut file = archive.by_index(i).unwrap();
            let mut content = Vec::new();
            file.read_to_end(&mut content).unwrap();
            out.start_file(file.name(), zip::write::SimpleFileOptions::default()).unwrap();
            out.write_all(if file.name() == name { part } else { &content }).unwrap();
        }
        out.finish().unwrap().into_inner()
    }

    #[test]
    fn a_corrupt_workbook_is_an_error_for_the_file() {
        let mut book = Workbook::new();
        book.add_worksheet().write_string(0, 0, "text").unwrap();
        let good = book.save_to_buffer().unwrap();
        assert_eq!(chunks(&good), pairs(&[("Sheet1 > row 1", "text")]));
        let inputs: [&[u8]; 5] = [&good[..good.len() / 2], b"PK\x03\x04 nonsense", b"\xD0\xCF\x11\xE0 not an OLE file", b"plain text", b""];
        for bad in inputs {
            let error = extract(DocKind::Spreadsheet, bad).unwrap_err();
            assert!(error.contains("spreadsheet"), "{error}");
        }
        let cut = with_part(&good, "xl/worksheets/sheet1.xml", b"<worksheet><sheetData><row r=\"1\"><c r=\"A1\" t=\"s\"><v>0</v>");
        assert!(extract(DocKind::Spreadsheet, &cut).unwrap_err().starts_with("corrupt spreadsheet"));
        let no_workbook = with_part(&good, "xl/workbook.xml", b"<not a workbook");
        assert!(extract(DocKind::Spreadsheet, &no_workbook).unwrap_err().starts_with("corrupt spreadsheet"));
    }
}
