//! The first-run plan (`kea setup`, the app's first-run screen). It reads
//! what languages the knowledge folder is written in (a sample of its
//! documents, identified paragraph by paragraph, weighed by length) and
//! whether it holds pictures, what this machine has (memory, cores, free
//! disk, AVX2) and which language-model servers run on it, and proposes one
//! set of models: an embedder that reads every language found, a reranker
//! for them, a language model sized to memory (or a running server's), and
//! an image model when there are pictures. Each proposal says why, its size
//! and, for an embedder, what re-embedding the folder costs.

use std::collections::BTreeMap;
use std::path::Path;

use crate::language::Language;
use kea_llm::discover::LocalServer;
use serde::Serialize;

use crate::error::Result;
use crate::extract::{extract, DocKind, ExtractContext};
use crate::model::catalog::{self, Role};
use crate::reader::ReaderProcess;
use crate::retrieve::context::estimate_tokens;

/// Documents read for the sample, at most, and characters kept of each.
const SAMPLE_FILES: usize = 200;
const SAMPLE_CHARS: usize = 20_000;
/// A document larger than this is not read for the sample.
const SAMPLE_FILE_BYTES: u64 = 32 << 20;
/// A language under this share of the text is noise (a quoted name), not a language of the folder.
const LANGUAGE_FLOOR: f32 = 0.05;

/// The languages of a folder's text, and how much it holds.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct LanguageSample {
    /// Language code (`en`, `zh`, `fr`…) → share of the sampled text.
    pub languages: BTreeMap<String, f32>,
    pub documents: usize,
    pub sampled: usize,
    pub images: usize,
    /// The folder's text, estimated from the sample, in characters.
    pub estimated_chars: u64,
}

impl LanguageSample {
    /// The languages that matter: those above the noise floor.
    pub fn main_languages(&self) -> Vec<String> {
        main_languages(&self.languages)
    }
}

/// The languages of `shares` above the noise floor.
fn main_languages(shares: &BTreeMap<String, f32>) -> Vec<String> {
    shares.iter().filter(|(_, &share)| share >= LANGUAGE_FLOOR).map(|(l, _)| l.clone()).collect()
}

/// What this machine has.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Machine {
    pub ram_bytes: u64,
    pub cores: usize,
    /// Free space where models are installed.
    pub disk_free_bytes: Option<u64>,
    pub avx2: bool,
}

/// One proposed model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Proposal {
    pub role: Role,
    /// A catalog id, or the model's name on a running server.
    pub id: String,
    pub languages: Vec<String>,
    /// Download size (0: installed, bundled or on a server).
    pub bytes: u64,
    pub installed: bool,
    /// The server's OpenAI-compatible base URL, for a server's model.
    pub base_url: Option<String>,
    /// For an embedder: estimated seconds to embed the whole folder.
    pub reembed_seconds: Option<u64>,
    pub reason: String,
}

/// The whole plan: what was found and what is proposed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Plan {
    pub languages: BTreeMap<String, f32>,
    pub documents: usize,
    pub images: usize,
    pub machine: Machine,
    pub servers: Vec<LocalServer>,
    pub proposal: Vec<Proposal>,
    /// The folder's languages the embedder in use does not read (empty
    /// when it reads them all, or when its languages are not known).
    pub uncovered: Vec<String>,
    /// The embedder in use.
    pub embedder: String,
    /// The languages it reads (ISO codes; empty when many or not known).
    pub embedder_languages: Vec<String>,
}

/// Chunks read from the index for the sample, at most.
const SAMPLE_CHUNKS: usize = 2_000;

