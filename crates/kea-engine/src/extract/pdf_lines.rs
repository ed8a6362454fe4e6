//! A PDF page as lines with their type size, and a document's structure
//! from them. Headings come from the PDF's outline (bookmarks) when its
//! entries are found on their pages, at the outline's levels; otherwise
//! lines set clearly larger than the body text are headings (the largest
//! size is level 1). The rest are paragraphs split at wide gaps. The line
//! breaking follows pdf-extract's plain-text output.

use pdf_extract::{MediaBox, OutputDev, OutputError, Transform};

use super::{push_block, Block, BlockKind, Extracted};

/// A line of a page: its text, the largest type size in it (0: unknown,
/// e.g. OCR text) and whether a paragraph gap comes before it.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Line {
    pub text: String,
    pub size: f64,
    pub gap_before: bool,
}

/// A document's pages (1-based numbers) and their lines.
pub(super) type Pages = Vec<(u32, Vec<Line>)>;

/// Type at least this much larger than the body text makes a heading.
const HEADING_RATIO: f64 = 1.2;
/// Longer lines are text set large, not headings.
const HEADING_MAX_CHARS: usize = 120;
/// Heading levels beyond this share the deepest level.
const DEEPEST_LEVEL: usize = 3;

/// Collects the lines of one page (an [`OutputDev`] for pdf-extract).
#[derive(Default)]
pub(super) struct LineCollector {
    pub lines: Vec<Line>,
    flip_y: f64,
    current: Option<Line>,
    gap_pending: bool,
    word_start: bool,
    last_y: f64,
    last_end: f64,
}

impl LineCollector {
    /// The page's lines, the one being written included.
    pub fn finish(mut self) -> Vec<Line> {
        self.break_line();
        self.lines
    }

    fn break_line(&mut self) {
        if let Some(line) = self.current.take().filter(|l| !l.text.trim().is_empty()) {
            self.lines.push(Line { text: line.text.trim().to_string(), ..line });
        }
    }
}

impl OutputDev for LineCollector {
    fn begin_page(&mut self, _page: u32, media_box: &MediaBox, _art_box: Option<(f64, f64, f64, f64)>) -> Result<(), OutputError> {
        self.flip_y = media_box.ury - media_box.lly;
        Ok(())
    }

    fn end_page(&mut self) -> Result<(), OutputError> {
        Ok(())
    }

    fn output_character(&mut self, trm: &Transform, width: f64, _spacing: f64, font_size: f64, char: &str) -> Result<(), OutputError> {
        // The side of a square with the area of the transformed type box.
        let (scaled_x, scaled_y) = (font_size * (trm.m11 + trm.m21), font_size * (trm.m12 + trm.m22));
        let size = (scaled_x * scaled_y).abs().sqrt();
        let (x, y) = (trm.m31, self.flip_y - trm.m32);
        if self.word_start && self.current.is_some() {
            let moved = (y - self.last_y).abs();
            if moved > size * 1.5 {
                self.break_line();
                self.gap_pending = true;
            } else if x < self.last_end && moved > size * 0.5 {
                self.break_line();
            } else if x > self.last_end + size * 0.1 {
                if let Some(line) = self.current.as_mut() {
                    line.text.push(' ');
                }
            }
        }
        let gap_before = std::mem::take(&mut self.gap_pending);
        let line = self.current.get_or_insert_with(|| Line { text: String::new(), size: 0.0, gap_before });
        line.text.push_str(char);
        line.size = line.size.max(size);
        self.word_start = false;
        self.last_y = y;
        self.last_end = x + width * size;
        Ok(())
    }

    fn begin_word(&mut self) -> Result<(), OutputError> {
        self.word_start = true;
        Ok(())
    }

    fn end_word(&mut self) -> Result<(), OutputError> {
        Ok(())
    }

    fn end_line(&mut self) -> Result<(), OutputError> {
        Ok(())
    }
}

/// Lines of plain text (OCR output): blank lines are paragraph gaps.
pub(super) fn lines_of_text(text: &str) -> Vec<Line> {
    let mut lines = Vec::new();
    let mut gap = false;
    for raw in text.lines() {
        if raw.trim().is_empty() {
            gap = true;
            continue;
        }
        lines.push(Line { text: raw.trim().to_string(), size: 0.0, gap_before: std::mem::take(&mut gap) });
    }
    lines
}

