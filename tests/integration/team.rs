//! Team mode against a real Milvus standalone server (PyPI `milvus` 2.3.5,
//! `$KEA_MILVUS_SERVER`, installed by `make test`), started on a loopback
//! port and stopped by the test: the Milvus index passes the vector
//! conformance suite; two instances indexing different folders into one
//! collection search each other's passages (dense in Milvus, BM25 over the
//! mirror) without clobbering each other; a removed file disappears for
//! both; a server that hangs mid-ingest times out, commits nothing locally
//! and the next run resumes; one that is down is a clear error. The
//! server asks for credentials (authorization enabled): every request
//! carries the token, one without is refused; a namespace another data
//! folder owns is refused; a server lost while answering leaves
//! full-text search over this folder and the last copy of the team's, and
//! the status says team sync is offline; one down when Kea starts opens
//! offline for a folder that joined before.

use std::path::Path;
use std::process::{Child, Command};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kea_engine::team::{MilvusIndex, Team, TeamConfig};
use kea_engine::{CancelToken, Engine, EngineConfig, RetrievalConfig};
use serde_json::Value;

use super::util::{copy_dir, repo_root, Sandbox};

/// Milvus's default superuser, accepted once authorization is enabled.
const TOKEN: &str = "root:Milvus";

/// `milvus-server` (a Python launcher with Milvus and etcd as children) in
/// its own process group, with its proxy on a free loopback port and
/// authorization enabled.
struct MilvusServer {
    child: Child,
    port: u16,
}

impl MilvusServer {
    fn start(data: &Path, port: u16) -> MilvusServer {
        let binary = std::env::var_os("KEA_MILVUS_SERVER").expect("set KEA_MILVUS_SERVER (make test installs the milvus package)");
        // Milvus standalone's embedded etcd and coordinators use fixed ports.
        assert!(std::net::TcpStream::connect(("127.0.0.1", 2379)).is_err(), "port 2379 is taken: another Milvus (or etcd) is running");
        let log = data.with_extension("log");
        let out = std::fs::File::create(&log).unwrap();
        let child = std::os::unix::process::CommandExt::process_group(&mut Command::new(binary), 0)
            .arg("--data")
            .arg(data)
            .args(["--proxy-port", &port.to_string(), "--authorization-enabled", "true"])
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .spawn()
            .expect("milvus-server starts");
        let server = MilvusServer { child, port };
        let started = Instant::now();
        let url = format!("http://127.0.0.1:{port}/v1/vector/collections");
        while ureq_get(&url).is_none() {
            let tail = || {
                let text =
                    std::fs::read_to_string(data.join("logs/milvus-stderr.log")).unwrap_or_default() + &std::fs::read_to_string(&log).unwrap_or_default();
                text.lines().rev().take(25).collect::<Vec<_>>().join("\n")
            };
            assert!(started.elapsed() < Duration::from_secs(180), "Milvus did not answer on port {port} within 180 s:\n{}", tail());
            std::thread::sleep(Duration::from_millis(500));
        }
        server
    }

    fn url(&self, collection: &str) -> String {
        format!("milvus://127.0.0.1:{}/{collection}", self.port)
    }

    /// Sends a signal to the server's processes (`-STOP` makes it hang, `-CONT` resumes it).
    fn signal(&self, signal: &str) {
        assert!(Command::new("kill").args([signal, "--", &format!("-{}", self.child.id())]).status().unwrap().success());
    }

    fn stop(&mut self) {
        let group = format!("-{}", self.child.id());
        let _ = Command::new("kill").args(["-TERM", "--", &group]).status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.child.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(200));
        }
        // The launcher exits at once; Milvus itself shuts down slowly.
        let _ = Command::new("kill").args(["-KILL", "--", &group]).status();
        let _ = self.child.wait();
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", 2379)).is_ok() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Drop for MilvusServer {
    fn drop(&mut self) {
        self.stop();
    }
}

fn ureq_get(url: &str) -> Option<String> {
    let out = Command::new("curl").args(["-sf", "--max-time", "2", "-H", &format!("Authorization: Bearer {TOKEN}"), url]).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).into_owned()).filter(|b| b.contains("\"code\":200"))
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// `kea --store URL --namespace NS ARGS --json` in a sandbox.
fn team_json(sandbox: &Sandbox, url: &str, namespace: &str, args: &[&str]) -> Value {
    sandbox.json(&[&["--store", url, "--store-token", TOKEN, "--namespace", namespace][..], args].concat())
}

fn sources(sandbox: &Sandbox, url: &str, namespace: &str, query: &str, mode: &str) -> Vec<String> {
    let hits = team_json(sandbox, url, namespace, &["search", query, "--mode", mode, "--top-k", "3", "--json"]);
    hits.as_array().unwrap().iter().map(|h| h["source"].as_str().unwrap().to_string()).collect()
}

