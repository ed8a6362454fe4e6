//! A local stand-in for a model hub on 127.0.0.1, serving fixture files in
//! the hub's URL layout (`/{repo}/resolve/{revision}/{path}`) with the hub's
//! headers: small files answer HEAD with a git blob sha1 `ETag`; large ones
//! (`.onnx`, `.gguf`) redirect to `/cdn/…` with `X-Linked-Etag` (sha256) and
//! `X-Linked-Size`. GET honours `Range`. Faults on demand: a connection cut
//! mid-file (once), content that does not match its checksum, a body
//! longer than announced, a redirect elsewhere, a size claimed or a body
//! without end. Any revision `main` or [`COMMIT`] resolves.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use sha1::Digest;

/// A fault to inject for one file (named by its path in the repository).
#[derive(Clone)]
#[allow(dead_code)] // each test binary (integration, desktop e2e) uses some of them
pub enum Fault {
    /// The first GET sends only this many bytes, then closes the connection.
    CutOnce(usize),
    /// The bytes served differ from the checksum announced.
    WrongContent,
    /// The body trickles out (16 KiB every 100 ms), so progress can be seen.
    Slow,
    /// GET sends more bytes than HEAD announced (its own length matching).
    Overlong,
    /// GET answers `302 Found` to this address.
    RedirectTo(String),
    /// HEAD announces no size; GET claims 50 GB and sends zeros (up to
    /// [`ENDLESS_BYTES`], so a client that does not stop still finishes).
    Endless,
    /// HEAD claims the file is 50 GB.
    ClaimsHuge,
}

/// The most an [`Fault::Endless`] body sends before it closes.
pub const ENDLESS_BYTES: usize = 64 << 20;
/// What [`Fault::Endless`] and [`Fault::ClaimsHuge`] claim.
const FIFTY_GB: u64 = 50 << 30;

/// The commit every revision resolves to (`X-Repo-Commit`).
pub const COMMIT: &str = "0123456789abcdef0123456789abcdef01234567";

#[derive(Default)]
struct HubState {
    /// `repo/path` → bytes.
    files: HashMap<String, Vec<u8>>,
    faults: HashMap<String, Fault>,
    /// `METHOD target [range]`, in order.
    log: Vec<String>,
}

pub struct LocalHub {
    pub endpoint: String,
    state: Arc<Mutex<HubState>>,
}

impl LocalHub {
    /// Serves `files` (`repo/path` → bytes) until the process ends.
    pub fn start(files: HashMap<String, Vec<u8>>, faults: HashMap<String, Fault>) -> LocalHub {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let endpoint = format!("http://{}", listener.local_addr().unwrap());
        let state = Arc::new(Mutex::new(HubState { files, faults, log: Vec::new() }));
        let shared = state.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let state = shared.clone();
                std::thread::spawn(move || serve(stream, &state));
            }
        });
        LocalHub { endpoint, state }
    }

    /// Serves `files` on `ip` (another loopback address), when this system lets it be bound.
    #[allow(dead_code)] // used by the integration binary only
    pub fn start_on(ip: &str, files: HashMap<String, Vec<u8>>) -> Option<LocalHub> {
        let listener = TcpListener::bind((ip, 0)).ok()?;
        let endpoint = format!("http://{}", listener.local_addr().ok()?);
        let state = Arc::new(Mutex::new(HubState { files, faults: HashMap::new(), log: Vec::new() }));
        let shared = state.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let state = shared.clone();
                std::thread::spawn(move || serve(stream, &state));
            }
        });
        Some(LocalHub { endpoint, state })
    }

    /// Serves other bytes for `key` (`repo/path`) from now on, announced as
    /// such: upstream changed the file.
    #[allow(dead_code)] // used by the integration binary only
    pub fn replace(&self, key: &str, bytes: Vec<u8>) {
        self.state.lock().unwrap().files.insert(key.to_string(), bytes);
    }

    /// Every request seen so far.
    pub fn log(&self) -> Vec<String> {
        self.state.lock().unwrap().log.clone()
    }
}

/// An ONNX text model's files in a repository: the graph under `onnx/`,
/// the tokenizer files at the root (`(path in the repository, file name)`).
pub const ONNX_TEXT_MODEL: [(&str, &str); 5] = [
    ("onnx/model.onnx", "model.onnx"),
    ("tokenizer.json", "tokenizer.json"),
    ("config.json", "config.json"),
    ("special_tokens_map.json", "special_tokens_map.json"),
    ("tokenizer_config.json", "tokenizer_config.json"),
];

/// The files of the model folder `dir` served as repository `repo`
/// (`repo/path` → bytes), laid out as `files` says.
pub fn repository(repo: &str, dir: &std::path::Path, files: &[(&str, &str)]) -> HashMap<String, Vec<u8>> {
    files.iter().map(|(path, local)| (format!("{repo}/{path}"), std::fs::read(dir.join(local)).unwrap())).collect()
}

fn is_large(path: &str) -> bool {
    path.ends_with(".onnx") || path.ends_with(".gguf")
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The sha256 of `bytes`, as the hub's `X-Linked-Etag` gives it.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&sha2::Sha256::digest(bytes))
}

/// Git's blob id of `bytes`, as the hub's `ETag` gives it for small files.
pub fn git_blob_id(bytes: &[u8]) -> String {
    let mut h = sha1::Sha1::new();
    h.update(format!("blob {}\0", bytes.len()).as_bytes());
    h.update(bytes);
    hex(&h.finalize())
}