/// Samples the text of the folder `root` (see the module docs): from the
/// index in `data_dir` when it has chunks (no file is read again), else
/// from the files, PDFs and Word files through `reader` (a limited child
/// process) or skipped.
pub fn sample_languages(root: &Path, data_dir: &Path, reader: Option<&ReaderProcess>) -> Result<LanguageSample> {
    let listing = crate::scan::scan(root)?;
    let images = listing.files.iter().filter(|f| f.kind == DocKind::Image).count();
    let mut sample = LanguageSample { documents: listing.files.len(), images, ..Default::default() };
    let db = data_dir.join(crate::engine::DB_FILE);
    let (indexed, chars) = if db.is_file() { crate::store::Store::open(&db)?.sample_texts(SAMPLE_CHUNKS)? } else { (Vec::new(), 0) };
    if !indexed.is_empty() {
        sample.sampled = indexed.len();
        sample.estimated_chars = chars;
        sample.languages = shares_of(indexed.iter().map(String::as_str));
        return Ok(sample);
    }
    let (mut texts, mut sampled_bytes) = (Vec::new(), 0u64);
    for file in listing.files.iter().filter(|f| f.kind != DocKind::Image && f.size <= SAMPLE_FILE_BYTES).take(SAMPLE_FILES) {
        if let Some(text) = read_text(&file.abs, file.kind, reader) {
            texts.push(text.chars().take(SAMPLE_CHARS).collect::<String>());
            sampled_bytes += file.size;
        }
    }
    // The folder's text, extrapolated from the sampled files' by their sizes.
    let text_bytes: u64 = listing.files.iter().filter(|f| f.kind != DocKind::Image).map(|f| f.size).sum();
    let sampled_chars: u64 = texts.iter().map(|t| t.chars().count() as u64).sum();
    sample.estimated_chars = (sampled_chars as f64 * text_bytes as f64 / sampled_bytes.max(1) as f64) as u64;
    sample.sampled = texts.len();
    sample.languages = shares_of(texts.iter().map(String::as_str));
    Ok(sample)
}

/// Each language's share of `texts`, paragraph by paragraph, weighed by length.
fn shares_of<'a>(texts: impl Iterator<Item = &'a str>) -> BTreeMap<String, f32> {
    let mut weights: BTreeMap<String, f32> = BTreeMap::new();
    for (language, weight) in texts.flat_map(paragraph_languages) {
        *weights.entry(language).or_default() += weight;
    }
    let total: f32 = weights.values().sum();
    weights.into_iter().filter(|_| total > 0.0).map(|(l, w)| (l, w / total)).collect()
}

/// The plain text of one document, if it can be read safely.
fn read_text(path: &Path, kind: DocKind, reader: Option<&ReaderProcess>) -> Option<String> {
    let bytes = crate::scan::read_regular(path, SAMPLE_FILE_BYTES).ok()??;
    let extracted =
        if ReaderProcess::reads(kind) { reader?.start().ok()?.extract(kind, bytes, &ExtractContext::default()).ok()? } else { extract(kind, &bytes).ok()? };
    Some(extracted.plain)
}

/// Each paragraph's language and weight (its estimated tokens), for
/// paragraphs long enough to tell.
fn paragraph_languages(text: &str) -> Vec<(String, f32)> {
    text.split("\n\n")
        .map(str::trim)
        .filter(|p| p.chars().count() >= 20)
        .filter_map(|p| {
            let info = whatlang::detect(p)?;
            let han = info.script() == whatlang::Script::Mandarin;
            (han || info.is_reliable()).then(|| (crate::language::code_of(info.lang()), estimate_tokens(p) as f32))
        })
        .collect()
}

impl Machine {
    /// Reads this machine; free disk where models go (`models_dir` or its nearest existing parent).
    pub fn read(models_dir: &Path) -> Machine {
        Machine {
            ram_bytes: total_memory().unwrap_or(0),
            cores: std::thread::available_parallelism().map_or(1, usize::from),
            disk_free_bytes: models_dir.ancestors().find(|d| d.is_dir()).and_then(free_bytes),
            avx2: has_avx2(),
        }
    }
}

/// Total memory (Linux: `/proc/meminfo`).
fn total_memory() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

#[cfg(unix)]
fn free_bytes(dir: &Path) -> Option<u64> {
    let stat = nix::sys::statvfs::statvfs(dir).ok()?;
    Some(stat.blocks_available() as u64 * stat.fragment_size() as u64)
}

