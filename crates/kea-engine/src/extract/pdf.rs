//! PDF via `pdf-extract`, page by page. Two hazards are handled here:
//! pdf-extract panics on some malformed files (contained with `catch_unwind`,
//! the panic message silenced), and it drops text drawn with the `'` and `"`
//! operators, which we rewrite to their `T*`/`Tw`/`Tc`/`Tj` equivalents first.
//! Pages with (almost) no text are scanned images: they go to OCR when the
//! context has an engine. Headings come from type sizes (`pdf_lines`).

use std::cell::Cell;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Once;

use pdf_extract::content::Operation;
use pdf_extract::Document;

use super::ocr::NO_OCR_ENGINE;
use super::pdf_lines::{lines_of_text, structure, Line, LineCollector, OutlineEntry, Pages};
use super::{ExtractContext, Extracted};

/// A page with fewer visible characters than this is taken for a scan.
const SCANNED_PAGE_CHARS: usize = 10;

thread_local! {
    static SILENCE_PANICS: Cell<bool> = const { Cell::new(false) };
}

pub(super) fn extract(bytes: &[u8], context: &ExtractContext) -> Result<Extracted, String> {
    install_quiet_panic_hook();
    SILENCE_PANICS.with(|s| s.set(true));
    let result = panic::catch_unwind(AssertUnwindSafe(|| extract_pages(bytes)));
    SILENCE_PANICS.with(|s| s.set(false));
    let (mut pages, outline) = match result {
        Ok(read) => read?,
        Err(_) => return Err("malformed PDF: the PDF parser gave up on this file".into()),
    };
    read_scanned_pages(bytes, &mut pages, context)?;
    let doc = structure(&pages, &outline);
    if doc.blocks.is_empty() {
        return Err("no text in this PDF, not even by OCR of its pages".into());
    }
    Ok(doc)
}

/// Replaces the text of pages that look scanned with their OCR text. A PDF
/// that is all scans with no OCR engine is an error saying so; one with
/// some text pages keeps those.
fn read_scanned_pages(bytes: &[u8], pages: &mut [(u32, Vec<Line>)], context: &ExtractContext) -> Result<(), String> {
    let visible = |lines: &[Line]| lines.iter().map(|l| l.text.chars().filter(|c| !c.is_whitespace()).count()).sum::<usize>();
    let scanned: Vec<u32> = pages.iter().filter(|(_, lines)| visible(lines) < SCANNED_PAGE_CHARS).map(|(page, _)| *page).collect();
    if scanned.is_empty() {
        return Ok(());
    }
    let Some(ocr) = &context.ocr else {
        if scanned.len() == pages.len() {
            return Err(format!("a scanned PDF with no text layer: {NO_OCR_ENGINE}"));
        }
        return Ok(());
    };
    for (page, text) in ocr.pdf_pages_text(bytes, &scanned, context.deadline)? {
        if let Some(slot) = pages.iter_mut().find(|(p, _)| *p == page) {
            slot.1 = lines_of_text(&text);
        }
    }
    Ok(())
}

/// The pages' lines, and the outline (bookmarks) if the PDF has one.
fn extract_pages(bytes: &[u8]) -> Result<(Pages, Vec<OutlineEntry>), String> {
    let mut doc = Document::load_mem(bytes).map_err(|e| format!("malformed PDF: {e}"))?;
    if doc.is_encrypted() && doc.decrypt("").is_err() {
        return Err("encrypted PDF: it needs a password, which Kea does not support".into());
    }
    normalise_quote_operators(&mut doc);
    let mut pages = Vec::new();
    for page in doc.get_pages().keys().copied().collect::<Vec<_>>() {
        let mut lines = LineCollector::default();
        pdf_extract::output_doc_page(&doc, &mut lines, page).map_err(|e| format!("malformed PDF (page {page}): {e}"))?;
        pages.push((page, lines.finish()));
    }
    let outline = doc
        .get_toc()
        .map_or_else(|_| Vec::new(), |toc| toc.toc.into_iter().map(|e| OutlineEntry { level: e.level, title: e.title, page: e.page as u32 }).collect());
    Ok((pages, outline))
}

