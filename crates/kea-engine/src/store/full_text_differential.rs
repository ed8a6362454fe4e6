//! The postings held in memory against FTS5 itself, on generated documents
//! and queries from every script (Latin with diacritics, Cyrillic, Greek,
//! Hangul, kana, Devanagari, Hebrew and Arabic with marks, Chinese, emoji,
//! digits of several scripts, punctuation only, empty and huge chunks):
//! the same ids, order and scores after the first read, after each followed
//! change (add, edit, delete, compaction) and after a restart.

use super::full_text::{Postings, Source};
use super::tests::replace;
use super::{DocChange, NewChunk, Store};

const WORDS: &[&str] = &[
    "seeds",
    "Kettles",
    "eat",
    "millet",
    "café",
    "naïve",
    "Ångström",
    "FAÇADE",
    "Über",
    "résumé",
    "piñata",
    "йогурт",
    "Йогурт",
    "ёлка",
    "Їжак",
    "Москва",
    "ПРИВЕТ",
    "άλφα",
    "Ωμέγα",
    "ΣΟΦΊΑ",
    "λόγος",
    "서울은",
    "한국어",
    "사랑",
    "ひらがな",
    "カタカナ",
    "ｶﾀｶﾅ",
    "हिन्दी",
    "नमस्ते",
    "संस्कृत",
    "שָׁלוֹם",
    "עִבְרִית",
    "مَرْحَبًا",
    "الْعَرَبِيَّة",
    "咖啡机",
    "北京",
    "喂食",
    "水壶需要除垢",
    "🦜",
    "👍🏽",
    "🇳🇿",
    "!!!",
    "—",
    "...",
    "«»",
    "42",
    "١٢٣",
    "１２３",
    "x²",
    "ﬁne",
    "Straße",
    "İstanbul",
    "ǅemal",
];
const SEPARATORS: &[&str] = &[" ", "\n", ", ", "·", "", "\u{200b}", "\t", "-"];

/// A small seeded generator (xorshift), so a failure repeats.
struct Draw(u64);

impl Draw {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }

    fn words(&mut self, most: usize) -> String {
        let count = self.below(most + 1);
        (0..count).map(|_| format!("{}{}", WORDS[self.below(WORDS.len())], SEPARATORS[self.below(SEPARATORS.len())])).collect()
    }

    /// A chunk's text: mostly words, sometimes empty, token-less, huge or
    /// one word longer than FTS5 keeps (cut inside a character).
    fn text(&mut self) -> String {
        match self.below(20) {
            0 => String::new(),
            1 => "🦜🦜 !!! — 👍🏽".repeat(1 + self.below(3)),
            2 => "millet ".repeat(70_000),
            3 => format!("a{} seeds", "ж".repeat(20_000)),
            _ => self.words(12),
        }
    }
}

fn chunk(index: usize, draw: &mut Draw) -> NewChunk {
    let text = draw.text();
    NewChunk {
        index,
        heading_path: draw.words(2),
        page: None,
        byte_start: 0,
        byte_end: text.len(),
        hash: format!("{index}-{}", text.len()),
        text,
        names: String::new(),
        embedding: vec![0.5, 0.5],
    }
}

fn document(draw: &mut Draw, name: usize) -> DocChange {
    let chunks = (0..1 + draw.below(4)).map(|i| chunk(i, draw)).collect();
    replace(&format!("doc{name}.md"), chunks)
}

/// Every query of `queries` ranked from the held postings and from FTS5:
/// the same; how many queries outside ASCII found something.
fn assert_same(store: &Store, queries: &[String], when: &str) -> usize {
    let held = match store.postings().unwrap().source {
        Source::Held(index) => index,
        Source::Fts5(_) => panic!("{when}: no postings held"),
    };
    let ours = Postings { store, source: Source::Held(held.clone()) };
    let fts5 = Postings { store, source: Source::Fts5(held.generation) };
    let mut found_outside_ascii = 0;
    for query in queries {
        let found = ours.search(query, 8).unwrap();
        assert_eq!(found, fts5.search(query, 8).unwrap(), "{when}: {query:?}");
        let words = crate::segment::query_terms(query);
        assert_eq!(ours.term_counts(&words).unwrap(), fts5.term_counts(&words).unwrap(), "{when}: counts of {query:?}");
        found_outside_ascii += usize::from(!query.is_ascii() && !found.is_empty());
    }
    found_outside_ascii
}

fn queries(draw: &mut Draw) -> Vec<String> {
    let mut queries: Vec<String> = WORDS.iter().map(|w| w.to_string()).collect();
    queries.extend(WORDS.iter().map(|w| w.to_uppercase()));
    queries.extend((0..60).map(|_| draw.words(4)));
    queries.extend(["".into(), "   ".into(), "🦜".into(), "x".repeat(2000)]);
    queries
}

#[test]
fn held_postings_rank_as_fts5_does_on_every_script_through_changes_and_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kea.sqlite3");
    let mut draw = Draw(0x9E37_79B9_7F4A_7C15);
    let queries = queries(&mut draw);
    let mut store = Store::open(&path).unwrap();
    store.apply(&(0..12).map(|n| document(&mut draw, n)).collect::<Vec<_>>()).unwrap();
    assert!(store.hold_full_text(std::time::Duration::from_secs(120)).unwrap());
    assert!(assert_same(&store, &queries, "first read") > 30, "queries in other scripts find their documents");
    for step in 0..24 {
        let change = match step % 4 {
            0 => document(&mut draw, 100 + step),
            1 => {
                let name = draw.below(12);
                document(&mut draw, name)
            }
            _ => DocChange::Remove { path: format!("doc{}.md", draw.below(12 + step)) },
        };
        let before = std::sync::Arc::as_ptr(&match store.postings().unwrap().source {
            Source::Held(index) => index,
            Source::Fts5(_) => panic!("held before step {step}"),
        });
        store.apply(&[change]).unwrap();
        match store.postings().unwrap().source {
            Source::Held(index) => assert_eq!(std::sync::Arc::as_ptr(&index), before, "step {step}: followed, not read again"),
            Source::Fts5(_) => panic!("step {step}: the change was not followed"),
        }
        assert_same(&store, &queries, &format!("after change {step}"));
    }
    let long_lived: Vec<_> = queries.iter().map(|q| store.fts_search(q, 8).unwrap()).collect();
    drop(store);
    let fresh = Store::open(&path).unwrap();
    assert!(fresh.hold_full_text(std::time::Duration::from_secs(120)).unwrap());
    assert_same(&fresh, &queries, "after a restart");
    let restarted: Vec<_> = queries.iter().map(|q| fresh.fts_search(q, 8).unwrap()).collect();
    assert_eq!(long_lived, restarted, "a long-lived process and a fresh one rank every query alike");
}