/// An entry of the PDF's outline: its 1-based level, title and page.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct OutlineEntry {
    pub level: usize,
    pub title: String,
    pub page: u32,
}

/// Which lines are headings, and their levels.
enum Headings {
    /// Lines equal to an outline entry's title on the entry's page.
    Outline(std::collections::HashMap<(u32, String), u8>),
    /// Lines set larger than the body text (its size), by size.
    TypeSize { body: f64, sizes: Vec<f64> },
}

impl Headings {
    /// The outline when any of its entries is on its page, else type sizes.
    fn of(pages: &[(u32, Vec<Line>)], outline: &[OutlineEntry]) -> Headings {
        let entries: std::collections::HashMap<(u32, String), u8> =
            outline.iter().map(|e| ((e.page, comparable(&e.title)), e.level.clamp(1, DEEPEST_LEVEL) as u8)).collect();
        let found = pages.iter().any(|(page, lines)| lines.iter().any(|l| entries.contains_key(&(*page, comparable(&l.text)))));
        if found {
            return Headings::Outline(entries);
        }
        let body = body_size(pages);
        let mut sizes: Vec<f64> = pages.iter().flat_map(|(_, lines)| lines).filter(|l| is_heading(l, body)).map(|l| l.size).collect();
        sizes.sort_by(|a, b| b.total_cmp(a));
        sizes.dedup_by(|a, b| (*a - *b).abs() < 0.5);
        Headings::TypeSize { body, sizes }
    }

    /// The heading level of `line` on `page`, if it is a heading.
    fn level(&self, page: u32, line: &Line) -> Option<u8> {
        match self {
            Headings::Outline(entries) => entries.get(&(page, comparable(&line.text))).copied(),
            Headings::TypeSize { body, sizes } => is_heading(line, *body)
                .then(|| sizes.iter().position(|s| (s - line.size).abs() < 0.5).map_or(DEEPEST_LEVEL, |i| (i + 1).min(DEEPEST_LEVEL)) as u8),
        }
    }
}

/// A title or line as compared with the other: words, lower case.
fn comparable(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase()
}

/// The document from its pages' lines (and the PDF's outline): headings
/// (consecutive lines of one level merge), paragraphs between.
pub(super) fn structure(pages: &[(u32, Vec<Line>)], outline: &[OutlineEntry]) -> Extracted {
    let headings = Headings::of(pages, outline);
    let mut doc = Extracted::default();
    for (page, lines) in pages {
        let mut paragraph: Vec<&str> = Vec::new();
        let mut heading: Option<(u8, Vec<&str>)> = None;
        for line in lines {
            let level = headings.level(*page, line);
            let continues_heading = heading.as_ref().is_some_and(|(l, _)| Some(*l) == level && !line.gap_before);
            if !continues_heading {
                flush_heading(&mut doc, &mut heading, *page);
            }
            if level.is_some() || line.gap_before {
                flush_paragraph(&mut doc, &mut paragraph, *page);
            }
            match level {
                Some(level) => heading.get_or_insert_with(|| (level, Vec::new())).1.push(&line.text),
                None => paragraph.push(&line.text),
            }
        }
        flush_heading(&mut doc, &mut heading, *page);
        flush_paragraph(&mut doc, &mut paragraph, *page);
    }
    doc
}

fn is_heading(line: &Line, body: f64) -> bool {
    body > 0.0 && line.size >= body * HEADING_RATIO && line.text.chars().count() <= HEADING_MAX_CHARS
}

/// The type size most characters are set in (to the half point).
fn body_size(pages: &[(u32, Vec<Line>)]) -> f64 {
    let mut chars_by_size: std::collections::HashMap<i64, usize> = std::collections::HashMap::new();
    for line in pages.iter().flat_map(|(_, lines)| lines).filter(|l| l.size > 0.0) {
        *chars_by_size.entry((line.size * 2.0).round() as i64).or_default() += line.text.chars().count();
    }
    chars_by_size.into_iter().max_by_key(|&(size, chars)| (chars, -size)).map_or(0.0, |(size, _)| size as f64 / 2.0)
}