// The fixture hub's whole HTTP behaviour (ranges, failures, auth) in one match.
#[allow(clippy::too_many_lines)]
fn serve(stream: TcpStream, state: &Mutex<HubState>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).is_err() {
        return;
    }
    let mut range_start = None;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line.trim().is_empty() {
            break;
        }
        if let Some(value) = line.to_ascii_lowercase().strip_prefix("range: bytes=") {
            range_start = value.trim().trim_end_matches('-').parse::<usize>().ok();
        }
    }
    let mut parts = request_line.split_whitespace();
    let (method, target) = (parts.next().unwrap_or("").to_string(), parts.next().unwrap_or("").to_string());
    let mut guard = state.lock().unwrap();
    guard.log.push(format!("{method} {target}{}", range_start.map(|r| format!(" range={r}")).unwrap_or_default()));
    // `/{repo}/resolve/{revision}/{path}`: `main` and the commit serve the same files.
    let resolved = target.split_once("/resolve/").and_then(|(repo, rest)| {
        let (revision, path) = rest.split_once('/')?;
        (revision == "main" || revision == COMMIT).then(|| format!("{}/{path}", repo.trim_start_matches('/')))
    });
    let key = match (target.strip_prefix("/cdn/"), resolved) {
        (Some(cdn), _) => cdn.to_string(),
        (None, Some(key)) => key,
        _ => String::new(),
    };
    let Some(bytes) = guard.files.get(&key).cloned() else {
        return respond(stream, "404 Not Found", &[], b"Entry not found", true);
    };
    let fault = guard.faults.get(&key).cloned();
    if matches!(fault, Some(Fault::CutOnce(_))) && method == "GET" {
        guard.faults.remove(&key);
    }
    drop(guard);
    let path = key.split_once('/').and_then(|(_, rest)| rest.split_once('/')).map_or(key.as_str(), |(_, p)| p);
    let size = bytes.len().to_string();
    if method == "HEAD" {
        let commit = [("x-repo-commit", COMMIT.to_string())];
        if is_large(path) && !target.starts_with("/cdn/") {
            let sha = sha256_hex(&bytes);
            let headers = [commit[0].clone(), ("location", format!("/cdn/{key}")), ("x-linked-etag", format!("\"{sha}\"")), ("x-linked-size", size)];
            return respond(stream, "302 Found", &headers, b"", false);
        }
        let mut headers = vec![commit[0].clone(), ("etag", format!("\"{}\"", git_blob_id(&bytes)))];
        match fault {
            Some(Fault::Endless) => {}
            Some(Fault::ClaimsHuge) => headers.push(("content-length", FIFTY_GB.to_string())),
            _ => headers.push(("content-length", size)),
        }
        return respond(stream, "200 OK", &headers, b"", false);
    }
    if let Some(Fault::RedirectTo(location)) = &fault {
        return respond(stream, "302 Found", &[("location", location.clone())], b"", true);
    }
    if matches!(fault, Some(Fault::Endless)) {
        let mut stream = stream;
        respond_head(&mut stream, "200 OK", &[("content-length", FIFTY_GB.to_string())], None);
        let zeros = vec![0u8; 1 << 20];
        for _ in 0..ENDLESS_BYTES >> 20 {
            if stream.write_all(&zeros).is_err() {
                return;
            }
        }
        return;
    }
    let mut body = bytes.clone();
    if matches!(fault, Some(Fault::WrongContent)) {
        body.iter_mut().take(16).for_each(|b| *b ^= 0x5a);
    }
    if matches!(fault, Some(Fault::Overlong)) {
        body.extend_from_slice(&[0u8; 4096]);
    }
    let start = range_start.unwrap_or(0).min(body.len());
    let (status, mut headers) = if range_start.is_some() {
        ("206 Partial Content", vec![("content-range", format!("bytes {start}-{}/{}", body.len().saturating_sub(1), body.len()))])
    } else {
        ("200 OK", Vec::new())
    };
    let slice = &body[start..];
    headers.push(("content-length", slice.len().to_string()));
    match fault {
        Some(Fault::CutOnce(after)) => respond(stream, status, &headers, &slice[..after.min(slice.len())], false),
        Some(Fault::Slow) => {
            let mut stream = stream;
            respond_head(&mut stream, status, &headers, None);
            for piece in slice.chunks(16 * 1024) {
                std::thread::sleep(std::time::Duration::from_millis(100));
                if stream.write_all(piece).is_err() {
                    return;
                }
            }
        }
        _ => respond(stream, status, &headers, slice, false),
    }
}

fn respond_head(stream: &mut TcpStream, status: &str, headers: &[(&str, String)], length: Option<usize>) {
    let mut head = format!("HTTP/1.1 {status}\r\nconnection: close\r\n");
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    if let Some(length) = length {
        head.push_str(&format!("content-length: {length}\r\n"));
    }
    head.push_str("\r\n");
    let _ = stream.write_all(head.as_bytes());
}

fn respond(mut stream: TcpStream, status: &str, headers: &[(&str, String)], body: &[u8], with_length: bool) {
    respond_head(&mut stream, status, headers, with_length.then_some(body.len()));
    let _ = stream.write_all(body);
    let _ = stream.flush();
}
