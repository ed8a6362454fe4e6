//! IPC shapes for photo identification and the language model's decision over
//! its evidence.

use kea_engine::identify::{Decision, Identification};
use serde::Serialize;
use ts_rs::TS;

use super::*;

/// The language model's decision over the evidence for a doubtful photo.
#[derive(Debug, Clone, Serialize, TS)]
pub struct DecisionDto {
    pub final_name: String,
    pub reasoning: String,
    pub followup: String,
}

impl From<&Decision> for DecisionDto {
    fn from(d: &Decision) -> Self {
        DecisionDto { final_name: d.final_name.clone(), reasoning: d.reasoning.clone(), followup: d.followup.clone() }
    }
}

#[derive(Debug, Clone, Serialize, TS)]
pub struct IdentificationDto {
    /// `[name, Chinese name, probability]`, best first.
    pub candidates: Vec<(String, Option<String>, f32)>,
    /// `High`, `Medium` or `Low`.
    pub level: String,
    pub visual_description: String,
    pub used_retrieval: bool,
    pub evidence: Vec<CitationDto>,
    pub decision: Option<DecisionDto>,
    pub reply: String,
    /// The conversation the photo and reply were saved in.
    #[ts(type = "number | null")]
    pub chat_id: Option<i64>,
}

impl From<&Identification> for IdentificationDto {
    fn from(r: &Identification) -> Self {
        IdentificationDto {
            candidates: r.candidates.iter().map(|c| (c.name.clone(), c.zh.clone(), c.probability)).collect(),
            level: format!("{:?}", r.level),
            visual_description: r.visual_description.clone(),
            used_retrieval: r.used_retrieval,
            evidence: r.evidence.iter().map(CitationDto::from).collect(),
            decision: r.decision.as_ref().map(DecisionDto::from),
            reply: r.reply.clone(),
            chat_id: r.chat_id,
        }
    }
}
