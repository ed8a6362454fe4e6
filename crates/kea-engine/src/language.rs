//! The languages Kea names: the two-letter codes the catalog and the
//! folder sample use, whatlang's three-letter ones, and English names
//! (for the plan, the router's request for a translation, the CLI).

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
