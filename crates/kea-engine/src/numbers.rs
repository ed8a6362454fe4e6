//! The numbers a text states, as plain decimal strings, whether written in
//! digits of any script (`1.2`, `45`, `1,000`, full-width `４５`,
//! Arabic-Indic `٤٥`), in Chinese numerals (十五 → `15`, 两 → `2`,
//! 一百二十 → `120`) or in English words (`twenty-five` → `25`). A lone 一
//! and "one" are not read as numbers: they are mostly articles (一只, 一般,
//! "the one with"), and neither are words that only look like numerals
//! (十分 "very", 万一 "in case", 千万 "by all means"). A run of numerals
//! too long to be a quantity (a code written 九九九…) is read digit by digit
//! as its string, never multiplied out. Used to check that a written answer
//! states no number its passages lack, across the two languages, and that
//! an evaluated answer holds the numbers of its evidence.

use std::collections::BTreeSet;

/// Every number `text` states, digits, Chinese numerals and English number words alike.
pub fn numbers_in(text: &str) -> BTreeSet<String> {
    let mut found = digit_numbers(text);
    found.extend(chinese_numbers(text));
    found.extend(word_numbers(text));
    found
}

/// The value of a decimal digit of any script Unicode gives a run of ten
/// (ASCII, full-width, Arabic-Indic, Devanagari, Thai, …), else `None`.
fn decimal_digit(c: char) -> Option<char> {
    const ZEROS: [u32; 19] =
        [0x30, 0x660, 0x6F0, 0x7C0, 0x966, 0x9E6, 0xA66, 0xAE6, 0xB66, 0xBE6, 0xC66, 0xCE6, 0xD66, 0xE50, 0xED0, 0xF20, 0x1040, 0x17E0, 0xFF10];
    let code = c as u32;
    ZEROS.iter().find(|&&zero| (zero..zero + 10).contains(&code)).and_then(|&zero| char::from_digit(code - zero, 10))
}

/// The numbers written in digits (of any script, read as ASCII ones),
/// thousands separators dropped (a full-width `，` only before three
/// digits), a trailing `.0` (or `.`) cut and a Chinese unit after the
/// digits multiplied in, so `1,000`, `１，０００`, `1000.0` and `0.1万` are all `1000`.
pub fn digit_numbers(text: &str) -> BTreeSet<String> {
    let chars = ascii_digits(text);
    let mut found = BTreeSet::new();
    let mut i = 0;
    while i < chars.len() {
        if !chars[i].is_ascii_digit() {
            i += 1;
            continue;
        }
        let mut number = String::new();
        while i < chars.len() {
            let c = chars[i];
            let joins = (c == '.' || c == ',') && chars.get(i + 1).is_some_and(char::is_ascii_digit);
            if c.is_ascii_digit() || (c == '.' && joins) {
                number.push(c);
            } else if !(c == ',' && joins) {
                break;
            }
            i += 1;
        }
        found.insert(match chars.get(i).and_then(|&c| unit_of(c)) {
            Some(unit) => times(&number, unit),
            None => plain(&number),
        });
    }
    found
}

/// `text`'s characters with every decimal digit as an ASCII one and a
/// full-width comma between thousands as a comma.
fn ascii_digits(text: &str) -> Vec<char> {
    let mut chars: Vec<char> = text.chars().map(|c| decimal_digit(c).unwrap_or(c)).collect();
    for i in 0..chars.len() {
        let thousands = |i: usize| (1..=3).all(|k| chars.get(i + k).is_some_and(char::is_ascii_digit)) && !chars.get(i + 4).is_some_and(char::is_ascii_digit);
        if chars[i] == '，' && i > 0 && chars[i - 1].is_ascii_digit() && thousands(i) {
            chars[i] = ',';
        }
    }
    chars
}

