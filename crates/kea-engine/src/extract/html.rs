//! HTML pages (`.html`/`.htm` files, and fetched pages through
//! [`super::extract_html`]): the page's main content as blocks. html5ever's
//! WHATWG tokenizer reads any markup, however broken, and decodes entities;
//! one flat pass over its tokens (no tree: depth costs nothing, and past
//! [`MAX_DEPTH`] elements are not tracked) keeps `<main>` when the page has
//! one, else its `<article>`s and leaves out scripts, styles, navigation, the page's
//! header and footer, asides, forms and hidden elements. Headings become
//! heading blocks; paragraphs, list items, tables, quotes and `<pre>` become
//! blocks. A page with no text left that way is read whole (without its
//! scripts, styles and hidden parts). A page headed by the browsers'
//! `<!-- saved from url=… -->` mark gets that address as its `source`.
//!
//! Hostile markup is bounded before and while it is read: a cheap pass over
//! the bytes ([`cut_absurd_tags`]) keeps at most [`MAX_ATTRIBUTES`]
//! attributes of a tag and drops any attribute over [`MAX_ATTRIBUTE_BYTES`]
//! (html5ever checks each attribute against the tag's others: a tag with
//! 80,000 of them took seconds, millions never ended), and the tokenizer is
//! fed in pieces, stopping at the reading's deadline.

use std::borrow::Cow;
use std::cell::RefCell;
use std::time::Instant;

use encoding_rs::Encoding;
use html5ever::tendril::StrTendril;
use html5ever::tokenizer::states::RawKind;
use html5ever::tokenizer::{BufferQueue, Tag, TagKind, Token, TokenSink, TokenSinkResult, Tokenizer, TokenizerOpts};
use html5ever::LocalName;
use html5ever::TokenizerResult;

use super::{push_block, Block, BlockKind, Extracted};

/// Elements nested deeper than this are not tracked: their text belongs to
/// the element that holds them (browsers bound the depth likewise).
pub const MAX_DEPTH: usize = 512;

/// How much of the page's furniture is left out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// The main content: no navigation, page header or footer, asides, forms.
    MainContent,
    /// Everything but scripts, styles, embedded objects and hidden parts.
    Everything,
}

/// The most attributes a tag keeps (browsers' pages use a handful).
pub const MAX_ATTRIBUTES: usize = 64;
/// An attribute longer than this (name and value) is dropped: none that
/// the reader looks at (`role`, `hidden`, `style`…) is anywhere near it.
pub const MAX_ATTRIBUTE_BYTES: usize = 16 * 1024;
/// How much text the tokenizer is given between two looks at the deadline.
const FEED_BYTES: usize = 64 * 1024;

/// The page in `bytes` as a document (see the module's description).
/// `charset` is the one a `Content-Type` header named, if any; past
/// `deadline` the reading stops with a "timed out" error.
pub(super) fn extract(bytes: &[u8], charset: Option<&str>, deadline: Instant) -> Result<Extracted, String> {
    let decoded = decode(bytes, charset)?;
    let text = cut_absurd_tags(&decoded);
    let mut pass = read(&text, Mode::MainContent, deadline)?;
    if pass.pieces.is_empty() {
        pass = read(&text, Mode::Everything, deadline)?;
    }
    let mut doc = pass.into_document();
    if let Some(url) = saved_from_url(&text) {
        doc.front_matter.0.insert("source".into(), crate::frontmatter::FrontMatterValue::Text(url));
    }
    Ok(doc)
}

const SAVED_FROM: &str = "<!-- saved from url=(";

/// The first line of a page Kea kept (before its `saved from` mark): a
/// browser writes its own mark first, so a page saved from a browser never
/// begins with this one.
pub(super) const KEPT_BY_KEA: &str = "<!-- kept by Kea: adding this address again fetches it again and replaces this file -->";

/// The browsers' mark of a page saved from `url` (Kea heads its own copies with it).
pub(super) fn saved_from_mark(url: &str) -> String {
    format!("{SAVED_FROM}{:04}){url} -->", url.len())
}

/// The http(s) address a `saved from url=(NNNN)…` mark at the start of a
/// page (after Kea's own mark, if any) names, if any.
fn saved_from_url(html: &str) -> Option<String> {
    let start = html.trim_start_matches('\u{feff}').trim_start();
    let rest = start.strip_prefix(KEPT_BY_KEA).map_or(start, str::trim_start).strip_prefix(SAVED_FROM)?;
    let (length, rest) = rest.split_once(')')?;
    let url = rest.get(..length.parse().ok()?)?;
    let web = (url.starts_with("http://") || url.starts_with("https://")) && !url.chars().any(|c| c.is_whitespace() || c.is_control());
    (web && rest[url.len()..].trim_start().starts_with("-->")).then(|| url.to_string())
}

