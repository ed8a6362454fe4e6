//! The embedded provider: a GGUF model run in-process by llama.cpp. The
//! model and its context live on one worker thread (llama.cpp contexts are
//! not shareable); requests arrive over a channel and tokens stream back.
//! The model is loaded for a request and unloaded after [`KEEP_LOADED`]
//! without one.
//! The KV cache keeps the previous prompt, so a request sharing a prefix
//! (the router's few-shot examples) only evaluates what is new. JSON output
//! is constrained by a grammar built from the request's schema.

use std::num::NonZeroU32;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::{LlamaChatMessage, LlamaModel};
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::data::LlamaTokenData;
use llama_cpp_2::token::data_array::LlamaTokenDataArray;
use llama_cpp_2::token::LlamaToken;

use crate::gguf::GgufModel;
use crate::{stop_position, Completion, Finish, LlmError, Message, Provider, ProviderKind, Request, Role};

const BATCH: usize = 512;

fn backend() -> Result<&'static LlamaBackend, LlmError> {
    static BACKEND: OnceLock<Result<LlamaBackend, String>> = OnceLock::new();
    BACKEND
        .get_or_init(|| {
            LlamaBackend::init()
                .map(|mut b| {
                    b.void_logs();
                    b
                })
                .map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| LlmError::Generation(format!("llama.cpp backend: {e}")))
}

struct Job {
    request: Request,
    events: mpsc::Sender<Event>,
    cancel: Arc<AtomicBool>,
}

enum Event {
    Token(String),
    Done(Completion),
    Failed(LlmError),
}

/// A GGUF model served by a worker thread.
pub struct LlamaProvider {
    model: GgufModel,
    jobs: Mutex<mpsc::Sender<Job>>,
    threads: usize,
    /// Whether the weights are in memory now.
    loaded: Arc<AtomicBool>,
}

/// Generation threads: every core on a machine of four or fewer (the
/// answer is generated after retrieval, so nothing else competes: on two
/// cores generation measured 26 tokens/s against 17 on one), else all but
/// one (busy cores make llama.cpp crawl).
pub fn default_threads() -> usize {
    threads_for(std::thread::available_parallelism().map_or(2, |n| n.get()))
}

fn threads_for(cores: usize) -> usize {
    if cores <= 4 {
        cores.max(1)
    } else {
        cores - 1
    }
}

impl LlamaProvider {
    /// Checks that the model loads (on its worker thread, which then
    /// unloads it until the first request).
    pub fn load(model: &GgufModel, threads: Option<usize>) -> Result<LlamaProvider, LlmError> {
        Self::load_keeping(model, threads, KEEP_LOADED)
    }

    /// As [`LlamaProvider::load`], unloading after `keep_loaded` idle.
    pub fn load_keeping(model: &GgufModel, threads: Option<usize>, keep_loaded: Duration) -> Result<LlamaProvider, LlmError> {
        let threads = threads.unwrap_or_else(default_threads).max(1);
        let (jobs_tx, jobs_rx) = mpsc::channel::<Job>();
        let (ready_tx, ready_rx) = mpsc::channel::<Result<(), LlmError>>();
        let worker = Worker { spec: model.clone(), threads, keep_loaded, loaded: Arc::new(AtomicBool::new(false)) };
        let loaded = worker.loaded.clone();
        std::thread::Builder::new()
            .name("kea-llama".into())
            .spawn(move || worker.run(jobs_rx, ready_tx))
            .map_err(|e| LlmError::Generation(format!("cannot start the model thread: {e}")))?;
        ready_rx.recv().map_err(|_| LlmError::Generation("the model thread died while loading".into()))??;
        Ok(LlamaProvider { model: model.clone(), jobs: Mutex::new(jobs_tx), threads, loaded })
    }

    /// Whether the model's weights are in memory now (between a request
    /// and the end of its keep-alive).
    pub fn is_loaded(&self) -> bool {
        self.loaded.load(Ordering::SeqCst)
    }
}

impl Provider for LlamaProvider {
    fn kind(&self) -> ProviderKind {
        ProviderKind::Embedded
    }

    fn describe(&self) -> String {
        format!("embedded {} ({} threads)", self.model.id, self.threads)
    }

    fn is_tiny(&self) -> bool {
        self.model.below_floor()
    }

