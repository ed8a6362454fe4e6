//! Turns a file's bytes into plain text plus structural blocks (headings,
//! paragraphs, code, tables, list items) with byte ranges into that text.
//! Each format has its own module (spreadsheets and CSV share `rows`, which
//! lays out a table's rows); all failures are per-file messages.
//! Pictures and scanned PDF pages are read by OCR when an engine is present.

mod delimited;
mod docx;
mod html;
mod markdown;
mod ocr;
mod pdf;
mod pdf_lines;
mod rows;
mod sheet;
mod text;

use std::ops::Range;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::frontmatter::{FrontMatter, FrontMatterValue};

pub use ocr::Ocr;
pub use text::decode_text;

/// The document formats Kea indexes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DocKind {
    Markdown,
    Text,
    Pdf,
    Docx,
    /// A picture (a photographed or scanned page): its text comes from OCR.
    Image,
    /// A workbook (.xlsx, .xls, .ods): each sheet a section of row groups.
    Spreadsheet,
    /// Comma-, tab- or semicolon-separated values: row groups of one table.
    Csv,
    /// A web page: its main content.
    Html,
}

impl DocKind {
    /// Every file extension Kea reads (lower case) and its kind: the one list
    /// behind the scanner, imports, the desktop's file dialog (generated into
    /// `ui/src/ipc.ts`) and the tests.
    pub const EXTENSIONS: [(&'static str, DocKind); 18] = [
        ("md", DocKind::Markdown),
        ("markdown", DocKind::Markdown),
        ("txt", DocKind::Text),
        ("text", DocKind::Text),
        ("pdf", DocKind::Pdf),
        ("docx", DocKind::Docx),
        ("png", DocKind::Image),
        ("jpg", DocKind::Image),
        ("jpeg", DocKind::Image),
        ("tif", DocKind::Image),
        ("tiff", DocKind::Image),
        ("xlsx", DocKind::Spreadsheet),
        ("xls", DocKind::Spreadsheet),
        ("ods", DocKind::Spreadsheet),
        ("csv", DocKind::Csv),
        ("tsv", DocKind::Csv),
        ("html", DocKind::Html),
        ("htm", DocKind::Html),
    ];

    /// The kind for a path's extension (case-insensitive), if Kea reads it.
    pub fn from_path(path: &Path) -> Option<DocKind> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        Self::EXTENSIONS.iter().find(|(known, _)| *known == ext).map(|(_, kind)| *kind)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            DocKind::Markdown => "markdown",
            DocKind::Text => "text",
            DocKind::Pdf => "pdf",
            DocKind::Docx => "docx",
            DocKind::Image => "image",
            DocKind::Spreadsheet => "spreadsheet",
            DocKind::Csv => "csv",
            DocKind::Html => "html",
        }
    }

    /// The kind [`DocKind::as_str`] names.
    pub fn parse(name: &str) -> Option<DocKind> {
        [DocKind::Markdown, DocKind::Text, DocKind::Pdf, DocKind::Docx, DocKind::Image, DocKind::Spreadsheet, DocKind::Csv, DocKind::Html]
            .into_iter()
            .find(|k| k.as_str() == name)
    }
}

/// What a block of a document is; the chunker keeps code, tables and list
/// items whole where it can.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum BlockKind {
    Heading { level: u8, text: String },
    Paragraph,
    Code,
    Table,
    ListItem,
    Quote,
}

/// One structural block: its kind, its byte range in [`Extracted::plain`],
/// and the 1-based page it starts on (PDF only).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Block {
    pub kind: BlockKind,
    pub range: Range<usize>,
    pub page: Option<u32>,
}

/// A document's extracted content.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Extracted {
    /// The document's text; every block range and chunk span points into it.
    pub plain: String,
    pub blocks: Vec<Block>,
    pub front_matter: FrontMatter,
    /// The best human title: front matter `title`, else the first heading
    /// (ingest falls back to the profile's names, then the file name).
    pub title: Option<String>,
}

/// Limits on what is copied into every chunk of a document (heading text,
/// title) or kept beside it (front matter): one file's 1 MB heading must
/// not become a megabyte per chunk.
pub const MAX_HEADING_CHARS: usize = 200;
const MAX_FRONT_MATTER_KEYS: usize = 100;
const MAX_FRONT_MATTER_VALUE_CHARS: usize = 300;
const MAX_FRONT_MATTER_LIST_ITEMS: usize = 50;