/// The page's text: a byte-order mark, else the header's charset, else the
/// page's own `<meta>` charset, else UTF-8 or the detected encoding.
pub(super) fn decode(bytes: &[u8], charset: Option<&str>) -> Result<String, String> {
    if Encoding::for_bom(bytes).is_some() {
        return super::decode_text(bytes);
    }
    let declared = charset.map(str::to_string).or_else(|| meta_charset(&bytes[..bytes.len().min(1024)]));
    match declared.and_then(|label| Encoding::for_label(label.trim().as_bytes())) {
        // As browsers do, a page in a declared encoding is read with its
        // few bad bytes replaced (UTF-16 labels on a byte stream mean UTF-8).
        Some(encoding) if std::str::from_utf8(bytes).is_err() => Ok(encoding.output_encoding().decode_without_bom_handling(bytes).0.into_owned()),
        _ => super::decode_text(bytes),
    }
}

/// The charset a `<meta charset=…>` or `<meta http-equiv … content="…;
/// charset=…">` near the start of the page names.
fn meta_charset(head: &[u8]) -> Option<String> {
    let head = String::from_utf8_lossy(head).to_ascii_lowercase();
    head.match_indices("<meta").find_map(|(at, _)| {
        let tag = &head[at..];
        let tag = &tag[..tag.find('>').unwrap_or(tag.len())];
        let value = tag[tag.find("charset")? + "charset".len()..].trim_start().strip_prefix('=')?.trim_start();
        let label: String = value.trim_start_matches(['"', '\'']).chars().take_while(|c| c.is_ascii_alphanumeric() || "-_:.".contains(*c)).collect();
        (!label.is_empty()).then_some(label)
    })
}

/// The error of a page whose reading ran past its deadline.
pub(super) const TIMED_OUT: &str = "timed out: reading this page took longer than its time budget; Kea skips it until it changes (or re-index it)";

/// Runs the tokenizer over `text` with a [`Pass`] as its sink, a piece at a
/// time, giving up when `deadline` has passed.
fn read(text: &str, mode: Mode, deadline: Instant) -> Result<Pass, String> {
    let tokenizer = Tokenizer::new(Sink(RefCell::new(Pass::new(mode))), TokenizerOpts::default());
    let input = BufferQueue::default();
    let mut rest = text;
    while !rest.is_empty() {
        if Instant::now() >= deadline {
            return Err(TIMED_OUT.into());
        }
        let mut cut = rest.len().min(FEED_BYTES);
        while !rest.is_char_boundary(cut) {
            cut -= 1;
        }
        input.push_back(StrTendril::from_slice(&rest[..cut]));
        rest = &rest[cut..];
        while let TokenizerResult::Script(()) = tokenizer.feed(&input) {}
    }
    tokenizer.end();
    let mut pass = tokenizer.sink.0.into_inner();
    pass.flush(true);
    Ok(pass)
}

/// `html` with every tag cut to [`MAX_ATTRIBUTES`] attributes of at most
/// [`MAX_ATTRIBUTE_BYTES`] each, in one pass over the bytes (borrowed when
/// no tag needs cutting). It follows the tokenizer's reading of markup
/// closely enough for pages: comments, `<!…>`/`<?…>` and the content of
/// raw-text elements (scripts, styles, titles…) are passed over, not read
/// as tags. Where it could still differ from the tokenizer (a script's
/// escaped `<!--` sections), the reading's deadline and the reader
/// process's limits bound the cost.
pub(super) fn cut_absurd_tags(html: &str) -> Cow<'_, str> {
    let bytes = html.as_bytes();
    let mut out: Option<String> = None;
    let (mut copied, mut at) = (0, 0);
    while let Some(lt) = find_byte(bytes, at, b'<') {
        let next = bytes.get(lt + 1).copied().unwrap_or(0);
        let end_tag = next == b'/' && bytes.get(lt + 2).is_some_and(u8::is_ascii_alphabetic);
        if !next.is_ascii_alphabetic() && !end_tag {
            at = skip_markup(bytes, lt);
            continue;
        }
        let tag = scan_tag(bytes, lt + 1 + usize::from(end_tag));
        if tag.cut {
            let out = out.get_or_insert_with(|| String::with_capacity(html.len()));
            out.push_str(&html[copied..tag.name_end]);
            tag.kept.iter().for_each(|range| out.push_str(&html[range.clone()]));
            out.push_str(&html[tag.tail.clone()]);
            copied = tag.tail.end;
        }
        at = tag.tail.end;
        if !end_tag && tag.tail.end > tag.name_end {
            at = skip_raw_text(bytes, at, &bytes[lt + 1..tag.name_end]);
        }
    }
    match out {
        Some(mut out) => {
            out.push_str(&html[copied..]);
            Cow::Owned(out)
        }
        None => Cow::Borrowed(html),
    }
}

/// One tag as [`cut_absurd_tags`] reads it: where its name ends, the
/// attributes it keeps (each with the space before it), what closes it
/// (`/>`, `>`, or nothing at the end of the page), and whether any
/// attribute is dropped.
struct ScannedTag {
    name_end: usize,
    kept: Vec<std::ops::Range<usize>>,
    tail: std::ops::Range<usize>,
    cut: bool,
}

fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | b'\x0c')
}

fn find_byte(bytes: &[u8], from: usize, byte: u8) -> Option<usize> {
    bytes.get(from..)?.iter().position(|&b| b == byte).map(|i| from + i)
}

/// The tag whose name starts at `start`, read as the tokenizer reads
/// attributes: names end at space, `/`, `>` or `=`; values are quoted or
/// end at space or `>`.
fn scan_tag(bytes: &[u8], start: usize) -> ScannedTag {
    let n = bytes.len();
    let mut i = start;
    while i < n && !is_space(bytes[i]) && bytes[i] != b'/' && bytes[i] != b'>' {
        i += 1;
    }
    let mut tag = ScannedTag { name_end: i, kept: Vec::new(), tail: i..n, cut: false };
    let mut count = 0;
    loop {
        let gap = i;
        while i < n && (is_space(bytes[i]) || bytes[i] == b'/') {
            i += 1;
        }
        if i >= n || bytes[i] == b'>' {
            tag.tail = gap..(i + 1).min(n);
            return tag;
        }
        let name = i;
        i += 1;
        while i < n && !is_space(bytes[i]) && !matches!(bytes[i], b'/' | b'>' | b'=') {
            i += 1;
        }
        let mut j = i;
        while j < n && is_space(bytes[j]) {
            j += 1;
        }
        if j < n && bytes[j] == b'=' {
            j += 1;
            while j < n && is_space(bytes[j]) {
                j += 1;
            }
            i = match bytes.get(j) {
                Some(&quote @ (b'"' | b'\'')) => find_byte(bytes, j + 1, quote).map_or(n, |end| end + 1),
                _ => (j..n).find(|&k| is_space(bytes[k]) || bytes[k] == b'>').unwrap_or(n),
            };
        }
        count += 1;
        if count > MAX_ATTRIBUTES || i - name > MAX_ATTRIBUTE_BYTES {
            tag.cut = true;
        } else {
            tag.kept.push(gap..i);
        }
    }
}

/// Past the markup at `lt` that is no tag: a comment (to `-->`, `--!>`, or
/// at once for `<!-->`), a `<!…>` or `<?…>` (to `>`), or a lone `<`.
fn skip_markup(bytes: &[u8], lt: usize) -> usize {
    let rest = &bytes[lt..];
    if rest.starts_with(b"<!--") {
        let ends = (lt + 2..bytes.len()).find(|&k| bytes[k..].starts_with(b"-->") || bytes[k..].starts_with(b"--!>"));
        return ends.map_or(bytes.len(), |k| k + if bytes[k..].starts_with(b"-->") { 3 } else { 4 });
    }
    if rest.starts_with(b"<!") || rest.starts_with(b"<?") || rest.starts_with(b"</") {
        return find_byte(bytes, lt + 2, b'>').map_or(bytes.len(), |k| k + 1);
    }
    lt + 1
}

/// Past the content of the element `name` when it is raw text (it ends at
/// its own end tag; `<plaintext>` never ends), else `at`.
fn skip_raw_text(bytes: &[u8], at: usize, name: &[u8]) -> usize {
    let name = name.to_ascii_lowercase();
    let Ok(name) = std::str::from_utf8(&name) else { return at };
    if name == "plaintext" {
        return bytes.len();
    }
    if raw_text(name).is_none() {
        return at;
    }
    // As the tokenizer ends it: `</name` and then a space, `/`, `>` or the end.
    let closes = |k: usize| {
        let after = k + 2 + name.len();
        bytes[k..].starts_with(b"</")
            && bytes.get(k + 2..after).is_some_and(|n| n.eq_ignore_ascii_case(name.as_bytes()))
            && bytes.get(after).is_none_or(|&b| is_space(b) || b == b'/' || b == b'>')
    };
    (at..bytes.len()).find(|&k| bytes[k] == b'<' && closes(k)).unwrap_or(bytes.len())
}

/// The tokenizer's sink (it is handed `&self`).
struct Sink(RefCell<Pass>);

impl TokenSink for Sink {
    type Handle = ();

    fn process_token(&self, token: Token, _line: u64) -> TokenSinkResult<()> {
        let mut pass = self.0.borrow_mut();
        match token {
            Token::TagToken(tag) if tag.kind == TagKind::StartTag => return pass.start(&tag),
            Token::TagToken(tag) => pass.end(&tag.name),
            Token::CharacterTokens(text) => pass.text(&text),
            _ => {}
        }
        TokenSinkResult::Continue
    }
}

/// The element whose raw text (not markup) the tokenizer is reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Raw {
    /// `<title>`: the page's title.
    Title,
    /// `<xmp>`, `<plaintext>`: text as it is.
    Verbatim,
    /// Scripts, styles and the like.
    LeftOut,
}

