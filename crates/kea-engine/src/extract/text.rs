//! Plain text: decoding (UTF-8 with replacement, UTF-16 with a BOM, binary
//! detection) and splitting into paragraphs at blank lines.

use super::{Block, BlockKind, Extracted};
use crate::frontmatter::split_front_matter;

/// Decodes document bytes to text. Invalid UTF-8 is replaced, not fatal;
/// UTF-16 with a byte-order mark is decoded; binary content is an error.
pub fn decode_text(bytes: &[u8]) -> Result<String, String> {
    if let Some(rest) = bytes.strip_prefix(&[0xFF, 0xFE]) {
        return Ok(decode_utf16(rest, u16::from_le_bytes));
    }
    if let Some(rest) = bytes.strip_prefix(&[0xFE, 0xFF]) {
        return Ok(decode_utf16(rest, u16::from_be_bytes));
    }
    let sample = &bytes[..bytes.len().min(8192)];
    let controls = sample
        .iter()
        .filter(|&&b| b == 0 || (b < 0x20 && !matches!(b, b'\n' | b'\r' | b'\t' | 0x0C)))
        .count();
    if sample.contains(&0) || controls * 20 > sample.len().max(1) {
        return Err("binary content, not text (is the file extension right?)".into());
    }
    Ok(String::from_utf8_lossy(bytes).into_owned())
}

fn decode_utf16(bytes: &[u8], to_u16: fn([u8; 2]) -> u16) -> String {
    let units = bytes.chunks_exact(2).map(|pair| to_u16([pair[0], pair[1]]));
    char::decode_utf16(units).map(|c| c.unwrap_or(char::REPLACEMENT_CHARACTER)).collect()
}

/// Extracts a `.txt` document: optional front matter, then paragraphs.
pub(super) fn extract_plain(text: String) -> Extracted {
    let (front_matter, body_start) = split_front_matter(&text);
    let mut blocks: Vec<Block> = paragraph_ranges(&text, body_start)
        .into_iter()
        .map(|range| Block { kind: BlockKind::Paragraph, range, page: None })
        .collect();
    // A short first line standing alone, without a full stop, is the title.
    if blocks.len() > 1 {
        let first = &mut blocks[0];
        let line = &text[first.range.clone()];
        let looks_like_title = !line.contains('\n') && line.chars().count() <= 100 && !line.ends_with(['.', '。', '!', '?', ':', '：']);
        if looks_like_title {
            first.kind = BlockKind::Heading { level: 1, text: line.trim().to_string() };
        }
    }
    Extracted { plain: text, blocks, front_matter, title: None }
}

/// Byte ranges of the blank-line-separated paragraphs of `text[from..]`,
/// trimmed of surrounding whitespace.
pub(super) fn paragraph_ranges(text: &str, from: usize) -> Vec<std::ops::Range<usize>> {
    let mut ranges = Vec::new();
    let mut start: Option<usize> = None;
    let mut end = from;
    let mut offset = from;
    for line in text[from..].split_inclusive('\n') {
        let content_end = offset + line.trim_end().len();
        if line.trim().is_empty() {
            if let Some(s) = start.take() {
                ranges.push(s..end);
            }
        } else {
            let lead = line.len() - line.trim_start().len();
            start.get_or_insert(offset + lead);
            end = content_end;
        }
        offset += line.len();
    }
    if let Some(s) = start {
        ranges.push(s..end);
    }
    ranges
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_utf8_is_replaced_not_fatal() {
        let text = decode_text(b"caf\xe9 au lait").unwrap();
        assert_eq!(text, "caf\u{fffd} au lait");
    }

    #[test]
    fn utf16_with_bom_is_decoded() {
        let mut bytes = vec![0xFF, 0xFE];
        for unit in "鹦鹉 parrot".encode_utf16() {
            bytes.extend(unit.to_le_bytes());
        }
        assert_eq!(decode_text(&bytes).unwrap(), "鹦鹉 parrot");
    }

    #[test]
    fn binary_content_is_rejected() {
        let bytes: Vec<u8> = (0..=255u8).cycle().take(4096).collect();
        assert!(decode_text(&bytes).unwrap_err().contains("binary"));
    }

    #[test]
    fn a_short_first_line_is_the_title() {
        let doc = extract_plain("Household dangers\n\nAvocado is toxic.\n".to_string());
        assert_eq!(doc.blocks[0].kind, BlockKind::Heading { level: 1, text: "Household dangers".into() });
        let single = extract_plain("Just one line".to_string());
        assert_eq!(single.blocks[0].kind, BlockKind::Paragraph);
    }

    #[test]
    fn paragraphs_split_at_blank_lines() {
        let text = "  first line\nstill first\n\n\nsecond\n   \nthird  ";
        let got: Vec<&str> = paragraph_ranges(text, 0).into_iter().map(|r| &text[r]).collect();
        assert_eq!(got, ["first line\nstill first", "second", "third"]);
    }
}
