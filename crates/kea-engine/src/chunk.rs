//! Heading-aware chunking. Headings split a document into sections; within a
//! section, blocks are packed up to a target size, with an overlap carried
//! from the previous chunk. Code blocks and tables stay whole up to a hard
//! maximum; long paragraphs split at sentence ends (Chinese or Latin). A
//! chunk's text is always a contiguous slice of the extracted text.

use std::ops::Range;

use crate::extract::{BlockKind, Extracted};

/// Chunk sizes, in characters (not bytes, so Chinese counts fairly).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ChunkConfig {
    /// Chunks are packed up to about this many characters.
    pub target_chars: usize,
    /// Characters of the previous chunk repeated at the start of the next one.
    pub overlap_chars: usize,
    /// A code block or table up to this size is never split.
    pub max_chars: usize,
}

impl Default for ChunkConfig {
    fn default() -> Self {
        ChunkConfig { target_chars: 500, overlap_chars: 80, max_chars: 1500 }
    }
}

/// One chunk of a document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    pub index: usize,
    /// Headings above the chunk, outermost first, joined by ` > `.
    pub heading_path: String,
    pub page: Option<u32>,
    /// Byte range of the chunk in the extracted text.
    pub range: Range<usize>,
    pub text: String,
}

impl Chunk {
    /// The text given to the embedding model: the chunk prefixed with its
    /// context (document title, its other names from front matter, heading
    /// path), so that a passage under "Diet" of the cockatiel document is
    /// found for "what do cockatiels eat" and for its scientific name.
    pub fn embedding_text(&self, title: Option<&str>, names: &[String]) -> String {
        let mut context = match (title, self.heading_path.as_str()) {
            (Some(t), "") => t.to_string(),
            (Some(t), path) if !path.starts_with(t) => format!("{t} > {path}"),
            (_, path) => path.to_string(),
        };
        let others: Vec<&str> = names.iter().map(String::as_str).filter(|n| Some(*n) != title).collect();
        if !others.is_empty() {
            let names = format!(" ({})", others.join(", "));
            match title.filter(|t| context.starts_with(t)) {
                Some(t) => context.insert_str(t.len(), &names),
                None => context = format!("{}{names}", context.trim_end()),
            }
        }
        let context = context.trim();
        if context.is_empty() {
            self.text.clone()
        } else {
            format!("{context}\n{}", self.text)
        }
    }
}

struct Piece {
    range: Range<usize>,
    page: Option<u32>,
}

/// Splits an extracted document into chunks.
pub fn chunk_document(doc: &Extracted, config: &ChunkConfig) -> Vec<Chunk> {
    let mut chunks = Vec::new();
    let mut headings: Vec<(u8, String)> = Vec::new();
    let mut pieces: Vec<Piece> = Vec::new();
    for block in &doc.blocks {
        if let BlockKind::Heading { level, text } = &block.kind {
            pack_section(&doc.plain, &pieces, &heading_path(&headings), config, &mut chunks);
            pieces.clear();
            headings.retain(|(l, _)| l < level);
            headings.push((*level, text.clone()));
            continue;
        }
        let atomic = matches!(block.kind, BlockKind::Code | BlockKind::Table);
        for range in split_block(&doc.plain, block.range.clone(), atomic, config) {
            pieces.push(Piece { range, page: block.page });
        }
    }
    pack_section(&doc.plain, &pieces, &heading_path(&headings), config, &mut chunks);
    chunks
}

/// The heading path, within [`MAX_HEADING_PATH_CHARS`] however deep the
/// outline (it is copied into every chunk of the section).
fn heading_path(headings: &[(u8, String)]) -> String {
    let mut path = headings.iter().map(|(_, t)| t.as_str()).collect::<Vec<_>>().join(" > ");
    crate::extract::truncate_chars(&mut path, MAX_HEADING_PATH_CHARS);
    path
}

/// The longest heading path a chunk carries.
pub const MAX_HEADING_PATH_CHARS: usize = 3 * crate::extract::MAX_HEADING_CHARS;

fn chars(text: &str) -> usize {
    text.chars().count()
}

