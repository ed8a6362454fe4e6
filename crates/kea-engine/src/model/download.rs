//! Downloading model files from a Hugging Face–style hub (the hub itself,
//! a mirror, or a team's own server): `{endpoint}/{repo}/resolve/{revision}/{path}`.
//! A HEAD request gives each file's size and checksum (the `X-Linked-Etag`
//! sha256 of large files, or the git blob sha1 `ETag` of small ones); the
//! GET resumes a `.part` file with a `Range` request after a cut connection
//! or an earlier cancelled run; every file is verified before it is used.

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
    let loopback = ["http://127.0.0.1", "http://localhost", "http://[::1]"];
    let host_ends = |rest: &str| rest.is_empty() || rest.starts_with(':') || rest.starts_with('/');
    if endpoint.starts_with("https://") || loopback.iter().any(|l| endpoint.strip_prefix(l).is_some_and(host_ends)) {
        return Ok(());
    }
    Err(Error::InvalidInput(format!("model downloads need an https:// endpoint (or one on this machine's loopback), not {endpoint}")))
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
        HubClient { endpoint, head: agent(0), get: agent(5), retries: 4 }
    }

    pub fn file_url(&self, repo: &str, revision: &str, path: &str) -> String {
        format!("{}/{repo}/resolve/{revision}/{path}", self.endpoint)
    }

    /// An absolute URL for a `Location` header (the hub sends relative ones).
    fn absolute(&self, location: &str) -> String {
        if location.starts_with("http://") || location.starts_with("https://") {
            return location.to_string();
        }
        let origin_end = self.endpoint.find("://").map(|i| i + 3).and_then(|s| self.endpoint[s..].find('/').map(|i| s + i));
        let origin = origin_end.map_or(self.endpoint.as_str(), |end| &self.endpoint[..end]);
        format!("{origin}/{}", location.trim_start_matches('/'))
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
                200 => return Ok(RemoteFile { url, size, checksum, commit }),
                301..=308 => {
                    let location = header(&response, "location").ok_or_else(|| download_error(&url, "redirect without a location"))?;
                    let next = self.absolute(&location);
                    if linked.is_some() {
                        // A large file: the hub's headers describe it, the CDN serves it.
                        return Ok(RemoteFile { url: next, size, checksum, commit });
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
        let too_long = || remote.size.is_some_and(|size| std::fs::metadata(&part).is_ok_and(|m| m.len() > size));
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
        let have = if remote.size.is_some_and(|size| have > size) { 0 } else { have };
        let mut request = self.get.get(&remote.url);
        if have > 0 {
            request = request.header("Range", &format!("bytes={have}-"));
        }
        let mut response = request.call().map_err(|e| download_error(&remote.url, e))?;
        let append = match response.status().as_u16() {
            206 => true,
            200 => false,
            404 => return Err(Error::NotFound(remote.url.clone())),
            416 => false,
            status => return Err(download_error(&remote.url, format!("HTTP {status}"))),
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
            let n = reader.read(&mut buffer).map_err(|e| download_error(&remote.url, format!("connection broke off after {received} bytes: {e}")))?;
            if n == 0 {
                break;
            }
            file.write_all(&buffer[..n]).map_err(io)?;
            received += n as u64;
            if let Some(size) = remote.size.filter(|&size| received > size) {
                return Err(download_error(
                    &remote.url,
                    format!("the body runs past the {size} bytes announced; the file was discarded and nothing installed"),
                ));
            }
            on_bytes(received);
        }
        file.sync_all().map_err(io)?;
        match remote.size {
            Some(size) if received < size => Err(download_error(&remote.url, format!("connection closed after {received} of {size} bytes"))),
            _ => Ok(()),
        }
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
        for refused in ["http://mirror.example.com", "http://127.0.0.1.evil.net", "http://localhost.evil.net/x", "ftp://x", "file:///etc"] {
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
    fn relative_redirects_resolve_against_the_endpoint_origin() {
        let client = HubClient::new("http://127.0.0.1:9/mirror".into());
        assert_eq!(client.absolute("/cdn/x"), "http://127.0.0.1:9/cdn/x");
        assert_eq!(client.absolute("https://cdn.example/x"), "https://cdn.example/x");
    }
}
