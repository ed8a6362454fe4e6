//! What kind of answer a question asks for — a weight, a temperature, a
//! price, a size, a duration, a frequency, a count — and whether a passage
//! holds one (a number with a unit of that kind). "How heavy is X?" over
//! passages that give X's length and lifespan but no weight is the classic
//! neighbour a word match cannot tell from an answerable question; this is
//! one of the relevance decision's signals. English and Chinese; any topic.

/// The kinds of answer recognised.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum AnswerType {
    Weight,
    Temperature,
    Price,
    Size,
    Duration,
    Frequency,
    Count,
}

/// One kind: the question's cues, and the units that follow a number in an answer.
struct Kind {
    kind: AnswerType,
    /// English words or phrases (whole words) that ask for this kind.
    cues: &'static [&'static str],
    /// Chinese phrases that ask for it.
    cues_zh: &'static [&'static str],
    /// English units after a number (whole words, lower case).
    units: &'static [&'static str],
    /// Chinese units after a number.
    units_zh: &'static [&'static str],
    /// Symbols that mark an answer of this kind on their own.
    symbols: &'static [&'static str],
}

const TIME_UNITS: &[&str] = &["year", "years", "month", "months", "week", "weeks", "day", "days", "hour", "hours", "minute", "minutes", "decade", "decades"];
const TIME_UNITS_ZH: &[&str] = &["年", "个月", "月", "周", "星期", "天", "日", "小时", "分钟", "岁"];

/// In order: the first kind whose cue the question has is the one asked for.
const KINDS: &[Kind] = &[
    Kind {
        kind: AnswerType::Weight,
        cues: &["weigh", "weighs", "weight", "heavy", "heavier", "grams", "kilos", "kg"],
        cues_zh: &["多重", "体重", "几斤", "几克", "重量", "多少克", "多少斤", "几公斤"],
        units: &["g", "kg", "gram", "grams", "kilo", "kilos", "kilogram", "kilograms", "ounce", "ounces", "oz", "lb", "lbs", "pound", "pounds"],
        units_zh: &["克", "千克", "公斤", "斤"],
        symbols: &[],
    },
    Kind {
        kind: AnswerType::Temperature,
        cues: &["temperature", "degrees", "how hot", "how cold", "how warm", "too hot", "too cold"],
        cues_zh: &["温度", "多少度", "几度", "怕冷", "怕热"],
        units: &["degree", "degrees"],
        units_zh: &["度"],
        symbols: &["°", "℃", "℉", "摄氏"],
    },
    Kind {
        kind: AnswerType::Price,
        cues: &["cost", "costs", "price", "priced", "expensive", "cheap", "afford", "how much money"],
        cues_zh: &["价格", "多少钱", "价钱", "贵不贵", "贵吗", "便宜", "花多少"],
        units: &["dollar", "dollars", "euro", "euros", "usd", "eur", "gbp", "yuan", "rmb", "cents"],
        units_zh: &["元", "块", "美元", "块钱"],
        symbols: &["$", "€", "£", "¥"],
    },
    Kind {
        kind: AnswerType::Size,
        cues: &["how big", "how large", "how tall", "how small", "length", "size", "wingspan", "inches", "cm"],
        cues_zh: &["多大个", "多长", "体长", "个头", "尺寸", "多高", "身长"],
        units: &[
            "cm",
            "mm",
            "centimetre",
            "centimetres",
            "centimeter",
            "centimeters",
            "inch",
            "inches",
            "in",
            "ft",
            "feet",
            "m",
            "metre",
            "metres",
            "meter",
            "meters",
        ],
        units_zh: &["厘米", "公分", "毫米", "米"],
        symbols: &[],
    },
    Kind {
        kind: AnswerType::Frequency,
        cues: &["how often", "how many times", "how frequently"],
        cues_zh: &["多久一次", "几次", "多频繁", "隔多久", "多长时间一次"],
        units: &["times", "daily", "weekly", "monthly", "once", "twice", "every", "each"],
        units_zh: &["每天", "每周", "每日", "每月", "每隔", "天天", "一次"],
        symbols: &[],
    },
    Kind {
        kind: AnswerType::Duration,
        cues: &[
            "how long",
            "how many days",
            "how many weeks",
            "how many months",
            "how many years",
            "how many hours",
            "at what age",
            "how old",
            "lifespan",
            "life span",
        ],
        cues_zh: &["多久", "多长时间", "几天", "几个月", "几年", "寿命", "活多", "几岁", "能活"],
        units: TIME_UNITS,
        units_zh: TIME_UNITS_ZH,
        symbols: &[],
    },
    Kind {
        kind: AnswerType::Count,
        cues: &["how many"],
        cues_zh: &["多少只", "几只", "几个", "多少个", "多少种", "几种", "几枚", "几颗"],
        units: &[],
        units_zh: &["个", "只", "枚", "种", "颗", "窝"],
        symbols: &[],
    },
];

/// Number words that stand for digits in an answer.
const NUMBER_WORDS: &[&str] = &[
    "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve", "fifteen", "twenty", "thirty", "forty", "fifty",
    "sixty", "hundred", "dozen", "several", "few",
];
const CHINESE_NUMERALS: &str = "一二两三四五六七八九十百千几数半";

