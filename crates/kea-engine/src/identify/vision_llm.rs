//! The second classifier: a vision LLM over the OpenAI-compatible provider.
//! The photo goes as a data URL (downscaled PNG); the model answers JSON
//! `{top_candidates, visual_features, explanation, confidence_level}` as
//! Parrot-Set's classifier does, and names are matched back to the labels.

use base64::Engine as _;
use image::DynamicImage;
use kea_llm::{json::extract_object, Message, Provider, Request, Role};
use serde_json::json;

use super::clip::Classification;
use super::ImageClassifier;
use crate::error::{Error, Result};
use crate::labels::Label;
use crate::profile::Profile;

/// The longest side of the image sent to the model.
const MAX_SIDE: u32 = 768;

pub struct VisionLlmClassifier<'a> {
    llm: &'a dyn Provider,
}

impl<'a> VisionLlmClassifier<'a> {
    pub fn new(llm: &'a dyn Provider) -> Self {
        VisionLlmClassifier { llm }
    }
}

/// The image as a PNG data URL, downscaled to at most `MAX_SIDE` pixels.
pub fn data_url(image: &DynamicImage) -> Result<String> {
    let small = if image.width().max(image.height()) > MAX_SIDE { image.thumbnail(MAX_SIDE, MAX_SIDE) } else { image.clone() };
    let mut png = std::io::Cursor::new(Vec::new());
    small.write_to(&mut png, image::ImageFormat::Png).map_err(|e| Error::InvalidInput(format!("cannot encode the image: {e}")))?;
    Ok(format!("data:image/png;base64,{}", base64::engine::general_purpose::STANDARD.encode(png.into_inner())))
}

/// Maps the model's answer onto the labels: named candidates become
/// probabilities (scores normalised); unknown names are dropped.
pub fn parse_answer(text: &str, labels: &[Label]) -> Option<Classification> {
    let v = extract_object(text)?;
    let mut scored: Vec<(usize, f32)> = Vec::new();
    for c in v["top_candidates"].as_array()? {
        let name = c["name"].as_str()?;
        let score = c["score"].as_f64().unwrap_or(0.0).max(0.0) as f32;
        if let Some(i) = labels.iter().position(|l| l.is_named(name)) {
            if !scored.iter().any(|(j, _)| *j == i) {
                scored.push((i, score));
            }
        }
    }
    let total: f32 = scored.iter().map(|s| s.1).sum();
    let mut ranked: Vec<(usize, f32)> = scored.into_iter().map(|(i, s)| (i, if total > 0.0 { s / total } else { 0.0 })).collect();
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1));
    let plausible = !ranked.is_empty();
    let features = &v["visual_features"];
    let description = features["description"]
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(|| ["colors", "shape", "patterns"].iter().filter_map(|k| features[k].as_str()).collect::<Vec<_>>().join(", "));
    Some(Classification {
        ranked: if plausible { ranked } else { vec![(0, 0.0)] },
        best_similarity: if plausible { 1.0 } else { 0.0 },
        min_similarity: 0.5,
        visual_description: description,
    })
}

impl ImageClassifier for VisionLlmClassifier<'_> {
    fn describe(&self) -> String {
        format!("vision LLM ({})", self.llm.describe())
    }

    fn classify(&mut self, image: &DynamicImage, labels: &[Label], profile: &Profile) -> Result<Classification> {
        if labels.is_empty() {
            return Err(super::no_labels());
        }
        let names: Vec<String> = labels.iter().map(|l| format!("{}{}", l.name(), l.latin.as_deref().map(|x| format!(" ({x})")).unwrap_or_default())).collect();
        let schema = json!({"type": "object", "properties": {
            "top_candidates": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}, "score": {"type": "number"}}, "required": ["name", "score"]}, "maxItems": 3},
            "visual_features": {"type": "object", "properties": {"description": {"type": "string"}, "colors": {"type": "string"}, "shape": {"type": "string"}, "patterns": {"type": "string"}}},
            "explanation": {"type": "string"},
            "confidence_level": {"type": "string", "enum": ["High", "Medium", "Low"]}
        }, "required": ["top_candidates", "visual_features", "explanation", "confidence_level"]});
        let kinds = profile.kind(crate::language::Language::English).map_or_else(|| "candidates".to_string(), |k| format!("{k} candidates"));
        let prompt = format!(
            "Which of these {kinds} is in the photo? Candidates: {}.\nAnswer JSON: top_candidates (up to 3, name from the list, score 0-1), visual_features (description, colors, shape, patterns), explanation, confidence_level (High, Medium or Low). If none fits, return an empty top_candidates.",
            names.join("; ")
        );
        let mut request = Request::new(vec![Message::new(Role::User, prompt).with_image(data_url(image)?)]);
        request.json_schema = Some(schema);
        request.max_tokens = 400;
        let done = self.llm.complete(&request, &mut |_| {}, &|| false).map_err(|e| Error::Llm(format!("the vision model failed: {e}")))?;
        parse_answer(&done.text, labels)
            .ok_or_else(|| Error::Llm(format!("the vision model's answer is not usable JSON: {:?}", done.text.chars().take(160).collect::<String>())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn label(en: &str, zh: &str) -> Label {
        Label { zh: Some(zh.into()), en: Some(en.into()), latin: None, aliases: Vec::new(), sources: Vec::new() }
    }

    #[test]
    fn answers_map_back_to_labels() {
        let labels = [label("Budgerigar", "虎皮鹦鹉"), label("Cockatiel", "玄凤鹦鹉")];
        let text = r#"{"top_candidates": [{"name": "玄凤鹦鹉", "score": 0.6}, {"name": "Budgerigar", "score": 0.2}, {"name": "Penguin", "score": 0.2}],
            "visual_features": {"colors": "grey", "shape": "yellow crest"}, "explanation": "crest", "confidence_level": "Medium"}"#;
        let c = parse_answer(text, &labels).unwrap();
        assert_eq!(c.ranked[0].0, 1);
        assert!((c.ranked[0].1 - 0.75).abs() < 1e-6, "scores normalised over known names");
        assert_eq!(c.visual_description, "grey, yellow crest");
        let none = parse_answer(r#"{"top_candidates": [], "visual_features": {}, "explanation": "", "confidence_level": "Low"}"#, &labels).unwrap();
        assert!(none.best_similarity < none.min_similarity, "no plausible label");
        assert!(parse_answer("I think it's a parrot", &labels).is_none());
    }

    #[test]
    fn images_travel_as_small_png_data_urls() {
        let big = DynamicImage::new_rgb8(2000, 1000);
        let url = data_url(&big).unwrap();
        assert!(url.starts_with("data:image/png;base64,"));
        let bytes = base64::engine::general_purpose::STANDARD.decode(&url[22..]).unwrap();
        let back = image::load_from_memory(&bytes).unwrap();
        assert_eq!((back.width(), back.height()), (768, 384));
    }
}
