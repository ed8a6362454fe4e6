//! Reading a document in a child process. The parsers of complex formats
//! (PDF, Word, spreadsheets, web pages, pictures through OCR) run in a process of
//! their own with a memory limit (its address space, `RLIMIT_AS`) and are
//! killed at the file's deadline, so a file that makes a parser allocate
//! without bound or loop fails alone, frees its memory and CPU, and never
//! takes the app down. The executable running Kea (the CLI, the desktop
//! app) calls [`serve_if_asked`] first thing; it is started again with
//! [`READ_ARG`].
//!
//! The child is contained: it runs in a process group of its own (the
//! whole group, OCR tools included, is killed when it ends or overruns),
//! with an environment cleared of everything but what the OCR tools need
//! (no API keys), a CPU-time limit, a scratch folder the parent deletes,
//! and, on Linux, death when its parent dies.

use std::ffi::OsStr;
use std::io::{BufRead, Read, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::extract::{extract_with, DocKind, ExtractContext, Extracted, Ocr, OUT_OF_MEMORY};

/// The argument that makes Kea's executable a document reader.
pub const READ_ARG: &str = "--kea-read-document";

/// The default memory a document's reader may use.
pub const DEFAULT_MEMORY_MB: u64 = 2048;

/// The most a reader may answer (its JSON): more is refused, not buffered.
const MAX_OUTPUT_BYTES: u64 = 256 << 20;
/// The most of a reader's error output kept for the message.
const MAX_ERROR_BYTES: u64 = 64 << 10;

/// A child's task, as a JSON line on its stdin; the file's bytes follow.
#[derive(serde::Serialize, serde::Deserialize)]
struct Job {
    kind: DocKind,
    ocr: Option<Ocr>,
    seconds: f64,
    memory_mb: u64,
}

/// A child's answer on its stdout.
#[derive(serde::Serialize, serde::Deserialize)]
enum Outcome {
    Read(Extracted),
    Failed(String),
}

/// Which executable reads documents, and the memory each may use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReaderProcess {
    pub exe: PathBuf,
    pub memory_mb: u64,
}

impl ReaderProcess {
    /// This process's own executable (which must call [`serve_if_asked`]).
    pub fn this_executable(memory_mb: u64) -> Option<ReaderProcess> {
        Some(ReaderProcess { exe: std::env::current_exe().ok()?, memory_mb })
    }

    /// Whether files of `kind` are read in a child: formats whose parsers
    /// can blow up (a workbook is a zip, read whole by its parser; a web
    /// page's markup is any size and shape). Markdown, text and CSV are
    /// read in-process.
    pub fn reads(kind: DocKind) -> bool {
        matches!(kind, DocKind::Pdf | DocKind::Docx | DocKind::Image | DocKind::Spreadsheet | DocKind::Html)
    }

    /// Starts a reader (the caller refuses the file when it cannot: it is
    /// never read without these limits).
    pub fn start(&self) -> std::io::Result<ReaderChild> {
        let scratch = tempfile::Builder::new().prefix("kea-reader-").tempdir()?;
        let mut command = Command::new(&self.exe);
        command.arg(READ_ARG).env_clear().envs(std::env::vars_os().filter(|(key, _)| KEPT_ENV.iter().any(|k| key == k)));
        command.env("TMPDIR", scratch.path()).current_dir(scratch.path());
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        let child = command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn()?;
        Ok(ReaderChild { child, memory_mb: self.memory_mb, _scratch: scratch, ended: None })
    }
}

/// The environment a reader keeps: finding and running the OCR tools.
const KEPT_ENV: [&str; 6] = ["PATH", "LANG", "LC_ALL", "LC_CTYPE", "TESSDATA_PREFIX", "OMP_THREAD_LIMIT"];

/// A started reader process, for one document.
pub struct ReaderChild {
    child: std::process::Child,
    memory_mb: u64,
    /// The child's temporary files (OCR pages), deleted with it.
    _scratch: tempfile::TempDir,
    /// The reader's exit status, once it has been ended and reaped.
    ended: Option<std::process::ExitStatus>,
}

impl Drop for ReaderChild {
    fn drop(&mut self) {
        let _ = self.end();
    }
}