/// What an open element means for the text inside it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Other,
    Heading(u8),
    Pre,
    Table,
    ListItem,
    Quote,
}

/// An element the pass is inside.
#[derive(Debug)]
struct Open {
    name: LocalName,
    role: Role,
    /// Its content is left out.
    skip: bool,
    /// Where it puts its content (`<main>`, `<article>`).
    place: Place,
}

/// Where on the page a block is: the most specific place the page marks
/// is its main content.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Place {
    Page,
    Article,
    Main,
}

/// A block found on the page, before the main content is chosen.
#[derive(Debug)]
struct Piece {
    kind: BlockKind,
    text: String,
    place: Place,
}

/// The state of one pass over a page's tokens.
#[derive(Debug)]
struct Pass {
    mode: Mode,
    stack: Vec<Open>,
    /// Elements opened past [`MAX_DEPTH`] (not tracked).
    untracked: usize,
    raw: Option<Raw>,
    /// How many open elements leave their content out, are `<main>`, are `<article>`.
    skipping: usize,
    main: usize,
    articles: usize,
    /// How many open elements of each role.
    pre: usize,
    tables: usize,
    list_items: usize,
    quotes: usize,
    heading: Option<u8>,
    /// The block being read, and whether a space is owed before its next word.
    text: String,
    space: bool,
    title: Option<String>,
    /// The text of the `<title>` being read.
    title_text: String,
    pieces: Vec<Piece>,
}

impl Pass {
    fn new(mode: Mode) -> Pass {
        Pass {
            mode,
            stack: Vec::new(),
            untracked: 0,
            raw: None,
            skipping: 0,
            main: 0,
            articles: 0,
            pre: 0,
            tables: 0,
            list_items: 0,
            quotes: 0,
            heading: None,
            text: String::new(),
            space: false,
            title: None,
            title_text: String::new(),
            pieces: Vec::new(),
        }
    }

    fn start(&mut self, tag: &Tag) -> TokenSinkResult<()> {
        let name = &*tag.name;
        if is_void(name) {
            match name {
                "br" => self.line_break(),
                "hr" => self.flush(false),
                _ => {}
            }
            return TokenSinkResult::Continue;
        }
        self.close_implied(name);
        if is_block(name) {
            self.flush(false);
        }
        if self.tables > 0 && self.skipping == 0 {
            self.table_separator(name);
        }
        if let Some(kind) = raw_text(name) {
            // Its content is text up to its end tag: it is not tracked as open.
            self.raw = Some(match name {
                "title" => Raw::Title,
                "xmp" | "plaintext" => Raw::Verbatim,
                _ => Raw::LeftOut,
            });
            return kind;
        }
        if tag.self_closing && matches!(name, "svg" | "math") {
            return TokenSinkResult::Continue;
        }
        let open = Open { name: tag.name.clone(), role: role(name), skip: self.leaves_out(tag), place: place(tag) };
        self.push(open);
        TokenSinkResult::Continue
    }

    fn end(&mut self, name: &LocalName) {
        if let Some(raw) = self.raw.take() {
            // In raw text the tokenizer ends only at the element's own end tag.
            match raw {
                Raw::Verbatim => self.flush(false),
                Raw::Title => {
                    let title = collapse(&std::mem::take(&mut self.title_text));
                    if !title.is_empty() && self.title.is_none() {
                        self.title = Some(title);
                    }
                }
                Raw::LeftOut => {}
            }
            return;
        }
        if self.untracked > 0 {
            // The innermost elements close first: those past the depth bound.
            self.untracked -= 1;
            if is_block(name) {
                self.flush(false);
            }
            return;
        }
        let Some(at) = self.stack.iter().rposition(|open| open.name == *name) else {
            // A stray `</p>` still ends a paragraph, as it does in browsers.
            if is_block(name) {
                self.flush(false);
            }
            return;
        };
        if is_block(name) || self.stack[at..].iter().any(|open| open.role == Role::Table) {
            // The outermost table ends here: it is one block.
            self.flush(self.tables == 1 && self.stack[at..].iter().any(|open| open.role == Role::Table));
        }
        while self.stack.len() > at {
            let Some(open) = self.stack.pop() else { break };
            self.count(&open, false);
        }
    }

    fn text(&mut self, text: &str) {
        match self.raw {
            Some(Raw::Title) if self.skipping == 0 && self.title.is_none() => {
                self.title_text.push_str(text);
                return;
            }
            Some(Raw::Title | Raw::LeftOut) => return,
            Some(Raw::Verbatim) | None => {}
        }
        if self.skipping > 0 {
            return;
        }
        if self.pre > 0 || self.raw == Some(Raw::Verbatim) {
            self.text.push_str(text);
            return;
        }
        for c in text.chars() {
            if c.is_whitespace() {
                self.space = true;
                continue;
            }
            if std::mem::take(&mut self.space) && !self.text.is_empty() && !self.text.ends_with(['\n', ' ']) {
                self.text.push(' ');
            }
            self.text.push(c);
        }
    }

