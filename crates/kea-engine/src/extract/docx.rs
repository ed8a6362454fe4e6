//! DOCX: the `word/document.xml` part of the zip, read as a stream of
//! paragraphs (heading styles and outline levels become headings, numbered
//! paragraphs list items) and tables (one row a line, cells joined by ` | `).
//! The XML part is read through a size limit, so a zip bomb is an error.

use std::io::Read;

use quick_xml::events::{BytesStart, Event};
use quick_xml::Reader;

use super::{push_block, Block, BlockKind, Extracted};

/// The most uncompressed XML we read from one document (a zip bomb guard).
const MAX_XML_BYTES: u64 = 64 * 1024 * 1024;

pub(super) fn extract(bytes: &[u8]) -> Result<Extracted, String> {
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(bytes)).map_err(|e| format!("not a valid .docx (zip) file: {e}"))?;
    let mut part = archive.by_name("word/document.xml").map_err(|_| "not a Word document: word/document.xml is missing".to_string())?;
    if part.size() > MAX_XML_BYTES {
        return Err(format!("document XML is {} MB uncompressed, over the {} MB limit", part.size() >> 20, MAX_XML_BYTES >> 20));
    }
    let mut xml = Vec::new();
    (&mut part).take(MAX_XML_BYTES + 1).read_to_end(&mut xml).map_err(|e| match e.kind() {
        std::io::ErrorKind::OutOfMemory => super::OUT_OF_MEMORY.to_string(),
        _ => format!("corrupt .docx: {e}"),
    })?;
    if xml.len() as u64 > MAX_XML_BYTES {
        return Err(format!("document XML is over the {} MB limit", MAX_XML_BYTES >> 20));
    }
    parse_document_xml(&xml)
}

#[derive(Default)]
struct Paragraph {
    text: String,
    heading_level: Option<u8>,
    numbered: bool,
}

#[derive(Default)]
struct Builder {
    doc: Extracted,
    paragraph: Option<Paragraph>,
    in_text_run: bool,
    table_depth: usize,
    rows: Vec<String>,
    cells: Vec<String>,
    cell: String,
}

impl Builder {
    fn finish_paragraph(&mut self) {
        let Some(p) = self.paragraph.take() else { return };
        let text = p.text.trim();
        if text.is_empty() {
            return;
        }
        if self.table_depth > 0 {
            if !self.cell.is_empty() {
                self.cell.push(' ');
            }
            self.cell.push_str(text);
            return;
        }
        let kind = match (p.heading_level, p.numbered) {
            (Some(level), _) => BlockKind::Heading { level, text: text.to_string() },
            (None, true) => BlockKind::ListItem,
            (None, false) => BlockKind::Paragraph,
        };
        self.push(kind, text.as_ref());
    }

    fn push(&mut self, kind: BlockKind, text: &str) {
        let range = push_block(&mut self.doc.plain, text);
        self.doc.blocks.push(Block { kind, range, page: None });
    }

    fn paragraph_property(&mut self, element: &BytesStart) {
        let Some(p) = self.paragraph.as_mut() else { return };
        match element.local_name().as_ref() {
            b"pStyle" => {
                if let Some(style) = attribute(element, b"val") {
                    p.heading_level = p.heading_level.or_else(|| heading_level_of_style(&style));
                }
            }
            b"outlineLvl" => {
                if let Some(level) = attribute(element, b"val").and_then(|v| v.parse::<u8>().ok()) {
                    if level < 9 {
                        p.heading_level = Some(level + 1);
                    }
                }
            }
            b"numPr" => p.numbered = true,
            b"tab" => p.text.push('\t'),
            b"br" | b"cr" => p.text.push('\n'),
            _ => {}
        }
    }
}

