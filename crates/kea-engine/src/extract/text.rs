//! Plain text: decoding (UTF-8; UTF-16 with or without a BOM; legacy
//! encodings such as GB18030/GBK, Big5 and Windows code pages, detected by
//! chardetng; binary detection) and splitting into paragraphs at blank lines.

use encoding_rs::{Encoding, UTF_16BE, UTF_16LE};

use super::{Block, BlockKind, Extracted};
use crate::frontmatter::split_front_matter;

/// Decodes document bytes to text. A byte-order mark decides; else valid
/// UTF-8 is kept; else UTF-16 is recognised by its zero bytes; else the
/// encoding is detected. Binary content, and bytes that decode cleanly in no
/// encoding, are errors with the reason (never silent mojibake).
pub fn decode_text(bytes: &[u8]) -> Result<String, String> {
    if let Some((encoding, bom)) = Encoding::for_bom(bytes) {
        return decode_strict(encoding, &bytes[bom..]);
    }
    if let Some(encoding) = utf16_without_bom(bytes) {
        return decode_strict(encoding, bytes);
    }
    check_not_binary(bytes)?;
    if let Ok(text) = std::str::from_utf8(bytes) {
        return Ok(text.to_string());
    }
    if let Some(text) = mostly_utf8(bytes) {
        return Ok(text);
    }
    let mut detector = chardetng::EncodingDetector::new();
    detector.feed(bytes, true);
    decode_strict(detector.guess(None, false), bytes)
}

fn check_not_binary(bytes: &[u8]) -> Result<(), String> {
    let sample = &bytes[..bytes.len().min(8192)];
    let controls = sample.iter().filter(|&&b| b == 0 || (b < 0x20 && !matches!(b, b'\n' | b'\r' | b'\t' | 0x0C))).count();
    if sample.contains(&0) || controls * 20 > sample.len().max(1) {
        return Err("binary content, not text (is the file extension right?)".into());
    }
    Ok(())
}

/// Decodes with `encoding`; any malformed sequence is an error naming it.
fn decode_strict(encoding: &'static Encoding, bytes: &[u8]) -> Result<String, String> {
    let (text, had_errors) = encoding.decode_without_bom_handling(bytes);
    if had_errors {
        return Err(format!("the text cannot be decoded: it is not valid UTF-8, and not valid {} either", encoding.name()));
    }
    Ok(text.into_owned())
}

/// UTF-16 without a byte-order mark: most ASCII-range characters leave a
/// zero in every other byte (even bytes for big-endian, odd for little).
fn utf16_without_bom(bytes: &[u8]) -> Option<&'static Encoding> {
    let sample = &bytes[..bytes.len().min(8192) & !1];
    if sample.len() < 8 {
        return None;
    }
    let zeros = |parity: usize| sample.iter().skip(parity).step_by(2).filter(|&&b| b == 0).count() * 2;
    let (even, odd) = (zeros(0), zeros(1));
    let half = sample.len() / 2;
    match (even * 10 >= half * 3, odd * 10 >= half * 3) {
        (false, true) if even * 20 < half => Some(UTF_16LE),
        (true, false) if odd * 20 < half => Some(UTF_16BE),
        _ => None,
    }
}

/// UTF-8 with a rare bad byte (a cut download, one stray Latin-1 byte):
/// kept with replacement characters when at most one byte in a thousand is bad.
fn mostly_utf8(bytes: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(bytes);
    let bad = text.chars().filter(|&c| c == char::REPLACEMENT_CHARACTER).count();
    (bad * 1000 <= bytes.len() && !text.is_ascii()).then(|| text.into_owned())
}

/// Extracts a `.txt` document: optional front matter, then paragraphs.
pub(super) fn extract_plain(text: String) -> Extracted {
    let (front_matter, body_start) = split_front_matter(&text);
    let mut blocks: Vec<Block> = paragraph_ranges(&text, body_start).into_iter().map(|range| Block { kind: BlockKind::Paragraph, range, page: None }).collect();
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
    fn legacy_western_text_is_detected() {
        assert_eq!(decode_text(b"caf\xe9 au lait, cr\xe8me br\xfbl\xe9e").unwrap(), "café au lait, crème brûlée");
    }

    #[test]
    fn chinese_legacy_encodings_are_detected() {
        let zh = "玄凤鹦鹉原产于澳大利亚内陆，喜欢吃草籽和谷物。它们性格温和，适合新手饲养。";
        for encoding in [encoding_rs::GB18030, encoding_rs::GBK, encoding_rs::BIG5] {
            let source = if encoding == encoding_rs::BIG5 {
                "玄鳳鸚鵡原產於澳大利亞內陸，喜歡吃草籽和穀物。牠們性格溫和，適合新手飼養。"
            } else {
                zh
            };
            let (bytes, _, unmappable) = encoding.encode(source);
            assert!(!unmappable, "{}", encoding.name());
            assert_eq!(decode_text(&bytes).unwrap(), source, "{}", encoding.name());
        }
    }

    #[test]
    fn utf16_without_bom_is_decoded() {
        let text = "Household dangers\n\n鹦鹉 avoid avocado.";
        let le: Vec<u8> = text.encode_utf16().flat_map(u16::to_le_bytes).collect();
        let be: Vec<u8> = text.encode_utf16().flat_map(u16::to_be_bytes).collect();
        assert_eq!(decode_text(&le).unwrap(), text);
        assert_eq!(decode_text(&be).unwrap(), text);
    }

    #[test]
    fn malformed_multibyte_text_is_an_error_with_a_reason() {
        let (bytes, _, _) = encoding_rs::GB18030.encode("玄凤鹦鹉喜欢吃草籽。");
        let mut bytes = bytes.into_owned();
        bytes.extend([0x81, 0x20]);
        let err = decode_strict(encoding_rs::GB18030, &bytes).unwrap_err();
        assert!(err.contains("cannot be decoded") && err.contains("gb18030"), "{err}");
    }

    #[test]
    fn a_rare_bad_byte_in_utf8_is_replaced() {
        let mut bytes = "鹦鹉的饮食以颗粒饲料为主。".repeat(200).into_bytes();
        bytes.push(0xFF);
        assert!(decode_text(&bytes).unwrap().ends_with('\u{fffd}'));
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