    fn complete(&self, request: &Request, on_token: &mut dyn FnMut(&str), cancelled: &(dyn Fn() -> bool + Sync)) -> Result<Completion, LlmError> {
        let (events_tx, events) = mpsc::channel();
        let cancel = Arc::new(AtomicBool::new(false));
        let job = Job { request: request.clone(), events: events_tx, cancel: cancel.clone() };
        self.jobs.lock().unwrap_or_else(|p| p.into_inner()).send(job).map_err(|_| LlmError::Generation("the model thread has stopped".into()))?;
        loop {
            if cancelled() {
                cancel.store(true, Ordering::SeqCst);
            }
            match events.recv_timeout(Duration::from_millis(50)) {
                Ok(Event::Token(t)) => on_token(&t),
                Ok(Event::Done(completion)) => return Ok(completion),
                Ok(Event::Failed(e)) => return Err(e),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return Err(LlmError::Generation("the model thread stopped mid-answer".into())),
            }
        }
    }
}

/// How long a model stays in memory after its last request (like Ollama's
/// keep-alive): an idle app does not hold the weights and the KV cache.
pub const KEEP_LOADED: Duration = Duration::from_secs(5 * 60);

/// Whether the worker goes on after a loaded period.
enum Served {
    /// The model was unloaded after its keep-alive without a request.
    Idle,
    /// The provider was dropped.
    Closed,
}

/// The model thread: what it serves and how.
struct Worker {
    spec: GgufModel,
    threads: usize,
    keep_loaded: Duration,
    loaded: Arc<AtomicBool>,
}

impl Worker {
    /// Checks that the model loads, then waits for requests: the model is
    /// loaded for a request and unloaded once idle for `keep_loaded`.
    fn run(self, jobs: mpsc::Receiver<Job>, ready: mpsc::Sender<Result<(), LlmError>>) {
        let checked = Loaded::new(&self.spec, self.threads).and_then(|loaded| loaded.context().map(drop));
        let failed = checked.is_err();
        let _ = ready.send(checked);
        if failed {
            return;
        }
        while let Ok(job) = jobs.recv() {
            self.loaded.store(true, Ordering::SeqCst);
            let served = self.serve(job, &jobs);
            self.loaded.store(false, Ordering::SeqCst);
            if let Served::Closed = served {
                return;
            }
        }
    }

    /// Loads the model and answers `first` and every request that follows
    /// within `keep_loaded` of the previous one.
    fn serve(&self, first: Job, jobs: &mpsc::Receiver<Job>) -> Served {
        let loaded = match Loaded::new(&self.spec, self.threads) {
            Ok(loaded) => loaded,
            Err(e) => {
                let _ = first.events.send(Event::Failed(e));
                return Served::Idle;
            }
        };
        let mut ctx = match loaded.context() {
            Ok(ctx) => ctx,
            Err(e) => {
                let _ = first.events.send(Event::Failed(e));
                return Served::Idle;
            }
        };
        let mut session = Session { model: &loaded.model, spec: &self.spec, cached: Vec::new() };
        let mut job = first;
        loop {
            let events = job.events.clone();
            let result = session.generate(&mut ctx, &job);
            let _ = events.send(match result {
                Ok(completion) => Event::Done(completion),
                Err(e) => {
                    // The cache may hold a half-decoded prompt: forget it.
                    session.cached.clear();
                    let _ = ctx.clear_kv_cache_seq(Some(0), None, None);
                    Event::Failed(e)
                }
            });
            job = match jobs.recv_timeout(self.keep_loaded) {
                Ok(next) => next,
                Err(RecvTimeoutError::Timeout) => return Served::Idle,
                Err(RecvTimeoutError::Disconnected) => return Served::Closed,
            };
        }
    }
}

impl GgufModel {
    fn error(&self, message: String) -> LlmError {
        LlmError::Model { path: self.path.clone(), message }
    }
}

/// A model's weights, loaded (memory-mapped) by llama.cpp.
struct Loaded<'s> {
    spec: &'s GgufModel,
    backend: &'static LlamaBackend,
    model: LlamaModel,
    threads: usize,
}

impl<'s> Loaded<'s> {
    fn new(spec: &'s GgufModel, threads: usize) -> Result<Loaded<'s>, LlmError> {
        let backend = backend()?;
        spec.check_file().map_err(|e| spec.error(e))?;
        let model = LlamaModel::load_from_file(backend, &spec.path, &LlamaModelParams::default()).map_err(|e| spec.error(e.to_string()))?;
        Ok(Loaded { spec, backend, model, threads })
    }

    /// A context (its KV cache) for the model.
    fn context(&self) -> Result<LlamaContext<'_>, LlmError> {
        let all_cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        let params = LlamaContextParams::default()
            .with_n_ctx(NonZeroU32::new(self.spec.context))
            .with_n_batch(BATCH as u32)
            .with_n_threads(self.threads as i32)
            .with_n_threads_batch(all_cores.max(self.threads) as i32);
        self.model.new_context(self.backend, params).map_err(|e| self.spec.error(format!("cannot create a context: {e}")))
    }
}