/// The in-process engine of a sandbox in team mode.
fn open_engine(sandbox: &Sandbox, url: &str, namespace: &str) -> kea_engine::Result<Engine> {
    let mut config = EngineConfig::new(&sandbox.knowledge, &sandbox.data);
    config.model_paths.dirs.insert(0, repo_root().join("models"));
    config.team = Some(TeamConfig { store: url.to_string(), namespace: Some(namespace.to_string()), token: Some(TOKEN.into()) });
    Engine::open(config)
}

#[test]
fn a_team_shares_one_milvus_collection() {
    let dir = tempfile::tempdir().unwrap();
    let server = MilvusServer::start(&dir.path().join("milvus"), free_port());

    // The seam: the Milvus index passes the suite every vector index passes.
    let suite_config = TeamConfig { store: server.url("conformance"), namespace: Some("suite".into()), token: Some(TOKEN.into()) };
    let suite = Team::open(&suite_config, dir.path(), dir.path(), "m", 8).unwrap();
    kea_engine::vectors::conformance::check("milvus", Box::new(MilvusIndex::new(Arc::clone(&suite))));

    let url = server.url("team_kb");
    let alpha = Sandbox::empty();
    copy_dir(&repo_root().join("knowledge/parrots"), &alpha.path("parrots"));
    std::fs::create_dir_all(alpha.path("鹦鹉")).unwrap();
    std::fs::copy(repo_root().join("knowledge/鹦鹉/虎皮鹦鹉.md"), alpha.path("鹦鹉/虎皮鹦鹉.md")).unwrap();
    let beta = Sandbox::empty();
    std::fs::create_dir_all(beta.path("clinic")).unwrap();
    let autoclave = "# Autoclave\n\nSurgical instruments are sterilised in the autoclave at 134 °C for 18 minutes, then dried on the rack.\n";
    std::fs::write(beta.path("clinic/autoclave.md"), autoclave).unwrap();

    team_json(&alpha, &url, "alpha", &["index", "--json"]);
    team_json(&beta, &url, "beta", &["index", "--json"]);
    let (alpha_status, beta_status) = (team_json(&alpha, &url, "alpha", &["status", "--json"]), team_json(&beta, &url, "beta", &["status", "--json"]));
    let alpha_chunks = alpha_status["chunks"].as_u64().unwrap();
    assert_eq!(alpha_status["vectors"], alpha_status["chunks"], "alpha's rows are intact after beta wrote: {alpha_status}");
    assert_eq!(beta_status["team"]["mirrored_chunks"].as_u64(), Some(alpha_chunks), "{beta_status}");
    assert_eq!(alpha_status["integrity_problems"], serde_json::json!([]), "{alpha_status}");

    credentials_are_required_and_namespaces_are_owned(&url, &alpha, &beta, alpha_chunks);

    // Each finds the other's passages: dense search in Milvus, BM25 over the mirror (en and zh).
    assert_eq!(sources(&beta, &url, "beta", "Which parrot feeds on nectar with a brush-tipped tongue?", "dense")[0], "alpha/parrots/rainbow-lorikeet.md");
    assert_eq!(sources(&beta, &url, "beta", "lorikeet nectar", "fts")[0], "alpha/parrots/rainbow-lorikeet.md");
    assert_eq!(sources(&beta, &url, "beta", "虎皮鹦鹉", "fts")[0], "alpha/鹦鹉/虎皮鹦鹉.md");
    assert_eq!(sources(&alpha, &url, "alpha", "How long are surgical instruments sterilised?", "hybrid")[0], "beta/clinic/autoclave.md");

    // A removed file disappears for both.
    team_json(&alpha, &url, "alpha", &["remove", "parrots/rainbow-lorikeet.md", "--json"]);
    let after = sources(&beta, &url, "beta", "lorikeet nectar", "hybrid");
    assert!(after.iter().all(|s| !s.contains("rainbow-lorikeet")), "{after:?}");

    a_write_lost_mid_ingest_commits_nothing_and_the_next_run_resumes(&server, &url, &beta);
    assert_eq!(sources(&alpha, &url, "alpha", "Where do used scalpel blades go?", "hybrid")[0], "beta/clinic/scalpels.md");
    assert_eq!(team_json(&beta, &url, "beta", &["status", "--json"])["vectors"], 2, "no duplicate or lost rows");

    a_server_lost_while_answering_leaves_full_text_search(&server, &url, &beta);

    // Down at start: a clear error naming the address.
    let nowhere = format!("127.0.0.1:{}", free_port());
    let down = beta.run(&["--store", &format!("milvus://{nowhere}/team_kb"), "status", "--json"]);
    let message = String::from_utf8_lossy(&down.stderr);
    assert!(!down.status.success() && message.contains(&nowhere) && message.contains("cannot be reached"), "{message}");
    drop(server);
    a_server_down_at_start_still_answers_offline(&url, &beta);
}

