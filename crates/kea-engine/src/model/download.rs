//! Downloading model files from a Hugging Face–style hub (the hub itself,
//! a mirror, or a team's own server): `{endpoint}/{repo}/resolve/{revision}/{path}`.
//! A HEAD request gives each file's size and checksum (the `X-Linked-Etag`
//! sha256 of large files, or the git blob sha1 `ETag` of small ones); the
//! GET resumes a `.part` file with a `Range` request after a cut connection
//! or an earlier cancelled run; every file is verified before it is used.
//! Redirects are followed by hand, and every hop must be `https://` or this
//! machine's loopback ([`check_url`]); the bytes received are capped
//! ([`RemoteFile::max_bytes`]), whatever the headers claim.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use sha1::Digest;

use crate::error::{Error, Result};
use crate::progress::CancelToken;

/// The public hub; `HF_ENDPOINT` or the settings name a mirror.
pub const DEFAULT_ENDPOINT: &str = "https://huggingface.co";

/// The endpoint to use: `$HF_ENDPOINT`, else the configured one, else the hub.
pub fn endpoint(configured: Option<&str>) -> String {
    let env = std::env::var("HF_ENDPOINT").ok();
    let chosen = env.as_deref().or(configured).map(str::trim).filter(|e| !e.is_empty()).unwrap_or(DEFAULT_ENDPOINT);
    chosen.trim_end_matches('/').to_string()
}

/// Refuses an endpoint that would send model files in the clear: a mirror
/// is `https://`, or on this machine's loopback (tests, a local mirror).
pub fn check_endpoint(endpoint: &str) -> Result<()> {
    if is_safe_url(endpoint) {
        return Ok(());
    }
    Err(Error::InvalidInput(format!("model downloads need an https:// endpoint (or one on this machine's loopback), not {endpoint}")))
}

/// Refuses a redirect to an address [`check_endpoint`] would refuse: a
/// hop to plain `http://` on another host is never followed.
pub fn check_url(url: &str) -> Result<()> {
    if is_safe_url(url) {
        return Ok(());
    }
    Err(download_error(url, "a redirect left https:// (or this machine's loopback); the download was stopped and nothing installed"))
}

/// The scheme `url` begins with (`https` of `https://…`), if any.
fn scheme(url: &str) -> Option<&str> {
    let (scheme, _) = url.split_once(':')?;
    let valid = scheme.starts_with(|c: char| c.is_ascii_alphabetic()) && scheme.chars().all(|c| c.is_ascii_alphanumeric() || "+.-".contains(c));
    valid.then_some(scheme)
}

/// `https://`, or `http://` to 127.0.0.1, localhost or [::1] (exactly those
/// hosts, as the address is parsed: a `user:password@` part is refused, so
/// `http://127.0.0.1:80@elsewhere/` cannot pass for loopback).
fn is_safe_url(url: &str) -> bool {
    let Ok(uri) = url.parse::<ureq::http::Uri>() else { return false };
    let Some(authority) = uri.authority() else { return false };
    if authority.as_str().contains('@') {
        return false;
    }
    match uri.scheme_str() {
        Some("https") => true,
        Some("http") => matches!(authority.host(), "127.0.0.1" | "localhost" | "[::1]"),
        _ => false,
    }
}

/// How a downloaded file is checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Checksum {
    Sha256(String),
    /// Git's blob id: sha1 of `blob {len}\0{content}`.
    GitSha1(String),
}

/// What a HEAD request said about one file.
#[derive(Debug, Clone)]
pub struct RemoteFile {
    /// Where to GET the bytes (the hub may redirect large files to a CDN).
    pub url: String,
    pub size: Option<u64>,
    pub checksum: Option<Checksum>,
    /// The repository commit the hub resolved the revision to.
    pub commit: Option<String>,
    /// The most bytes the file may have, whatever `size` or the body's own
    /// length say (the catalog's size of the model, see `ModelManager`).
    pub max_bytes: Option<u64>,
}

impl RemoteFile {
    /// The length past which received bytes are not this file: the
    /// announced size, and never more than [`RemoteFile::max_bytes`].
    fn limit(&self) -> Option<u64> {
        match (self.size, self.max_bytes) {
            (Some(size), Some(max)) => Some(size.min(max)),
            (size, max) => size.or(max),
        }
    }
}

/// Bytes received so far, for a progress bar: across every file of a
/// model, or of several models installed together (`models_done` of
/// `models` finished; the model and file being fetched now).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct DownloadProgress {
    pub model: String,
    pub file: String,
    pub done_bytes: u64,
    pub total_bytes: u64,
    pub models_done: usize,
    pub models: usize,
}

/// An HTTP client for one hub endpoint.
pub struct HubClient {
    pub endpoint: String,
    head: ureq::Agent,
    get: ureq::Agent,
    /// Further attempts after a connection breaks off mid-file.
    pub retries: u32,
}

