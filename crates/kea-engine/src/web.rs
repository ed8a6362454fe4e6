//! Web pages as documents: [`fetch_page`] gets one page over http(s) within
//! [`FetchLimits`] (redirects, size, time) and never from this computer or a
//! private network unless the person allows it: every address a name
//! resolves to is checked, on every redirect, in the resolver the connection
//! itself uses (so a name cannot resolve to a public address for a check and
//! a private one for the request). A fetched page is kept as an `.html` file
//! that begins with the browsers' `<!-- saved from url=(NNNN)URL -->` mark,
//! which the HTML reader turns into the document's `source`, so a page saved
//! from a browser is cited with its link too ([`web_link`]). Kea's own
//! copies begin with a mark of their own ([`is_kept_by_kea`]): only those
//! are ever replaced, and never through a `Web pages` folder that is a link.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use ureq::unversioned::resolver::{DefaultResolver, ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::{DefaultConnector, NextTimeout};

use crate::error::{Error, Result};

/// How far a fetch may go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchLimits {
    /// Addresses on this computer or a private network (loopback, LAN,
    /// link-local): only when the person asked for them.
    pub allow_local: bool,
    /// The most a page may weigh.
    pub max_bytes: u64,
    /// The whole fetch, redirects included.
    pub timeout: Duration,
    pub max_redirects: u32,
}

impl Default for FetchLimits {
    fn default() -> Self {
        FetchLimits { allow_local: false, max_bytes: 10 * 1024 * 1024, timeout: Duration::from_secs(30), max_redirects: 5 }
    }
}

/// A fetched page: the address asked for, the one it ended at, and its
/// text (decoded from whatever charset it was sent in).
#[derive(Debug, Clone, PartialEq)]
pub struct FetchedPage {
    pub url: String,
    pub final_url: String,
    pub html: String,
}

/// `url` if it is an absolute http(s) address with a host; else why not.
pub fn checked_url(url: &str) -> Result<ureq::http::Uri> {
    let url = url.trim();
    let invalid = |why: &str| Error::InvalidInput(format!("{url}: {why}"));
    let uri: ureq::http::Uri = url.parse().map_err(|_| invalid("not a web address"))?;
    match uri.scheme_str() {
        Some("http" | "https") => {}
        Some(other) => return Err(invalid(&format!("only http and https pages are fetched, not {other}:"))),
        None => return Err(invalid("not a web address (it needs http:// or https://)")),
    }
    if uri.host().is_none_or(str::is_empty) {
        return Err(invalid("the address has no host"));
    }
    if uri.authority().is_some_and(|a| a.as_str().contains('@')) {
        return Err(invalid("an address with a user name or password is not fetched (it would be kept in the saved page)"));
    }
    Ok(uri)
}

/// Whether `ip` is on the public internet (not this computer, a private or
/// shared network, link-local, multicast or reserved). IPv6 must be global
/// unicast (`2000::/3`), and an IPv4 address it carries (6to4, mapped,
/// compatible) is checked as IPv4; Teredo, whose address is hidden, is refused.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, c, _] = v4.octets();
            !(v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || a == 0
                || (a == 100 && (64..128).contains(&b))
                || (a == 192 && b == 0 && c == 0)
                || (a == 198 && (18..20).contains(&b))
                || a >= 240)
        }
        IpAddr::V6(v6) => {
            let s = v6.segments();
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_public(IpAddr::V4(v4));
            }
            if s[..6].iter().all(|&x| x == 0) {
                // ::a.b.c.d (IPv4-compatible), ::1 and :: alike.
                return false;
            }
            if s[0] == 0x2002 {
                let [a, b] = s[1].to_be_bytes();
                let [c, d] = s[2].to_be_bytes();
                return is_public(IpAddr::V4(std::net::Ipv4Addr::new(a, b, c, d)));
            }
            let teredo = s[0] == 0x2001 && s[1] == 0;
            (s[0] & 0xe000) == 0x2000 && !teredo
        }
    }
}

/// Why a fetch was stopped before it connected.
#[derive(Debug)]
struct LocalAddress(String);

impl std::fmt::Display for LocalAddress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} is on this computer or a private network; allow local addresses to fetch it", self.0)
    }
}

impl std::error::Error for LocalAddress {}

/// The system resolver, keeping only public addresses unless local ones are allowed.
#[derive(Debug)]
struct GuardedResolver {
    allow_local: bool,
}

impl Resolver for GuardedResolver {
    fn resolve(&self, uri: &ureq::http::Uri, config: &ureq::config::Config, timeout: NextTimeout) -> std::result::Result<ResolvedSocketAddrs, ureq::Error> {
        let all = DefaultResolver::default().resolve(uri, config, timeout)?;
        if self.allow_local {
            return Ok(all);
        }
        let mut kept = self.empty();
        for address in all.iter().filter(|a: &&SocketAddr| is_public(a.ip())) {
            kept.push(*address);
        }
        if kept.is_empty() {
            return Err(ureq::Error::Other(Box::new(LocalAddress(uri.host().unwrap_or_default().to_string()))));
        }
        Ok(kept)
    }
}