struct Session<'m> {
    model: &'m LlamaModel,
    spec: &'m GgufModel,
    /// The tokens whose keys and values are in the cache (sequence 0).
    cached: Vec<LlamaToken>,
}

impl Session<'_> {
    fn prompt(&self, messages: &[Message]) -> Result<String, LlmError> {
        if self.spec.chat_template {
            if let Ok(template) = self.model.chat_template(None) {
                let chat: Vec<LlamaChatMessage> = messages
                    .iter()
                    .map(|m| LlamaChatMessage::new(m.role.as_str().to_string(), m.content.clone()))
                    .collect::<Result<_, _>>()
                    .map_err(|e| LlmError::Generation(e.to_string()))?;
                return self.model.apply_chat_template(&template, &chat, true).map_err(|e| LlmError::Generation(e.to_string()));
            }
        }
        Ok(transcript(messages))
    }

    fn generate(&mut self, ctx: &mut LlamaContext<'_>, job: &Job) -> Result<Completion, LlmError> {
        let started = Instant::now();
        let request = &job.request;
        if request.messages.iter().any(|m| !m.images.is_empty()) {
            return Err(LlmError::Generation(format!("{} cannot see images; use a vision model over HTTP", self.spec.id)));
        }
        let prompt = self.prompt(&request.messages)?;
        let vocab = self.model.vocab();
        let tokens = vocab.tokenize(prompt.as_bytes(), true, true);
        let n_ctx = ctx.n_ctx() as usize;
        // Room for the whole answer too: a reply cut off at the context's end is no answer.
        if tokens.len() + request.max_tokens.max(8) >= n_ctx {
            return Err(LlmError::PromptTooLong { tokens: tokens.len(), context: n_ctx });
        }
        let (mut batch, cached_tokens) = self.evaluate_prompt(ctx, &tokens)?;
        let mut sampler = self.sampler(request)?;
        let mut text = String::new();
        let mut pending: Vec<u8> = Vec::new();
        let mut generated = 0;
        let mut first_token_ms = None;
        let finish = loop {
            if job.cancel.load(Ordering::SeqCst) {
                break Finish::Cancelled;
            }
            if generated >= request.max_tokens || self.cached.len() + 1 >= n_ctx {
                break Finish::Length;
            }
            let token = sampler.sample(ctx, batch.n_tokens() - 1)?;
            if vocab.is_eog(token) {
                break Finish::Stop;
            }
            generated += 1;
            first_token_ms.get_or_insert_with(|| started.elapsed().as_secs_f64() * 1000.0);
            pending.extend(vocab.token_to_piece(token, false, None));
            let before = text.len();
            text.push_str(&complete_characters(&mut pending));
            let stopped = stop_position(&text, &request.stop);
            let visible_end = stopped.unwrap_or(text.len());
            if visible_end > before {
                let _ = job.events.send(Event::Token(text[before..visible_end].to_string()));
            }
            if let Some(cut) = stopped {
                text.truncate(cut);
                break Finish::Stop;
            }
            batch.clear();
            batch.add(token, self.cached.len() as i32, &[0], true).map_err(|e| LlmError::Generation(e.to_string()))?;
            ctx.decode(&mut batch).map_err(|e| LlmError::Generation(format!("decoding failed: {e}")))?;
            self.cached.push(token);
        };
        Ok(Completion {
            text,
            tokens: generated,
            prompt_tokens: tokens.len(),
            cached_tokens,
            first_token_ms,
            total_ms: started.elapsed().as_secs_f64() * 1000.0,
            finish,
        })
    }

    /// Evaluates the prompt after the prefix already in the KV cache (at
    /// least its last token); the returned batch holds the last position,
    /// with how many of the prompt's tokens the cache already held.
    fn evaluate_prompt(&mut self, ctx: &mut LlamaContext<'_>, tokens: &[LlamaToken]) -> Result<(LlamaBatch<'static>, usize), LlmError> {
        let keep = self.cached.iter().zip(tokens).take_while(|(a, b)| a == b).count().min(tokens.len() - 1);
        ctx.clear_kv_cache_seq(Some(0), Some(keep as u32), None).map_err(|e| LlmError::Generation(e.to_string()))?;
        self.cached.truncate(keep);
        let mut batch = LlamaBatch::new(BATCH, 1);
        for (start, part) in tokens[keep..].chunks(BATCH).enumerate().map(|(i, p)| (keep + i * BATCH, p)) {
            batch.clear();
            for (offset, &token) in part.iter().enumerate() {
                let pos = start + offset;
                batch.add(token, pos as i32, &[0], pos == tokens.len() - 1).map_err(|e| LlmError::Generation(e.to_string()))?;
            }
            ctx.decode(&mut batch).map_err(|e| LlmError::Generation(format!("prompt evaluation failed: {e}")))?;
            self.cached.extend_from_slice(part);
        }
        Ok((batch, keep))
    }

    fn sampler(&self, request: &Request) -> Result<Sampling, LlmError> {
        let grammar = match &request.json_schema {
            Some(schema) => {
                Some(LlamaSampler::grammar(self.model, &grammar_for_schema(schema)?, "root").map_err(|e| LlmError::Generation(format!("grammar: {e}")))?)
            }
            None => None,
        };
        let mut chain = vec![LlamaSampler::penalties(self.model.n_vocab(), 64, 1.1, 0.0, 0.0)];
        if request.temperature <= 0.0 {
            chain.push(LlamaSampler::greedy());
        } else {
            chain.push(LlamaSampler::temp(request.temperature));
            chain.push(LlamaSampler::dist(0x5EED));
        }
        Ok(Sampling { base: LlamaSampler::chain_simple(chain), grammar })
    }
}