fn agent(max_redirects: u32) -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(max_redirects)
        .timeout_connect(Some(Duration::from_secs(10)))
        .timeout_per_read(Some(Duration::from_secs(30)))
        .timeout_recv_response(Some(Duration::from_secs(30)))
        .build()
        .new_agent()
}

fn download_error(url: &str, message: impl std::fmt::Display) -> Error {
    Error::Download(format!("{url}: {message}"))
}

fn header(response: &ureq::http::Response<ureq::Body>, name: &str) -> Option<String> {
    response.headers().get(name)?.to_str().ok().map(|v| v.trim().to_string())
}

/// An ETag as a checksum: 64 hex digits are sha256, 40 a git blob sha1.
fn parse_etag(raw: &str) -> Option<Checksum> {
    let tag = raw.trim().trim_start_matches("W/").trim_matches('"').to_ascii_lowercase();
    if !tag.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    match tag.len() {
        64 => Some(Checksum::Sha256(tag)),
        40 => Some(Checksum::GitSha1(tag)),
        _ => None,
    }
}

impl HubClient {
    pub fn new(endpoint: String) -> HubClient {
        HubClient { endpoint, head: agent(0), get: agent(0), retries: 4 }
    }

    pub fn file_url(&self, repo: &str, revision: &str, path: &str) -> String {
        format!("{}/{repo}/resolve/{revision}/{path}", self.endpoint)
    }

    /// An absolute URL for a `Location` header met at `base` (the hub
    /// sends relative ones), refused unless it passes [`check_url`].
    fn redirect(base: &str, location: &str) -> Result<String> {
        let next = if scheme(location).is_some() {
            location.to_string()
        } else if location.starts_with("//") {
            format!("{}:{location}", scheme(base).unwrap_or("https"))
        } else {
            let origin_end = base.find("://").map(|i| i + 3).and_then(|s| base[s..].find('/').map(|i| s + i));
            let origin = origin_end.map_or(base, |end| &base[..end]);
            format!("{origin}/{}", location.trim_start_matches('/'))
        };
        check_url(&next)?;
        Ok(next)
    }

    /// Size, checksum and download URL of one file (redirects followed by hand
    /// so the hub's own headers are kept).
    pub fn head(&self, repo: &str, revision: &str, path: &str) -> Result<RemoteFile> {
        let mut url = self.file_url(repo, revision, path);
        for _ in 0..5 {
            let response = self.head.head(&url).call().map_err(|e| download_error(&url, e))?;
            let status = response.status().as_u16();
            let linked = header(&response, "x-linked-etag").and_then(|e| parse_etag(&e));
            let checksum = linked.clone().or_else(|| header(&response, "etag").and_then(|e| parse_etag(&e)));
            let size = header(&response, "x-linked-size").or_else(|| header(&response, "content-length")).and_then(|s| s.parse().ok());
            let commit = header(&response, "x-repo-commit");
            match status {
                200 => return Ok(RemoteFile { url, size, checksum, commit, max_bytes: None }),
                301..=308 => {
                    let location = header(&response, "location").ok_or_else(|| download_error(&url, "redirect without a location"))?;
                    let next = Self::redirect(&url, &location)?;
                    if linked.is_some() {
                        // A large file: the hub's headers describe it, the CDN serves it.
                        return Ok(RemoteFile { url: next, size, checksum, commit, max_bytes: None });
                    }
                    url = next;
                }
                404 => return Err(Error::NotFound(format!("{url} (is the model id or the endpoint right?)"))),
                401 | 403 => return Err(download_error(&url, format!("HTTP {status}: the endpoint refused access"))),
                _ => return Err(download_error(&url, format!("HTTP {status}"))),
            }
        }
        Err(download_error(&url, "too many redirects"))
    }

    /// Downloads `remote` to `dest`, resuming `dest.part` when it exists, and
    /// verifies it. `on_bytes` gets the bytes received in this call so far.
    pub fn fetch(&self, remote: &RemoteFile, dest: &Path, cancel: &CancelToken, on_bytes: &mut dyn FnMut(u64)) -> Result<()> {
        let part = part_path(dest);
        let mut attempt = 0;
        let too_long = || remote.limit().is_some_and(|limit| std::fs::metadata(&part).is_ok_and(|m| m.len() > limit));
        loop {
            match self.fetch_once(remote, &part, cancel, on_bytes) {
                Ok(()) => break,
                Err(Error::Cancelled) => return Err(Error::Cancelled),
                // A body longer than announced is not this file: discarded, not retried.
                Err(e) if too_long() => {
                    let _ = std::fs::remove_file(&part);
                    return Err(e);
                }
                Err(Error::Download(_)) if attempt < self.retries => {
                    attempt += 1;
                    std::thread::sleep(Duration::from_millis(300 * u64::from(attempt)));
                }
                Err(e) => return Err(e),
            }
        }
        verify(&part, remote)?;
        std::fs::rename(&part, dest).map_err(|e| Error::io(format!("moving {} into place", dest.display()), e))
    }