/// An agent with `config` whose connections reach only public addresses
/// unless `allow_local` (the resolver [`fetch_page`] uses; the config
/// should have no proxy, which would be resolved instead).
pub(crate) fn guarded_agent(config: ureq::config::Config, allow_local: bool) -> ureq::Agent {
    ureq::Agent::with_parts(config, DefaultConnector::new(), GuardedResolver { allow_local })
}

/// Why a guarded agent refused to connect, when that is what `error` is.
pub(crate) fn refused_address(error: &ureq::Error) -> Option<String> {
    match error {
        ureq::Error::Other(inner) => inner.downcast_ref::<LocalAddress>().map(|refused| refused.0.clone()),
        _ => None,
    }
}

/// A fetch error as Kea reports it: a refused address is the caller's
/// input; anything else is a failed download.
fn fetch_error(url: &str, error: ureq::Error) -> Error {
    match error {
        ureq::Error::Other(inner) if inner.is::<LocalAddress>() => Error::InvalidInput(inner.to_string()),
        ureq::Error::BodyExceedsLimit(limit) => Error::Download(format!("{url}: the page is larger than {} MB", limit / 1_000_000)),
        ureq::Error::TooManyRedirects => Error::Download(format!("{url}: too many redirects")),
        other => Error::Download(format!("{url}: {other}")),
    }
}

/// Whether a `Content-Type` is a web page (HTML or XHTML).
fn is_html(content_type: &str) -> bool {
    let essence = content_type.split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
    essence == "text/html" || essence == "application/xhtml+xml"
}

/// The `charset=` parameter of a `Content-Type`.
fn charset_of(content_type: &str) -> Option<&str> {
    content_type.split(';').skip(1).find_map(|p| {
        let (name, value) = p.split_once('=')?;
        name.trim().eq_ignore_ascii_case("charset").then(|| value.trim().trim_matches('"'))
    })
}

/// Fetches the page at `url` within `limits` (see the module's description).
pub fn fetch_page(url: &str, limits: &FetchLimits) -> Result<FetchedPage> {
    let uri = checked_url(url)?;
    let url = uri.to_string();
    let config = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .proxy(None)
        .max_redirects(limits.max_redirects)
        .timeout_global(Some(limits.timeout))
        .user_agent(concat!("Kea/", env!("CARGO_PKG_VERSION"), " (saving a web page to a knowledge collection)"))
        .build();
    let agent = guarded_agent(config, limits.allow_local);
    let mut response = agent.get(&url).header("Accept", "text/html,application/xhtml+xml;q=0.9").call().map_err(|e| fetch_error(&url, e))?;
    let status = response.status();
    if !status.is_success() {
        return Err(Error::Download(format!("{url}: the server answered {status}")));
    }
    let final_url = ureq::ResponseExt::get_uri(&response).to_string();
    let content_type = response.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("text/html").to_string();
    if !is_html(&content_type) {
        return Err(Error::InvalidInput(format!("{url} is not a web page ({content_type}); download it and add the file instead")));
    }
    let bytes = response.body_mut().with_config().limit(limits.max_bytes).read_to_vec().map_err(|e| fetch_error(&url, e))?;
    let html = crate::extract::decode_html(&bytes, charset_of(&content_type)).map_err(|e| Error::Download(format!("{url}: {e}")))?;
    Ok(FetchedPage { url, final_url, html })
}

/// The folder (inside a collection's first folder) fetched pages are kept in.
pub const WEB_PAGES_FOLDER: &str = "Web pages";

/// The longest file name (in bytes, before `.html`) a page is kept under
/// (file systems take 255 bytes).
const MAX_NAME_BYTES: usize = 200;

/// The folder pages are kept in, `folder`/[`WEB_PAGES_FOLDER`] (made when
/// missing). A `Web pages` that is a symbolic link (or not a folder) is
/// refused: Kea never writes through a link, wherever it points.
pub fn pages_folder(folder: &std::path::Path) -> Result<std::path::PathBuf> {
    let dir = folder.join(WEB_PAGES_FOLDER);
    match std::fs::symlink_metadata(&dir) {
        Ok(meta) if meta.file_type().is_symlink() => {
            Err(Error::InvalidInput(format!("{} is a symbolic link: Kea does not keep web pages through a link (make it a plain folder)", dir.display())))
        }
        Ok(meta) if !meta.is_dir() => Err(Error::InvalidInput(format!("{} is not a folder: web pages are kept in a folder of that name", dir.display()))),
        Ok(_) => Ok(dir),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::create_dir(&dir).map_err(|e| Error::io(format!("creating {}", dir.display()), e))?;
            Ok(dir)
        }
        Err(e) => Err(Error::io(format!("reading {}", dir.display()), e)),
    }
}

