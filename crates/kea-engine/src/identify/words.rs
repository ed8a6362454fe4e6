//! The reply's wording in the user's language: the profile's kind of thing,
//! candidate names, the not-in-the-knowledge-base line and the reply itself.

use super::{Candidate, Identification};
use crate::language::Language;
use crate::profile::Profile;

/// The kind-of-thing words of the profile, in the reply's language.
pub(super) struct Words {
    pub(super) zh: bool,
    pub(super) kind: Option<String>,
}

impl Words {
    pub(super) fn new(profile: &Profile, lang: Language) -> Words {
        Words { zh: lang == Language::Chinese, kind: profile.kind(lang).map(str::to_string) }
    }

    pub(super) fn name<'a>(&self, c: &'a Candidate) -> &'a str {
        if self.zh {
            c.zh.as_deref().unwrap_or(&c.name)
        } else {
            &c.name
        }
    }

    pub(super) fn not_in_knowledge_base(&self, closest: &str) -> String {
        match (self.zh, &self.kind) {
            (true, Some(k)) => format!("照片中的{k}很可能不在你的知识库里（最接近的是{closest}，但相似度太低）。"),
            (true, None) => format!("照片中的对象很可能不在你的知识库里（最接近的是{closest}，但相似度太低）。"),
            (false, Some(k)) => format!("The {k} in this photo is probably not in your knowledge base (the closest, {closest}, is not a plausible match)."),
            (false, None) => format!("What this photo shows is probably not in your knowledge base (the closest, {closest}, is not a plausible match)."),
        }
    }

    pub(super) fn photo(&self) -> &'static str {
        if self.zh {
            "【照片】"
        } else {
            "[Photo]"
        }
    }
}

pub(super) fn percent(p: f32) -> String {
    format!("{:.0}%", p * 100.0)
}

/// The reply: the result line, then the decision's reasoning or a quoted,
/// cited passage about the chosen label.
pub(super) fn compose_reply(result: &Identification, candidates: &[Candidate], context: Option<&crate::retrieve::Context>, words: &Words) -> String {
    let top = &candidates[0];
    let final_candidate = result.decision.as_ref().and_then(|d| candidates.iter().find(|c| c.name == d.final_name)).unwrap_or(top);
    let level = format!("{:?}", result.level);
    let mut reply = match (&result.decision, words.zh) {
        (Some(d), true) if d.final_name == "uncertain" => format!("识别结果不确定（{level}）。"),
        (Some(d), false) if d.final_name == "uncertain" => format!("Result uncertain ({level})."),
        (None, true) if result.used_retrieval => {
            let list: Vec<String> = candidates.iter().map(|c| format!("{} {}", words.name(c), percent(c.probability))).collect();
            format!("识别结果不确定（{level}）：{}。请对照下面的资料判断。", list.join("，"))
        }
        (None, false) if result.used_retrieval => {
            let list: Vec<String> = candidates.iter().map(|c| format!("{} {}", words.name(c), percent(c.probability))).collect();
            format!("Result uncertain ({level}): {}. Compare the passages below to decide.", list.join(", "))
        }
        (_, true) => format!("识别结果：{}（{}，置信度 {level}）。", words.name(final_candidate), percent(final_candidate.probability)),
        (_, false) => format!("Result: {} ({}, confidence {level}).", words.name(final_candidate), percent(final_candidate.probability)),
    };
    match &result.decision {
        Some(d) => {
            reply.push(' ');
            reply.push_str(&d.reasoning);
        }
        None => {
            let question = format!("{} {}", words.name(final_candidate), final_candidate.zh.as_deref().unwrap_or_default());
            let blocks = context.map(|c| c.blocks.as_slice()).unwrap_or_default();
            let asked = crate::chat::Question::new(if words.zh { &question } else { words.name(final_candidate) }, None);
            if let Some(quote) = crate::chat::extractive::extract_answer(&asked, blocks) {
                reply.push_str(if words.zh { "" } else { " " });
                reply.push_str(&quote.text);
            }
        }
    }
    reply
}