/// Down when Kea starts, for a folder that joined before: it opens offline
/// with its last claim, answers from this folder, and says team sync is
/// offline (writing waits for the server).
fn a_server_down_at_start_still_answers_offline(url: &str, beta: &Sandbox) {
    let status = team_json(beta, url, "beta", &["status", "--json"]);
    assert!(status["team"]["offline"].as_str().is_some_and(|why| why.contains("cannot be reached")), "{status}");
    assert_eq!(status["chunks"], 2, "{status}");
    assert_eq!(sources(beta, url, "beta", "How are surgical instruments sterilised in the autoclave?", "hybrid")[0], "clinic/autoclave.md");
    std::fs::write(beta.path("clinic/gloves.md"), "# Gloves\n\nNitrile gloves are changed between patients.\n").unwrap();
    let index = beta.run(&["--store", url, "--store-token", TOKEN, "--namespace", "beta", "index", "--json"]);
    let message = String::from_utf8_lossy(&index.stderr);
    assert!(!index.status.success() && message.contains("cannot be reached"), "indexing needs the server: {message}");
}

/// Without the credentials the server refuses, and Kea says why; another
/// data folder asking for alpha's namespace is refused (its reconcile would
/// have deleted alpha's rows), and alpha's rows stay.
fn credentials_are_required_and_namespaces_are_owned(url: &str, alpha: &Sandbox, beta: &Sandbox, alpha_chunks: u64) {
    let anonymous = beta.run(&["--store", url, "--namespace", "beta", "status", "--json"]);
    let message = String::from_utf8_lossy(&anonymous.stderr);
    assert!(!anonymous.status.success() && message.contains("refused the credentials"), "{message}");
    let gamma = Sandbox::empty();
    std::fs::write(gamma.path("other.md"), "# Other\n\nSomething else entirely.\n").unwrap();
    let taken = gamma.run(&["--store", url, "--store-token", TOKEN, "--namespace", "alpha", "index", "--json"]);
    let message = String::from_utf8_lossy(&taken.stderr);
    assert!(!taken.status.success() && message.contains("belongs to another Kea"), "{message}");
    let alpha_again = team_json(alpha, url, "alpha", &["status", "--json"]);
    assert_eq!((alpha_again["chunks"].as_u64(), alpha_again["vectors"].as_u64()), (Some(alpha_chunks), Some(alpha_chunks)), "{alpha_again}");
}

/// Lost mid-ingest (the server stops answering; the request times out):
/// nothing is committed locally, and the next run resumes. While the write
/// waits on the server, the status answers (it never waits behind a
/// commit: the app polls it).
fn a_write_lost_mid_ingest_commits_nothing_and_the_next_run_resumes(server: &MilvusServer, url: &str, beta: &Sandbox) {
    let engine = Arc::new(open_engine(beta, url, "beta").unwrap());
    std::fs::write(beta.path("clinic/scalpels.md"), "# Scalpels\n\nScalpel blades are single-use and go into the yellow sharps bin.\n").unwrap();
    server.signal("-STOP");
    let syncing = Arc::clone(&engine);
    let sync = std::thread::spawn(move || syncing.indexer().sync(&(), &CancelToken::new()));
    std::thread::sleep(Duration::from_secs(3));
    let documents = |engine: &Engine| -> Vec<String> { engine.status().unwrap().documents.iter().map(|d| d.path.clone()).collect() };
    let meanwhile = documents(&engine);
    let status_waited = sync.is_finished();
    let lost = sync.join().unwrap().unwrap_err().to_string();
    server.signal("-CONT");
    assert!(!status_waited, "the status waited for the team write to give up");
    assert_eq!(meanwhile, ["clinic/autoclave.md"]);
    assert!(lost.contains(&format!("127.0.0.1:{}", server.port)), "{lost}");
    assert_eq!(documents(&engine), ["clinic/autoclave.md"], "the lost write left nothing committed locally");
    // Resumed, Milvus takes a while to take its node back ("leader not available").
    let started = Instant::now();
    while let Err(e) = engine.indexer().sync(&(), &CancelToken::new()) {
        assert!(started.elapsed() < Duration::from_secs(120), "the next run did not resume: {e}");
        std::thread::sleep(Duration::from_secs(2));
    }
    assert_eq!(documents(&engine), ["clinic/autoclave.md", "clinic/scalpels.md"]);
    drop(engine);
}

/// Lost while answering: a question still answers from this folder by full
/// text, and the status says team sync is offline.
fn a_server_lost_while_answering_leaves_full_text_search(server: &MilvusServer, url: &str, beta: &Sandbox) {
    let engine = open_engine(beta, url, "beta").unwrap();
    server.signal("-STOP");
    std::thread::sleep(Duration::from_secs(6)); // past the mirror's refresh interval
    let answered = engine.retriever().retrieve("How are surgical instruments sterilised in the autoclave?", &RetrievalConfig::default());
    let offline = engine.status().unwrap().team.unwrap().offline;
    server.signal("-CONT");
    let answered = answered.expect("a question answers with the team store gone");
    let found: Vec<&str> = answered.hits.iter().map(|h| h.chunk.source.as_str()).collect();
    assert!(found.contains(&"clinic/autoclave.md"), "{found:?}");
    assert!(answered.trace.fallbacks.iter().any(|f| f.contains("dense search unavailable")), "{:?}", answered.trace.fallbacks);
    assert!(offline.is_some_and(|why| why.contains("cannot be reached")), "the status says team sync is offline");
    drop(engine);
}