/// Whether the file at `path` is a page Kea kept: it begins with
/// [`crate::extract::KEPT_BY_KEA`] (a page saved from a browser, even
/// with the same `saved from` mark, does not).
pub fn is_kept_by_kea(path: &std::path::Path) -> bool {
    let mut head = vec![0u8; crate::extract::KEPT_BY_KEA.len()];
    std::fs::File::open(path).and_then(|mut file| std::io::Read::read_exact(&mut file, &mut head)).is_ok() && head == crate::extract::KEPT_BY_KEA.as_bytes()
}

/// Keeps `saved` (the page as [`saved_page`] makes it) in the file a page
/// is kept in: `existing` (an earlier copy of the same address, in the
/// pages folder) replaced whole, else a new file in [`pages_folder`] named
/// after the page's title (else its host). Written under a hidden name and
/// renamed into place, so the watcher never reads half a page.
pub fn keep_page(
    folder: &std::path::Path,
    page: &FetchedPage,
    saved: &[u8],
    title: Option<&str>,
    existing: Option<std::path::PathBuf>,
) -> Result<std::path::PathBuf> {
    let dir = pages_folder(folder)?;
    let io = |e| Error::io(format!("saving {}", page.url), e);
    let mut part = tempfile::Builder::new().prefix(".kea-web-").suffix(".part").tempfile_in(&dir).map_err(io)?;
    std::io::Write::write_all(&mut part, saved).map_err(io)?;
    part.as_file().sync_all().map_err(io)?;
    if let Some(path) = existing.filter(|path| path.parent() == Some(dir.as_path())) {
        part.persist(&path).map_err(|e| io(e.error))?;
        return Ok(path);
    }
    let host = checked_url(&page.url)?.host().unwrap_or("page").to_string();
    let name = crate::import::sanitise_file_name(title.filter(|t| !t.trim().is_empty()).unwrap_or(&host));
    let mut name = if name == crate::import::NO_NAME { crate::import::sanitise_file_name(&host) } else { name };
    if name.len() > MAX_NAME_BYTES {
        let end = (0..=MAX_NAME_BYTES).rev().find(|&i| name.is_char_boundary(i)).unwrap_or(0);
        name.truncate(end);
        name = crate::import::sanitise_file_name(&name);
    }
    crate::import::persist_unique(part, &dir, &format!("{name}.html")).map_err(io)
}

/// The page as Kea keeps it: Kea's mark, the `saved from` mark, then the page.
pub fn saved_page(page: &FetchedPage) -> String {
    format!("{}\n{}\n{}", crate::extract::KEPT_BY_KEA, crate::extract::saved_from_mark(&page.url), page.html)
}

/// A document's web address: its `saved from` mark's, or its front
/// matter's `source` or `url` (as web clippers write them) when that is an
/// http(s) address.
pub fn web_link(front_matter: &crate::frontmatter::FrontMatter) -> Option<String> {
    ["source", "url"].iter().filter_map(|key| front_matter.get(key)).find(|value| checked_url(value).is_ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_public_addresses_are_fetched_by_default() {
        for local in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "0.0.0.0",
            "100.64.0.1",
            "255.255.255.255",
            "::1",
            "fd00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:192.168.0.1",
            "::",
        ] {
            assert!(!is_public(local.parse().unwrap()), "{local}");
        }
        for public in ["93.184.216.34", "1.1.1.1", "172.32.0.1", "2606:4700::1111", "::ffff:8.8.8.8", "2002:0808:0808::1"] {
            assert!(is_public(public.parse().unwrap()), "{public}");
        }
    }

    #[test]
    fn only_http_and_https_addresses_are_accepted() {
        for bad in [
            "file:///etc/passwd",
            "ftp://example.com/a",
            "javascript:alert(1)",
            "example.com/page",
            "http://",
            "",
            "data:text/html,hi",
            "https://user:secret@example.com/",
        ] {
            assert_eq!(checked_url(bad).unwrap_err().kind(), crate::ErrorKind::InvalidInput, "{bad}");
        }
        assert!(checked_url("https://example.com/a?b=c#d").is_ok());
    }

    #[test]
    fn the_saved_from_mark_round_trips_and_is_checked() {
        let page = FetchedPage { url: "https://example.com/a b".replace(' ', "%20"), final_url: String::new(), html: "<p>Hi</p>".into() };
        let saved = saved_page(&page);
        let marks = format!("{}\n<!-- saved from url=(0025)https://example.com/a%20b -->\n<p>Hi</p>", crate::extract::KEPT_BY_KEA);
        assert_eq!(saved, marks);
        let source = |html: &str| crate::extract::extract_html(html.as_bytes(), None).unwrap().front_matter.get("source");
        assert_eq!(source(&saved).as_deref(), Some(page.url.as_str()));
        assert_eq!(source("\u{feff}  <!-- saved from url=(0018)http://example.org -->").as_deref(), Some("http://example.org"));
        for not_a_mark in [
            "<p>no mark</p>",
            "<!-- saved from url=(0099)https://example.com -->",
            "<!-- saved from url=(0016)file:///etc/passwd -->",
            "<!-- saved from url=(xx)https://a.b -->",
        ] {
            assert_eq!(source(not_a_mark), None, "{not_a_mark}");
        }
    }
}
