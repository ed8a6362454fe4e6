//! Questions about whole documents and about the collection, answered
//! without a language model (the floor): one document's overview (what it
//! is, its outline, the sentences that best cover it), the list of every
//! document or of those about something, and two documents side by side.
//! The question's words tell these from passage questions ([`ask`]); the
//! document named is resolved by name, and a name that fits none or
//! several is said so, never guessed ([`resolve`]). Every quoted sentence
//! is cited like a passage answer's.

pub mod ask;
pub mod overview;
pub mod resolve;

use std::collections::HashMap;

use serde::Serialize;

pub use ask::{scope_of, Scope};

use crate::chat::Citation;
use crate::error::Result;
use crate::language::Language;
use crate::retrieve::calibration::Outcome;
use crate::retrieve::{context::fingerprint, RetrievalConfig, Retrieve};
use crate::store::{ChunkRow, DocRecord, DocStatus};
use overview::{key_sentences, outline, pages, shown_name, KEY_SENTENCES};
use resolve::{resolve, Resolved};

/// Stored vectors by chunk id.
type Vectors = HashMap<u64, Vec<f32>>;

/// The documents a collection holds, their passages and stored vectors.
pub trait Library {
    fn documents(&self) -> Result<Vec<DocRecord>>;
    fn chunks_of(&self, path: &str) -> Result<Vec<ChunkRow>>;
    fn vectors_of(&self, ids: &[u64]) -> Result<Vectors>;
}

/// What was asked and which documents it came to (the trace, `kea eval`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Asked {
    pub scope: Scope,
    /// The documents answered about (their keys).
    pub resolved: Vec<String>,
    /// Names that fit no document, or several.
    pub unresolved: Vec<String>,
}

/// An answer about documents: Markdown, its citations, its outcome.
#[derive(Debug, Clone)]
pub struct LibraryAnswer {
    pub text: String,
    pub citations: Vec<Citation>,
    pub outcome: Outcome,
    pub asked: Asked,
}

/// A document's text as a name is looked for in it: its first passages.
fn text_reader(library: &dyn Library) -> impl FnMut(&DocRecord) -> String + '_ {
    move |doc: &DocRecord| match library.chunks_of(&doc.path) {
        Ok(chunks) => chunks.iter().take(30).map(|c| format!("{}\n{}", c.heading_path, c.text)).collect::<Vec<_>>().join("\n"),
        Err(_) => String::new(),
    }
}

/// The whole a name names a part of ("the deposit rules of the lease",
/// "租房合同里关于押金的规定"), if it is worded so.
fn part_of(name: &str) -> Option<&str> {
    let lower = name.to_lowercase();
    if lower.len() == name.len() {
        if let Some(at) = [" of the ", " in the ", " of ", " in "].iter().filter_map(|m| lower.rfind(m).map(|at| at + m.len())).max() {
            return Some(&name[at..]);
        }
    }
    ["里的", "里", "中的"].iter().find_map(|m| name.split_once(m).map(|(whole, _)| whole)).filter(|w| !w.is_empty())
}

/// Lists in the collection answer with a sentence for each document up to this many.
const SENTENCE_PER_DOCUMENT_UP_TO: usize = 40;

/// Answers `scope` (not [`Scope::Passages`]) from `library`; a collection
/// question about something searches for it with `retrieve`. `None` when
/// the question may be about passages after all ([`Scope::is_sure`]) and
/// its names fit no one document.
pub fn answer(library: &dyn Library, retrieve: &dyn Retrieve, scope: Scope, language: Language, config: &RetrievalConfig) -> Result<Option<LibraryAnswer>> {
    let documents: Vec<DocRecord> = library.documents()?.into_iter().filter(|d| d.status == DocStatus::Indexed && d.chunk_count > 0).collect();
    let names: Vec<&String> = match &scope {
        Scope::Document { name, .. } => vec![name],
        Scope::Comparison { first, second, .. } => vec![first, second],
        _ => Vec::new(),
    };
    let mut text_of = text_reader(library);
    let resolves = |name: &str, text_of: &mut dyn FnMut(&DocRecord) -> String| matches!(resolve(name, &documents, text_of), Resolved::One(_));
    // Words that may ask about a passage name a document only by its names, not by what it says.
    if !scope.is_sure() && names.iter().any(|n| !resolves(n, &mut |_: &DocRecord| String::new())) {
        return Ok(None);
    }
    // "Summarize the deposit rules of the lease": a part of a document is the passages' matter.
    if let Scope::Document { name, .. } = &scope {
        if !resolves(name, &mut text_of) && part_of(name).is_some_and(|whole| resolves(whole, &mut text_of)) {
            return Ok(None);
        }
    }
    let mut writer = Writer {
        library,
        language,
        text: String::new(),
        citations: Vec::new(),
        asked: Asked { scope: scope.clone(), resolved: Vec::new(), unresolved: Vec::new() },
    };
    let outcome = match &scope {
        Scope::Passages | Scope::Collection { about: None } => writer.collection(&documents)?,
        Scope::Collection { about: Some(about) } => writer.about(retrieve, about, &documents, config)?,
        Scope::Document { name, .. } => match writer.named(name, &documents) {
            Some(doc) => writer.document(doc)?,
            None => Outcome::Refused,
        },
        Scope::Comparison { first, second, .. } => match (writer.named(first, &documents), writer.named(second, &documents)) {
            (Some(a), Some(b)) => writer.comparison(a, b)?,
            _ => Outcome::Refused,
        },
    };
    let outcome = if writer.asked.unresolved.is_empty() || outcome != Outcome::Refused { outcome } else { writer.unresolved_outcome(&documents) };
    Ok(Some(LibraryAnswer { text: writer.text.trim_end().to_string(), citations: writer.citations, outcome, asked: writer.asked }))
}

