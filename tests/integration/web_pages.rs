//! Web pages as sources, against a page server on 127.0.0.1: `kea kb
//! add-url` keeps a page's main content as a file, answers from it with
//! the page's address in the citation and fetches it again on demand; a
//! local address is refused unless allowed, and redirects, size and time
//! are bounded with nothing written when a fetch fails.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kea_engine::web::{fetch_page, FetchLimits};
use kea_engine::ErrorKind;

use super::util::{files_on_disk, Sandbox};

/// What the server sends for one path.
#[derive(Clone)]
enum Reply {
    Page {
        content_type: &'static str,
        body: Vec<u8>,
    },
    Redirect(String),
    /// Headers at once, then the body after a pause.
    Slow(Duration),
}

/// A page server on 127.0.0.1 whose pages a test can change.
struct PageServer {
    base: String,
    pages: Arc<Mutex<HashMap<String, Reply>>>,
}

impl PageServer {
    fn start() -> PageServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
        let pages: Arc<Mutex<HashMap<String, Reply>>> = Arc::default();
        let served = pages.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let pages = served.clone();
                std::thread::spawn(move || serve(stream, &pages));
            }
        });
        PageServer { base, pages }
    }

    fn set(&self, path: &str, reply: Reply) {
        self.pages.lock().unwrap().insert(path.into(), reply);
    }

    fn html(&self, path: &str, body: &str) {
        self.set(path, Reply::Page { content_type: "text/html; charset=utf-8", body: body.as_bytes().to_vec() });
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }
}

fn serve(stream: TcpStream, pages: &Mutex<HashMap<String, Reply>>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).is_err() {
        return;
    }
    let mut line = String::new();
    while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
        line.clear();
    }
    let path = request_line.split_whitespace().nth(1).unwrap_or("/").to_string();
    let reply = pages.lock().unwrap().get(&path).cloned();
    let mut out = stream;
    let head = |status: &str, extra: &str, length: usize| format!("HTTP/1.1 {status}\r\n{extra}Content-Length: {length}\r\nConnection: close\r\n\r\n");
    let _ = match reply {
        Some(Reply::Page { content_type, body }) => {
            out.write_all(head("200 OK", &format!("Content-Type: {content_type}\r\n"), body.len()).as_bytes()).and_then(|()| out.write_all(&body))
        }
        Some(Reply::Redirect(to)) => out.write_all(head("302 Found", &format!("Location: {to}\r\n"), 0).as_bytes()),
        Some(Reply::Slow(pause)) => {
            let _ = out.write_all(head("200 OK", "Content-Type: text/html\r\n", 20).as_bytes());
            std::thread::sleep(pause);
            out.write_all(b"<p>late</p>         ")
        }
        None => out.write_all(head("404 Not Found", "", 0).as_bytes()),
    };
}

/// A page with furniture around its main content.
fn timetable(departure: &str) -> String {
    format!(
        r#"<!DOCTYPE html><html><head><title>Night trains</title><script>var beacon = "zanzibarbeacon";</script></head>
<body><nav><a href="/">Home</a> <a href="/deals">Xylophone deals</a></nav>
<main><h1>Night trains</h1>
<h2>The northern sleeper</h2><p>The northern sleeper leaves the central station at {departure} from platform 7, every night except Saturday.</p>
<h2>Luggage</h2><p>Each passenger may bring two suitcases and one bicycle on the sleeper.</p></main>
<footer>Railway company footer</footer></body></html>"#
    )
}

fn ask(sandbox: &Sandbox, question: &str) -> serde_json::Value {
    sandbox.json(&["ask", question, "--provider", "none", "--json"])
}

