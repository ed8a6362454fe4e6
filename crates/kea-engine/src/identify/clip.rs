//! Zero-shot classification with a CLIP model pair through fastembed: the
//! image embedding against the text embeddings of label prompts (cached per
//! label set), cosine × logit scale → softmax. A visual description comes
//! from attribute prompts whose winner is clear. The two models load through
//! `model::onnx` from installed model folders.

use fastembed::ImageEmbedding;
use image::DynamicImage;

use super::ImageClassifier;
use crate::embed::{EmbedOptions, Embedder, OnnxEmbedder};
use crate::error::{Error, Result};
use crate::labels::Label;
pub use crate::model::DEFAULT_IMAGE_MODEL;
use crate::model::{onnx, ModelPaths};
use crate::profile::Profile;
use crate::vectors::cosine;

/// Label probabilities for one image, best first.
#[derive(Debug, Clone)]
pub struct Classification {
    pub ranked: Vec<(usize, f32)>,
    /// The best raw similarity (to compare with the model's floor).
    pub best_similarity: f32,
    pub min_similarity: f32,
    pub visual_description: String,
}

/// The label prompt when the model's manifest gives none; `{kind}` is the
/// profile's kind of thing (the clause is dropped when it names none).
const DEFAULT_PROMPT: &str = "a photo of a {en} ({latin}), a kind of {kind}";

/// Per attribute group, the embedding of each phrase.
type AttributeVectors = Vec<Vec<Vec<f32>>>;

pub struct ClipClassifier {
    /// The image model's id.
    id: String,
    vision: ImageEmbedding,
    text: OnnxEmbedder,
    prompt: Option<String>,
    logit_scale: f32,
    min_similarity: f32,
    /// (label prompts, their embeddings): recomputed only when labels change.
    cache: Option<(Vec<String>, Vec<Vec<f32>>)>,
    /// (attribute phrases, their embeddings): recomputed when the profile changes.
    attributes: Option<(Vec<Vec<String>>, AttributeVectors)>,
}

impl ClipClassifier {
    /// The image model's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Loads the image model `id` and the text model its manifest names.
    pub fn load(paths: &ModelPaths, id: &str, options: &EmbedOptions) -> Result<ClipClassifier> {
        let image = onnx::image_model(paths, id)?;
        let text = OnnxEmbedder::load(paths, &image.text_model, options)?;
        Ok(ClipClassifier {
            id: id.to_string(),
            vision: image.session,
            text,
            prompt: image.prompt,
            logit_scale: image.logit_scale,
            min_similarity: image.min_similarity,
            cache: None,
            attributes: None,
        })
    }

    /// The label prompt template with the profile's kind filled in.
    fn template(&self, profile: &Profile) -> String {
        let template = self.prompt.as_deref().unwrap_or(DEFAULT_PROMPT);
        match profile.kind(crate::language::Language::English) {
            Some(kind) => template.replace("{kind}", kind),
            None => template.replace(", a kind of {kind}", "").replace("{kind}", "thing"),
        }
    }

    fn attribute_vectors(&mut self, groups: &[Vec<String>]) -> Result<AttributeVectors> {
        if let Some((cached, vectors)) = &self.attributes {
            if cached == groups {
                return Ok(vectors.clone());
            }
        }
        let vectors = groups.iter().map(|phrases| self.text.embed_passages(phrases)).collect::<Result<Vec<_>>>()?;
        self.attributes = Some((groups.to_vec(), vectors.clone()));
        Ok(vectors)
    }

    /// The phrases CLIP is sure of (one per attribute group), shortened.
    fn describe_image(&mut self, image_vector: &[f32], profile: &Profile) -> Result<String> {
        let groups: Vec<Vec<String>> = profile
            .identify
            .attributes
            .iter()
            .map(|g| g.iter().map(|p| p.replace("{kind}", profile.kind(crate::language::Language::English).unwrap_or("thing"))).collect())
            .collect();
        let vectors = self.attribute_vectors(&groups)?;
        let mut description = Vec::new();
        for (phrases, vectors) in groups.iter().zip(&vectors) {
            let sims: Vec<f32> = vectors.iter().map(|v| cosine(image_vector, v)).collect();
            let probs = self.softmax(&sims);
            if let Some((i, p)) = probs.iter().enumerate().max_by(|a, b| a.1.total_cmp(b.1)) {
                if *p >= 0.6 {
                    description.push(shorten(&phrases[i], profile.kind(crate::language::Language::English)));
                }
            }
        }
        Ok(description.join(", "))
    }

    fn label_vectors(&mut self, labels: &[Label], profile: &Profile) -> Result<Vec<Vec<f32>>> {
        let template = self.template(profile);
        let prompts: Vec<String> = labels.iter().map(|l| l.prompt(&template)).collect();
        if let Some((cached, vectors)) = &self.cache {
            if *cached == prompts {
                return Ok(vectors.clone());
            }
        }
        let vectors = self.text.embed_passages(&prompts)?;
        self.cache = Some((prompts, vectors.clone()));
        Ok(vectors)
    }

    fn softmax(&self, similarities: &[f32]) -> Vec<f32> {
        let logits: Vec<f32> = similarities.iter().map(|s| s * self.logit_scale).collect();
        let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let exp: Vec<f32> = logits.iter().map(|l| (l - max).exp()).collect();
        let sum: f32 = exp.iter().sum();
        exp.into_iter().map(|e| e / sum).collect()
    }
}

impl ImageClassifier for ClipClassifier {
    fn describe(&self) -> String {
        format!("CLIP zero-shot ({})", self.text.model_id())
    }

    fn classify(&mut self, image: &DynamicImage, labels: &[Label], profile: &Profile) -> Result<Classification> {
        if labels.is_empty() {
            return Err(super::no_labels());
        }
        let image_vector = self
            .vision
            .embed_images(vec![image.clone()])
            .map_err(|e| Error::Embedding(format!("image embedding failed: {e}")))?
            .pop()
            .ok_or_else(|| Error::Embedding("the image model returned nothing".into()))?;
        let label_vectors = self.label_vectors(labels, profile)?;
        let similarities: Vec<f32> = label_vectors.iter().map(|v| cosine(&image_vector, v)).collect();
        let best_similarity = similarities.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let mut ranked: Vec<(usize, f32)> = self.softmax(&similarities).into_iter().enumerate().collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1));
        let visual_description = self.describe_image(&image_vector, profile)?;
        Ok(Classification { ranked, best_similarity, min_similarity: self.min_similarity, visual_description })
    }
}

/// "a parrot with a crest" → "a crest"; "a green parrot" → "green".
fn shorten(phrase: &str, kind: Option<&str>) -> String {
    let mut short = phrase.trim();
    for article in ["a ", "an "] {
        short = short.strip_prefix(article).unwrap_or(short);
    }
    let kind = kind.unwrap_or("thing");
    short = short.strip_prefix(kind).map_or(short, |s| s.trim_start().strip_prefix("with ").unwrap_or(s).trim_start());
    short.strip_suffix(kind).map_or(short, str::trim_end).to_string()
}

#[cfg(test)]
mod tests {
    #[test]
    fn attribute_phrases_are_shortened_for_the_description() {
        assert_eq!(super::shorten("a parrot with a crest", Some("parrot")), "a crest");
        assert_eq!(super::shorten("a green parrot", Some("parrot")), "green");
        assert_eq!(super::shorten("a green thing", None), "green");
        assert_eq!(super::shorten("striped cap", Some("mushroom")), "striped cap");
    }
}