/// Writes one answer: its text, the citations its sentences get, what was resolved.
struct Writer<'l> {
    library: &'l dyn Library,
    language: Language,
    text: String,
    citations: Vec<Citation>,
    asked: Asked,
}

impl Writer<'_> {
    /// `en` or `zh`, in the question's language.
    fn say<'s>(&self, en: &'s str, zh: &'s str) -> &'s str {
        if self.language == Language::Chinese {
            zh
        } else {
            en
        }
    }

    fn line(&mut self, line: &str) {
        self.text.push_str(line);
        self.text.push('\n');
    }

    /// A document's passages in order and their stored vectors.
    fn passages(&self, doc: &DocRecord) -> Result<(Vec<ChunkRow>, Vectors)> {
        let chunks = self.library.chunks_of(&doc.path)?;
        let vectors = self.library.vectors_of(&chunks.iter().map(|c| c.id as u64).collect::<Vec<_>>())?;
        Ok((chunks, vectors))
    }

    /// The marker citing `chunk` (one citation per chunk).
    fn cite(&mut self, chunk: &ChunkRow) -> String {
        let at = self.citations.iter().position(|c| c.chunk_id == chunk.id).unwrap_or_else(|| {
            self.citations.push(Citation {
                id: format!("S{}", self.citations.len() + 1),
                source: chunk.source.clone(),
                heading_path: chunk.heading_path.clone(),
                page: chunk.page,
                chunk_id: chunk.id,
                chunk_ids: vec![chunk.id],
                collection: chunk.collection.clone(),
                fingerprint: Some(fingerprint(&chunk.text)),
                url: chunk.url.clone(),
            });
            self.citations.len() - 1
        });
        format!("[{}]", self.citations[at].id)
    }

    /// The document `name` resolves to; otherwise the answer says why and
    /// lists the documents to choose from.
    fn named<'d>(&mut self, name: &str, documents: &'d [DocRecord]) -> Option<&'d DocRecord> {
        match resolve(name, documents, &mut text_reader(self.library)) {
            Resolved::One(doc) => {
                self.asked.resolved.push(doc.path.clone());
                Some(doc)
            }
            Resolved::Several(docs) => {
                self.asked.unresolved.push(name.to_string());
                let lead =
                    format!("{} “{name}”{}", self.say("Several documents fit", "有几份文档都符合"), self.say(": which one do you mean?", "：你指的是哪一份？"));
                self.line(&lead);
                docs.iter().for_each(|d| self.line(&format!("- {} ({})", shown_name(d), d.path)));
                None
            }
            Resolved::Missing(closest) => {
                self.asked.unresolved.push(name.to_string());
                let lead =
                    format!("{} “{name}”{}", self.say("There is no document called", "这个知识库里没有名为"), self.say(" in this collection.", "的文档。"));
                self.line(&lead);
                if !closest.is_empty() {
                    self.line(self.say("The closest names:", "名称最接近的文档："));
                    closest.iter().for_each(|d| self.line(&format!("- {} ({})", shown_name(d), d.path)));
                }
                None
            }
        }
    }

    /// A name that fits several documents asks which (unsure); one that fits none is refused.
    fn unresolved_outcome(&self, documents: &[DocRecord]) -> Outcome {
        let several = self.asked.unresolved.iter().any(|n| matches!(resolve(n, documents, &mut text_reader(self.library)), Resolved::Several(_)));
        if several {
            Outcome::Unsure
        } else {
            Outcome::Refused
        }
    }

    /// One document's overview.
    fn document(&mut self, doc: &DocRecord) -> Result<Outcome> {
        let (chunks, vectors) = self.passages(doc)?;
        self.line(&format!("**{}** — {}", shown_name(doc), self.facts(doc, &chunks)));
        let entries = outline(&chunks);
        if entries.len() > 1 {
            self.line(&format!("\n{}", self.say("Outline:", "大纲：")));
            entries.iter().for_each(|(depth, heading)| self.line(&format!("{}- {heading}", "  ".repeat(*depth))));
        }
        let chosen = key_sentences(&chunks, &vectors, KEY_SENTENCES);
        if !chosen.is_empty() {
            self.line(&format!("\n{}", self.say("In brief:", "要点：")));
            for key in &chosen {
                let marker = self.cite(key.chunk);
                self.line(&format!("- {} {marker}", key.text));
            }
        }
        Ok(Outcome::Answered)
    }

    /// Kind, size and pages, as one phrase.
    fn facts(&self, doc: &DocRecord, chunks: &[ChunkRow]) -> String {
        let kind = doc.kind.map_or("shared", |k| k.as_str());
        let size = if doc.size >= 1 << 20 { format!("{:.1} MB", doc.size as f64 / (1 << 20) as f64) } else { format!("{} KB", doc.size.div_ceil(1024)) };
        let mut facts = vec![kind.to_string(), size];
        if let Some(pages) = pages(chunks) {
            facts.push(format!("{pages} {}", self.say("pages", "页")));
        }
        facts.push(format!("{} {}", chunks.len(), self.say("passages", "个段落")));
        facts.join(self.say(", ", "，"))
    }

    /// Every document, grouped by folder, each with its most central sentence.
    fn collection(&mut self, documents: &[DocRecord]) -> Result<Outcome> {
        let count = documents.len();
        self.line(&format!("{count} {}", self.say("documents in this collection:", "份文档在这个知识库里：")));
        let mut folder: Option<&str> = None;
        let mut sorted: Vec<&DocRecord> = documents.iter().collect();
        sorted.sort_by(|a, b| a.path.cmp(&b.path));
        for doc in sorted {
            let here = doc.path.rsplit_once('/').map_or("", |(f, _)| f);
            if folder != Some(here) {
                if !here.is_empty() {
                    self.line(&format!("\n**{here}/**"));
                }
                folder = Some(here);
            }
            let kind = doc.kind.map_or("shared", |k| k.as_str());
            let sentence = match count <= SENTENCE_PER_DOCUMENT_UP_TO {
                true => self.central_sentence(doc)?,
                false => String::new(),
            };
            self.line(&format!("- **{}** ({kind}){sentence}", shown_name(doc)));
        }
        Ok(if count == 0 { Outcome::Refused } else { Outcome::Answered })
    }

    /// ` — the sentence [S#]` that best covers `doc`, or nothing.
    fn central_sentence(&mut self, doc: &DocRecord) -> Result<String> {
        let (chunks, vectors) = self.passages(doc)?;
        let best = key_sentences(&chunks, &vectors, 1).into_iter().next();
        Ok(match best {
            Some(key) => format!(" — {} {}", key.text, self.cite(key.chunk)),
            None => String::new(),
        })
    }

    /// The documents about `about`, best first, each with its passage that says so.
    fn about(&mut self, retrieve: &dyn Retrieve, about: &str, documents: &[DocRecord], config: &RetrievalConfig) -> Result<Outcome> {
        let found = retrieve.retrieve_queries(&[about.to_string()], None, config)?;
        let mut seen: Vec<&str> = Vec::new();
        let mut lines = Vec::new();
        let wanted = crate::segment::content_terms(about);
        // Past the first, a document counts when its passage uses the topic's words.
        let says_so = |text: &str| crate::segment::content_terms(text).iter().any(|w| wanted.contains(w));
        if found.relevance.outcome != Outcome::Refused {
            for hit in &found.hits {
                if seen.contains(&hit.chunk.source.as_str()) || (!seen.is_empty() && !says_so(&hit.chunk.text)) {
                    continue;
                }
                seen.push(&hit.chunk.source);
                let name = documents.iter().find(|d| d.path == hit.chunk.source).map_or_else(|| hit.chunk.source.clone(), shown_name);
                let sentence = closest_sentence(&hit.chunk.text, about);
                let marker = self.cite(&hit.chunk);
                lines.push(format!("- **{name}** — {sentence} {marker}"));
            }
        }
        self.asked.resolved.extend(seen.iter().map(|s| s.to_string()));
        if lines.is_empty() {
            self.line(&format!("{} “{about}”{}", self.say("No document seems to be about", "似乎没有文档是关于"), self.say(".", "的。")));
            return Ok(Outcome::Refused);
        }
        self.line(&format!("{} “{about}”{}", self.say("Documents about", "关于"), self.say(", the closest first:", "的文档，最相关的在前：")));
        lines.iter().for_each(|l| self.line(l));
        Ok(found.relevance.outcome)
    }

    /// Two documents' overviews, then their sentences on the same subject paired.
    fn comparison(&mut self, first: &DocRecord, second: &DocRecord) -> Result<Outcome> {
        let mut sides = Vec::new();
        for doc in [first, second] {
            let (chunks, vectors) = self.passages(doc)?;
            sides.push((doc, chunks, vectors));
        }
        for (doc, chunks, vectors) in &sides {
            self.line(&format!("**{}** — {}", shown_name(doc), self.facts(doc, chunks)));
            for key in key_sentences(chunks, vectors, KEY_SENTENCES) {
                let marker = self.cite(key.chunk);
                self.line(&format!("- {} {marker}", key.text));
            }
            self.line("");
        }
        let pairs = paired(&sides[0].1, &sides[1].1);
        if !pairs.is_empty() {
            self.line(self.say("On the same subject:", "同一主题："));
            for (a, b) in pairs {
                let (ma, mb) = (self.cite(a.1), self.cite(b.1));
                self.line(&format!("- {} {ma} ↔ {} {mb}", a.0, b.0));
            }
        }
        Ok(Outcome::Answered)
    }
}