impl Extracted {
    /// The document with its structure made safe to use: blocks whose range
    /// is not a valid span of `plain` dropped (a reader process is not
    /// trusted to return good ones), headings, title and front matter cut
    /// to their limits. Every extracted document passes through this.
    pub fn bounded(mut self) -> Extracted {
        let plain = &self.plain;
        self.blocks.retain(|b| b.range.start <= b.range.end && plain.get(b.range.clone()).is_some());
        for block in &mut self.blocks {
            if let BlockKind::Heading { text, .. } = &mut block.kind {
                truncate_chars(text, MAX_HEADING_CHARS);
            }
        }
        if let Some(title) = &mut self.title {
            truncate_chars(title, MAX_HEADING_CHARS);
        }
        let entries = std::mem::take(&mut self.front_matter.0);
        for (mut key, mut value) in entries.into_iter().take(MAX_FRONT_MATTER_KEYS) {
            truncate_chars(&mut key, MAX_FRONT_MATTER_VALUE_CHARS);
            match &mut value {
                FrontMatterValue::Text(text) => truncate_chars(text, MAX_FRONT_MATTER_VALUE_CHARS),
                FrontMatterValue::List(items) => {
                    items.truncate(MAX_FRONT_MATTER_LIST_ITEMS);
                    items.iter_mut().for_each(|item| truncate_chars(item, MAX_FRONT_MATTER_VALUE_CHARS));
                }
            }
            self.front_matter.0.insert(key, value);
        }
        self
    }
}

/// Cuts `text` to at most `max` characters, marking the cut with `…`.
pub fn truncate_chars(text: &mut String, max: usize) {
    if text.chars().nth(max).is_some() {
        let cut = text.char_indices().nth(max.saturating_sub(1)).map_or(0, |(i, _)| i);
        text.truncate(cut);
        text.push('…');
    }
}

/// The error of a parser that could not get the memory it asked for (in a
/// reader process, the memory budget was reached).
pub const OUT_OF_MEMORY: &str = "out of memory";

/// What reading a file may use beyond its bytes: the OCR engine, if any,
/// and the moment its time budget ends (OCR processes are killed then).
#[derive(Debug, Clone)]
pub struct ExtractContext {
    pub ocr: Option<Ocr>,
    pub deadline: Instant,
}

impl Default for ExtractContext {
    /// No OCR, no practical deadline.
    fn default() -> Self {
        ExtractContext { ocr: None, deadline: Instant::now() + Duration::from_secs(24 * 3600) }
    }
}

/// Extracts `bytes` as a document of `kind` without OCR (pictures and
/// scanned PDFs are then errors). Errors are messages for the document's
/// status line.
pub fn extract(kind: DocKind, bytes: &[u8]) -> Result<Extracted, String> {
    extract_with(kind, bytes, &ExtractContext::default())
}

/// Extracts `bytes` as a document of `kind`, reading pictures and scanned
/// PDF pages with `context`'s OCR engine.
pub fn extract_with(kind: DocKind, bytes: &[u8], context: &ExtractContext) -> Result<Extracted, String> {
    let doc = match kind {
        DocKind::Markdown => markdown::extract(&decode_text(bytes)?),
        DocKind::Text => text::extract_plain(decode_text(bytes)?),
        DocKind::Pdf => pdf::extract(bytes, context)?,
        DocKind::Docx => docx::extract(bytes)?,
        DocKind::Image => picture(bytes, context)?,
        DocKind::Spreadsheet => sheet::extract(bytes)?,
        DocKind::Csv => delimited::extract(bytes)?,
        DocKind::Html => html::extract(bytes, None, context.deadline)?,
    };
    Ok(finish(doc, kind))
}

/// An HTML page's main content as a document (see the `html` module), from
/// a file's bytes or a fetched page's; `charset` is the one its
/// `Content-Type` header names, if any.
pub fn extract_html(bytes: &[u8], charset: Option<&str>) -> Result<Extracted, String> {
    Ok(finish(html::extract(bytes, charset, ExtractContext::default().deadline)?, DocKind::Html))
}