#[cfg(not(unix))]
fn free_bytes(_: &Path) -> Option<u64> {
    None
}

fn has_avx2() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::is_x86_feature_detected!("avx2")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

const GIB: u64 = 1 << 30;

/// What the plan needs besides the sample and the machine.
pub struct Context<'a> {
    pub servers: &'a [LocalServer],
    /// Whether a catalog model is installed (or bundled).
    pub installed: &'a dyn Fn(&str) -> bool,
    /// The user asked for photo identification even without pictures in the folder.
    pub photos: bool,
}

/// The proposed set of models (see the module docs).
pub fn propose(sample: &LanguageSample, machine: &Machine, context: &Context) -> Vec<Proposal> {
    let languages = sample.main_languages();
    let mut proposal = vec![embedder(sample, &languages, machine, context)];
    proposal.extend(reranker(&languages, machine, context));
    proposal.extend(language_model(&languages, machine, context));
    proposal.extend(image_model(sample, context));
    proposal
}

/// A catalog model as a proposal, with `reason`.
fn from_catalog(id: &str, context: &Context, reason: String) -> Proposal {
    let entry = catalog::find(id).expect("the plan proposes catalog models");
    let installed = (context.installed)(id) && entry.requires.iter().all(|r| (context.installed)(r));
    let size = entry.size_bytes + entry.requires.iter().filter_map(|r| catalog::find(r)).map(|r| r.size_bytes).sum::<u64>();
    Proposal {
        role: entry.role,
        id: entry.id,
        languages: entry.languages,
        bytes: if installed { 0 } else { size },
        installed,
        base_url: None,
        reembed_seconds: None,
        reason,
    }
}

/// Languages as words: "Chinese and English".
fn names(languages: &[String]) -> String {
    languages.iter().map(|l| crate::language::name(l)).collect::<Vec<_>>().join(" and ")
}

/// Shares as words: "52% Chinese, 48% English" (the main languages, largest first).
fn shares(sample: &LanguageSample) -> String {
    let mut listed: Vec<(String, f32)> = sample.main_languages().into_iter().map(|l| (l.clone(), sample.languages[&l])).collect();
    listed.sort_by(|a, b| b.1.total_cmp(&a.1));
    listed.iter().map(|(l, s)| format!("{:.0}% {}", s * 100.0, crate::language::name(l))).collect::<Vec<_>>().join(", ")
}

fn embedder(sample: &LanguageSample, languages: &[String], machine: &Machine, context: &Context) -> Proposal {
    let english_only = languages.iter().all(|l| l == Language::English.code());
    let large = machine.ram_bytes >= 16 * GIB && machine.cores >= 8;
    let id = match (english_only, large) {
        (true, _) => "all-minilm-l6-v2",
        (false, true) => "bge-m3",
        (false, false) => "multilingual-e5-small",
    };
    let why = if english_only {
        if languages.is_empty() {
            "No text to read yet: the bundled English model until there is".to_string()
        } else {
            format!("Your documents are in English ({}): the bundled English model reads them", shares(sample))
        }
    } else {
        format!(
            "Your documents are {}: {id} reads {}, and a question in one language finds passages in the other{}",
            shares(sample),
            names(languages),
            if large { " (this machine has the memory and cores for the larger model)" } else { "" }
        )
    };
    let mut proposal = from_catalog(id, context, why);
    let chunks = sample.estimated_chars / 420;
    let cores = machine.cores.max(1) as u64;
    proposal.reembed_seconds = Some((chunks * crate::model::catalog::embed_ms_per_chunk(id) * 2 / cores).div_ceil(1000));
    proposal
}

fn reranker(languages: &[String], machine: &Machine, context: &Context) -> Option<Proposal> {
    if machine.ram_bytes < 8 * GIB {
        return None;
    }
    let zh_en = languages.iter().all(|l| Language::from_code(l).is_some());
    let id = if zh_en { "bge-reranker-base" } else { "jina-reranker-v2-base-multilingual" };
    let slow = if machine.cores < 4 { "; on this machine's few cores it adds a second or two to each answer" } else { "" };
    Some(from_catalog(id, context, format!("Reads the question and each passage together to put the best answer first, in {}{slow}", names(languages))))
}