/// The sentence of `text` holding most of `about`'s words (the first on a tie).
fn closest_sentence(text: &str, about: &str) -> String {
    let wanted = crate::segment::content_terms(about);
    let text = overview::unwrapped(text);
    let sentences = crate::retrieve::context::sentences(&text);
    let held = |s: &str| {
        let words = crate::segment::content_terms(s);
        wanted.iter().filter(|w| words.contains(w)).count()
    };
    let quotable = sentences.iter().enumerate().filter(|(_, s)| !crate::chat::instructions::addresses_a_model(s));
    let best = quotable.max_by_key(|(i, s)| (held(s), std::cmp::Reverse(*i))).map_or("", |(_, s)| s);
    let flat = best.split_whitespace().collect::<Vec<_>>().join(" ");
    match flat.chars().count() > 240 {
        true => format!("{}…", flat.chars().take(240).collect::<String>()),
        false => flat,
    }
}

/// A sentence and the chunk it is from.
type Placed<'c> = (String, &'c ChunkRow);

/// Sentences of the two documents on the same subject: for each sentence
/// of the first, the one of the second sharing the most content words (at
/// least two and a quarter of the shorter's, numbers aside), each sentence
/// paired once, at most five pairs.
fn paired<'c>(first: &'c [ChunkRow], second: &'c [ChunkRow]) -> Vec<(Placed<'c>, Placed<'c>)> {
    let split = |chunks: &'c [ChunkRow]| -> Vec<(Placed<'c>, Vec<String>)> {
        chunks
            .iter()
            .flat_map(|c| {
                let text = overview::unwrapped(&c.text);
                let flat: Vec<String> =
                    crate::retrieve::context::sentences(&text).into_iter().map(|s| s.split_whitespace().collect::<Vec<_>>().join(" ")).collect();
                flat.into_iter().filter(|s| !crate::chat::instructions::addresses_a_model(s)).map(move |s| (s, c))
            })
            .map(|(s, c)| {
                let words = crate::segment::content_terms(&s).into_iter().filter(|w| !w.chars().all(|c| c.is_ascii_digit())).collect();
                ((s, c), words)
            })
            .collect()
    };
    let (a, b) = (split(first), split(second));
    let mut candidates: Vec<(usize, usize, usize)> = Vec::new();
    for (i, (_, wa)) in a.iter().enumerate() {
        for (j, (_, wb)) in b.iter().enumerate() {
            let shared = wa.iter().filter(|w| wb.contains(w)).count();
            if shared >= 2 && shared * 4 >= wa.len().min(wb.len()) && a[i].0 .0 != b[j].0 .0 {
                candidates.push((shared, i, j));
            }
        }
    }
    candidates.sort_by(|x, y| y.0.cmp(&x.0).then(x.1.cmp(&y.1)).then(x.2.cmp(&y.2)));
    let (mut used_a, mut used_b, mut pairs) = (Vec::new(), Vec::new(), Vec::new());
    for (_, i, j) in candidates {
        if pairs.len() < 5 && !used_a.contains(&i) && !used_b.contains(&j) {
            used_a.push(i);
            used_b.push(j);
            pairs.push((a[i].0.clone(), b[j].0.clone()));
        }
    }
    pairs.sort_by_key(|p| p.0 .1.chunk_index);
    pairs
}
