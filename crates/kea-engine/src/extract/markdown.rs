//! Markdown: front matter, then the top-level blocks of the CommonMark tree
//! (headings, paragraphs, fenced code, tables, each list item, quotes). Block
//! ranges are slices of the source, so a chunk's text is the source — with
//! Obsidian's `[[wiki links]]` first rewritten to their readable text.

use std::borrow::Cow;
use std::ops::Range;

use pulldown_cmark::{Event, HeadingLevel, LinkType, Options, Parser, Tag, TagEnd};

use super::{Block, BlockKind, Extracted};
use crate::frontmatter::split_front_matter;

pub(super) fn extract(text: &str) -> Extracted {
    let text = &*readable_wiki_links(text);
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

/// The text with each wiki link outside code replaced by what a reader
/// sees: `[[Page]]` → `Page`, `[[Page|shown]]` → `shown`, `[[Page#Part]]`
/// → `Page › Part`; an embedded file (`![[photo.png]]`) is dropped, an
/// embedded note keeps its name. Front matter is left as it is.
fn readable_wiki_links(text: &str) -> Cow<'_, str> {
    if !text.contains("[[") {
        return Cow::Borrowed(text);
    }
    let body_start = split_front_matter(text).1;
    let body = &text[body_start..];
    let mut links: Vec<(Range<usize>, String)> = Vec::new();
    let options = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_WIKILINKS;
    for (event, range) in Parser::new_ext(body, options).into_offset_iter() {
        let embed = match event {
            Event::Start(Tag::Link { link_type: LinkType::WikiLink { .. }, .. }) => false,
            Event::Start(Tag::Image { link_type: LinkType::WikiLink { .. }, .. }) => true,
            _ => continue,
        };
        // A link inside another (an embed in a shown text) is part of the outer one.
        if links.last().is_some_and(|(outer, _)| outer.end > range.start) {
            continue;
        }
        if let Some(readable) = wiki_link_text(&body[range.clone()], embed) {
            links.push((range, readable));
        }
    }
    if links.is_empty() {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    out.push_str(&text[..body_start]);
    for (range, readable) in links {
        out.push_str(&body[at..range.start]);
        out.push_str(&readable);
        at = range.end;
    }
    out.push_str(&body[at..]);
    Cow::Owned(out)
}

/// The readable text of one wiki link's source (`[[…]]` or `![[…]]`);
/// `None` when the source is not in that form (it is then kept).
fn wiki_link_text(source: &str, embed: bool) -> Option<String> {
    let inner = source.strip_prefix(if embed { "![[" } else { "[[" })?.strip_suffix("]]")?;
    let (target, shown) = match inner.split_once('|') {
        Some((target, shown)) => (target, Some(shown)),
        None => (inner, None),
    };
    let (page, part) = target.split_once('#').map_or((target, None), |(page, part)| (page, Some(part)));
    let page = page.trim();
    if embed && std::path::Path::new(page).extension().is_some_and(|e| !e.eq_ignore_ascii_case("md")) {
        return Some(String::new());
    }
    if let Some(shown) = shown.map(str::trim).filter(|s| !s.is_empty() && !embed) {
        return Some(shown.to_string());
    }
    let page = page.strip_suffix(".md").unwrap_or(page);
    // `#^id` names a block: only the page is worth reading.
    let part = part.map(str::trim).filter(|p| !p.is_empty() && !p.starts_with('^')).map(|p| p.replace('#', " › "));
    match (page.is_empty(), part) {
        (false, Some(part)) => Some(format!("{page} › {part}")),
        (true, Some(part)) => Some(part),
        (false, None) => Some(page.to_string()),
        (true, None) => None,
    }
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

    #[test]
    fn wiki_links_keep_their_readable_text_and_ranges_stay_right() {
        let text = "---\nrelated: \"[[Kept]]\"\n---\n# About [[Topic]]\n\nSee [[Page]], [[Page|the shown text]] and [[Page#Heading#Sub]].\n\n\
                    - [[#Local heading]] and [[Page#^block1]] and [[notes/Other.md]]\n\n![[photo.png]]\n\n![[photo.png|300]]\n\n\
                    Embedded: ![[Other note]].\n\n`[[not a link]]` and [[ ]] and [[unclosed\n\n```\n[[in code]]\n```\n";
        let doc = extract(text);
        let blocks: Vec<&str> = doc.blocks.iter().map(|b| doc.plain[b.range.clone()].trim_end()).collect();
        assert_eq!(
            blocks,
            [
                "# About Topic",
                "See Page, the shown text and Page › Heading › Sub.",
                "- Local heading and Page and notes/Other",
                "Embedded: Other note.",
                "`[[not a link]]` and [[ ]] and [[unclosed",
                "```\n[[in code]]\n```",
            ]
        );
        assert_eq!(doc.blocks[0].kind, BlockKind::Heading { level: 1, text: "About Topic".into() });
        assert!(doc.plain.starts_with("---\nrelated: \"[[Kept]]\"\n---\n"), "front matter is left alone");
        assert_eq!(doc.front_matter.get("related").as_deref(), Some("[[Kept]]"));
        assert!(matches!(readable_wiki_links("no links here"), Cow::Borrowed(_)));
    }
}
