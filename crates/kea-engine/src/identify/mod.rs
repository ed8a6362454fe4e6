//! Image identification against the knowledge base: labels come from the
//! documents' front matter (keys and kind words from the profile); a CLIP
//! model or a vision LLM classifies the photo; a confident result quotes the
//! label's best passage with its citation, a doubtful one is checked — three
//! queries (candidate comparison, visual description, top-1 features) run
//! through the retrieval pipeline, their evidence is merged and reranked,
//! and an LLM makes the final JSON decision citing it. Replies speak the
//! requested language and become messages of the conversation.

pub mod clip;
mod decision;
mod evidence;
pub mod image_input;
pub mod vision_llm;
mod words;

use crate::language::Language;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Instant;

use kea_llm::Provider;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::chat::{ChatEvent, Citation};
use crate::error::{Error, Result};
pub use crate::labels::Label;
use crate::profile::Profile;
use crate::retrieve::RetrievalConfig;
pub use clip::{Classification, ClipClassifier, DEFAULT_IMAGE_MODEL};
use decision::decide;
pub use decision::{parse_decision, Decision};
pub use evidence::{build_queries, dedupe_evidence};
use evidence::{label_passages, merged_evidence};
pub use vision_llm::VisionLlmClassifier;
use words::{compose_reply, Words};

/// Ranks the labels for a photo (CLIP zero-shot, or a vision LLM).
pub trait ImageClassifier {
    fn describe(&self) -> String;
    /// Ranks `labels` for `image`; the profile words the prompts.
    fn classify(&mut self, image: &image::DynamicImage, labels: &[Label], profile: &Profile) -> Result<Classification>;
}

/// Confidence of the top candidate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Level {
    High,
    Medium,
    Low,
}

/// Thresholds (Parrot-Set's defaults).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct IdentifyOptions {
    /// What ranks the labels: the image model, or the language model if it sees.
    pub classifier: PhotoClassifier,
    /// The CLIP image model's id (its manifest names the text model).
    pub image_model: String,
    pub high: f32,
    pub low: f32,
    /// Medium results below this top-1 probability are checked too.
    pub medium_check_below: f32,
    /// Language of the queries and the reply.
    pub lang: Language,
    pub retrieval: RetrievalConfig,
}

impl Default for IdentifyOptions {
    fn default() -> Self {
        IdentifyOptions {
            classifier: PhotoClassifier::Clip,
            image_model: DEFAULT_IMAGE_MODEL.into(),
            high: 0.75,
            low: 0.45,
            medium_check_below: 0.65,
            lang: Language::English,
            retrieval: RetrievalConfig::default(),
        }
    }
}

impl IdentifyOptions {
    pub fn level(&self, top1: f32) -> Level {
        if top1 >= self.high {
            Level::High
        } else if top1 < self.low {
            Level::Low
        } else {
            Level::Medium
        }
    }