    fn line_break(&mut self) {
        if self.skipping == 0 && !self.text.is_empty() {
            self.text.push('\n');
            self.space = false;
        }
    }

    /// Cells of a table are kept apart by ` | `, its rows by a line break.
    fn table_separator(&mut self, name: &str) {
        let separator = match name {
            "td" | "th" => " | ",
            "tr" | "caption" => "\n",
            _ => return,
        };
        if !self.text.is_empty() && !self.text.ends_with('\n') {
            self.text.push_str(separator);
            self.space = false;
        }
    }

    /// Ends the block being read. Within a table, blocks are only spaces
    /// apart unless `table_ends`: the table is one block.
    fn flush(&mut self, table_ends: bool) {
        if self.tables > 0 && !table_ends {
            self.space = true;
            return;
        }
        let text = std::mem::take(&mut self.text);
        self.space = false;
        let text = if self.pre > 0 && self.tables == 0 { text.trim_end().trim_start_matches(['\n', '\r']) } else { text.trim() };
        if text.is_empty() {
            return;
        }
        let kind = match (self.tables, self.heading, self.pre, self.list_items, self.quotes) {
            (1.., ..) => BlockKind::Table,
            (_, Some(level), ..) => BlockKind::Heading { level, text: collapse(text) },
            (_, _, 1.., _, _) => BlockKind::Code,
            (_, _, _, 1.., _) => BlockKind::ListItem,
            (_, _, _, _, 1..) => BlockKind::Quote,
            _ => BlockKind::Paragraph,
        };
        self.pieces.push(Piece { kind, text: text.to_string(), place: self.place() });
    }

    fn push(&mut self, open: Open) {
        if self.stack.len() >= MAX_DEPTH {
            self.untracked += 1;
            return;
        }
        self.count(&open, true);
        self.stack.push(open);
    }

    /// Keeps the counts of open elements by kind as `open` opens or closes.
    fn count(&mut self, open: &Open, opens: bool) {
        let change = |n: &mut usize| *n = if opens { *n + 1 } else { n.saturating_sub(1) };
        if open.skip {
            change(&mut self.skipping);
        }
        match open.place {
            Place::Main => change(&mut self.main),
            Place::Article => change(&mut self.articles),
            Place::Page => {}
        }
        match open.role {
            Role::Pre => change(&mut self.pre),
            Role::Table => change(&mut self.tables),
            Role::ListItem => change(&mut self.list_items),
            Role::Quote => change(&mut self.quotes),
            Role::Heading(level) => self.heading = opens.then_some(level),
            Role::Other => {}
        }
    }

    /// Closes what a start tag closes without an end tag: a paragraph
    /// before a block, a list item before the next, a cell or row before
    /// the next (looking no further than the enclosing list or table).
    fn close_implied(&mut self, name: &str) {
        let (closes, within): (&[&str], &[&str]) = match name {
            "li" => (&["li"], &["ul", "ol", "menu"]),
            "dt" | "dd" => (&["dt", "dd"], &["dl"]),
            "tr" => (&["tr", "td", "th"], &["table", "thead", "tbody", "tfoot"]),
            "td" | "th" => (&["td", "th"], &["tr", "table"]),
            "option" => (&["option"], &["select", "datalist"]),
            _ if is_block(name) => (&["p"], &["button", "table", "td", "th", "li", "div", "article", "section", "main"]),
            _ => return,
        };
        let open = self.stack.iter().rev().take_while(|open| !within.contains(&&*open.name)).find(|open| closes.contains(&&*open.name));
        if let Some(name) = open.map(|open| open.name.clone()) {
            self.end(&name);
        }
    }

    /// Whether the content of the element `tag` opens is left out.
    fn leaves_out(&self, tag: &Tag) -> bool {
        let name = &*tag.name;
        let role = attribute(tag, "role").map(|r| r.trim().to_ascii_lowercase());
        if NEVER_READ.contains(&name) || is_hidden(tag) {
            return true;
        }
        if self.mode == Mode::Everything {
            return false;
        }
        let page_level = self.place() == Place::Page;
        matches!(name, "nav" | "aside" | "form" | "dialog")
            || (page_level && matches!(name, "header" | "footer"))
            || role
                .as_deref()
                .is_some_and(|r| matches!(r, "navigation" | "complementary" | "search" | "dialog") || (page_level && matches!(r, "banner" | "contentinfo")))
    }

    /// Where the block being read is.
    fn place(&self) -> Place {
        match (self.main, self.articles) {
            (1.., _) => Place::Main,
            (0, 1..) => Place::Article,
            _ => Place::Page,
        }
    }

