//! Turns a file's bytes into plain text plus structural blocks (headings,
//! paragraphs, code, tables, list items) with byte ranges into that text.
//! Each format has its own module; all failures are per-file messages.
//! Pictures and scanned PDF pages are read by OCR when an engine is present.

mod docx;
mod markdown;
mod ocr;
mod pdf;
mod pdf_lines;
mod text;

use std::ops::Range;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::frontmatter::FrontMatter;

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
}

impl DocKind {
    /// Every file extension Kea reads (lower case) and its kind: the one list
    /// behind the scanner, imports, the desktop's file dialog (generated into
    /// `ui/src/ipc.ts`) and the tests.
    pub const EXTENSIONS: [(&'static str, DocKind); 11] = [
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
        }
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
    let mut doc = match kind {
        DocKind::Markdown => markdown::extract(&decode_text(bytes)?),
        DocKind::Text => text::extract_plain(decode_text(bytes)?),
        DocKind::Pdf => pdf::extract(bytes, context)?,
        DocKind::Docx => docx::extract(bytes)?,
        DocKind::Image => picture(bytes, context)?,
    };
    if doc.title.is_none() {
        doc.title = doc.front_matter.get("title").or_else(|| {
            doc.blocks.iter().find_map(|b| match &b.kind {
                BlockKind::Heading { text, .. } => Some(text.clone()),
                _ => None,
            })
        });
    }
    Ok(doc)
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
