//! Citation markers in an answer's text (`[S1]`, `[S1, S2]`, `[s1][S3]`):
//! finding them, rewriting them, and keeping only those naming a source
//! the answer was given. Read by the answer, its sentence check and the
//! conversation export alike.

use std::collections::BTreeSet;

/// The labels of a citation marker's inside (`S1`, `S1, s2`), or `None`
/// when it is not one.
pub(crate) fn marker_labels(inner: &str) -> Option<Vec<&str>> {
    let labels: Vec<&str> = inner.split(|c: char| c == ',' || c.is_whitespace()).filter(|s| !s.is_empty()).collect();
    let is_label = |l: &&str| l.len() > 1 && l.starts_with(['S', 's']) && l[1..].chars().all(|c| c.is_ascii_digit());
    (!labels.is_empty() && labels.iter().all(is_label)).then_some(labels)
}

/// `text` with each citation marker replaced by what `replace` makes of
/// its labels (other bracket groups stay as they are).
pub(crate) fn map_markers(text: &str, mut replace: impl FnMut(Vec<&str>) -> String) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find('[') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let Some(close) = after.find(']') else {
            out.push_str(&rest[open..]);
            return out;
        };
        let inner = &after[..close];
        // An unclosed bracket before a marker ("[note [S1]") stays text.
        if let Some(nested) = inner.rfind('[') {
            out.push_str(&rest[open..open + 1 + nested]);
            rest = &after[nested..];
            continue;
        }
        match marker_labels(inner) {
            Some(labels) => out.push_str(&replace(labels)),
            None => out.push_str(&rest[open..open + close + 2]),
        }
        rest = &after[close + 1..];
    }
    out.push_str(rest);
    out
}

/// `text` (a document's, or a model's reply) with every citation marker it
/// holds turned into plain text (`[S2]` → `［S2］`), so only the markers
/// Kea adds cite a passage.
pub fn defuse_markers(text: &str) -> String {
    map_markers(text, |labels| format!("［{}］", labels.join(", ")))
}

/// Labels cited in `text` (`[S1]`, `[S1, S2]`, `[S1][S3]`), and the text
/// with every bracket group that cites an unknown label removed.
pub fn resolve_markers(text: &str, known: &BTreeSet<String>) -> (String, Vec<String>) {
    let mut cited: Vec<String> = Vec::new();
    let out = map_markers(text, |labels| {
        let valid: Vec<String> = labels.iter().map(|l| l.to_uppercase()).filter(|l| known.contains(l)).collect();
        for label in &valid {
            if !cited.contains(label) {
                cited.push(label.clone());
            }
        }
        if valid.is_empty() {
            String::new()
        } else {
            format!("[{}]", valid.join(", "))
        }
    });
    let cleaned = out.replace(" .", ".").replace("  ", " ");
    (cleaned.trim().to_string(), cited)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn known(labels: &[&str]) -> BTreeSet<String> {
        labels.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn markers_resolve_and_invented_ones_are_removed() {
        let (text, cited) = resolve_markers("Seeds [S1]. Pellets [S2, S9]. Nuts [S7]. See [note] and [s1][S2].", &known(&["S1", "S2"]));
        assert_eq!(cited, ["S1", "S2"]);
        assert_eq!(text, "Seeds [S1]. Pellets [S2]. Nuts. See [note] and [S1][S2].");
        let (text, cited) = resolve_markers("Unclosed [S1", &known(&["S1"]));
        assert_eq!((text.as_str(), cited.len()), ("Unclosed [S1", 0));
        let (text, cited) = resolve_markers("Seeds (see [note [S1], [[S2]] and [a [b [S9].", &known(&["S1", "S2"]));
        assert_eq!((text.as_str(), cited), ("Seeds (see [note [S1], [[S2]] and [a [b.", vec!["S1".to_string(), "S2".to_string()]));
    }
}