/// `number` (digits, maybe a decimal point) times `unit`, as a plain decimal.
fn times(number: &str, unit: u64) -> String {
    match number.parse::<f64>() {
        Ok(value) if number.len() <= 15 => {
            let product = value * unit as f64;
            if product.fract() == 0.0 && product < 1e15 {
                format!("{product:.0}")
            } else {
                plain(&format!("{product}"))
            }
        }
        _ => plain(number),
    }
}

fn plain(number: &str) -> String {
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    let whole = whole.trim_start_matches('0');
    let whole = if whole.is_empty() { "0" } else { whole };
    match fraction.trim_end_matches('0') {
        "" => whole.to_string(),
        fraction => format!("{whole}.{fraction}"),
    }
}

fn digit_of(c: char) -> Option<u64> {
    "零一二三四五六七八九".chars().position(|d| d == c).map(|p| p as u64).or((c == '两').then_some(2))
}

fn unit_of(c: char) -> Option<u64> {
    match c {
        '十' => Some(10),
        '百' => Some(100),
        '千' => Some(1000),
        '万' => Some(10_000),
        _ => None,
    }
}

/// Runs of numerals that are words, not numbers: 万一 (in case), 千万 (by
/// all means), 一一 (one by one); 十 before 分 (十分, very) is one too,
/// unless 钟 follows (十分钟, ten minutes).
const NOT_NUMBERS: [&str; 3] = ["万一", "千万", "一一"];

/// The numbers written in Chinese numerals (see the module docs).
pub fn chinese_numbers(text: &str) -> BTreeSet<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut found = BTreeSet::new();
    let mut start = 0;
    while start < chars.len() {
        if !is_numeral(chars[start]) {
            start += 1;
            continue;
        }
        let end = (start..chars.len()).find(|&i| !is_numeral(chars[i])).unwrap_or(chars.len());
        let run: String = chars[start..end].iter().collect();
        let very = run == "十" && chars.get(end) == Some(&'分') && chars.get(end + 1) != Some(&'钟');
        // A unit right after digits (3万) was read with them (`digit_numbers`).
        let after_digits = start > 0 && decimal_digit(chars[start - 1]).is_some() && unit_of(chars[start]).is_some();
        if run != "一" && !very && !after_digits && !NOT_NUMBERS.contains(&run.as_str()) {
            found.extend(chinese_value(&run));
        }
        start = end;
    }
    found
}

fn is_numeral(c: char) -> bool {
    digit_of(c).is_some() || unit_of(c).is_some()
}

/// The value of a run of Chinese numerals: 十五 = 15, 二十 = 20, 一百零五 = 105,
/// 三万五千 = 35000; digits alone read as written (二〇 is not handled: 二零 =
/// 20), whatever their length. `None` for a run whose units would multiply
/// past what a number holds (no quantity).
fn chinese_value(run: &str) -> Option<String> {
    let has_unit = run.chars().any(|c| unit_of(c).is_some());
    if !has_unit {
        return Some(plain(&run.chars().filter_map(digit_of).map(|d| char::from(b'0' + d as u8)).collect::<String>()));
    }
    let (mut total, mut section, mut digit) = (0u64, 0u64, None::<u64>);
    for c in run.chars() {
        if let Some(d) = digit_of(c) {
            digit = Some(d);
        } else if let Some(unit) = unit_of(c) {
            if unit == 10_000 {
                total = total.checked_add(section.checked_add(digit.unwrap_or(0))?.max(1).checked_mul(unit)?)?;
                section = 0;
            } else {
                section = section.checked_add(digit.unwrap_or(1).checked_mul(unit)?)?;
            }
            digit = None;
        }
    }
    Some(total.checked_add(section)?.checked_add(digit.unwrap_or(0))?.to_string())
}

