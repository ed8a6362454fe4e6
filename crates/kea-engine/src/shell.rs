//! Commands Kea suggests to the person (`kea index --kb …`): a value in one
//! comes from a name, an archive or an address, so it is written as one
//! POSIX shell word that pasting can never split or run.

/// `value` as one shell word: as it is when it holds only characters no
/// shell treats specially, else in single quotes (a quote inside as `'\''`).
pub fn word(value: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/' | ':' | '@' | '%' | '+' | '=' | ',');
    if !value.is_empty() && value.chars().all(plain) {
        return value.to_string();
    }
    format!("'{}'", value.replace('\'', "'\\''"))
}

#[cfg(test)]
mod tests {
    use super::word;

    #[test]
    fn a_value_is_one_word_that_runs_nothing() {
        assert_eq!(word("Recipes"), "Recipes");
        assert_eq!(word("https://embed.example.com/v1"), "https://embed.example.com/v1");
        assert_eq!(word("My notes"), "'My notes'");
        assert_eq!(word("n'; touch pwned; echo '"), r#"'n'\''; touch pwned; echo '\'''"#);
        assert_eq!(word("https://x.example/$(touch pwned)"), "'https://x.example/$(touch pwned)'");
        assert_eq!(word(""), "''");
        // What a POSIX shell makes of the quoted forms: the value, as one word.
        for value in ["n'; touch pwned; echo '", "a b", "$(id)", "`id`", "x' --kb 'default", "资料 ❤️"] {
            let out = std::process::Command::new("sh").arg("-c").arg(format!("printf %s {}", word(value))).output().unwrap();
            assert_eq!(String::from_utf8(out.stdout).unwrap(), value);
        }
    }
}
