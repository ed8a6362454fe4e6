//! The numbers a text states, as plain decimal strings, whether written in
//! digits (`1.2`, `45`, `1,000`) or in Chinese numerals (十五 → `15`,
//! 两 → `2`, 一百二十 → `120`). A lone 一 is not read as a number: it is
//! mostly an article (一只, 一般). Used to check that a written answer
//! states no number its passages lack, across the two languages, and that
//! an evaluated answer holds the numbers of its evidence.

use std::collections::BTreeSet;

/// Every number `text` states, digits and Chinese numerals alike.
pub fn numbers_in(text: &str) -> BTreeSet<String> {
    let mut found = digit_numbers(text);
    found.extend(chinese_numbers(text));
    found
}

/// The numbers written in digits, thousands separators dropped and a
/// trailing `.0` (or `.`) cut, so `1,000` and `1000.0` are both `1000`.
pub fn digit_numbers(text: &str) -> BTreeSet<String> {
    let chars: Vec<char> = text.chars().collect();
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
        found.insert(plain(&number));
    }
    found
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

/// The numbers written in Chinese numerals (see the module docs).
pub fn chinese_numbers(text: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut run = String::new();
    for c in text.chars().chain(std::iter::once(' ')) {
        if digit_of(c).is_some() || unit_of(c).is_some() {
            run.push(c);
            continue;
        }
        if !run.is_empty() && run != "一" {
            found.insert(chinese_value(&run).to_string());
        }
        run.clear();
    }
    found
}

/// The value of a run of Chinese numerals: 十五 = 15, 二十 = 20, 一百零五 = 105,
/// 三万五千 = 35000; digits alone read as written (二〇 is not handled: 二零 = 20).
fn chinese_value(run: &str) -> u64 {
    let has_unit = run.chars().any(|c| unit_of(c).is_some());
    if !has_unit {
        return run.chars().filter_map(digit_of).fold(0, |n, d| n * 10 + d);
    }
    let (mut total, mut section, mut digit) = (0u64, 0u64, None::<u64>);
    for c in run.chars() {
        if let Some(d) = digit_of(c) {
            digit = Some(d);
        } else if let Some(unit) = unit_of(c) {
            if unit == 10_000 {
                total = total.saturating_add((section + digit.unwrap_or(0)).max(1).saturating_mul(unit));
                section = 0;
            } else {
                section = section.saturating_add(digit.unwrap_or(1).saturating_mul(unit));
            }
            digit = None;
        }
    }
    total.saturating_add(section).saturating_add(digit.unwrap_or(0))
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
    }
}