/// English number words below a hundred (not "one", mostly an article).
const NUMBER_WORDS: [(&str, u64); 26] = [
    ("two", 2),
    ("three", 3),
    ("four", 4),
    ("five", 5),
    ("six", 6),
    ("seven", 7),
    ("eight", 8),
    ("nine", 9),
    ("ten", 10),
    ("eleven", 11),
    ("twelve", 12),
    ("thirteen", 13),
    ("fourteen", 14),
    ("fifteen", 15),
    ("sixteen", 16),
    ("seventeen", 17),
    ("eighteen", 18),
    ("nineteen", 19),
    ("twenty", 20),
    ("thirty", 30),
    ("forty", 40),
    ("fifty", 50),
    ("sixty", 60),
    ("seventy", 70),
    ("eighty", 80),
    ("ninety", 90),
];

/// The numbers written as English words: `seven`, `twenty-five`, `forty two`.
pub fn word_numbers(text: &str) -> BTreeSet<String> {
    let value = |word: &str| NUMBER_WORDS.iter().find(|(w, _)| word.eq_ignore_ascii_case(w)).map(|&(_, v)| v);
    let words: Vec<&str> = text.split(|c: char| !c.is_ascii_alphabetic()).filter(|w| !w.is_empty()).collect();
    let mut found = BTreeSet::new();
    let mut i = 0;
    while i < words.len() {
        let Some(mut number) = value(words[i]) else {
            i += 1;
            continue;
        };
        let unit = words.get(i + 1).and_then(|w| if w.eq_ignore_ascii_case("one") { Some(1) } else { value(w) });
        let unit = unit.filter(|&u| u < 10 && number >= 20 && number % 10 == 0);
        number += unit.unwrap_or(0);
        i += 1 + usize::from(unit.is_some());
        found.insert(number.to_string());
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(items: &[&str]) -> BTreeSet<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn digits_are_read_with_separators_and_decimals() {
        assert_eq!(digit_numbers("It weighs 1.2 kg, holds 45 litres and costs 1,000 yuan (2.50 each)."), set(&["1.2", "45", "1000", "2.5"]));
        assert_eq!(digit_numbers("Version 3. Then 007 and 0."), set(&["3", "7", "0"]));
    }

    #[test]
    fn chinese_numerals_are_read_as_their_values_and_a_lone_yi_is_not_a_number() {
        assert_eq!(chinese_numbers("寿命约十五到二十年，一般一只，两次，一百零五天，三万五千元"), set(&["15", "20", "2", "105", "35000"]));
        assert_eq!(numbers_in("容量为45升，重十二公斤"), set(&["45", "12"]));
        assert_eq!(chinese_numbers("它十分聪明，万一走丢，千万别急"), set(&[]));
        assert_eq!(chinese_numbers("等十分钟"), set(&["10"]));
        assert_eq!(numbers_in("3万元，0.5万元，１，０００元，1，2"), set(&["30000", "5000", "1000", "1", "2"]));
    }

    #[test]
    fn a_long_run_of_numerals_is_read_as_written_and_never_overflows() {
        let code = "九".repeat(40);
        assert_eq!(chinese_numbers(&format!("出厂编号{code}号")), set(&[&"9".repeat(40)]));
        assert_eq!(chinese_numbers("九千九百九十九万九千九百九十九"), set(&["99999999"]));
        for run in
            ["万万万万万万万万万万万万万万万万万万万万", "十十十十十十十十十十十十十十十十十十十十十十十", "零零零零零", "九千九百九十九万".repeat(8).as_str()]
        {
            let _ = numbers_in(run);
        }
    }

    #[test]
    fn digits_of_other_scripts_and_number_words_are_numbers_too() {
        assert_eq!(digit_numbers("１２３ and ٤٥ and ४२"), set(&["123", "45", "42"]));
        assert_eq!(word_numbers("Twenty-five cups, two mugs, forty two days, one nest, twenty-one days"), set(&["25", "2", "42", "21"]));
        assert_eq!(numbers_in("seven"), numbers_in("7"));
        assert_eq!(numbers_in("七"), numbers_in("seven"));
    }
}