    /// One GET: from the start, or from the end of the `.part` file.
    fn fetch_once(&self, remote: &RemoteFile, part: &Path, cancel: &CancelToken, on_bytes: &mut dyn FnMut(u64)) -> Result<()> {
        let have = std::fs::metadata(part).map(|m| m.len()).unwrap_or(0);
        if remote.size.is_some_and(|size| have == size) {
            return Ok(());
        }
        // A part longer than the file is not resumed but started over.
        let have = if remote.limit().is_some_and(|limit| have > limit) { 0 } else { have };
        let (mut response, url) = self.get_following(&remote.url, have)?;
        let append = match response.status().as_u16() {
            206 => true,
            200 => false,
            404 => return Err(Error::NotFound(url)),
            416 => false,
            status => return Err(download_error(&url, format!("HTTP {status}"))),
        };
        let io = |e| Error::io(format!("writing {}", part.display()), e);
        let mut file = std::fs::OpenOptions::new().create(true).append(append).write(true).truncate(!append).open(part).map_err(io)?;
        let mut received = if append { have } else { 0 };
        on_bytes(received);
        let mut reader = response.body_mut().with_config().limit(u64::MAX).reader();
        let mut buffer = vec![0u8; 256 * 1024];
        loop {
            if cancel.is_cancelled() {
                return Err(Error::Cancelled);
            }
            let n = reader.read(&mut buffer).map_err(|e| download_error(&url, format!("connection broke off after {received} bytes: {e}")))?;
            if n == 0 {
                break;
            }
            file.write_all(&buffer[..n]).map_err(io)?;
            received += n as u64;
            if let Some(limit) = remote.limit().filter(|&limit| received > limit) {
                return Err(download_error(&url, overlong(remote, limit)));
            }
            on_bytes(received);
        }
        file.sync_all().map_err(io)?;
        match remote.size {
            Some(size) if received < size => Err(download_error(&url, format!("connection closed after {received} of {size} bytes"))),
            _ => Ok(()),
        }
    }

    /// GETs `url` (from byte `from`), following redirects by hand: each
    /// hop must pass [`check_url`]. Returns the response and where it came from.
    fn get_following(&self, url: &str, from: u64) -> Result<(ureq::http::Response<ureq::Body>, String)> {
        let mut url = url.to_string();
        for _ in 0..=MAX_REDIRECTS {
            check_url(&url)?;
            let mut request = self.get.get(&url);
            if from > 0 {
                request = request.header("Range", &format!("bytes={from}-"));
            }
            let response = request.call().map_err(|e| download_error(&url, e))?;
            if !(301..=308).contains(&response.status().as_u16()) {
                return Ok((response, url));
            }
            let location = header(&response, "location").ok_or_else(|| download_error(&url, "redirect without a location"))?;
            url = Self::redirect(&url, &location)?;
        }
        Err(download_error(&url, "too many redirects"))
    }
}

/// Redirects a download follows at most.
const MAX_REDIRECTS: usize = 5;

/// Why a body past `limit` bytes was refused.
fn overlong(remote: &RemoteFile, limit: u64) -> String {
    if remote.size == Some(limit) {
        format!("the body runs past the {limit} bytes announced; the file was discarded and nothing installed")
    } else {
        format!("the body runs past {limit} bytes, more than the catalog allows for this model; the file was discarded and nothing installed")
    }
}

/// Where a file is downloaded before it is verified.
pub fn part_path(dest: &Path) -> PathBuf {
    let mut name = dest.file_name().unwrap_or_default().to_os_string();
    name.push(".part");
    dest.with_file_name(name)
}

/// Checks a downloaded file; a mismatch deletes it (the next try starts over).
fn verify(part: &Path, remote: &RemoteFile) -> Result<()> {
    let Some(expected) = &remote.checksum else {
        return Err(download_error(&remote.url, "the endpoint sent no checksum (ETag), so the file cannot be verified"));
    };
    let actual = checksum_of(part, expected)?;
    if &actual != expected {
        let _ = std::fs::remove_file(part);
        return Err(download_error(&remote.url, format!("checksum mismatch: expected {expected:?}, got {actual:?}; the file was discarded")));
    }
    Ok(())
}