    /// Whether a result at this level and probability is checked against the knowledge base.
    pub fn needs_retrieval(&self, level: Level, top1: f32) -> bool {
        level == Level::Low || (level == Level::Medium && top1 < self.medium_check_below)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Candidate {
    pub name: String,
    pub zh: Option<String>,
    pub latin: Option<String>,
    pub probability: f32,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Identification {
    pub candidates: Vec<Candidate>,
    pub level: Level,
    pub visual_description: String,
    pub used_retrieval: bool,
    pub queries: Vec<String>,
    pub evidence: Vec<Citation>,
    pub decision: Option<Decision>,
    /// False when no label is plausible (what the photo shows is probably not in the knowledge base).
    pub in_knowledge_base: bool,
    pub reply: String,
    pub chat_id: Option<i64>,
    pub timings_ms: serde_json::Map<String, serde_json::Value>,
}

/// The no-labels error (no document's front matter names a label).
pub(crate) fn no_labels() -> crate::error::Error {
    crate::error::Error::InvalidInput(
        "no labels to identify against: no document's front matter names what it describes (see the label keys in kea.toml)".into(),
    )
}

/// The classifier behind photo identification.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PhotoClassifier {
    /// A CLIP image model ranks the labels (loaded once, kept).
    #[default]
    Clip,
    /// The configured language model looks at the photo.
    VisionLlm,
}

/// Photos larger than this are refused before they are decoded.
pub const MAX_PHOTO_BYTES: u64 = 50 << 20;

/// A photo to identify: a file, read here, or its bytes.
#[derive(Debug, Clone)]
pub enum Photo {
    File(PathBuf),
    Bytes(Vec<u8>),
}

impl Photo {
    fn into_bytes(self) -> Result<Vec<u8>> {
        let bytes = match self {
            Photo::Bytes(bytes) => bytes,
            Photo::File(path) => {
                let io = |e: std::io::Error| Error::io(format!("reading {}", path.display()), e);
                if std::fs::metadata(&path).map_err(io)?.len() > MAX_PHOTO_BYTES {
                    return Err(Error::InvalidInput(format!("{} is over the {} MB a photo may have", path.display(), MAX_PHOTO_BYTES >> 20)));
                }
                std::fs::read(&path).map_err(io)?
            }
        };
        if bytes.len() as u64 > MAX_PHOTO_BYTES {
            return Err(Error::InvalidInput(format!("the photo is over the {} MB a photo may have", MAX_PHOTO_BYTES >> 20)));
        }
        Ok(bytes)
    }
}

/// Photo identification, over the retriever, the conversation store, the
/// collection's labels and the image model (loaded on first use).
pub struct Identifier<'a> {
    pub(crate) retriever: crate::retrieve::Retriever<'a>,
    pub(crate) conversations: crate::chat::Conversations<'a>,
    pub(crate) subjects: &'a dyn crate::labels::Subjects,
    pub(crate) clip: &'a Mutex<Option<ClipClassifier>>,
    pub(crate) model_paths: &'a crate::model::ModelPaths,
    pub(crate) embed: &'a crate::embed::EmbedOptions,
}

impl Identifier<'_> {
    /// Identifies what `image_bytes` shows with `classifier`: a confident
    /// result quotes the label's best passage; a doubtful one is checked
    /// against merged, reranked evidence and `llm` decides (when it may
    /// write). The photo and the reply become messages of conversation
    /// `chat_id` (a new one when `None`), whose subject becomes the label.
    pub fn identify(
        &self,
        llm: &dyn Provider,
        photo: Photo,
        chat_id: Option<i64>,
        options: &IdentifyOptions,
        sink: &mut dyn FnMut(ChatEvent),
    ) -> Result<Identification> {
        let image_bytes = photo.into_bytes()?;
        match options.classifier {
            PhotoClassifier::VisionLlm => self.identify_with(&mut VisionLlmClassifier::new(llm), llm, &image_bytes, chat_id, options, sink),
            PhotoClassifier::Clip => {
                let mut slot = self.clip.lock().unwrap_or_else(|p| p.into_inner());
                if slot.as_ref().is_none_or(|clip| clip.id() != options.image_model) {
                    // The old model goes before the new one loads: never two in memory.
                    *slot = None;
                    *slot = Some(ClipClassifier::load(self.model_paths, &options.image_model, self.embed)?);
                }
                let clip = slot.as_mut().expect("loaded above");
                self.identify_with(clip, llm, &image_bytes, chat_id, options, sink)
            }
        }
    }

    /// Unloads the image model (it was removed); the next identification loads one again.
    pub fn unload_image_model(&self) {
        *self.clip.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }

    /// [`Identifier::identify`] with `classifier`.
    fn identify_with(
        &self,
        classifier: &mut dyn ImageClassifier,
        llm: &dyn Provider,
        image_bytes: &[u8],
        chat_id: Option<i64>,
        options: &IdentifyOptions,
        sink: &mut dyn FnMut(ChatEvent),
    ) -> Result<Identification> {
        let mut stages = StageTimes::default();
        let profile = self.subjects.profile();
        let words = Words::new(&profile, options.lang);
        let (c, candidates, labels) = self.classify_photo(classifier, image_bytes, &profile, &mut stages, sink)?;
        let top = candidates[0].clone();
        let level = options.level(top.probability);
        let in_kb = c.best_similarity >= c.min_similarity;
        let used_retrieval = in_kb && options.needs_retrieval(level, top.probability);
        let mut result = Identification {
            candidates: candidates.clone(),
            level: if in_kb { level } else { Level::Low },
            visual_description: c.visual_description.clone(),
            used_retrieval,
            queries: Vec::new(),
            evidence: Vec::new(),
            decision: None,
            in_knowledge_base: in_kb,
            reply: String::new(),
            chat_id,
            timings_ms: serde_json::Map::new(),
        };
        let t = Instant::now();
        sink(ChatEvent::ToolStart { tool: "retrieval" });
        let retriever = &self.retriever;
        let evidence = if !in_kb {
            result.reply = words.not_in_knowledge_base(words.name(&top));
            None
        } else if used_retrieval {
            result.queries = build_queries(&candidates, &c.visual_description, options.lang, &profile);
            Some(merged_evidence(retriever, &result.queries, &options.retrieval)?)
        } else {
            Some(label_passages(retriever, &labels, &top.name, words.zh, &options.retrieval)?)
        };
        let context = evidence.map(|hits| crate::retrieve::context::of_hits(&hits, options.retrieval.context_tokens));
        if let Some(context) = &context {
            result.evidence = context.blocks.iter().map(Citation::from).collect();
        }
        stages.end("retrieval", t, sink, json!({"queries": result.queries, "evidence": result.evidence.len()}));
        if let (true, Some(context)) = (used_retrieval && llm.writes_answers(), &context) {
            let t = Instant::now();
            sink(ChatEvent::ToolStart { tool: "decision" });
            result.decision = Some(decide(llm, &candidates, &c.visual_description, context, words.zh));
            stages.end("decision", t, sink, serde_json::to_value(&result.decision).unwrap_or_default());
        }
        if in_kb {
            result.reply = compose_reply(&result, &candidates, context.as_ref(), &words);
        }
        result.chat_id = Some(self.record_identification(chat_id, &result, &labels, &words)?);
        result.timings_ms = stages.0;
        Ok(result)
    }

    /// Decodes the photo and ranks the labels for it; the top three are the candidates.
    fn classify_photo(
        &self,
        classifier: &mut dyn ImageClassifier,
        image_bytes: &[u8],
        profile: &Profile,
        stages: &mut StageTimes,
        sink: &mut dyn FnMut(ChatEvent),
    ) -> Result<(Classification, Vec<Candidate>, Vec<Label>)> {
        let t = Instant::now();
        sink(ChatEvent::ToolStart { tool: "decode" });
        let image = image_input::decode_image(image_bytes)?;
        stages.end("decode", t, sink, json!({"width": image.width(), "height": image.height()}));
        let labels = self.subjects.labels()?;
        let t = Instant::now();
        sink(ChatEvent::ToolStart { tool: "classify" });
        if labels.is_empty() {
            return Err(no_labels());
        }
        let c = classifier.classify(&image, &labels, profile)?;
        let candidates: Vec<Candidate> = c
            .ranked
            .iter()
            .take(3)
            .map(|&(i, p)| Candidate { name: labels[i].name().to_string(), zh: labels[i].zh.clone(), latin: labels[i].latin.clone(), probability: p })
            .collect();
        stages.end("classify", t, sink, json!({"classifier": classifier.describe(), "candidates": candidates, "best_similarity": c.best_similarity}));
        Ok((c, candidates, labels))
    }

    /// Saves the photo and the reply in the conversation (created when
    /// `chat_id` is `None`) and makes the identified label its subject.
    fn record_identification(&self, chat_id: Option<i64>, result: &Identification, labels: &[Label], words: &Words) -> Result<i64> {
        let final_name = result.decision.as_ref().map_or(result.candidates[0].name.as_str(), |d| d.final_name.as_str());
        let label = labels.iter().find(|l| l.name() == final_name).filter(|_| result.in_knowledge_base);
        let name = label.map(|l| if words.zh { l.zh.as_deref().unwrap_or(l.name()) } else { l.name() });
        let title = name.map_or_else(|| words.photo().to_string(), |n| format!("{}{n}", words.photo()));
        let (id, _) = self.conversations.open(chat_id, &title)?;
        let exchange = crate::chat::conversations::Exchange {
            user: words.photo(),
            reply: &result.reply,
            citations: serde_json::to_value(&result.evidence).unwrap_or_default(),
            route: None,
            shown: None,
            subject: label.map(Label::subject),
        };
        self.conversations.record(id, &exchange)?;
        Ok(id)
    }
}

