//! `kea ask` (a streamed, cited answer in the terminal) and `kea eval-router`
//! (routing accuracy of the LLM, the keyword rules, and the LLM with
//! retrieval confidence as a second signal).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::Context;
use clap::Args;
use kea_engine::chat::router::{keyword_route, route, RouteContext};
use kea_engine::chat::Question;
use kea_engine::chat::{AnswerPrompt, ChatEvent, ChatOptions, RouterMode};
use kea_engine::settings::Settings;
use kea_engine::{Engine, EngineConfig, RetrievalConfig};
use kea_llm::{auto_select, LlmChoice, LlmSettings, ProviderPreference};

pub use kea_llm::select::DEFAULT_EMBEDDED_MODEL;

#[derive(Args, Clone)]
pub struct LlmArgs {
    /// auto, embedded, openai or none (default: the settings' choice, else auto).
    #[arg(long, value_enum, env = "KEA_LLM_PROVIDER")]
    provider: Option<Provider>,
    /// An OpenAI-compatible endpoint, e.g. http://127.0.0.1:11434/v1.
    #[arg(long, env = "KEA_LLM_BASE_URL")]
    base_url: Option<String>,
    /// The model name at that endpoint.
    #[arg(long = "model", visible_alias = "llm-model", env = "KEA_LLM_MODEL")]
    llm_model: Option<String>,
    #[arg(long, env = "KEA_LLM_API_KEY", hide_env_values = true)]
    api_key: Option<String>,
    /// A GGUF file to run in-process.
    #[arg(long, env = "KEA_GGUF")]
    gguf: Option<PathBuf>,
    /// The installed embedded model id (default: `kea models use llm`'s choice, else
    /// the bundled SmolLM2).
    #[arg(long, env = "KEA_EMBEDDED_MODEL")]
    embedded: Option<String>,
    /// llama.cpp generation threads (default: every core on a machine of four or fewer, else all but one).
    #[arg(long, env = "KEA_LLM_THREADS")]
    llm_threads: Option<usize>,
    /// auto (the LLM for servers, keyword rules for the tiny embedded models,
    /// which measured worse than the rules), llm, or keywords.
    #[arg(long, value_enum, default_value = "auto", env = "KEA_ROUTER")]
    router: Router,
    /// How a model that writes answers is shown the evidence: auto (a few numbered
    /// sentences for an embedded model, whole passages for a server), sentences or passages.
    #[arg(long, value_enum, default_value = "auto", env = "KEA_ANSWER_PROMPT")]
    prompt: Prompt,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum Prompt {
    Auto,
    Sentences,
    Passages,
}

impl From<Prompt> for AnswerPrompt {
    fn from(prompt: Prompt) -> AnswerPrompt {
        match prompt {
            Prompt::Auto => AnswerPrompt::Auto,
            Prompt::Sentences => AnswerPrompt::Sentences,
            Prompt::Passages => AnswerPrompt::Passages,
        }
    }
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum Router {
    Auto,
    Llm,
    Keywords,
}

fn router_mode(args: &LlmArgs, choice: &LlmChoice) -> RouterMode {
    match args.router {
        Router::Llm => RouterMode::Llm,
        Router::Keywords => RouterMode::Keywords,
        Router::Auto => RouterMode::for_provider(choice.provider.kind()),
    }
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum Provider {
    Auto,
    Embedded,
    Openai,
    None,
}

/// The language model: the shared settings (and environment), then flags.
fn select(config: &EngineConfig, saved: &Settings, args: &LlmArgs) -> anyhow::Result<LlmChoice> {
    let mut settings: LlmSettings = saved.llm_settings(config.model_paths.dirs.clone());
    if let Some(provider) = args.provider {
        settings.preference = match provider {
            Provider::Auto => ProviderPreference::Auto,
            Provider::Embedded => ProviderPreference::Embedded,
            Provider::Openai => ProviderPreference::Openai,
            Provider::None => ProviderPreference::None,
        };
    }
    let pick = |flag: &Option<String>, saved: &mut Option<String>| {
        if flag.is_some() {
            *saved = flag.clone();
        }
    };
    pick(&args.base_url, &mut settings.base_url);
    pick(&args.llm_model, &mut settings.model);
    pick(&args.api_key, &mut settings.api_key);
    if let Some(gguf) = &args.gguf {
        settings.gguf = Some(gguf.clone());
    }
    if let Some(embedded) = &args.embedded {
        settings.embedded_model = embedded.clone();
    }
    settings.threads = args.llm_threads;
    Ok(auto_select(&settings)?)
}

/// The language model and the chat options `kea ask` answers with (and
/// `kea mcp`'s `ask` tool).
pub(crate) fn answering(config: &EngineConfig, settings: &Settings, args: &LlmArgs, max_tokens: usize) -> anyhow::Result<(LlmChoice, ChatOptions)> {
    let choice = select(config, settings, args)?;
    let enhance = kea_engine::chat::enhance::EnhanceOptions::with_process_env(settings.enhance.clone());
    let options = ChatOptions { max_answer_tokens: max_tokens, router: router_mode(args, &choice), prompt: args.prompt.into(), enhance, ..Default::default() };
    Ok((choice, options))
}

/// `kea ask` over one collection, or several (`--kb`): the answer is kept
/// in the first one's conversations.
pub fn ask(
    configs: Vec<EngineConfig>,
    settings: &Settings,
    args: &LlmArgs,
    chat: Option<i64>,
    question: &str,
    max_tokens: usize,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let Some(first) = configs.first() else { anyhow::bail!("no collection to ask") };
    let (choice, options) = answering(first, settings, args, max_tokens)?;
    let engines = configs.into_iter().map(crate::open_engine).collect::<anyhow::Result<Vec<_>>>()?;
    let (engine, others) = engines.split_first().expect("one configuration at least");
    let answerer = match others {
        [] => engine.answerer(),
        _ => engine.answerer_over(Box::new(engine.across(&others.iter().collect::<Vec<_>>()))),
    };
    if !json {
        eprintln!("provider: {} — {}", choice.provider.describe(), choice.reason);
    }
    // Whether a model is writing (its words are a draft until checked), and
    // whether a draft line is open on standard error (not ended yet).
    let (mut model_writing, mut draft_open) = (false, false);
    let mut sink = |event: ChatEvent| {
        if json {
            return;
        }
        match event {
            // The reply as it is written is a draft, on standard error; the
            // answer that stands after the check goes to standard output.
            // Kea's own answers (quoted, or about documents) are not drafts:
            // they are printed once, below.
            ChatEvent::Token { .. } if !model_writing => {}
            ChatEvent::Token { text } => {
                if !draft_open {
                    eprint!("draft, being checked: ");
                    draft_open = true;
                }
                eprint!("{}", crate::output::terminal(&text));
                let _ = std::io::stderr().flush();
            }
            ChatEvent::ToolStart { tool } => model_writing = tool == "llm",
            ChatEvent::ToolEnd { tool, ms, output } => {
                model_writing = false;
                // A trace line starts a line of its own, also after a draft.
                if std::mem::take(&mut draft_open) {
                    eprintln!();
                }
                eprintln!("[{tool} {ms:.0} ms] {}", crate::output::printable(&output.to_string()));
            }
            ChatEvent::Status { .. } | ChatEvent::Final { .. } => {}
        }
    };
    let answer = answerer.ask(choice.provider.as_ref(), chat, question, &options, &mut sink, &|| false)?;
    if json {
        let mut value = serde_json::to_value(&answer)?;
        value["provider_reason"] = serde_json::json!(choice.reason);
        println!("{}", serde_json::to_string_pretty(&value)?);
        return Ok(ExitCode::SUCCESS);
    }
    if draft_open {
        eprintln!();
    }
    print_checked(&answer);
    // Conversations are numbered per collection: the one that keeps this one is named.
    let kept_in = engine.config().collection.as_str();
    let kb = kea_engine::shell::word(kept_in);
    eprintln!("{}", crate::output::printable(&format!("chat {id} of '{kept_in}' (continue with --kb={kb} --chat {id})", id = answer.chat_id)));
    Ok(ExitCode::SUCCESS)
}

/// The answer that stands after the check, on standard output: its notice
/// (on standard error), text, the sentences taken out, citations and related reading.
fn print_checked(answer: &kea_engine::chat::ChatAnswer) {
    if let Some(notice) = &answer.shown.notice {
        eprintln!("note: {}", crate::output::one_line(notice));
    }
    println!("{}", crate::output::terminal(&answer.answer));
    for sentence in &answer.shown.unsupported {
        println!("  not supported by the passages (taken out): {}", crate::output::one_line(sentence));
    }
    for c in &answer.citations {
        println!("  [{}] {}", c.id, crate::output::one_line(&place(c)));
    }
    for r in &answer.shown.related {
        println!("  related: {}\n    {}", crate::output::one_line(&place(&r.passage)), crate::output::one_line(&r.snippet));
    }
}

/// `kea eval --model-answers`: every golden question through the chat path
/// with the language model, on a read-only engine (no conversation is
/// kept), and the model's raw speed measured in the same run, so Kea's
/// time is reported as a ratio to what the model alone needs for the same
/// prompt and answer.
pub fn eval_written(
    config: EngineConfig,
    settings: &Settings,
    args: &LlmArgs,
    golden: &[PathBuf],
    split: Option<&str>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let mut items = crate::search::load_all(golden)?;
    if let Some(split) = split {
        items.retain(|i| i.is_test() == (split == "test"));
        anyhow::ensure!(!items.is_empty(), "no question of the golden sets is in the {split} split");
    }
    let (choice, options) = answering(&config, settings, args, 384)?;
    anyhow::ensure!(choice.provider.writes_answers(), "no language model that writes answers: {}", choice.reason);
    let engine = Engine::open(EngineConfig { read_only: true, ..config }).context("opening the index read-only (run `kea index` first)")?;
    let raw = raw_speed(choice.provider.as_ref())?;
    let written = kea_engine::eval::written::ask_all(&engine, choice.provider.as_ref(), &items, &options)?;
    let rates = kea_engine::eval::written::rates(&written);
    let ratio = ratio_to_raw(&written, &raw);
    if json {
        let report = serde_json::json!({"model": choice.provider.describe(), "raw": raw, "ratio_to_raw": ratio, "rates": rates, "questions": written});
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!("{} questions, {}", items.len(), choice.provider.describe());
    for w in written.iter().filter(|w| w.answerable != (w.outcome == kea_engine::retrieve::calibration::Outcome::Answered) || w.holds_fact == Some(false)) {
        println!("  {:?} {}: {}", w.outcome, crate::output::printable(&w.query), crate::output::printable(&w.answer));
    }
    for (group, r) in &rates {
        println!(
            "{group}: answerable ({}) answered {:.3} unsure {:.3} refused {:.3} | answered right {:.3} | cited right {:.3} | fact held {:.3} (of {}) | unanswerable ({}) answered {:.3} | unsupported sentences {:.3} | in the question's language {:.3} | unheld numbers {}",
            r.answerable, r.answered, r.unsure, r.refused, r.answered_right, r.cited_right, r.holds_fact, r.holds_fact_of, r.unanswerable, r.unanswerable_answered, r.unsupported, r.in_language, r.unheld_numbers
        );
        println!(
            "  first token p50 {:.0} ms p95 {:.0} ms | whole answer p50 {:.0} ms p95 {:.0} ms | tokens: prompt {:.0} (cached {:.0}), answer {:.0}",
            r.first_token_ms_p50, r.first_token_ms_p95, r.total_ms_p50, r.total_ms_p95, r.prompt_tokens, r.cached_tokens, r.answer_tokens
        );
    }
    println!(
        "raw model: prompt {:.1} tokens/s, generation {:.1} tokens/s; Kea's time / the raw model's for the same tokens: {ratio:.2}",
        raw.prompt_per_s, raw.generated_per_s
    );
    Ok(ExitCode::SUCCESS)
}

/// The model's own speed, measured on a prompt no cache holds.
#[derive(Debug, serde::Serialize)]
struct RawSpeed {
    prompt_tokens: usize,
    prompt_per_s: f64,
    generated_per_s: f64,
}

fn raw_speed(llm: &dyn kea_llm::Provider) -> anyhow::Result<RawSpeed> {
    use kea_llm::{Message, Request, Role};
    let filler: String = (0..60).map(|i| format!("Item {i} is stored on shelf {} in room {}. ", i * 7 % 13, i % 5)).collect();
    let mut request = Request::new(vec![Message::new(Role::User, format!("{filler}\nList the items in room 3, then describe the shelves."))]);
    request.max_tokens = 48;
    let done = llm.complete(&request, &mut |_| {}, &|| false)?;
    let first = done.first_token_ms.unwrap_or(done.total_ms).max(1.0);
    let evaluated = done.prompt_tokens.saturating_sub(done.cached_tokens);
    Ok(RawSpeed {
        prompt_tokens: evaluated,
        prompt_per_s: evaluated as f64 / (first / 1000.0),
        generated_per_s: done.tokens.saturating_sub(1) as f64 / ((done.total_ms - first).max(1.0) / 1000.0),
    })
}

/// Kea's time over the model's questions against the raw model's for the
/// same uncached prompt tokens and answer tokens.
fn ratio_to_raw(written: &[kea_engine::eval::written::Written], raw: &RawSpeed) -> f64 {
    let (kea, model): (f64, f64) = written.iter().filter_map(|w| w.model.as_ref().map(|m| (w.total_ms, m))).fold((0.0, 0.0), |(k, r), (total, m)| {
        let prompt_s = m.prompt_tokens.saturating_sub(m.cached_tokens) as f64 / raw.prompt_per_s.max(1e-6);
        let generate_s = m.tokens as f64 / raw.generated_per_s.max(1e-6);
        (k + total, r + (prompt_s + generate_s) * 1000.0)
    });
    if model > 0.0 {
        ((kea / model) * 100.0).round() / 100.0
    } else {
        0.0
    }
}

/// Where a passage is: document | heading, and its page.
fn place(c: &kea_engine::chat::Citation) -> String {
    let page = c.page.map(|p| format!(" p.{p}")).unwrap_or_default();
    let collection = c.collection.as_ref().map(|c| format!("{c} › ")).unwrap_or_default();
    format!("{collection}{} | {}{page}", c.source, c.heading_path)
}

#[derive(serde::Deserialize)]
struct LabelledQuestion {
    question: String,
    #[serde(default)]
    subject: Option<String>,
    use_rag: bool,
    is_followup: bool,
    #[serde(default)]
    lang: Option<String>,
}

#[derive(serde::Serialize, Default)]
struct Accuracy {
    correct: usize,
    total: usize,
    accuracy: f64,
}

impl Accuracy {
    fn add(&mut self, ok: bool) {
        self.total += 1;
        self.correct += usize::from(ok);
        self.accuracy = (self.correct as f64 / self.total as f64 * 1000.0).round() / 1000.0;
    }
}

/// Strong evidence in the index for a question, whatever the router said.
fn strong_evidence(engine: &Engine, question: &str) -> anyhow::Result<bool> {
    let hits = engine.retriever().retrieve(question, &RetrievalConfig { rerank: false, filter: false, mmr: false, top_k: 1, ..Default::default() })?.hits;
    Ok(hits.first().is_some_and(|h| h.dense.is_some_and(|d| d >= 0.5) || h.sparse.is_some_and(|s| s >= 8.0)))
}

pub fn eval_router(config: EngineConfig, settings: &Settings, args: &LlmArgs, path: &Path, json: bool) -> anyhow::Result<ExitCode> {
    let text = kea_engine::eval::read_json_lines(path)?;
    let items: Vec<LabelledQuestion> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .enumerate()
        .map(|(i, l)| serde_json::from_str(l).with_context(|| format!("{}:{}", path.display(), i + 1)))
        .collect::<anyhow::Result<_>>()?;
    let choice = select(&config, settings, args)?;
    let engine = crate::open_engine(config)?;
    let (mut llm, mut keywords, mut combined, mut fallbacks) = (Accuracy::default(), Accuracy::default(), Accuracy::default(), 0);
    let mut by_lang: std::collections::BTreeMap<String, Accuracy> = Default::default();
    let mut misses = Vec::new();
    let started = Instant::now();
    for item in &items {
        let question = Question::new(&item.question, item.subject.clone());
        let (r, fallback) = route(choice.provider.as_ref(), &question, &RouteContext::default(), &|| false);
        fallbacks += usize::from(fallback.is_some());
        let ok = |use_rag: bool, followup: bool| use_rag == item.use_rag && (!item.use_rag || followup == item.is_followup);
        let llm_ok = ok(r.use_rag, r.is_followup);
        llm.add(llm_ok);
        by_lang.entry(item.lang.clone().unwrap_or_default()).or_default().add(llm_ok);
        let k = keyword_route(&question);
        keywords.add(ok(k.use_rag, k.is_followup));
        let boosted = r.use_rag || strong_evidence(&engine, &item.question)?;
        combined.add(ok(boosted, r.is_followup));
        if !llm_ok {
            misses.push(serde_json::json!({"question": item.question, "expected": {"use_rag": item.use_rag, "is_followup": item.is_followup}, "got": r}));
        }
    }
    let report = serde_json::json!({
        "provider": choice.provider.describe(),
        "questions": items.len(),
        "llm": llm, "keywords": keywords, "llm_plus_retrieval": combined,
        "llm_by_language": by_lang,
        "llm_fallbacks_to_keywords": fallbacks,
        "ms_per_question": (started.elapsed().as_secs_f64() * 1000.0 / items.len().max(1) as f64).round(),
        "llm_misses": misses,
    });
    println!("{}", if json { serde_json::to_string(&report)? } else { serde_json::to_string_pretty(&report)? });
    Ok(ExitCode::SUCCESS)
}

#[derive(Clone, Copy, clap::ValueEnum)]
pub enum ClassifierKind {
    Clip,
    VisionLlm,
}

#[allow(clippy::too_many_arguments)]
pub fn identify(
    config: EngineConfig,
    settings: &Settings,
    args: &LlmArgs,
    image: &Path,
    chat: Option<i64>,
    (kind, image_model): (ClassifierKind, &str),
    lang: kea_engine::language::Language,
    json: bool,
) -> anyhow::Result<ExitCode> {
    use kea_engine::identify::{IdentifyOptions, Photo, PhotoClassifier};
    let classifier = match kind {
        ClassifierKind::Clip => PhotoClassifier::Clip,
        ClassifierKind::VisionLlm => PhotoClassifier::VisionLlm,
    };
    let choice = select(&config, settings, args)?;
    let engine = crate::open_engine(config)?;
    let options = IdentifyOptions { classifier, image_model: image_model.to_string(), lang, ..Default::default() };
    let mut sink = |event: ChatEvent| {
        if let (false, ChatEvent::ToolEnd { tool, ms, output }) = (json, event) {
            eprintln!("[{tool} {ms:.0} ms] {}", crate::output::printable(&output.to_string()));
        }
    };
    let result = match engine.identifier().identify(choice.provider.as_ref(), Photo::File(image.to_path_buf()), chat, &options, &mut sink) {
        Err(e) if e.kind() == kea_engine::ErrorKind::ModelMissing && e.to_string().contains(image_model) => anyhow::bail!(
            "{e}\nNo image model is installed: `kea models install {}` downloads CLIP ViT-B/32 (about 600 MB), \
             or `kea models import FOLDER` installs one you have; see docs/guide.md, \"Identifying a photo\".",
            kea_engine::identify::DEFAULT_IMAGE_MODEL
        ),
        other => other?,
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&result)?);
        return Ok(ExitCode::SUCCESS);
    }
    // Names, sources and headings come from the documents: printed without terminal escapes.
    use crate::output::{printable, terminal};
    println!("{}", terminal(&result.reply));
    for c in &result.candidates {
        println!("  {:>5.1}%  {}{}", c.probability * 100.0, printable(&c.name), c.zh.as_deref().map(|z| format!(" / {}", printable(z))).unwrap_or_default());
    }
    if !result.visual_description.is_empty() {
        println!("  looks: {}", printable(&result.visual_description));
    }
    for e in &result.evidence {
        println!("  [{}] {} | {}", printable(&e.id), printable(&e.source), printable(&e.heading_path));
    }
    Ok(ExitCode::SUCCESS)
}

#[derive(clap::Subcommand)]
pub enum ChatCommand {
    /// Write a conversation (its id from `kea ask`) as Markdown, its citations as footnotes,
    /// each answer with its outcome, related passages and unsupported sentences.
    Export {
        id: i64,
        /// The file to write (default: standard output).
        #[arg(long, value_name = "FILE")]
        out: Option<std::path::PathBuf>,
        /// Replace the --out file if it exists (a link is never written through).
        #[arg(long, requires = "out")]
        force: bool,
        /// Its messages as JSON instead, each as it was saved.
        #[arg(long)]
        json: bool,
    },
}

/// Runs a `kea chat` command on the collection's conversations.
pub fn run(which: &ChatCommand, config: EngineConfig, app_data: &std::path::Path) -> anyhow::Result<ExitCode> {
    let engine = crate::open_engine(config)?;
    match which {
        ChatCommand::Export { id, out, force, json } => {
            let conversations = engine.conversations();
            let text = match json {
                true => format!("{}\n", serde_json::to_string_pretty(&conversations.messages(*id)?)?),
                false => conversations.export_markdown(*id)?,
            };
            match out {
                Some(path) => crate::output::write_file(path, text.as_bytes(), *force, app_data)?,
                None => print!("{text}"),
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