#[test]
fn a_web_page_is_kept_answered_from_with_its_link_and_fetched_again_on_demand() {
    let server = PageServer::start();
    server.html("/trains", &timetable("21:40"));
    let sandbox = Sandbox::empty();
    std::fs::write(sandbox.path("garden.md"), "# Garden\n\n## Watering\n\nWater the tomatoes every evening in summer.\n").unwrap();
    sandbox.index();
    let url = server.url("/trains");

    let refused = sandbox.run(&["kb", "add-url", "default", &url]);
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("allow local addresses"), "{}", String::from_utf8_lossy(&refused.stderr));
    assert_eq!(files_on_disk(&sandbox.knowledge), ["garden.md"], "a refused fetch writes nothing");

    let added = sandbox.json(&["kb", "add-url", "default", &url, "--allow-local", "--json"]);
    assert_eq!((added["key"].as_str(), added["refetched"].as_bool()), (Some("Web pages/Night trains.html"), Some(false)), "{added}");
    let kept = std::fs::read_to_string(sandbox.path("Web pages/Night trains.html")).unwrap();
    let marks = format!("{}\n<!-- saved from url=({:04}){url} -->", kea_engine::extract::KEPT_BY_KEA, url.len());
    assert!(kept.starts_with(&marks), "{kept}");

    let answer = ask(&sandbox, "When does the northern sleeper leave?");
    let citation = &answer["citations"][0];
    assert_eq!((citation["source"].as_str(), citation["url"].as_str()), (Some("Web pages/Night trains.html"), Some(url.as_str())), "{answer}");
    assert!(answer["answer"].as_str().unwrap().contains("21:40"), "{answer}");
    for furniture in ["zanzibarbeacon", "Xylophone", "Railway company"] {
        let hits = sandbox.json(&["search", furniture, "--mode", "fts", "--json"]);
        assert!(hits.as_array().unwrap().iter().all(|h| !h["text"].as_str().unwrap().contains(furniture)), "{furniture}: {hits}");
    }

    server.html("/trains", &timetable("22:15"));
    let again = sandbox.json(&["kb", "add-url", "default", &url, "--allow-local", "--json"]);
    assert_eq!((again["key"].as_str(), again["refetched"].as_bool()), (Some("Web pages/Night trains.html"), Some(true)), "{again}");
    assert_eq!(files_on_disk(&sandbox.knowledge), ["Web pages/Night trains.html", "garden.md"], "the same file is replaced");
    let answer = ask(&sandbox, "When does the northern sleeper leave?");
    let text = answer["answer"].as_str().unwrap();
    assert!(text.contains("22:15") && !text.contains("21:40"), "{answer}");

    // A note clipped from the same address is the user's: adding the page again never writes over it.
    let clipping = format!("---\nsource: {url}\n---\n# My trip notes\n\nBook the sleeper early.\n");
    std::fs::write(sandbox.path("trip.md"), &clipping).unwrap();
    sandbox.index();
    let again = sandbox.json(&["kb", "add-url", "default", &url, "--allow-local", "--json"]);
    assert_eq!(again["key"], "Web pages/Night trains.html", "{again}");
    assert_eq!(std::fs::read_to_string(sandbox.path("trip.md")).unwrap(), clipping);
    let mut config = kea_engine::EngineConfig::new(&sandbox.knowledge, &sandbox.data);
    config.model_paths.dirs.insert(0, super::util::repo_root().join("models"));
    let engine = kea_engine::Engine::open(config).unwrap();
    let refused = engine.documents().refetch("trip.md", &FetchLimits { allow_local: true, ..FetchLimits::default() }, &(), &kea_engine::CancelToken::new());
    assert_eq!(refused.unwrap_err().kind(), ErrorKind::InvalidInput, "only pages Kea keeps are fetched again");
    assert_eq!(std::fs::read_to_string(sandbox.path("trip.md")).unwrap(), clipping);
}

#[test]
fn a_page_saved_from_a_browser_is_cited_with_its_address() {
    let sandbox = Sandbox::empty();
    let url = "https://example.org/guides/trains";
    std::fs::write(sandbox.path("saved.html"), format!("<!-- saved from url=({:04}){url} -->\n{}", url.len(), timetable("06:05"))).unwrap();
    std::fs::write(sandbox.path("plain.html"), timetable("07:30").replace("northern", "southern")).unwrap();
    sandbox.index();
    let answer = ask(&sandbox, "When does the northern sleeper leave?");
    assert_eq!((answer["citations"][0]["source"].as_str(), answer["citations"][0]["url"].as_str()), (Some("saved.html"), Some(url)), "{answer}");
    let answer = ask(&sandbox, "When does the southern sleeper leave?");
    assert_eq!(answer["citations"][0]["source"], "plain.html", "{answer}");
    assert!(answer["citations"][0].get("url").is_none(), "a page without the mark has no link: {answer}");
}

#[test]
fn fetches_are_bounded_and_refused_with_a_clear_error() {
    let server = PageServer::start();
    let local = FetchLimits { allow_local: true, timeout: Duration::from_secs(2), ..FetchLimits::default() };
    server.html("/page", "<main><p>Arrived.</p></main>");
    server.set("/hop1", Reply::Redirect(server.url("/page")));
    server.set("/loop", Reply::Redirect(server.url("/loop")));
    server.set("/big", Reply::Page { content_type: "text/html", body: vec![b'a'; 2_000_000] });
    server.set("/image", Reply::Page { content_type: "image/png", body: vec![0; 10] });
    server.set("/slow", Reply::Slow(Duration::from_secs(5)));

    let page = fetch_page(&server.url("/hop1"), &local).unwrap();
    assert_eq!((page.url.as_str(), page.final_url.as_str()), (server.url("/hop1").as_str(), server.url("/page").as_str()));
    assert!(page.html.contains("Arrived."));

    let error = |path: &str, limits: &FetchLimits| fetch_page(&server.url(path), limits).unwrap_err();
    let loop_error = error("/loop", &local);
    assert_eq!(loop_error.kind(), ErrorKind::Download);
    assert!(loop_error.to_string().contains("too many redirects"), "{loop_error}");
    let small = FetchLimits { max_bytes: 1_000_000, ..local.clone() };
    assert!(error("/big", &small).to_string().contains("larger than 1 MB"), "{}", error("/big", &small));
    assert_eq!(error("/image", &local).kind(), ErrorKind::InvalidInput);
    assert_eq!(error("/missing", &local).kind(), ErrorKind::Download);
    // The page stalls for longer than the limit: the fetch gives up (were it
    // to wait, it would get the page and succeed).
    assert_eq!(error("/slow", &local).kind(), ErrorKind::Download);
    assert!(error("/page", &FetchLimits::default()).to_string().contains("allow local addresses"));
    let to_local = fetch_page(&format!("http://localhost:{}/page", server.base.rsplit(':').next().unwrap()), &FetchLimits::default()).unwrap_err();
    assert_eq!(to_local.kind(), ErrorKind::InvalidInput, "a name resolving to this computer is refused too: {to_local}");
    // A public-looking start that redirects here is refused at the redirect (the resolver checks every hop).
    server.set("/away", Reply::Redirect(format!("http://localhost:{}/page", server.base.rsplit(':').next().unwrap())));
    let through_redirect = fetch_page(&server.url("/away"), &FetchLimits { allow_local: false, ..local.clone() }).unwrap_err();
    assert_eq!(through_redirect.kind(), ErrorKind::InvalidInput, "{through_redirect}");
    for not_web in ["file:///etc/passwd", "ftp://127.0.0.1/x", "gopher://127.0.0.1/"] {
        assert_eq!(fetch_page(not_web, &local).unwrap_err().kind(), ErrorKind::InvalidInput, "{not_web}");
    }
}