/// Rewrites `string '` as `T* string Tj` and `aw ac string "` as
/// `aw Tw ac Tc T* string Tj`, which pdf-extract understands.
pub(crate) fn normalise_quote_operators(doc: &mut Document) {
    let page_ids: Vec<_> = doc.get_pages().values().copied().collect();
    for page_id in page_ids {
        let Ok(mut content) = doc.get_and_decode_page_content(page_id) else { continue };
        if !content.operations.iter().any(|op| op.operator == "'" || op.operator == "\"") {
            continue;
        }
        let mut rewritten = Vec::with_capacity(content.operations.len() + 8);
        for op in content.operations.drain(..) {
            match (op.operator.as_str(), op.operands.as_slice()) {
                ("'", [string]) => {
                    rewritten.push(Operation::new("T*", vec![]));
                    rewritten.push(Operation::new("Tj", vec![string.clone()]));
                }
                ("\"", [word_spacing, char_spacing, string]) => {
                    rewritten.push(Operation::new("Tw", vec![word_spacing.clone()]));
                    rewritten.push(Operation::new("Tc", vec![char_spacing.clone()]));
                    rewritten.push(Operation::new("T*", vec![]));
                    rewritten.push(Operation::new("Tj", vec![string.clone()]));
                }
                _ => rewritten.push(op),
            }
        }
        content.operations = rewritten;
        if let Ok(encoded) = content.encode() {
            let _ = doc.change_page_content(page_id, encoded);
        }
    }
}