/// Lower-cased words and numbers of `text`, split where letters meet
/// digits (`30–40 g` → `30`, `40`, `g`; `18cm` → `18`, `cm`).
fn words(text: &str) -> Vec<String> {
    let class = |c: char| {
        if c.is_ascii_digit() {
            1
        } else if c.is_alphabetic() && !crate::segment::is_cjk(c) {
            2
        } else {
            0
        }
    };
    let mut out: Vec<String> = Vec::new();
    let mut current = String::new();
    let mut current_class = 0;
    for c in text.chars().flat_map(char::to_lowercase) {
        let this = class(c);
        if this != current_class && !current.is_empty() {
            out.push(std::mem::take(&mut current));
        }
        if this != 0 {
            current.push(c);
        }
        current_class = this;
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

fn is_number(word: &str) -> bool {
    word.starts_with(|c: char| c.is_ascii_digit()) || NUMBER_WORDS.contains(&word)
}

/// Whether `phrase` (one or more words) occurs in `words` as whole words.
fn has_phrase(words: &[String], phrase: &str) -> bool {
    let wanted: Vec<&str> = phrase.split(' ').collect();
    words.windows(wanted.len()).any(|w| w.iter().zip(&wanted).all(|(a, b)| a == b))
}

impl AnswerType {
    /// The kind of answer `question` asks for, if it asks for one of these.
    pub fn asked_by(question: &str) -> Option<AnswerType> {
        let lower = question.to_lowercase();
        let words = words(&lower);
        KINDS.iter().find(|k| k.cues.iter().any(|c| has_phrase(&words, c)) || k.cues_zh.iter().any(|c| lower.contains(c))).map(|k| k.kind)
    }

    fn kind(self) -> &'static Kind {
        KINDS.iter().find(|k| k.kind == self).unwrap_or(&KINDS[0])
    }

    /// Whether `text` holds an answer of this kind: a number followed
    /// (within three words) by one of its units, or one of its symbols; for
    /// a count any number; for a frequency its words alone ("daily").
    pub fn found_in(self, text: &str) -> bool {
        let kind = self.kind();
        let lower = text.to_lowercase();
        if kind.symbols.iter().any(|s| lower.contains(s)) {
            return true;
        }
        let words = words(&lower);
        let with_unit = |i: usize| kind.units.is_empty() || words[i + 1..].iter().take(3).any(|u| kind.units.contains(&u.as_str()));
        let english = words.iter().enumerate().any(|(i, w)| is_number(w) && with_unit(i));
        let frequency_word = self == AnswerType::Frequency && words.iter().any(|w| kind.units.contains(&w.as_str()));
        english || frequency_word || chinese_number_with_unit(&lower, kind.units_zh)
    }
}

/// A Chinese or Arabic numeral followed by one of `units` (`30到40克`, `十五年`).
fn chinese_number_with_unit(text: &str, units: &[&str]) -> bool {
    let is_numeral = |c: &char| c.is_ascii_digit() || CHINESE_NUMERALS.contains(*c);
    let chars: Vec<char> = text.chars().collect();
    (0..chars.len()).any(|i| {
        is_numeral(&chars[i]) && {
            let rest: String = chars[i..].iter().skip_while(|c| is_numeral(c) || matches!(c, '.' | '-' | '–' | '~' | '到' | '至' | ' ')).take(3).collect();
            units.iter().any(|u| rest.starts_with(u))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn questions_say_what_kind_of_answer_they_want() {
        for (question, kind) in [
            ("how heavy is a sulphur crested cockatoo", Some(AnswerType::Weight)),
            ("How much does it weigh in grams?", Some(AnswerType::Weight)),
            ("what temperature is too cold for it", Some(AnswerType::Temperature)),
            ("how much does DNA sexing cost", Some(AnswerType::Price)),
            ("how often should I clean the bowl", Some(AnswerType::Frequency)),
            ("how long do they live", Some(AnswerType::Duration)),
            ("how many eggs in one clutch", Some(AnswerType::Count)),
            ("虎皮鹦鹉有多重", Some(AnswerType::Weight)),
            ("养一只要多少钱", Some(AnswerType::Price)),
            ("玄凤能活多久", Some(AnswerType::Duration)),
            ("what do they eat", None),
            ("为什么会拔毛", None),
        ] {
            assert_eq!(AnswerType::asked_by(question), kind, "{question}");
        }
    }

    #[test]
    fn answers_are_numbers_with_a_unit_of_the_kind() {
        assert!(AnswerType::Weight.found_in("Budgies are about 18 cm long and weigh only 30–40 g."));
        assert!(!AnswerType::Weight.found_in("Both are stocky birds of about 35–42 cm with short square tails."));
        assert!(AnswerType::Size.found_in("Both are stocky birds of about 35–42 cm with short square tails."));
        assert!(AnswerType::Duration.found_in("Greys are long-lived: 40 to 60 years in captivity is normal."));
        assert!(!AnswerType::Duration.found_in("They are calm, observant parrots."));
        assert!(AnswerType::Temperature.found_in("Keep the room between 18 and 26 °C."));
        assert!(!AnswerType::Price.found_in("A large cage and daily fresh produce suit them."));
        assert!(AnswerType::Price.found_in("A hand-reared bird costs $1,500 or more."));
        assert!(AnswerType::Frequency.found_in("Clean food and water dishes every day."));
        assert!(AnswerType::Count.found_in("The hen lays 4 to 6 eggs."));
        assert!(AnswerType::Weight.found_in("体重约30到40克。"));
        assert!(AnswerType::Duration.found_in("一般能活十五到二十年。"));
        assert!(!AnswerType::Duration.found_in("它们性格温和。"));
    }
}