    /// The document: the main content's blocks when the page marks it
    /// (and the pass looks for it), else every block; the title from
    /// `<title>`, else the first top-level heading.
    fn into_document(self) -> Extracted {
        let main = self.pieces.iter().map(|piece| piece.place).max().filter(|_| self.mode == Mode::MainContent).unwrap_or(Place::Page);
        let mut doc = Extracted { title: self.title, ..Extracted::default() };
        for piece in self.pieces.into_iter().filter(|piece| piece.place >= main) {
            if doc.title.is_none() {
                if let BlockKind::Heading { level: 1, text } = &piece.kind {
                    doc.title = Some(text.clone());
                }
            }
            let range = push_block(&mut doc.plain, &piece.text);
            doc.blocks.push(Block { kind: piece.kind, range, page: None });
        }
        doc
    }
}

/// Elements whose content is never text of the page (besides those whose
/// content is raw text, see [`raw_text`]).
const NEVER_READ: [&str; 9] = ["template", "select", "button", "svg", "math", "canvas", "object", "audio", "video"];

/// What the tokenizer must read an element's content as, for the elements
/// whose content is not markup.
fn raw_text(name: &str) -> Option<TokenSinkResult<()>> {
    Some(match name {
        "script" => TokenSinkResult::RawData(RawKind::ScriptData),
        "style" | "noscript" | "xmp" | "iframe" | "noembed" | "noframes" => TokenSinkResult::RawData(RawKind::Rawtext),
        "title" | "textarea" => TokenSinkResult::RawData(RawKind::Rcdata),
        "plaintext" => TokenSinkResult::Plaintext,
        _ => return None,
    })
}

/// Elements without content or end tag.
fn is_void(name: &str) -> bool {
    matches!(name, "area" | "base" | "br" | "col" | "embed" | "hr" | "img" | "input" | "link" | "meta" | "param" | "source" | "track" | "wbr" | "keygen")
}

/// Elements that end the block before them and start a new one.
fn is_block(name: &str) -> bool {
    matches!(
        name,
        "address"
            | "article"
            | "aside"
            | "blockquote"
            | "body"
            | "caption"
            | "center"
            | "dd"
            | "details"
            | "dialog"
            | "div"
            | "dl"
            | "dt"
            | "fieldset"
            | "figcaption"
            | "figure"
            | "footer"
            | "form"
            | "h1"
            | "h2"
            | "h3"
            | "h4"
            | "h5"
            | "h6"
            | "header"
            | "hgroup"
            | "legend"
            | "li"
            | "main"
            | "nav"
            | "ol"
            | "p"
            | "plaintext"
            | "pre"
            | "section"
            | "summary"
            | "table"
            | "td"
            | "th"
            | "tr"
            | "ul"
            | "xmp"
    )
}

fn role(name: &str) -> Role {
    match name {
        "pre" => Role::Pre,
        "table" => Role::Table,
        "li" => Role::ListItem,
        "blockquote" => Role::Quote,
        _ => match name.strip_prefix('h').and_then(|n| n.parse::<u8>().ok()) {
            Some(level @ 1..=6) if name.len() == 2 => Role::Heading(level),
            _ => Role::Other,
        },
    }
}

/// `<main>` (or `role="main"`) and `<article>` mark the main content.
fn place(tag: &Tag) -> Place {
    match &*tag.name {
        "main" => Place::Main,
        "article" => Place::Article,
        _ if attribute(tag, "role").is_some_and(|r| r.trim().eq_ignore_ascii_case("main")) => Place::Main,
        _ => Place::Page,
    }
}

/// `hidden`, `aria-hidden="true"`, or a style of `display: none` or `visibility: hidden`.
fn is_hidden(tag: &Tag) -> bool {
    let style = attribute(tag, "style").map(|s| s.to_ascii_lowercase().split_whitespace().collect::<String>());
    attribute(tag, "hidden").is_some()
        || attribute(tag, "aria-hidden").is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
        || style.is_some_and(|s| s.contains("display:none") || s.contains("visibility:hidden"))
}

fn attribute<'t>(tag: &'t Tag, name: &str) -> Option<&'t str> {
    tag.attrs.iter().find(|a| &*a.name.local == name).map(|a| &*a.value)
}