impl ReaderChild {
    /// Extracts `bytes` within the context's deadline and the reader's
    /// memory. `Err` is the document's status message.
    pub fn extract(mut self, kind: DocKind, bytes: Vec<u8>, context: &ExtractContext) -> Result<Extracted, String> {
        let budget = context.deadline.saturating_duration_since(Instant::now());
        let job = Job { kind, ocr: context.ocr.clone(), seconds: budget.as_secs_f64(), memory_mb: self.memory_mb };
        let child = &mut self.child;
        let (stdin, stdout, stderr) = (child.stdin.take(), child.stdout.take(), child.stderr.take());
        let header = serde_json::to_vec(&job).map_err(|e| e.to_string())?;
        std::thread::spawn(move || stdin.map(|mut s| s.write_all(&header).and_then(|()| s.write_all(b"\n")).and_then(|()| s.write_all(&bytes))));
        let errors = std::thread::spawn(move || stderr.map(|mut s| read_text(&mut s)).unwrap_or_default());
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut out = Vec::new();
            let _ = stdout.map(|s| s.take(MAX_OUTPUT_BYTES + 1).read_to_end(&mut out));
            let _ = tx.send(out);
        });
        // Overrun or too much output: dropping `self` kills the group.
        let Ok(out) = rx.recv_timeout(budget) else { return Err(timed_out(budget)) };
        if out.len() as u64 > MAX_OUTPUT_BYTES {
            return Err(format!("the text read from this file is over {} MB; Kea skips it until it changes", MAX_OUTPUT_BYTES >> 20));
        }
        let status = self.end().map_err(|e| format!("the document reader was lost: {e}"))?;
        let errors = errors.join().unwrap_or_default();
        match serde_json::from_slice::<Outcome>(&out) {
            Ok(Outcome::Read(doc)) if status.success() => Ok(doc.bounded()),
            // A parser's allocation failed: an error it reports, or Rust's abort.
            Ok(Outcome::Failed(message)) if message == OUT_OF_MEMORY => Err(self.out_of_memory()),
            _ if errors.contains("memory allocation of") => Err(self.out_of_memory()),
            Ok(Outcome::Failed(message)) if status.success() => Err(message),
            _ => Err(format!("internal error while reading this file ({status}): {} (please report it)", errors.lines().last().unwrap_or("no message"))),
        }
    }

    /// Kills whatever is left of the reader's process group (the reader
    /// itself if it overran, an OCR tool, a process that tool started) and
    /// reaps the reader. The reader is not reaped before, so its id still
    /// names its group; once it has exited, the kill leaves its status as it was.
    fn end(&mut self) -> std::io::Result<std::process::ExitStatus> {
        if let Some(status) = self.ended {
            return Ok(status);
        }
        #[cfg(unix)]
        if let Ok(group) = i32::try_from(self.child.id()) {
            let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(group), nix::sys::signal::Signal::SIGKILL);
        }
        #[cfg(not(unix))]
        let _ = self.child.kill();
        let status = self.child.wait()?;
        self.ended = Some(status);
        Ok(status)
    }

    fn out_of_memory(&self) -> String {
        format!("out of memory: reading this file needed over {} MB; Kea skips it until it changes (or re-index it)", self.memory_mb)
    }
}

/// The message of a file whose reading overran `budget`.
pub(crate) fn timed_out(budget: Duration) -> String {
    format!("timed out: reading this file took over {} s; Kea skips it until it changes (or re-index it)", budget.as_secs().max(1))
}

/// The first [`MAX_ERROR_BYTES`] of `source` as text; the rest is read and
/// dropped, so a chatty reader never blocks on a full pipe.
fn read_text(source: &mut impl Read) -> String {
    let mut kept = Vec::new();
    let _ = source.by_ref().take(MAX_ERROR_BYTES).read_to_end(&mut kept);
    let _ = std::io::copy(source, &mut std::io::sink());
    String::from_utf8_lossy(&kept).into_owned()
}

/// In a reader child (started with [`READ_ARG`]): reads the job, limits
/// its memory, extracts, answers and exits. Returns at once in any other process.
pub fn serve_if_asked() {
    if std::env::args_os().nth(1).as_deref() != Some(OsStr::new(READ_ARG)) {
        return;
    }
    let code = match serve() {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("kea document reader: {e}");
            2
        }
    };
    std::process::exit(code);
}

fn serve() -> std::io::Result<()> {
    let mut input = std::io::stdin().lock();
    let mut line = String::new();
    input.read_line(&mut line)?;
    let job: Job = serde_json::from_str(&line)?;
    let mut bytes = Vec::new();
    input.read_to_end(&mut bytes)?;
    contain(&job)?;
    let context = ExtractContext { ocr: job.ocr, deadline: Instant::now() + Duration::from_secs_f64(job.seconds) };
    let outcome = match extract_with(job.kind, &bytes, &context) {
        Ok(doc) => Outcome::Read(doc),
        Err(message) => Outcome::Failed(message),
    };
    drop(bytes);
    serde_json::to_writer(std::io::stdout().lock(), &outcome)?;
    Ok(())
}

/// Limits this reader: its memory, its CPU time (the budget and a margin:
/// the parent kills it at the deadline anyway; the OCR tools it starts
/// inherit the limit), and on Linux its life to its parent's.
fn contain(job: &Job) -> std::io::Result<()> {
    limit_memory(job.memory_mb)?;
    #[cfg(unix)]
    {
        let seconds = job.seconds.ceil() as u64 + CPU_MARGIN_SECONDS;
        rlimit::setrlimit(rlimit::Resource::CPU, seconds, seconds + CPU_MARGIN_SECONDS)?;
    }
    #[cfg(target_os = "linux")]
    nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL).map_err(std::io::Error::from)?;
    Ok(())
}

/// CPU seconds a reader may use beyond its time budget.
const CPU_MARGIN_SECONDS: u64 = 5;

/// Lets this process map at most `memory_mb` more than it has mapped now.
#[cfg(target_os = "linux")]
fn limit_memory(memory_mb: u64) -> std::io::Result<()> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    let mapped_kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmSize:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .ok_or_else(|| std::io::Error::other("no VmSize in /proc/self/status"))?;
    let limit = mapped_kb * 1024 + memory_mb * 1024 * 1024;
    rlimit::setrlimit(rlimit::Resource::AS, limit, limit)
}

/// Elsewhere only the time budget applies.
#[cfg(not(target_os = "linux"))]
fn limit_memory(_memory_mb: u64) -> std::io::Result<()> {
    Ok(())
}