/// The mark that heads a page kept from `url` (read back as its `source`).
pub fn saved_from_mark(url: &str) -> String {
    html::saved_from_mark(url)
}

/// The line that begins every page Kea keeps, before its `saved from` mark.
pub const KEPT_BY_KEA: &str = html::KEPT_BY_KEA;

/// An HTML page's text, decoded as [`extract_html`] decodes it.
pub fn decode_html(bytes: &[u8], charset: Option<&str>) -> Result<String, String> {
    html::decode(bytes, charset)
}

/// The document with a title (front matter's, else the first heading's;
/// a sheet's name or a row range is no title: the file name is) and made
/// safe to use ([`Extracted::bounded`]).
fn finish(mut doc: Extracted, kind: DocKind) -> Extracted {
    if doc.title.is_none() && !matches!(kind, DocKind::Spreadsheet | DocKind::Csv) {
        doc.title = doc.front_matter.get("title").or_else(|| {
            doc.blocks.iter().find_map(|b| match &b.kind {
                BlockKind::Heading { text, .. } => Some(text.clone()),
                _ => None,
            })
        });
    }
    doc.bounded()
}

/// A picture's text by OCR, paragraph by paragraph (no text: no blocks).
fn picture(bytes: &[u8], context: &ExtractContext) -> Result<Extracted, String> {
    let Some(ocr) = &context.ocr else { return Err(format!("a picture, whose text needs OCR: {}", ocr::NO_OCR_ENGINE)) };
    let found = ocr.picture_text(bytes, context.deadline)?;
    let mut doc = Extracted::default();
    for range in text::paragraph_ranges(&found, 0) {
        let range = push_block(&mut doc.plain, &found[range]);
        doc.blocks.push(Block { kind: BlockKind::Paragraph, range, page: None });
    }
    Ok(doc)
}

/// Appends `text` to `plain` as its own block (separated by a blank line)
/// and returns its range. Used by the formats that build `plain` themselves.
pub(crate) fn push_block(plain: &mut String, text: &str) -> Range<usize> {
    if !plain.is_empty() {
        plain.push_str("\n\n");
    }
    let start = plain.len();
    plain.push_str(text);
    start..plain.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_huge_heading_and_title_are_cut_and_bad_ranges_dropped() {
        let heading = "H".repeat(1 << 20);
        let text = format!("---\ntitle: {heading}\ntags: [{}]\n---\n# {heading}\n\nbody\n", vec!["t"; 500].join(", "));
        let doc = extract(DocKind::Markdown, text.as_bytes()).unwrap();
        assert_eq!(doc.title.as_ref().unwrap().chars().count(), MAX_HEADING_CHARS);
        assert!(doc.title.unwrap().ends_with('…'));
        let headings: Vec<usize> =
            doc.blocks.iter().filter_map(|b| if let BlockKind::Heading { text, .. } = &b.kind { Some(text.chars().count()) } else { None }).collect();
        assert_eq!(headings, [MAX_HEADING_CHARS]);
        assert!(matches!(&doc.front_matter.0["tags"], FrontMatterValue::List(items) if items.len() == MAX_FRONT_MATTER_LIST_ITEMS));

        let plain = "中文 text".to_string();
        let block = |range: Range<usize>| Block { kind: BlockKind::Paragraph, range, page: None };
        let hostile = Extracted {
            plain,
            blocks: vec![block(0..3), block(1..3), block(4..99), block(Range { start: usize::MAX, end: 0 }), block(3..11)],
            ..Default::default()
        };
        let ranges: Vec<Range<usize>> = hostile.bounded().blocks.into_iter().map(|b| b.range).collect();
        assert_eq!(ranges, [0..3, 3..11], "ranges off a character boundary or past the end are dropped");
    }

    #[test]
    fn truncation_counts_characters() {
        let mut short = "鹦鹉".to_string();
        truncate_chars(&mut short, 2);
        assert_eq!(short, "鹦鹉");
        let mut long = "鹦鹉鹦鹉".to_string();
        truncate_chars(&mut long, 3);
        assert_eq!(long, "鹦鹉…");
    }
}