/// Packs one section's pieces into chunks of about `target_chars`. A chunk
/// never runs onto the next page, so its citation opens the page it is on.
fn pack_section(plain: &str, pieces: &[Piece], path: &str, config: &ChunkConfig, out: &mut Vec<Chunk>) {
    let Some(first) = pieces.first() else { return };
    let mut start = first.range.start;
    let mut end = first.range.end;
    let mut page = first.page;
    for piece in &pieces[1..] {
        if piece.page != page {
            emit(plain, start..end, page, path, out);
            (start, page) = (piece.range.start, piece.page);
        } else if chars(&plain[start..piece.range.end]) > config.target_chars {
            emit(plain, start..end, page, path, out);
            start = overlap_start(plain, start..end, piece.range.start, config.overlap_chars);
            page = piece.page;
        }
        end = piece.range.end;
    }
    emit(plain, start..end, page, path, out);
}

fn emit(plain: &str, range: Range<usize>, page: Option<u32>, path: &str, out: &mut Vec<Chunk>) {
    let text = plain[range.clone()].trim();
    if text.is_empty() {
        return;
    }
    let lead = plain[range.clone()].len() - plain[range.clone()].trim_start().len();
    let start = range.start + lead;
    out.push(Chunk { index: out.len(), heading_path: path.to_string(), page, range: start..start + text.len(), text: text.to_string() });
}

/// Where the next chunk starts: about `overlap` characters before the end of
/// the previous one, moved forward to a sentence or word start.
fn overlap_start(plain: &str, previous: Range<usize>, next_piece: usize, overlap: usize) -> usize {
    if overlap == 0 {
        return next_piece;
    }
    let tail = &plain[previous.clone()];
    let total = chars(tail);
    if total <= overlap {
        return next_piece;
    }
    let skip = total - overlap;
    let candidate = previous.start + tail.char_indices().nth(skip).map_or(tail.len(), |(i, _)| i);
    let window = &plain[candidate..previous.end];
    let snap = sentence_ends(window)
        .into_iter()
        .find(|&i| i > 0 && i < window.len())
        .or_else(|| window.char_indices().find(|(_, c)| c.is_whitespace()).map(|(i, c)| i + c.len_utf8()))
        .unwrap_or(0);
    let start = candidate + snap;
    if start >= previous.end {
        next_piece
    } else {
        start
    }
}

/// Splits one block into pieces no longer than the target (atomic blocks up
/// to the hard maximum), preferring sentence ends, then line ends, then spaces.
fn split_block(plain: &str, range: Range<usize>, atomic: bool, config: &ChunkConfig) -> Vec<Range<usize>> {
    let text = &plain[range.clone()];
    let len = chars(text);
    if len <= config.target_chars || (atomic && len <= config.max_chars) {
        return vec![range];
    }
    let mut cuts: Vec<usize> = if atomic { line_ends(text) } else { sentence_ends(text) };
    cuts.retain(|&c| c > 0 && c < text.len());
    cuts.push(text.len());
    let mut pieces = Vec::new();
    let mut start = 0;
    let mut last_cut = 0;
    for &cut in &cuts {
        if chars(&text[start..cut]) > config.target_chars && last_cut > start {
            pieces.push(start..last_cut);
            start = last_cut;
        }
        last_cut = cut;
    }
    pieces.push(start..text.len());
    pieces
        .into_iter()
        .flat_map(|p| hard_split(text, p, config.target_chars))
        .map(|p| range.start + p.start..range.start + p.end)
        .filter(|p| !plain[p.clone()].trim().is_empty())
        .collect()
}

/// Splits a range still over `limit` characters at spaces (or anywhere),
/// in one pass (the characters left are counted down, not recounted).
fn hard_split(text: &str, range: Range<usize>, limit: usize) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut start = range.start;
    let mut left = chars(&text[range.clone()]);
    while left > limit {
        let slice = &text[start..range.end];
        let limit_byte = slice.char_indices().nth(limit).map_or(slice.len(), |(i, _)| i);
        let cut = slice[..limit_byte].rfind(char::is_whitespace).filter(|&i| i > limit_byte / 2).unwrap_or(limit_byte);
        let cut = if cut == 0 { limit_byte } else { cut };
        left -= chars(&slice[..cut]);
        out.push(start..start + cut);
        start += cut;
    }
    out.push(start..range.end);
    out
}

