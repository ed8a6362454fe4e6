//! Markdown: front matter, then the top-level blocks of the CommonMark tree
//! (headings, paragraphs, fenced code, tables, each list item, quotes). Block
//! ranges are slices of the original text, so a chunk's text is the source.

use pulldown_cmark::{Event, HeadingLevel, Options, Parser, Tag, TagEnd};

use super::{Block, BlockKind, Extracted};
use crate::frontmatter::split_front_matter;

pub(super) fn extract(text: &str) -> Extracted {
    let (front_matter, body_start) = split_front_matter(text);
    let body = &text[body_start..];
    let mut blocks = Vec::new();
    let mut depth = 0usize;
    let mut in_top_list = false;
    let mut heading: Option<(u8, std::ops::Range<usize>, String)> = None;
    let options = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH;
    for (event, range) in Parser::new_ext(body, options).into_offset_iter() {
        let range = range.start + body_start..range.end + body_start;
        match event {
            Event::Start(tag) => {
                if depth == 0 {
                    match &tag {
                        Tag::Heading { level, .. } => heading = Some((level_number(*level), range, String::new())),
                        Tag::List(_) => in_top_list = true,
                        _ => push(&mut blocks, text, block_kind(&tag), range.clone()),
                    }
                } else if depth == 1 && in_top_list && matches!(tag, Tag::Item) {
                    push(&mut blocks, text, Some(BlockKind::ListItem), range);
                }
                depth += 1;
            }
            Event::End(tag_end) => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    if let (TagEnd::Heading(_), Some((level, range, title))) = (tag_end, heading.take()) {
                        let text = title.trim().to_string();
                        blocks.push(Block { kind: BlockKind::Heading { level, text }, range, page: None });
                    }
                    in_top_list = false;
                }
            }
            Event::Text(t) | Event::Code(t) => {
                if let Some((_, _, title)) = heading.as_mut() {
                    title.push_str(&t);
                }
            }
            _ => {}
        }
    }
    Extracted { plain: text.to_string(), blocks, front_matter, title: None }
}

fn push(blocks: &mut Vec<Block>, text: &str, kind: Option<BlockKind>, range: std::ops::Range<usize>) {
    let Some(kind) = kind else { return };
    let trimmed = text[range.clone()].trim_end();
    if trimmed.trim().is_empty() {
        return;
    }
    blocks.push(Block { kind, range: range.start..range.start + trimmed.len(), page: None });
}

fn block_kind(tag: &Tag) -> Option<BlockKind> {
    match tag {
        Tag::CodeBlock(_) => Some(BlockKind::Code),
        Tag::Table(_) => Some(BlockKind::Table),
        Tag::BlockQuote(_) => Some(BlockKind::Quote),
        Tag::Paragraph | Tag::HtmlBlock | Tag::FootnoteDefinition(_) => Some(BlockKind::Paragraph),
        _ => None,
    }
}

fn level_number(level: HeadingLevel) -> u8 {
    match level {
        HeadingLevel::H1 => 1,
        HeadingLevel::H2 => 2,
        HeadingLevel::H3 => 3,
        HeadingLevel::H4 => 4,
        HeadingLevel::H5 => 5,
        HeadingLevel::H6 => 6,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = "---\nen: Cockatiel\n---\n# Cockatiel\n\nIntro text.\n\n## Diet\n\n- seeds\n- fruit, *fresh*\n\n```\nfn a() {}\n\nfn b() {}\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n";

    #[test]
    fn top_level_blocks_with_source_ranges() {
        let doc = extract(DOC);
        let got: Vec<(BlockKind, &str)> = doc.blocks.iter().map(|b| (b.kind.clone(), &doc.plain[b.range.clone()])).collect();
        assert_eq!(got[0].0, BlockKind::Heading { level: 1, text: "Cockatiel".into() });
        assert_eq!(got[1], (BlockKind::Paragraph, "Intro text."));
        assert_eq!(got[2].0, BlockKind::Heading { level: 2, text: "Diet".into() });
        assert_eq!(got[3], (BlockKind::ListItem, "- seeds"));
        assert_eq!(got[4], (BlockKind::ListItem, "- fruit, *fresh*"));
        assert_eq!(got[5], (BlockKind::Code, "```\nfn a() {}\n\nfn b() {}\n```"));
        assert_eq!(got[6], (BlockKind::Table, "| a | b |\n|---|---|\n| 1 | 2 |"));
        assert_eq!(doc.front_matter.get("en").as_deref(), Some("Cockatiel"));
    }
}