fn language_model(languages: &[String], machine: &Machine, context: &Context) -> Option<Proposal> {
    if let Some((server, model)) = context.servers.iter().find_map(|s| s.models.iter().find(|m| !m.contains("embed")).map(|m| (s, m))) {
        return Some(Proposal {
            role: Role::Llm,
            id: model.clone(),
            languages: Vec::new(),
            bytes: 0,
            installed: true,
            base_url: Some(server.base_url.clone()),
            reembed_seconds: None,
            reason: format!("Already running on this machine ({} at {}): nothing to download", server.kind, server.base_url),
        });
    }
    let fits = |&&(_, _, memory): &&(&str, f64, u64)| machine.ram_bytes >= memory;
    let fitting: Vec<&(&str, f64, u64)> = WRITERS.iter().filter(fits).collect();
    let quick = fitting.iter().find(|(_, billions, _)| AnswerTime::of(*billions, machine.cores).whole.0 <= QUICK_ANSWER_SECONDS);
    let &&(id, billions, _) = quick.or(fitting.last())?;
    let gib = machine.ram_bytes as f64 / GIB as f64;
    let written = if languages.is_empty() { String::new() } else { format!(" in {}", names(languages)) };
    let time = AnswerTime::of(billions, machine.cores);
    let range = |(low, high): (f64, f64)| if low.round() == high.round() { format!("{low:.0} s") } else { format!("{low:.0}–{high:.0} s") };
    Some(from_catalog(
        id,
        context,
        format!(
            "Writes answers from the passages{written}: on this machine's {} cores, {gib:.0} GiB of memory, the first words in about {}, the whole answer in about {}",
            machine.cores,
            range(time.first_token),
            range(time.whole)
        ),
    ))
}

/// The models that write answers, largest first: (catalog id, billions of
/// parameters, memory the machine needs).
const WRITERS: &[(&str, f64, u64)] =
    &[("qwen2.5-3b-instruct", 3.1, 8 * GIB), ("qwen2.5-1.5b-instruct", 1.54, 4 * GIB), ("qwen2.5-0.5b-instruct", 0.49, 2 * GIB)];

/// The plan proposes the largest model that answers within this, on this machine.
const QUICK_ANSWER_SECONDS: f64 = 10.0;

/// How long a written answer takes, as measured: the typical (median) and
/// slow (95th percentile) seconds to the first token and to the whole answer.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AnswerTime {
    pub first_token: (f64, f64),
    pub whole: (f64, f64),
}

impl AnswerTime {
    /// With a Q4_K_M model of `billions` parameters on `cores` cores: the
    /// figures `kea eval --model-answers` measured for Qwen2.5 1.5B on two
    /// cores with the model loaded (first token 6.3 s median, 10.2 s at the
    /// 95th percentile; the whole answer 7.5 and 11.4 s), scaled by size and
    /// by cores up to eight.
    pub fn of(billions: f64, cores: usize) -> AnswerTime {
        let scale = (cores.clamp(1, 8) as f64 / 2.0) * (1.54 / billions.max(0.1));
        AnswerTime { first_token: (6.3 / scale, 10.2 / scale), whole: (7.5 / scale, 11.4 / scale) }
    }
}

fn image_model(sample: &LanguageSample, context: &Context) -> Option<Proposal> {
    if sample.images == 0 && !context.photos {
        return None;
    }
    let why = if sample.images > 0 {
        format!("Your folder has {} picture(s): identifies a photo against your documents", sample.images)
    } else {
        "For identifying photos against your documents".to_string()
    };
    Some(from_catalog("clip-vit-b-32-vision", context, why))
}