fn parse_document_xml(xml: &[u8]) -> Result<Extracted, String> {
    let mut reader = Reader::from_reader(xml);
    let mut b = Builder::default();
    let mut buf = Vec::new();
    loop {
        let event = reader.read_event_into(&mut buf).map_err(|e| format!("corrupt .docx XML: {e}"))?;
        match event {
            Event::Start(e) => match e.local_name().as_ref() {
                b"p" => b.paragraph = Some(Paragraph::default()),
                b"t" => b.in_text_run = true,
                b"tbl" => {
                    b.finish_paragraph();
                    b.table_depth += 1;
                }
                b"tc" if b.table_depth == 1 => b.cell.clear(),
                _ => b.paragraph_property(&e),
            },
            Event::Empty(e) => b.paragraph_property(&e),
            Event::Text(t) if b.in_text_run => {
                if let Some(p) = b.paragraph.as_mut() {
                    p.text.push_str(&t.unescape().map_err(|e| format!("corrupt .docx XML: {e}"))?);
                }
            }
            Event::End(e) => match e.local_name().as_ref() {
                b"t" => b.in_text_run = false,
                b"p" => b.finish_paragraph(),
                b"tc" if b.table_depth == 1 => b.cells.push(std::mem::take(&mut b.cell)),
                b"tr" if b.table_depth == 1 => {
                    let row = std::mem::take(&mut b.cells).join(" | ");
                    if !row.trim_matches([' ', '|']).is_empty() {
                        b.rows.push(row);
                    }
                }
                b"tbl" => {
                    b.table_depth = b.table_depth.saturating_sub(1);
                    if b.table_depth == 0 && !b.rows.is_empty() {
                        let table = std::mem::take(&mut b.rows).join("\n");
                        b.push(BlockKind::Table, &table);
                    }
                }
                _ => {}
            },
            Event::Eof => break,
            _ => {}
        }
        buf.clear();
    }
    if b.doc.blocks.is_empty() {
        return Err("no text found in this Word document".into());
    }
    Ok(b.doc)
}

fn attribute(element: &BytesStart, name: &[u8]) -> Option<String> {
    element.attributes().flatten().find(|a| a.key.local_name().as_ref() == name).and_then(|a| a.unescape_value().ok().map(|v| v.into_owned()))
}

/// `Heading2` / `heading 2` → 2; `Title` → 1.
fn heading_level_of_style(style: &str) -> Option<u8> {
    let lower = style.to_ascii_lowercase().replace(' ', "");
    if lower == "title" {
        return Some(1);
    }
    lower.strip_prefix("heading")?.parse::<u8>().ok().filter(|l| (1..=9).contains(l))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::io::Write;

    /// Wraps `body` (WordprocessingML inside `<w:body>`) into a minimal .docx.
    pub(crate) fn make_docx(body: &str) -> Vec<u8> {
        let xml = format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?><w:document xmlns:w=\"http://schemas.openxmlformats.org/wordprocessingml/2006/main\"><w:body>{body}</w:body></w:document>"
        );
        let mut out = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        let options = zip::write::SimpleFileOptions::default();
        out.start_file("word/document.xml", options).unwrap();
        out.write_all(xml.as_bytes()).unwrap();
        out.finish().unwrap().into_inner()
    }

    #[test]
    fn headings_paragraphs_lists_and_tables() {
        let docx = make_docx(concat!(
            "<w:p><w:pPr><w:pStyle w:val=\"Heading1\"/></w:pPr><w:r><w:t>Sun Conure</w:t></w:r></w:p>",
            "<w:p><w:r><w:t xml:space=\"preserve\">Bright &amp; loud </w:t></w:r><w:r><w:t>bird.</w:t></w:r></w:p>",
            "<w:p><w:pPr><w:numPr><w:ilvl w:val=\"0\"/></w:numPr></w:pPr><w:r><w:t>Fruit</w:t></w:r></w:p>",
            "<w:tbl><w:tr><w:tc><w:p><w:r><w:t>Length</w:t></w:r></w:p></w:tc><w:tc><w:p><w:r><w:t>30 cm</w:t></w:r></w:p></w:tc></w:tr></w:tbl>",
        ));
        let doc = extract(&docx).unwrap();
        let got: Vec<(BlockKind, &str)> = doc.blocks.iter().map(|b| (b.kind.clone(), &doc.plain[b.range.clone()])).collect();
        assert_eq!(
            got,
            [
                (BlockKind::Heading { level: 1, text: "Sun Conure".into() }, "Sun Conure"),
                (BlockKind::Paragraph, "Bright & loud bird."),
                (BlockKind::ListItem, "Fruit"),
                (BlockKind::Table, "Length | 30 cm"),
            ]
        );
    }

    #[test]
    fn broken_inputs_are_errors() {
        assert!(extract(b"PK\x03\x04 nonsense").is_err());
        assert!(extract(&make_docx("<w:p><w:r><w:t>unclosed")).is_err());
        let mut no_document = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        no_document.start_file("other.xml", zip::write::SimpleFileOptions::default()).unwrap();
        assert!(extract(&no_document.finish().unwrap().into_inner()).unwrap_err().contains("word/document.xml"));
    }
}