/// `text` with each run of white space made one space, trimmed.
fn collapse(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The page read with no practical deadline.
    fn read_page(bytes: &[u8], charset: Option<&str>) -> Result<Extracted, String> {
        extract(bytes, charset, Instant::now() + std::time::Duration::from_secs(3600))
    }

    fn blocks(doc: &Extracted) -> Vec<(BlockKind, &str)> {
        doc.blocks.iter().map(|b| (b.kind.clone(), &doc.plain[b.range.clone()])).collect()
    }

    fn heading(level: u8, text: &str) -> BlockKind {
        BlockKind::Heading { level, text: text.into() }
    }

    const PAGE: &str = r#"<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>The Guide &amp; more</title>
<style>body { color: red }</style><script>var secret = "scriptword";</script></head>
<body>
<header><h1>Site name</h1><nav><a href="/">Home</a> navword</nav></header>
<nav>Other navword links</nav>
<main>
  <h1>Caring  for
  plants</h1>
  <p>Water them <b>weekly</b> &mdash; not daily.<br>Really.</p>
  <div hidden>hiddenword</div><p style="display: none">hiddenword</p><span aria-hidden="true">hiddenword</span>
  <h2>Soil</h2>
  <ul><li>Loam<li>Sand <ul><li>coarse</li></ul></li></ul>
  <table><tr><th>Kind</th><th>Days</th></tr><tr><td>Fern</td><td><p>3</p></td></tr></table>
  <pre>
fn water() {
    daily();
}</pre>
  <blockquote><p>Less is more.</p></blockquote>
  <form><label>Search</label><input name=q><button>Go formword</button></form>
  <aside>asideword</aside>
</main>
<footer>footerword &copy; 2024</footer>
<noscript>noscriptword</noscript>
</body></html>"#;

    #[test]
    fn the_main_content_becomes_blocks_and_the_rest_is_left_out() {
        let doc = read_page(PAGE.as_bytes(), None).unwrap();
        assert_eq!(doc.title.as_deref(), Some("The Guide & more"));
        assert_eq!(
            blocks(&doc),
            [
                (heading(1, "Caring for plants"), "Caring for plants"),
                (BlockKind::Paragraph, "Water them weekly — not daily.\nReally."),
                (heading(2, "Soil"), "Soil"),
                (BlockKind::ListItem, "Loam"),
                (BlockKind::ListItem, "Sand"),
                (BlockKind::ListItem, "coarse"),
                (BlockKind::Table, "Kind | Days\nFern | 3"),
                (BlockKind::Code, "fn water() {\n    daily();\n}"),
                (BlockKind::Quote, "Less is more."),
            ]
        );
        for word in ["scriptword", "navword", "hiddenword", "formword", "asideword", "footerword", "noscriptword", "Site name", "color"] {
            assert!(!doc.plain.contains(word), "{word} in {:?}", doc.plain);
        }
    }

    #[test]
    fn without_main_the_page_minus_its_furniture_is_kept_and_the_title_is_the_first_h1() {
        let page = "<body><header><p>Brand</p></header><nav>Menu</nav><h2>Intro</h2><h1>Real title</h1><p>Body text.</p><footer>Legal</footer>";
        let doc = read_page(page.as_bytes(), None).unwrap();
        assert_eq!(blocks(&doc), [(heading(2, "Intro"), "Intro"), (heading(1, "Real title"), "Real title"), (BlockKind::Paragraph, "Body text.")]);
        assert_eq!(doc.title.as_deref(), Some("Real title"));
        // An article keeps its own header and footer.
        let page = "<header>Site</header><article><header><h1>Post</h1></header><p>Text.</p><footer>By someone</footer></article>";
        let doc = read_page(page.as_bytes(), None).unwrap();
        assert_eq!(blocks(&doc), [(heading(1, "Post"), "Post"), (BlockKind::Paragraph, "Text."), (BlockKind::Paragraph, "By someone")]);
        // <main> wins over articles outside it (teasers), articles over the rest of the page.
        let page = "<article><h2>Teaser</h2><p>Other post.</p></article><div role=main><p>The real text.</p><article><p>Inner.</p></article></div>";
        let doc = read_page(page.as_bytes(), None).unwrap();
        assert_eq!(blocks(&doc), [(BlockKind::Paragraph, "The real text."), (BlockKind::Paragraph, "Inner.")]);
        let doc = read_page(b"<p>Intro outside.</p><article><p>One.</p></article><article><p>Two.</p></article>", None).unwrap();
        assert_eq!(doc.plain, "One.\n\nTwo.");
        // A page that is all furniture (a form around everything) is read whole.
        let doc = read_page(b"<form><p>Only a form's text.</p><script>x()</script></form>", None).unwrap();
        assert_eq!(blocks(&doc), [(BlockKind::Paragraph, "Only a form's text.")]);
    }

    #[test]
    fn entities_are_decoded_and_broken_markup_is_read() {
        let page =
            "<p>caf&eacute; &lt;tag&gt; &#x1F600; &amp &bogus; <b>bold <i>both</b> italic</i><p>second <div>block</p> tail <li>item</ul></table></td></span>\
                    <p class=x\"y>text after an odd attribute<p>last &";
        let doc = read_page(page.as_bytes(), None).unwrap();
        let got = blocks(&doc);
        assert_eq!(got[0], (BlockKind::Paragraph, "café <tag> 😀 & &bogus; bold both italic"));
        assert_eq!(got[1], (BlockKind::Paragraph, "second"));
        assert_eq!(got[2], (BlockKind::Paragraph, "block"), "a stray </p> ends a block too");
        assert_eq!(got[3], (BlockKind::Paragraph, "tail"));
        assert_eq!(got[4], (BlockKind::ListItem, "item"));
        assert!(doc.plain.contains("text after an odd attribute") && doc.plain.ends_with("last &"), "{:?}", doc.plain);
        for garbage in ["", "<", "</", "<!--", "<![CDATA[", "<p", "<script>", "<title>unclosed", "</p></div><p>x", "<svg/><p>after svg</p>"] {
            let doc = read_page(garbage.as_bytes(), None).unwrap();
            assert!(doc.blocks.iter().all(|b| doc.plain.get(b.range.clone()).is_some()), "{garbage:?}");
        }
        assert_eq!(read_page(b"<svg/><p>after svg</p>", None).unwrap().plain, "after svg");
    }

    #[test]
    fn a_deeply_nested_or_huge_page_is_read_without_recursion() {
        let depth = 100_000;
        let page = format!("{}<p>deep text</p><script>{}</script>{}", "<div>".repeat(depth), "x".repeat(10), "</div>".repeat(depth));
        let started = std::time::Instant::now();
        let doc = read_page(page.as_bytes(), None).unwrap();
        assert_eq!(doc.plain, "deep text");
        let page = format!("<main>{}</main>", "<div><span>word</span>".repeat(depth));
        let doc = read_page(page.as_bytes(), None).unwrap();
        assert_eq!(doc.blocks.len(), depth);
        assert!(started.elapsed() < std::time::Duration::from_secs(20), "{:?}", started.elapsed());
    }

    #[test]
    fn the_charset_comes_from_the_header_the_meta_tag_or_detection() {
        let latin1 = b"<html><head><meta http-equiv=\"Content-Type\" content=\"text/html; charset=ISO-8859-1\"></head><p>caf\xe9</p>";
        assert_eq!(read_page(latin1, None).unwrap().plain, "café");
        let meta = b"<meta charset='windows-1252'><p>na\xefve</p>";
        assert_eq!(read_page(meta, None).unwrap().plain, "naïve");
        let (gbk, _, _) = encoding_rs::GBK.encode("<p>中文的页面内容</p>");
        assert_eq!(read_page(&gbk, Some("gbk")).unwrap().plain, "中文的页面内容");
        assert_eq!(meta_charset(b"<meta name=x><META Charset = \"UTF-8\">").as_deref(), Some("utf-8"));
        assert!(read_page(b"\x00\x01\x02binary\x00", None).is_err(), "binary content is an error");
        // The public entry point bounds and titles the document like every format.
        let doc = super::super::extract_html(b"<h2>Only heading</h2><p>x</p>", Some("utf-8")).unwrap();
        assert_eq!(doc.title.as_deref(), Some("Only heading"));
    }

    /// Issue 41: a tag's attributes beyond the 64th, and any attribute
    /// over 16 KB, are dropped before tokenising; comments, `<!…>` and the
    /// content of raw-text elements are passed over, not read as tags.
    #[test]
    fn absurd_tags_are_cut_before_tokenising_and_the_rest_is_untouched() {
        let many: String = (0..200).map(|n| format!(" a{n}=\"v{n}\"")).collect();
        let kept: String = (0..MAX_ATTRIBUTES).map(|n| format!(" a{n}=\"v{n}\"")).collect();
        assert_eq!(cut_absurd_tags(&format!("x<p{many}>t</p>")), format!("x<p{kept}>t</p>"));
        assert_eq!(cut_absurd_tags(&format!("<img{many} />")), format!("<img{kept} />"), "a self-closing end is kept");
        let long = "d".repeat(MAX_ATTRIBUTE_BYTES + 1);
        assert_eq!(cut_absurd_tags(&format!("<p role=main src=\"{long}\" hidden>t")), "<p role=main hidden>t");
        for untouched in [
            "<p a b=c d='>' e=\"f\">text</p><br/>",
            "<script>if (a<b c d) { x = \"<p\"; }</script>",
            "<!-- <p a b c> --><!DOCTYPE html><?xml x?></>",
            "a < b and c<3, </ p>",
            "<p unterminated=\"value",
            "鹦鹉 <p title=\"鹦鹉\">鹦鹉</p>",
        ] {
            assert!(matches!(cut_absurd_tags(untouched), Cow::Borrowed(_)), "{untouched}");
        }
        // The content of a raw-text element or a comment is no tag; what follows is read again.
        let hidden = format!("<script>var s = \"<p{many}>\";</script><!--> <p{many}>");
        assert_eq!(cut_absurd_tags(&hidden), format!("<script>var s = \"<p{many}>\";</script><!--> <p{kept}>"));
        let doc = read_page(format!("<main><p{many}>Kept text.</p></main>").as_bytes(), None).unwrap();
        assert_eq!(doc.plain, "Kept text.");
    }

    /// Issue 41: past its deadline a page's reading stops with an error, on
    /// whatever thread it runs (no thread is left running it).
    #[test]
    fn reading_stops_at_the_deadline() {
        let page = "<p>text</p>".repeat(100_000);
        let err = extract(page.as_bytes(), None, Instant::now()).unwrap_err();
        assert!(err.starts_with("timed out"), "{err}");
    }
}