/// Issue 41: `add-url` replaced any `.html` in `Web pages/` whose saved-from
/// mark named the address, including a page the user saved from a browser
/// there and annotated. Only a page that begins with Kea's own mark is
/// replaced; the user's page stays as it is and the new copy gets a free name.
#[test]
fn a_page_the_user_saved_from_a_browser_into_web_pages_is_never_overwritten() {
    let server = PageServer::start();
    server.html("/trains", &timetable("21:40"));
    let url = server.url("/trains");
    let sandbox = Sandbox::empty();
    std::fs::create_dir_all(sandbox.path("Web pages")).unwrap();
    let annotated = format!("<!-- saved from url=({:04}){url} -->\n<p>My own note: take the early train.</p>{}", url.len(), timetable("20:00"));
    std::fs::write(sandbox.path("Web pages/Night trains.html"), &annotated).unwrap();
    sandbox.index();
    let added = sandbox.json(&["kb", "add-url", "default", &url, "--allow-local", "--json"]);
    assert_eq!((added["key"].as_str(), added["refetched"].as_bool()), (Some("Web pages/Night trains (2).html"), Some(false)), "{added}");
    assert_eq!(std::fs::read_to_string(sandbox.path("Web pages/Night trains.html")).unwrap(), annotated, "the user's page is untouched");
    // Kea's own copy is the one replaced from now on.
    server.html("/trains", &timetable("22:15"));
    let again = sandbox.json(&["kb", "add-url", "default", &url, "--allow-local", "--json"]);
    assert_eq!((again["key"].as_str(), again["refetched"].as_bool()), (Some("Web pages/Night trains (2).html"), Some(true)), "{again}");
    assert_eq!(std::fs::read_to_string(sandbox.path("Web pages/Night trains.html")).unwrap(), annotated);
    assert_eq!(files_on_disk(&sandbox.knowledge), ["Web pages/Night trains (2).html", "Web pages/Night trains.html"]);
}

/// Issue 41: a `Web pages` folder that is a symbolic link was written
/// through. It is refused with a clear error, before anything is fetched.
#[cfg(unix)]
#[test]
fn a_web_pages_folder_that_is_a_link_is_refused() {
    let server = PageServer::start();
    server.html("/trains", &timetable("21:40"));
    let sandbox = Sandbox::empty();
    let outside = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path(), sandbox.path("Web pages")).unwrap();
    let out = sandbox.run(&["kb", "add-url", "default", &server.url("/trains"), "--allow-local"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && stderr.contains("symbolic link") && stderr.contains("[invalid_input]"), "{stderr}");
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0, "nothing written through the link");
}

/// Issue 41: a page's title kept its direction controls and the characters
/// Windows reserves in the file name Kea made from it.
#[test]
fn a_page_title_makes_a_file_name_safe_on_every_system() {
    let server = PageServer::start();
    server.html("/invoice", "<title>Invoice \u{202e}gnp.html: <Q3>?</title><main><p>The invoice is due on the first of May.</p></main>");
    server.html("/device", "<title>CON</title><main><p>A page titled like a device.</p></main>");
    let sandbox = Sandbox::empty();
    let added = sandbox.json(&["kb", "add-url", "default", &server.url("/invoice"), "--allow-local", "--json"]);
    assert_eq!(added["key"], "Web pages/Invoice gnp.html_ _Q3__.html", "{added}");
    let added = sandbox.json(&["kb", "add-url", "default", &server.url("/device"), "--allow-local", "--json"]);
    assert_eq!(added["key"], "Web pages/_CON.html", "{added}");
}