/// Keeps pdf-extract's panics (which we catch) out of stderr, while every
/// other panic still reaches the previous hook.
fn install_quiet_panic_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if !SILENCE_PANICS.with(|s| s.get()) {
                previous(info);
            }
        }));
    });
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::extract::BlockKind;
    use pdf_extract::{dictionary, Object, Stream};

    /// Builds a one-font PDF whose pages draw the given content streams.
    pub(crate) fn make_pdf(pages: &[&str]) -> Vec<u8> {
        make_pdf_with_outline(pages, &[])
    }

    /// As [`make_pdf`], with an outline of top-level `(title, page index)` bookmarks.
    fn make_pdf_with_outline(pages: &[&str], bookmarks: &[(&str, usize)]) -> Vec<u8> {
        let mut doc = Document::with_version("1.5");
        let pages_id = doc.new_object_id();
        let font_id = doc.add_object(dictionary! {
            "Type" => "Font", "Subtype" => "Type1", "BaseFont" => "Helvetica",
        });
        let resources_id = doc.add_object(dictionary! {
            "Font" => dictionary! { "F1" => font_id },
        });
        let mut kids = Vec::new();
        for content in pages {
            let content_id = doc.add_object(Stream::new(dictionary! {}, content.as_bytes().to_vec()));
            let page_id = doc.add_object(dictionary! {
                "Type" => "Page", "Parent" => pages_id, "Contents" => content_id,
                "MediaBox" => vec![0.into(), 0.into(), 595.into(), 842.into()],
            });
            kids.push(page_id.into());
        }
        let count = kids.len() as i64;
        doc.objects.insert(
            pages_id,
            Object::Dictionary(dictionary! {
                "Type" => "Pages", "Kids" => kids.clone(), "Count" => count, "Resources" => resources_id,
            }),
        );
        let mut catalog = dictionary! { "Type" => "Catalog", "Pages" => pages_id };
        if !bookmarks.is_empty() {
            let outlines_id = doc.new_object_id();
            let ids: Vec<_> = bookmarks.iter().map(|_| doc.new_object_id()).collect();
            for (i, (title, page)) in bookmarks.iter().enumerate() {
                let mut item = dictionary! {
                    "Title" => Object::string_literal(*title), "Parent" => outlines_id,
                    "Dest" => vec![kids[*page].clone(), "Fit".into()],
                };
                if let Some(next) = ids.get(i + 1) {
                    item.set("Next", *next);
                }
                if i > 0 {
                    item.set("Prev", ids[i - 1]);
                }
                doc.objects.insert(ids[i], Object::Dictionary(item));
            }
            let count = ids.len() as i64;
            let outlines = dictionary! { "Type" => "Outlines", "First" => ids[0], "Last" => ids[ids.len() - 1], "Count" => count };
            doc.objects.insert(outlines_id, Object::Dictionary(outlines));
            catalog.set("Outlines", outlines_id);
        }
        let catalog_id = doc.add_object(catalog);
        doc.trailer.set("Root", catalog_id);
        let mut bytes = Vec::new();
        doc.save_to(&mut bytes).unwrap();
        bytes
    }

    #[test]
    fn the_outline_names_the_headings_of_a_pdf_in_one_type_size() {
        let pdf = make_pdf_with_outline(
            &[
                "BT /F1 12 Tf 50 780 Td (Housing) Tj 0 -40 Td (A cage wider than tall.) Tj ET",
                "BT /F1 12 Tf 50 780 Td (Cleaning) Tj 0 -40 Td (Scrub the perches weekly.) Tj ET",
            ],
            &[("Housing", 0), ("Cleaning", 1)],
        );
        let doc = extract(&pdf, &ExtractContext::default()).unwrap();
        let headings: Vec<(&str, Option<u32>)> = doc
            .blocks
            .iter()
            .filter_map(|b| match &b.kind {
                BlockKind::Heading { text, .. } => Some((text.as_str(), b.page)),
                _ => None,
            })
            .collect();
        assert_eq!(headings, [("Housing", Some(1)), ("Cleaning", Some(2))], "{:?}", doc.blocks);
    }

    #[test]
    fn pages_are_numbered() {
        let pdf = make_pdf(&["BT /F1 12 Tf 50 750 Td (Cockatiels eat seeds.) Tj ET", "BT /F1 12 Tf 50 750 Td (Macaws crack nuts.) Tj ET"]);
        let doc = extract(&pdf, &ExtractContext::default()).unwrap();
        let pages: Vec<(Option<u32>, &str)> = doc.blocks.iter().map(|b| (b.page, doc.plain[b.range.clone()].trim())).collect();
        assert_eq!(pages, [(Some(1), "Cockatiels eat seeds."), (Some(2), "Macaws crack nuts.")]);
    }

    #[test]
    fn larger_type_becomes_a_heading_of_the_page() {
        let pdf = make_pdf(&["BT /F1 20 Tf 50 780 Td (Perches and cleaning) Tj /F1 12 Tf 0 -40 Td (Clean the food and water dishes every day.) Tj ET"]);
        let doc = extract(&pdf, &ExtractContext::default()).unwrap();
        let heading = doc.blocks.iter().find_map(|b| match &b.kind {
            BlockKind::Heading { level, text } => Some((*level, text.as_str(), b.page)),
            _ => None,
        });
        assert_eq!(heading, Some((1, "Perches and cleaning", Some(1))), "{:?}", doc.blocks);
    }

    #[test]
    fn quote_operators_keep_their_text() {
        let pdf = make_pdf(&["BT /F1 12 Tf 14 TL 50 750 Td (First line) Tj (Second line) ' 1 0 (Third line) \" ET"]);
        let doc = extract(&pdf, &ExtractContext::default()).unwrap();
        for line in ["First line", "Second line", "Third line"] {
            assert!(doc.plain.contains(line), "{line:?} missing from {:?}", doc.plain);
        }
    }

    #[test]
    fn truncated_pdf_is_an_error_not_a_panic() {
        let pdf = make_pdf(&["BT /F1 12 Tf 50 750 Td (Some text here) Tj ET"]);
        for cut in [10, pdf.len() / 2, pdf.len() - 30] {
            assert!(extract(&pdf[..cut], &ExtractContext::default()).is_err(), "cut at {cut}");
        }
        assert!(extract(b"not a pdf at all", &ExtractContext::default()).is_err());
    }
}