/// The file's checksum of the same kind as `like`.
pub fn checksum_of(path: &Path, like: &Checksum) -> Result<Checksum> {
    let mut file = std::fs::File::open(path).map_err(|e| Error::io(format!("reading {}", path.display()), e))?;
    let len = file.metadata().map_err(|e| Error::io(path.display().to_string(), e))?.len();
    let mut sha256 = sha2::Sha256::new();
    let mut sha1 = sha1::Sha1::new();
    if matches!(like, Checksum::GitSha1(_)) {
        sha1.update(format!("blob {len}\0").as_bytes());
    }
    let mut buffer = vec![0u8; 1024 * 1024];
    loop {
        let n = file.read(&mut buffer).map_err(|e| Error::io(format!("reading {}", path.display()), e))?;
        if n == 0 {
            break;
        }
        match like {
            Checksum::Sha256(_) => sha256.update(&buffer[..n]),
            Checksum::GitSha1(_) => sha1.update(&buffer[..n]),
        }
    }
    Ok(match like {
        Checksum::Sha256(_) => Checksum::Sha256(hex(&sha256.finalize())),
        Checksum::GitSha1(_) => Checksum::GitSha1(hex(&sha1.finalize())),
    })
}

/// The sha256 of the file at `path`, in hex.
pub fn sha256_of(path: &Path) -> Result<String> {
    match checksum_of(path, &Checksum::Sha256(String::new()))? {
        Checksum::Sha256(hex) | Checksum::GitSha1(hex) => Ok(hex),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn downloads_need_https_or_loopback() {
        for ok in ["https://huggingface.co", "https://hf-mirror.com/", "http://127.0.0.1:8123", "http://localhost", "http://[::1]:9/"] {
            assert!(check_endpoint(ok).is_ok(), "{ok}");
        }
        let with_userinfo = ["http://127.0.0.1:18503@127.0.0.2:18504/b", "http://localhost:@127.0.0.2/", "https://user:pw@huggingface.co/"];
        for refused in
            ["http://mirror.example.com", "http://127.0.0.1.evil.net", "http://localhost.evil.net/x", "ftp://x", "file:///etc"].into_iter().chain(with_userinfo)
        {
            assert!(check_endpoint(refused).is_err(), "{refused}");
        }
    }

    #[test]
    fn etags_become_checksums() {
        let sha = "a".repeat(64);
        assert_eq!(parse_etag(&format!("\"{sha}\"")), Some(Checksum::Sha256(sha)));
        assert_eq!(parse_etag("W/\"0123456789abcdef0123456789abcdef01234567\""), Some(Checksum::GitSha1("0123456789abcdef0123456789abcdef01234567".into())));
        assert_eq!(parse_etag("\"not-a-hash\""), None);
    }

    #[test]
    fn git_blob_ids_match_git() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"hello\n").unwrap();
        // `printf 'hello\n' | git hash-object --stdin`
        let id = checksum_of(&path, &Checksum::GitSha1(String::new())).unwrap();
        assert_eq!(id, Checksum::GitSha1("ce013625030ba8dba906f756967f9e9ca394464a".into()));
    }

    #[test]
    fn relative_redirects_resolve_against_the_origin_and_every_hop_is_checked() {
        assert_eq!(HubClient::redirect("http://127.0.0.1:9/mirror/a", "/cdn/x").unwrap(), "http://127.0.0.1:9/cdn/x");
        assert_eq!(HubClient::redirect("http://127.0.0.1:9/a", "https://cdn.example/x").unwrap(), "https://cdn.example/x");
        assert_eq!(HubClient::redirect("https://cdn.example/a/b", "/c").unwrap(), "https://cdn.example/c");
        assert_eq!(HubClient::redirect("https://hub.example/a", "//cdn.example/c").unwrap(), "https://cdn.example/c");
        // Issue 41: a hop to plain http on another host was followed and installed.
        for refused in
            ["http://cdn.example/x", "http://127.0.0.2:9/x", "http://localhost.evil.net/x", "ftp://cdn.example/x", "HTTP://cdn.example/x", "file:///etc/passwd"]
        {
            let err = HubClient::redirect("https://huggingface.co/a", refused).unwrap_err();
            assert_eq!(err.kind(), crate::ErrorKind::Download, "{refused}");
            assert!(err.to_string().contains("redirect left https://"), "{err}");
        }
    }

    #[test]
    fn the_limit_is_the_announced_size_capped_by_the_catalog() {
        let remote = |size, max_bytes| RemoteFile { url: String::new(), size, checksum: None, commit: None, max_bytes };
        assert_eq!(remote(Some(10), None).limit(), Some(10));
        assert_eq!(remote(Some(50 << 30), Some(100)).limit(), Some(100), "a HEAD claiming 50 GB does not raise the cap");
        assert_eq!(remote(None, Some(100)).limit(), Some(100));
        assert_eq!(remote(Some(10), Some(100)).limit(), Some(10));
        assert_eq!(remote(None, None).limit(), None);
    }
}