/// Stage timings of one identification, each also reported to the sink.
#[derive(Default)]
struct StageTimes(serde_json::Map<String, serde_json::Value>);

impl StageTimes {
    fn end(&mut self, name: &'static str, t: Instant, sink: &mut dyn FnMut(ChatEvent), output: serde_json::Value) {
        let ms = crate::retrieve::elapsed_ms(t);
        self.0.insert(name.into(), json!(ms));
        sink(ChatEvent::ToolEnd { tool: name, ms, output });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::retrieve::Hit;

    fn candidate(name: &str, zh: &str, p: f32) -> Candidate {
        Candidate { name: name.into(), zh: Some(zh.into()), latin: None, probability: p }
    }

    #[test]
    fn confidence_levels_and_when_to_check() {
        let o = IdentifyOptions::default();
        assert_eq!((o.level(0.8), o.level(0.6), o.level(0.3)), (Level::High, Level::Medium, Level::Low));
        assert!(!o.needs_retrieval(Level::High, 0.8));
        assert!(o.needs_retrieval(Level::Medium, 0.6));
        assert!(!o.needs_retrieval(Level::Medium, 0.7));
        assert!(o.needs_retrieval(Level::Low, 0.3));
    }

    #[test]
    fn queries_in_both_languages() {
        let c = [candidate("Budgerigar", "虎皮鹦鹉", 0.5), candidate("Sun Conure", "太阳锥尾鹦鹉", 0.4)];
        let mut profile = Profile::default();
        let generic = build_queries(&c, "green, long tail", Language::Chinese, &profile);
        assert_eq!(generic, ["虎皮鹦鹉 / 太阳锥尾鹦鹉 的区别与识别要点", "哪一种有这些特征：green, long tail", "虎皮鹦鹉 外形特征 识别"]);
        profile.collection.kind_zh = Some("鹦鹉".into());
        profile.collection.kind = Some("parrot".into());
        let zh = build_queries(&c, "green, long tail", Language::Chinese, &profile);
        assert_eq!(zh, ["虎皮鹦鹉 / 太阳锥尾鹦鹉 这些鹦鹉的区别与识别要点", "哪种鹦鹉有这些特征：green, long tail", "虎皮鹦鹉 外形特征 识别"]);
        let en = build_queries(&c[..1], "green", Language::English, &profile);
        assert_eq!(en, ["Which parrot has: green?", "Budgerigar typical features identification"]);
    }

    #[test]
    fn evidence_is_deduplicated_by_source_and_text() {
        let hit = |id: i64, source: &str, text: &str| Hit {
            chunk: crate::store::ChunkRow { id, source: source.into(), total_chunks: 1, text: text.into(), ..Default::default() },
            score: 1.0,
            dense: None,
            sparse: None,
            fused: None,
            rerank: None,
        };
        let kept = dedupe_evidence(vec![hit(1, "a.md", "Green body."), hit(1, "a.md", "Green body."), hit(2, "b.md", "Green body."), hit(3, "a.md", "Red")]);
        assert_eq!(kept.iter().map(|h| h.chunk.id).collect::<Vec<_>>(), [1, 2, 3]);
    }

    #[test]
    fn decisions_parse_or_are_rejected() {
        let c = [candidate("Budgerigar", "虎皮鹦鹉", 0.5)];
        let ok = parse_decision(r#" {"final_name": "Budgerigar", "reasoning": "green", "need_more_info": false, "followup": ""}"#, &c).unwrap();
        assert_eq!(ok.final_name, "Budgerigar");
        assert!(parse_decision(r#"{"final_name": "uncertain", "reasoning": "", "need_more_info": true, "followup": "side view"}"#, &c).is_some());
        assert!(parse_decision(r#"{"final_name": "Penguin", "reasoning": "", "need_more_info": false, "followup": ""}"#, &c).is_none());
        assert!(parse_decision("not json", &c).is_none());
    }
}