/// A request's sampling: the base chain (repetition penalty, then greedy
/// or temperature) and, for a JSON schema, its grammar, consulted as
/// llama.cpp's own sampler does: the base chain's choice is checked alone,
/// and only a token the grammar refuses makes it filter the whole
/// vocabulary (150k tokens for Qwen) before choosing again.
struct Sampling {
    base: LlamaSampler,
    grammar: Option<LlamaSampler>,
}

impl Sampling {
    fn sample(&mut self, ctx: &LlamaContext<'_>, idx: i32) -> Result<LlamaToken, LlmError> {
        let Some(grammar) = &mut self.grammar else {
            return Ok(self.base.sample(ctx, idx));
        };
        let mut candidates = ctx.token_data_array_ith(idx);
        self.base.apply(&mut candidates);
        let chosen = candidates.selected_token().filter(|&token| {
            let mut alone = LlamaTokenDataArray::new(vec![LlamaTokenData::new(token, 1.0, 0.0)], false);
            grammar.apply(&mut alone);
            alone.data[0].logit().is_finite()
        });
        let token = match chosen {
            Some(token) => token,
            None => {
                let mut candidates = ctx.token_data_array_ith(idx);
                grammar.apply(&mut candidates);
                self.base.apply(&mut candidates);
                candidates.selected_token().ok_or_else(|| LlmError::Generation("the grammar allows no token".into()))?
            }
        };
        grammar.accept(token);
        self.base.accept(token);
        Ok(token)
    }
}

/// The whole UTF-8 characters at the start of `pending`, taken out of it
/// (a token may end inside a character; the rest waits for the next one).
fn complete_characters(pending: &mut Vec<u8>) -> String {
    let valid = match std::str::from_utf8(pending) {
        Ok(s) => s.len(),
        Err(e) => e.valid_up_to(),
    };
    let piece = String::from_utf8_lossy(&pending[..valid]).into_owned();
    pending.drain(..valid);
    piece
}

/// A GBNF grammar for JSON of `schema` that also allows the one space a
/// model usually emits before `{` (forbidding it changes the answer;
/// allowing any white space lets a small model emit nothing else).
pub fn grammar_for_schema(schema: &serde_json::Value) -> Result<String, LlmError> {
    let generated = crate::grammar::for_schema(schema)?;
    let renamed = generated.replacen("root ::=", "json-root ::=", 1);
    Ok(format!("root ::= \" \"? json-root\n{renamed}"))
}

/// The prompt for a model without a chat template: a plain transcript that
/// ends where the assistant's turn begins.
pub fn transcript(messages: &[Message]) -> String {
    let mut out = String::new();
    for m in messages {
        match m.role {
            Role::System => out.push_str(&format!("{}\n\n", m.content.trim())),
            Role::User => out.push_str(&format!("User: {}\n", m.content.trim())),
            Role::Assistant => out.push_str(&format!("Assistant: {}\n\n", m.content.trim())),
        }
    }
    out.push_str("Assistant:");
    out
}

#[cfg(test)]
mod tests {
    use super::threads_for;

    #[test]
    fn a_character_split_across_tokens_waits_for_its_last_byte() {
        let mut pending = "好".as_bytes()[..2].to_vec();
        assert_eq!(super::complete_characters(&mut pending), "");
        pending.extend_from_slice(&"好a".as_bytes()[2..]);
        assert_eq!((super::complete_characters(&mut pending), pending.len()), ("好a".to_string(), 0));
    }

    #[test]
    fn small_machines_generate_on_every_core_and_larger_ones_leave_one_free() {
        assert_eq!([1, 2, 4, 8, 16].map(threads_for), [1, 2, 4, 7, 15]);
    }
}