/// The plan for `config`'s knowledge folder with `settings`' models: the
/// servers looked at are the usual ones and `extra_servers`; a language
/// model endpoint already configured (settings or `KEA_LLM_BASE_URL`) is
/// kept, not asked again. The one entry point of the CLI's `kea setup` and
/// the app's setup screen.
pub fn plan_here(config: &crate::EngineConfig, settings: &crate::settings::Settings, extra_servers: &[String], photos: bool) -> Result<Plan> {
    let manager = settings.model_manager(config);
    let servers = kea_llm::discover::local_servers(extra_servers);
    let installed = |id: &str| manager.installed_dir(id).is_some();
    let context = Context { servers: &servers, installed: &installed, photos };
    let reader = ReaderProcess::this_executable(crate::reader::DEFAULT_MEMORY_MB);
    let mut plan = plan(&config.knowledge_dir, &config.data_dir, &manager.install_dir, reader.as_ref(), &context)?;
    let env = |key: &str| std::env::var(key).ok().filter(|v| !v.is_empty());
    if let Some(url) = env("KEA_LLM_BASE_URL").or_else(|| settings.llm.base_url.clone()) {
        let model = env("KEA_LLM_MODEL").or_else(|| settings.llm.model.clone()).unwrap_or_default();
        plan.proposal.retain(|p| p.role != Role::Llm);
        plan.proposal.push(Proposal {
            role: Role::Llm,
            id: model,
            languages: Vec::new(),
            bytes: 0,
            installed: true,
            base_url: Some(url.clone()),
            reembed_seconds: None,
            reason: format!("Already configured ({url}): kept"),
        });
    }
    let active = settings.active_models(crate::Engine::indexed_model(&config.data_dir)?);
    plan.embedder = active.get(&Role::Embedder).cloned().unwrap_or_default();
    let known = catalog::find(&plan.embedder).filter(|e| !e.languages.is_empty() && !e.covers("multilingual"));
    plan.uncovered = match &known {
        Some(entry) => main_languages(&plan.languages).into_iter().filter(|l| !entry.covers(l)).collect(),
        None => Vec::new(),
    };
    plan.embedder_languages = known.map(|e| e.languages).unwrap_or_default();
    Ok(plan)
}