fn flush_heading(doc: &mut Extracted, heading: &mut Option<(u8, Vec<&str>)>, page: u32) {
    if let Some((level, lines)) = heading.take() {
        let text = lines.join(" ");
        let range = push_block(&mut doc.plain, &text);
        doc.blocks.push(Block { kind: BlockKind::Heading { level, text }, range, page: Some(page) });
    }
}

fn flush_paragraph(doc: &mut Extracted, paragraph: &mut Vec<&str>, page: u32) {
    if !paragraph.is_empty() {
        let range = push_block(&mut doc.plain, &paragraph.join("\n"));
        doc.blocks.push(Block { kind: BlockKind::Paragraph, range, page: Some(page) });
        paragraph.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(text: &str, size: f64, gap_before: bool) -> Line {
        Line { text: text.into(), size, gap_before }
    }

    #[test]
    fn larger_type_makes_headings_by_size_and_gaps_split_paragraphs() {
        let pages = vec![
            (1, vec![line("Keeping birds", 20.0, false), line("Cages", 16.0, true), line("Size matters.", 12.0, true), line("Bars too.", 12.0, false)]),
            (2, vec![line("Perches and", 16.0, false), line("cleaning", 16.0, false), line("Clean daily.", 12.0, true), line("Scrub weekly.", 12.0, true)]),
        ];
        let doc = structure(&pages, &[]);
        let blocks: Vec<(String, &str, Option<u32>)> = doc
            .blocks
            .iter()
            .map(|b| {
                let kind = match &b.kind {
                    BlockKind::Heading { level, .. } => format!("h{level}"),
                    _ => "p".into(),
                };
                (kind, &doc.plain[b.range.clone()], b.page)
            })
            .collect();
        let expected = [
            ("h1", "Keeping birds", 1),
            ("h2", "Cages", 1),
            ("p", "Size matters.\nBars too.", 1),
            ("h2", "Perches and cleaning", 2),
            ("p", "Clean daily.", 2),
            ("p", "Scrub weekly.", 2),
        ];
        assert_eq!(blocks, expected.map(|(k, t, p)| (k.to_string(), t, Some(p))));
    }

    #[test]
    fn text_of_one_size_or_from_ocr_has_no_headings() {
        let uniform = structure(&[(1, vec![line("A title?", 12.0, false), line("Body.", 12.0, true)])], &[]);
        assert!(uniform.blocks.iter().all(|b| b.kind == BlockKind::Paragraph));
        let ocr = structure(&[(3, lines_of_text("First line\nsecond line\n\nNext paragraph\n"))], &[]);
        let texts: Vec<&str> = ocr.blocks.iter().map(|b| &ocr.plain[b.range.clone()]).collect();
        assert_eq!(texts, ["First line\nsecond line", "Next paragraph"]);
    }

    #[test]
    fn an_outline_found_on_its_pages_gives_the_headings_and_their_levels() {
        let pages = vec![
            (1, vec![line("Keeping birds", 20.0, false), line("Housing", 12.0, true), line("Size matters.", 12.0, true)]),
            (2, vec![line("Cleaning  the cage", 12.0, false), line("Scrub weekly.", 12.0, true), line("Diet", 12.0, true)]),
        ];
        let entry = |level, title: &str, page| OutlineEntry { level, title: title.into(), page };
        let outline = [entry(1, "Housing", 1), entry(2, "Cleaning the cage", 2), entry(1, "Diet", 3)];
        let doc = structure(&pages, &outline);
        let headings: Vec<(u8, &str, Option<u32>)> = doc
            .blocks
            .iter()
            .filter_map(|b| match &b.kind {
                BlockKind::Heading { level, text } => Some((*level, text.as_str(), b.page)),
                _ => None,
            })
            .collect();
        // The large title is not in the outline; "Diet" is, but on another page.
        assert_eq!(headings, [(1, "Housing", Some(1)), (2, "Cleaning  the cage", Some(2))]);
        let elsewhere = structure(&pages, &[entry(1, "Not in the text", 1)]);
        assert!(elsewhere.blocks.iter().any(|b| b.kind == BlockKind::Heading { level: 1, text: "Keeping birds".into() }), "type sizes apply");
    }
}
