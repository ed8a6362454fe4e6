//! The languages Kea names. [`Language`]: the language of a question or a
//! passage as retrieval, answers, labels and identification tell them apart
//! (Chinese or English, from the script). For the open set of languages the
//! folder sample, the catalog and the setup plan report: two-letter codes,
//! whatlang's three-letter ones, and English names.

use serde::{Deserialize, Serialize};

/// The language of a question or a passage: Chinese when Chinese characters
/// outweigh Latin letters, else English (the engine's two languages).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, Default)]
pub enum Language {
    #[serde(rename = "zh")]
    Chinese,
    #[default]
    #[serde(rename = "en")]
    English,
}

impl Language {
    /// The main language of a passage: Chinese when Chinese characters
    /// outweigh Latin letters (a character carries about a word's meaning).
    pub fn of_text(text: &str) -> Language {
        let (mut cjk, mut latin) = (0usize, 0usize);
        for c in text.chars() {
            if crate::segment::is_cjk(c) {
                cjk += 1;
            } else if c.is_ascii_alphabetic() {
                latin += 1;
            }
        }
        if cjk * 3 >= latin && cjk > 0 {
            Language::Chinese
        } else {
            Language::English
        }
    }

    /// The language of a question: Chinese as soon as it has a Chinese character.
    pub fn of_query(query: &str) -> Language {
        if query.chars().any(crate::segment::is_cjk) {
            Language::Chinese
        } else {
            Language::English
        }
    }

    /// The two-letter code (`zh`, `en`), as manifests and settings write it.
    pub fn code(self) -> &'static str {
        match self {
            Language::Chinese => "zh",
            Language::English => "en",
        }
    }

    /// The language of a two-letter code, if it is one of these.
    pub fn from_code(code: &str) -> Option<Language> {
        [Language::Chinese, Language::English].into_iter().find(|l| l.code() == code)
    }

    /// The English name ("Chinese"), for prompts.
    pub fn name(self) -> &'static str {
        name(self.code())
    }
}

/// Common languages: whatlang's code, the two-letter one (the catalog's), the English name.
const LANGUAGES: [(&str, &str, &str); 18] = [
    ("eng", "en", "English"),
    ("cmn", "zh", "Chinese"),
    ("jpn", "ja", "Japanese"),
    ("kor", "ko", "Korean"),
    ("fra", "fr", "French"),
    ("deu", "de", "German"),
    ("spa", "es", "Spanish"),
    ("por", "pt", "Portuguese"),
    ("ita", "it", "Italian"),
    ("nld", "nl", "Dutch"),
    ("rus", "ru", "Russian"),
    ("ukr", "uk", "Ukrainian"),
    ("pol", "pl", "Polish"),
    ("tur", "tr", "Turkish"),
    ("ara", "ar", "Arabic"),
    ("hin", "hi", "Hindi"),
    ("vie", "vi", "Vietnamese"),
    ("tha", "th", "Thai"),
];

/// The two-letter code of a common language, else whatlang's three letters.
pub fn code_of(lang: whatlang::Lang) -> String {
    let code = lang.code();
    LANGUAGES.iter().find(|(three, ..)| *three == code).map_or(code, |(_, two, _)| two).to_string()
}

/// A language's English name, for the common ones (else its code).
pub fn name(code: &str) -> &str {
    LANGUAGES.iter().find(|(_, two, _)| *two == code).map_or(code, |(.., name)| name)
}