/// The plan for the folder `knowledge` on this machine (see the module docs).
pub fn plan(knowledge: &Path, data_dir: &Path, models_dir: &Path, reader: Option<&ReaderProcess>, context: &Context) -> Result<Plan> {
    let sample = sample_languages(knowledge, data_dir, reader)?;
    let machine = Machine::read(models_dir);
    let proposal = propose(&sample, &machine, context);
    let servers = context.servers.to_vec();
    Ok(Plan {
        languages: sample.languages,
        documents: sample.documents,
        images: sample.images,
        machine,
        servers,
        proposal,
        uncovered: Vec::new(),
        embedder: String::new(),
        embedder_languages: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(languages: &[(&str, f32)], images: usize) -> LanguageSample {
        let languages = languages.iter().map(|(l, s)| (l.to_string(), *s)).collect();
        LanguageSample { languages, documents: 10, sampled: 10, images, estimated_chars: 420_000 }
    }

    fn machine(gib: u64, cores: usize) -> Machine {
        Machine { ram_bytes: gib * GIB, cores, disk_free_bytes: Some(100 * GIB), avx2: true }
    }

    fn ids(proposal: &[Proposal]) -> Vec<(Role, &str)> {
        proposal.iter().map(|p| (p.role, p.id.as_str())).collect()
    }

    const BUNDLED: fn(&str) -> bool = |id| id == "all-minilm-l6-v2";

    #[test]
    fn the_embedder_reads_every_language_of_the_folder() {
        let context = Context { servers: &[], installed: &BUNDLED, photos: false };
        let english = propose(&sample(&[("en", 0.97), ("fr", 0.03)], 0), &machine(8, 4), &context);
        assert_eq!(english[0].id, "all-minilm-l6-v2", "a French quote is not a French folder");
        assert!(english[0].installed && english[0].bytes == 0);
        let mixed = propose(&sample(&[("zh", 0.52), ("en", 0.48)], 0), &machine(8, 4), &context);
        assert_eq!(mixed[0].id, "multilingual-e5-small");
        assert!(mixed[0].reason.contains("52% Chinese, 48% English"), "{}", mixed[0].reason);
        assert_eq!(mixed[0].reembed_seconds, Some(130), "1,000 chunks at 260 ms on 2 cores' worth, over 4 cores");
        let large = propose(&sample(&[("zh", 1.0)], 0), &machine(32, 16), &context);
        assert_eq!(large[0].id, "bge-m3", "memory and cores to spare: the larger multilingual model");
    }

    #[test]
    fn the_rest_of_the_set_follows_the_machine_the_servers_and_the_pictures() {
        let context = Context { servers: &[], installed: &BUNDLED, photos: false };
        let zh_en = sample(&[("zh", 0.5), ("en", 0.5)], 0);
        assert_eq!(
            ids(&propose(&zh_en, &machine(16, 4), &context)),
            [(Role::Embedder, "multilingual-e5-small"), (Role::Reranker, "bge-reranker-base"), (Role::Llm, "qwen2.5-3b-instruct")]
        );
        let small = propose(&sample(&[("ja", 1.0)], 0), &machine(6, 2), &context);
        assert_eq!(ids(&small), [(Role::Embedder, "multilingual-e5-small"), (Role::Llm, "qwen2.5-1.5b-instruct")], "no reranker under 8 GiB");
        let two_cores = propose(&sample(&[("en", 1.0)], 0), &machine(24, 2), &context);
        let llm = two_cores.iter().find(|p| p.role == Role::Llm).unwrap();
        assert_eq!(llm.id, "qwen2.5-1.5b-instruct", "memory for the 3B model, but two cores answer too slowly with it");
        assert!(llm.reason.contains("2 cores") && llm.reason.contains("the first words in about 6–10 s, the whole answer in about 8–11 s"), "{}", llm.reason);
        let old = propose(&sample(&[("en", 1.0)], 0), &machine(3, 1), &context);
        assert_eq!(old.iter().find(|p| p.role == Role::Llm).unwrap().id, "qwen2.5-0.5b-instruct");
        let multilingual = propose(&sample(&[("fr", 0.6), ("en", 0.4)], 0), &machine(16, 4), &context);
        assert_eq!(multilingual[1].id, "jina-reranker-v2-base-multilingual");

        let servers =
            [LocalServer { kind: "ollama".into(), base_url: "http://127.0.0.1:11434/v1".into(), models: vec!["nomic-embed-text".into(), "qwen2.5:7b".into()] }];
        let context = Context { servers: &servers, installed: &BUNDLED, photos: false };
        let with_server = propose(&sample(&[("en", 1.0)], 3), &machine(16, 4), &context);
        let llm = with_server.iter().find(|p| p.role == Role::Llm).unwrap();
        assert_eq!(
            (llm.id.as_str(), llm.base_url.as_deref(), llm.bytes),
            ("qwen2.5:7b", Some("http://127.0.0.1:11434/v1"), 0),
            "the server's chat model, not its embedder"
        );
        let image = with_server.iter().find(|p| p.role == Role::Image).expect("pictures in the folder: an image model");
        assert_eq!(image.bytes, 352_000_000 + 254_000_000, "both CLIP towers are downloaded");
    }

    #[test]
    fn paragraphs_are_identified_and_weighed_by_length() {
        let text = "鹦鹉需要每天有几个小时离开笼子活动，并且需要新鲜的水和多样的食物。\n\n\
                    Parrots need several hours outside the cage every day, with fresh water and varied food.\n\n\
                    Short.";
        let found: BTreeMap<String, f32> = paragraph_languages(text).into_iter().collect();
        assert_eq!(found.keys().collect::<Vec<_>>(), ["en", "zh"], "{found:?}");
        assert!(found.values().all(|&w| w > 10.0), "{found:?}");
    }
}
