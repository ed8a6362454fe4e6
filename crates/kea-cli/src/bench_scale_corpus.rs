//! The corpus of `kea bench scale`: documents with a real collection's word
//! statistics. English words are the whole words of the embedding model's
//! WordPiece vocabulary (its id order is roughly frequency order), drawn
//! Zipf-like; Chinese words pair frequent characters. Each document belongs
//! to a topic with its own specialised words, so a question names words few
//! documents share, as in a real folder (a template corpus makes every
//! word common and BM25 meaningless).

use std::path::Path;

use anyhow::Context;
use kea_engine::model::{ModelPaths, DEFAULT_TEXT_MODEL};

use super::corpus_bench::write_mixed;
use super::Rng;

/// Seeds this corpus's generators (the corpus is the same on every run).
const SALT: u64 = 0x9E37_79B9;
/// Topics in the corpus; a topic's documents share its words.
const TOPICS: usize = 5_000;
/// Specialised words per topic.
const TOPIC_WORDS: usize = 12;
/// Where the specialised (rarer) English words start in the frequency order.
const SPECIALISED_FROM: usize = 1_500;
/// The most frequent Chinese characters, in frequency order.
const CHINESE_CHARACTERS: &str = "的一是不了人我在有他这为之大来以个中上们到说国和地也子时道出而要于就下得可你年生自会那后能对着事其里所去行过家十用发天如然作方成者多日都三小军二无同么经法当起与好看学进种将还分此心前面又定见只主没公从知使点业本去把性好应开它合还因由其些然前外天政四日那社义事平形相全表间样与关各重新线内数正心反你明看原又么利比或但质气第向道命此变条只没结解问意建月公无系军很情者最立代想已通并提直题党程展五果料象员革位入常文总次品式活设及管特件长求老头基资边流路级少图山统接知较将组见计别她手角期根论运农指几九区强放决西被干做必战先回则任取据处队南给色光门即保治北造百规热领七海口东导器压志世金增争济阶油思术极交受联什认六共权收证改清己美再采转更单风切打白教速花带安场身车例真务具万每目至达走积示议声报斗完类八离华名确才科张信马节话米整空元况今集温传土许步群广石记需段研界拉林律叫且究观越织装影算低持音众书布复容儿须际商非验连断深难近矿千周委素技备半办青省列习响约支般史感劳便团往酸历市克何除消构府称太准精值号率族维划选标写存候毛亲快效斯院查江型眼王按格养易置派层片始却专状育厂京识适属圆包火住调满县局照参红细引听该铁价严";

/// The words documents and questions are made of.
pub struct Vocabulary {
    english: Vec<String>,
    chinese: Vec<String>,
}

impl Vocabulary {
    /// English from the default embedding model's tokenizer; Chinese pairs
    /// of frequent characters.
    pub fn load(paths: &ModelPaths) -> anyhow::Result<Vocabulary> {
        let model = paths.resolve(DEFAULT_TEXT_MODEL)?;
        let tokenizer: serde_json::Value = serde_json::from_slice(&model.read(&model.manifest.tokenizer)?)?;
        let vocab = tokenizer["model"]["vocab"].as_object().context("the tokenizer has no WordPiece vocabulary")?;
        let mut by_id: Vec<(u64, &String)> = vocab.iter().filter_map(|(word, id)| Some((id.as_u64()?, word))).collect();
        by_id.sort_unstable();
        let english = by_id.into_iter().map(|(_, w)| w).filter(|w| w.len() >= 2 && w.chars().all(|c| c.is_ascii_lowercase())).cloned().collect::<Vec<_>>();
        let characters: Vec<char> = CHINESE_CHARACTERS.chars().collect();
        let chinese =
            (0..characters.len() * 8).map(|k| format!("{}{}", characters[k % characters.len()], characters[(k * 7 + k / 3) % characters.len()])).collect();
        anyhow::ensure!(english.len() > SPECIALISED_FROM * 4, "the tokenizer vocabulary has only {} whole words", english.len());
        Ok(Vocabulary { english, chinese })
    }

    /// Topic `t`'s specialised words in one language.
    fn topic_words(words: &[String], topic: usize) -> Vec<&str> {
        let mut rng = Rng::seeded(topic + 17, SALT);
        (0..TOPIC_WORDS).map(|_| words[SPECIALISED_FROM + rng.below(words.len() - SPECIALISED_FROM)].as_str()).collect()
    }

    /// A sentence of `n` words: common words Zipf-drawn, one in five from the topic.
    fn sentence<'a>(words: &'a [String], topic: &[&'a str], n: usize, rng: &mut Rng) -> Vec<&'a str> {
        (0..n).map(|_| if rng.below(5) == 0 { topic[rng.below(topic.len())] } else { words[rng.zipf(words.len())].as_str() }).collect()
    }

    /// Document `i`: three titled sections of six sentences.
    fn document(&self, i: usize, chinese: bool) -> String {
        let mut rng = Rng::seeded(i, SALT);
        let words = if chinese { &self.chinese } else { &self.english };
        let topic = Self::topic_words(words, i % TOPICS);
        let join = |w: Vec<&str>| if chinese { w.concat() } else { w.join(" ") };
        let mut doc = format!("# {}\n\n", join(vec![topic[0], topic[1]]));
        for s in 0..3 {
            doc.push_str(&format!("## {}\n\n", join(vec![topic[2 + s], words[rng.zipf(words.len())].as_str()])));
            for _ in 0..6 {
                let n = 9 + rng.below(7);
                let text = join(Self::sentence(words, &topic, n, &mut rng));
                doc.push_str(&if chinese { format!("{text}。") } else { format!("{}{}. ", text[..1].to_uppercase(), &text[1..]) });
            }
            doc.push_str("\n\n");
        }
        doc
    }

    /// Writes document `i` as one of the mix's kinds (md, txt, docx, PDF; zh and en).
    pub fn write_document(&self, dir: &Path, i: usize) -> anyhow::Result<()> {
        write_mixed(dir, i, &self.document(i, false), &self.document(i, true))
    }

    /// Question `q` of `files`: two of a document's topic words and a common
    /// word, in the document's language; and the file name that answers it.
    pub fn question(&self, q: usize, files: usize) -> (String, usize) {
        let mut rng = Rng::seeded(q + 1_000_003, SALT);
        let i = rng.below(files);
        let chinese = matches!(i % 10, 4 | 5 | 7 | 9);
        let words = if chinese { &self.chinese } else { &self.english };
        let topic = Self::topic_words(words, i % TOPICS);
        let (a, b) = (topic[rng.below(TOPIC_WORDS)], topic[rng.below(TOPIC_WORDS)]);
        let common = words[rng.zipf(200)].as_str();
        let text = if chinese { format!("{a}{common}{b}是什么？") } else { format!("What about {a} {common} {b}?") };
        (text, i % TOPICS)
    }
}

/// The topic a corpus file belongs to, from its name's number.
pub fn topic_of(file_name: &str) -> Option<usize> {
    let digits: String = file_name.chars().filter(char::is_ascii_digit).collect();
    digits.parse::<usize>().ok().map(|i| i % TOPICS)
}