/// Byte offsets just after each sentence end: `。！？；` always, `.!?` when
/// followed by white space, and line breaks.
pub(crate) fn sentence_ends(text: &str) -> Vec<usize> {
    let mut ends = Vec::new();
    let mut iter = text.char_indices().peekable();
    while let Some((i, c)) = iter.next() {
        let after = i + c.len_utf8();
        let next = iter.peek().map(|&(_, n)| n);
        let is_end = match c {
            '。' | '！' | '？' | '；' | '\n' => true,
            '.' | '!' | '?' => next.is_none_or(char::is_whitespace),
            _ => false,
        };
        if is_end {
            let mut end = after;
            while let Some(&(j, n)) = iter.peek() {
                if n == ' ' || n == '\t' || n == '\n' {
                    end = j + n.len_utf8();
                    iter.next();
                } else {
                    break;
                }
            }
            ends.push(end);
        }
    }
    ends
}

fn line_ends(text: &str) -> Vec<usize> {
    text.match_indices('\n').map(|(i, _)| i + 1).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extract::{extract, DocKind};

    fn chunks_of(md: &str, config: ChunkConfig) -> Vec<Chunk> {
        chunk_document(&extract(DocKind::Markdown, md.as_bytes()).unwrap(), &config)
    }

    /// Issue 24: a long unbroken range was recounted from its cut on
    /// every split (quadratic); 4 MB of one word now splits in one pass.
    #[test]
    fn a_megabyte_word_splits_into_pieces_of_the_limit() {
        let text = "x".repeat(4 << 20);
        let pieces = hard_split(&text, 0..text.len(), 500);
        assert_eq!(pieces.len(), (4 << 20) / 500 + 1);
        assert!(pieces.iter().all(|p| p.len() <= 500) && pieces.last().unwrap().end == text.len());
        assert!(pieces.windows(2).all(|w| w[0].end == w[1].start));
    }

    #[test]
    fn a_chunk_never_runs_onto_the_next_page() {
        let mut doc = Extracted::default();
        for (text, page) in [("Short on page one.", 1), ("Also page one.", 1), ("Page two begins.", 2)] {
            let range = crate::extract::push_block(&mut doc.plain, text);
            doc.blocks.push(crate::extract::Block { kind: BlockKind::Paragraph, range, page: Some(page) });
        }
        let chunks = chunk_document(&doc, &ChunkConfig::default());
        let pages: Vec<(Option<u32>, &str)> = chunks.iter().map(|c| (c.page, c.text.as_str())).collect();
        assert_eq!(pages, [(Some(1), "Short on page one.\n\nAlso page one."), (Some(2), "Page two begins.")]);
    }

    /// Found by `cargo fuzz` (target chunk_text): the overlap snapped to one
    /// byte after a white space, inside a multi-byte one such as U+2000.
    #[test]
    fn overlap_after_a_multibyte_space_lands_on_a_char_boundary() {
        let config = ChunkConfig { target_chars: 20, max_chars: 40, overlap_chars: 8 };
        let sentence = "word\u{2000}word\u{2000}word\u{3000}word";
        let md = format!("# T\n\n{sentence}. {sentence}. {sentence}. {sentence}.\n");
        let chunks = chunks_of(&md, config);
        assert!(chunks.len() > 1);
        for chunk in &chunks {
            assert!(md.is_char_boundary(chunk.range.start) && md.is_char_boundary(chunk.range.end));
        }
        let crash = include_bytes!("../tests/fuzz-regressions/chunk_text-multibyte-space-overlap");
        for kind in [DocKind::Markdown, DocKind::Text] {
            if let Ok(doc) = extract(kind, crash) {
                chunk_document(&doc, &ChunkConfig::default());
            }
        }
    }

    #[test]
    fn chunks_follow_headings_and_carry_their_path() {
        let md = "# 玄凤鹦鹉\n\n简介。\n\n## 饮食\n\n吃种子和水果。\n\n### 幼鸟\n\n软食。\n\n## Care\n\nClean water daily.\n";
        let chunks = chunks_of(md, ChunkConfig::default());
        let got: Vec<(&str, &str)> = chunks.iter().map(|c| (c.heading_path.as_str(), c.text.as_str())).collect();
        assert_eq!(
            got,
            [("玄凤鹦鹉", "简介。"), ("玄凤鹦鹉 > 饮食", "吃种子和水果。"), ("玄凤鹦鹉 > 饮食 > 幼鸟", "软食。"), ("玄凤鹦鹉 > Care", "Clean water daily."),]
        );
        assert!(chunks.iter().all(|c| md[c.range.clone()] == c.text));
        assert_eq!(chunks.iter().map(|c| c.index).collect::<Vec<_>>(), [0, 1, 2, 3]);
    }

    #[test]
    fn long_sections_pack_to_target_with_overlap() {
        let sentence = "Cockatiels whistle tunes and bob their crests when happy. ";
        let md = format!("# Behaviour\n\n{}\n", sentence.repeat(30));
        let config = ChunkConfig { target_chars: 200, overlap_chars: 60, max_chars: 600 };
        let chunks = chunks_of(&md, config);
        assert!(chunks.len() >= 8, "{} chunks", chunks.len());
        for pair in chunks.windows(2) {
            assert!(chars(&pair[0].text) <= 200 + 60, "{:?}", pair[0].text);
            assert!(pair[1].range.start < pair[0].range.end, "no overlap between {pair:?}");
            assert!(pair[1].text.starts_with("Cockatiels"), "overlap not at a sentence start: {:?}", pair[1].text);
        }
    }

    #[test]
    fn code_blocks_and_tables_are_not_split() {
        let code = format!("```\n{}```", "let seed = 1;\n".repeat(30));
        let md = format!("# Code\n\nBefore.\n\n{code}\n\nAfter.\n");
        let config = ChunkConfig { target_chars: 100, overlap_chars: 0, max_chars: 1000 };
        let chunks = chunks_of(&md, config);
        assert!(chunks.iter().any(|c| c.text == code), "{chunks:#?}");
    }

    #[test]
    fn chinese_paragraphs_split_at_sentence_ends() {
        let md = format!("# 饮食\n\n{}\n", "虎皮鹦鹉主要吃谷物种子，也需要新鲜蔬菜。".repeat(20));
        let config = ChunkConfig { target_chars: 100, overlap_chars: 0, max_chars: 300 };
        let chunks = chunks_of(&md, config);
        assert!(chunks.len() >= 4);
        assert!(chunks.iter().all(|c| c.text.ends_with('。') && chars(&c.text) <= 100));
    }

    #[test]
    fn one_huge_word_is_hard_split() {
        let md = format!("{}\n", "x".repeat(1234));
        let config = ChunkConfig { target_chars: 500, overlap_chars: 0, max_chars: 1000 };
        let chunks = chunks_of(&md, config);
        assert_eq!(chunks.iter().map(|c| c.text.len()).collect::<Vec<_>>(), [500, 500, 234]);
    }

    #[test]
    fn embedding_text_has_context() {
        let chunk = Chunk { index: 0, heading_path: "Diet".into(), page: None, range: 0..5, text: "Seeds".into() };
        assert_eq!(chunk.embedding_text(Some("Cockatiel"), &[]), "Cockatiel > Diet\nSeeds");
        let nested = Chunk { heading_path: "Cockatiel > Diet".into(), ..chunk.clone() };
        assert_eq!(nested.embedding_text(Some("Cockatiel"), &[]), "Cockatiel > Diet\nSeeds");
        let names = ["Cockatiel".to_string(), "Nymphicus hollandicus".to_string(), "玄凤鹦鹉".to_string()];
        assert_eq!(nested.embedding_text(Some("Cockatiel"), &names), "Cockatiel (Nymphicus hollandicus, 玄凤鹦鹉) > Diet\nSeeds");
        let bare = Chunk { heading_path: String::new(), ..chunk };
        assert_eq!(bare.embedding_text(None, &[]), "Seeds");
        assert_eq!(bare.embedding_text(None, &names[1..]), "(Nymphicus hollandicus, 玄凤鹦鹉)\nSeeds");
    }
}
