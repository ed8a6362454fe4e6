//! Starts the built desktop app through `tauri-driver` (which drives Debian's
//! WebKitWebDriver) with a temporary knowledge folder and data dir, and
//! gives the tests a WebDriver client, waits and numbered screenshots.
//!
//! Needs a display (`make test` runs this under `xvfb-run` when there is
//! none) and `tauri-driver` (installed by `make test` into
//! `~/.cache/kea/tools/bin`, or named by `$TAURI_DRIVER`).

use std::future::Future;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::elements::Element;
use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{json, Value};

/// Runs xdotool (installed by `make test`), failing the test if it fails.
pub fn xdotool(args: &[&str]) {
    let status = Command::new("xdotool").args(args).status().expect("xdotool is installed (make test-deps)");
    assert!(status.success(), "xdotool {args:?} failed");
}

/// The shipped binary under test (built with the `custom-protocol` feature).
const APP: &str = env!("CARGO_BIN_EXE_kea-desktop");

fn tauri_driver() -> PathBuf {
    if let Some(path) = std::env::var_os("TAURI_DRIVER") {
        return PathBuf::from(path);
    }
    let cached = PathBuf::from(std::env::var("HOME").unwrap_or_default()).join(".cache/kea/tools/bin/tauri-driver");
    assert!(cached.exists(), "tauri-driver is not installed: run `make test` (it installs it into {})", cached.display());
    cached
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("a free loopback port")
}

/// One app at a time: windows on one display share the keyboard focus.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// A running app with its driver, folders and screenshot directory.
pub struct App {
    _turn: std::sync::MutexGuard<'static, ()>,
    pub client: Client,
    driver: Child,
    pub root: tempfile::TempDir,
    shots: PathBuf,
    step: usize,
    /// When the driver was asked to launch the app.
    pub launched: Instant,
}

impl App {
    /// The knowledge folder the app was started with.
    pub fn knowledge(&self) -> PathBuf {
        self.root.path().join("knowledge")
    }

    /// Starts the app; `llm_url` points it at an OpenAI-compatible endpoint
    /// (else it runs without a language model).
    pub async fn start(name: &str, llm_url: Option<&str>) -> App {
        App::start_with(name, llm_url, &[], &[]).await
    }

    /// Like [`App::start`], with extra environment for the app (an empty
    /// value unsets) and folders copied into the knowledge folder first.
    // The guard is held on purpose for the app's whole life (one window on
    // the display at a time); each test runs on its own runtime and thread.
    #[allow(clippy::await_holding_lock)]
    pub async fn start_with(name: &str, llm_url: Option<&str>, env: &[(&str, String)], seed: &[PathBuf]) -> App {
        assert!(std::env::var_os("DISPLAY").is_some(), "no display: run under xvfb-run (make test does)");
        let turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
        let root = tempfile::tempdir().unwrap();
        let (knowledge, data) = (root.path().join("knowledge"), root.path().join("data"));
        std::fs::create_dir_all(&knowledge).unwrap();
        for folder in seed {
            copy_folder(folder, &knowledge.join(folder.file_name().unwrap()));
        }
        let (port, native_port) = (free_port(), free_port());
        let mut command = Command::new(tauri_driver());
        command.args(["--port", &port.to_string(), "--native-port", &native_port.to_string()]);
        let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
        command.env("KEA_MODELS_DIR", std::env::join_paths([repo.join("models"), repo.join("tests/fixture-models")]).unwrap());
        command.env("KEA_IMAGE_MODEL", "fixture-clip-vision").env_remove("KEA_LLM_BASE_URL").env_remove("KEA_GGUF");
        match llm_url {
            Some(url) => command.env("KEA_LLM_BASE_URL", url).env("KEA_LLM_MODEL", "scripted"),
            // No endpoint and no embedded model: retrieval-only answers.
            None => command.env("KEA_EMBEDDED_MODEL", "none-installed"),
        };
        for (key, value) in env {
            match value.is_empty() {
                true => command.env_remove(key),
                false => command.env(key, value),
            };
        }
        let launched = Instant::now();
        // Its own process group: stopping it stops WebKitWebDriver and the app with it.
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        let driver = command.stdout(Stdio::null()).stderr(Stdio::inherit()).spawn().expect("start tauri-driver");
        let capabilities = json!({"tauri:options": {"application": APP, "args": ["--knowledge", knowledge, "--data-dir", data]}});
        let url = format!("http://127.0.0.1:{port}");
        let client = retry(Duration::from_secs(30), || async {
            ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
                .capabilities(capabilities.as_object().unwrap().clone())
                .connect(&url)
                .await
                .ok()
        })
        .await
        .expect("a WebDriver session with the app");
        let shots = std::env::var_os("KEA_E2E_ARTIFACTS")
            .map(PathBuf::from)
            .unwrap_or_else(|| Path::new(env!("CARGO_TARGET_TMPDIR")).join("e2e-screenshots"))
            .join(name);
        let _ = std::fs::remove_dir_all(&shots);
        std::fs::create_dir_all(&shots).unwrap();
        let app = App { _turn: turn, client, driver, root, shots, step: 0, launched };
        app.client.set_window_size(1100, 720).await.ok();
        app
    }

    /// Saves a numbered screenshot of the window, once the page has drawn its last change.
    pub async fn shot(&mut self, label: &str) {
        self.step += 1;
        // Two frames, so the picture shows what the page has just drawn.
        let frames = "const done = arguments[0]; requestAnimationFrame(() => requestAnimationFrame(() => done(true)));";
        let _ = self.client.execute_async(frames, vec![]).await;
        let png = self.client.screenshot().await.expect("screenshot");
        let path = self.shots.join(format!("{:02}-{label}.png", self.step));
        std::fs::write(&path, png).unwrap();
        eprintln!("screenshot: {}", path.display());
    }

    /// Waits for an element matching `css`.
    pub async fn wait_for(&self, css: &str, timeout: Duration) -> Element {
        let found = retry(timeout, || async { self.client.find(Locator::Css(css)).await.ok() }).await;
        match found {
            Some(element) => element,
            None => self.fail(&format!("timed out after {timeout:?} waiting for `{css}`")).await,
        }
    }

    /// Waits until the text of `css` satisfies `ready`, and returns it.
    pub async fn wait_text(&self, css: &str, timeout: Duration, ready: impl Fn(&str) -> bool) -> String {
        let text = retry(timeout, || async {
            let text = self.client.find(Locator::Css(css)).await.ok()?.text().await.ok()?;
            ready(&text).then_some(text)
        })
        .await;
        match text {
            Some(text) => text,
            None => self.fail(&format!("timed out after {timeout:?} waiting for the text of `{css}` (now: {:?})", self.text(css).await)).await,
        }
    }

    /// Saves `FAILED.png` and panics with the page's text.
    pub async fn fail(&self, what: &str) -> ! {
        if let Ok(png) = self.client.screenshot().await {
            let _ = std::fs::write(self.shots.join("FAILED.png"), png);
        }
        panic!("{what}; screenshot {}; page text:\n{}", self.shots.join("FAILED.png").display(), self.text("body").await)
    }

    /// How many elements match `css` now, counted in the page in one step
    /// (a list that redraws meanwhile cannot leave stale handles).
    pub async fn count(&self, css: &str) -> u64 {
        let script = format!("return document.querySelectorAll({}).length", serde_json::to_string(css).unwrap());
        self.eval(&script).await.as_u64().unwrap()
    }

    pub async fn text(&self, css: &str) -> String {
        match self.client.find(Locator::Css(css)).await {
            Ok(e) => e.text().await.unwrap_or_default(),
            Err(_) => String::new(),
        }
    }

    /// Clicks `css` as a person would: scrolled into view first (a row of
    /// a long list may be below the fold of its scrolling pane).
    pub async fn click(&self, css: &str) {
        let element = self.wait_for(css, Duration::from_secs(30)).await;
        let scroll = "arguments[0].scrollIntoView({block: 'center'});";
        let _ = self.client.execute(scroll, vec![serde_json::to_value(&element).unwrap_or_default()]).await;
        if let Err(e) = element.click().await {
            self.fail(&format!("click {css}: {e:?}")).await;
        }
    }

    /// Opens the menu behind the button `menu` and chooses `item` in it.
    pub async fn choose(&self, menu: &str, item: &str) {
        self.click(menu).await;
        self.click(&format!("[role=menu]:not([hidden]) {item}")).await;
    }

    /// Runs `script` in the page and returns its value.
    pub async fn eval(&self, script: &str) -> Value {
        self.client.execute(script, vec![]).await.unwrap_or_else(|e| panic!("script failed: {e:?}\n{script}"))
    }

    /// Calls one of the app's commands the way the UI does (`invoke`): its
    /// result, or its error (`{kind, message}`).
    pub async fn try_invoke(&self, command: &str, args: Value) -> Result<Value, Value> {
        let script = "const [command, args, done] = arguments; window.__TAURI_INTERNALS__.invoke(command, args).then((v) => done({ok: v ?? null}), (e) => done({err: e}));";
        let result = self.client.execute_async(script, vec![json!(command), args]).await.expect("invoke");
        match result.get("err") {
            Some(err) => Err(err.clone()),
            None => Ok(result["ok"].clone()),
        }
    }

    /// Imports files the way a person does: dropped on the knowledge pane
    /// (the app accepts only paths a person picked or dropped).
    pub async fn import(&self, paths: &[PathBuf]) {
        self.drag_files_onto(paths, "#knowledge").await;
    }

    /// A progress channel for a command, which discards what it hears.
    pub async fn channel(&self) -> Value {
        self.client.execute("return '__CHANNEL__:' + window.__TAURI_INTERNALS__.transformCallback(() => {})", vec![]).await.expect("a channel")
    }

    /// Drags `files` from a GTK window (`drag_source.py`, like a file
    /// manager) and drops them on the middle of `css`: a real X11
    /// drag-and-drop driven by xdotool, received by the app as a user's is.
    pub async fn drag_files_onto(&self, files: &[PathBuf], css: &str) {
        let (ex, ey, ew, eh) = self.wait_for(css, Duration::from_secs(30)).await.rectangle().await.expect("the target's rectangle");
        let (wx, wy, ww, _) = self.client.get_window_rect().await.unwrap_or((0, 0, 1100, 720));
        let target = ((wx as f64 + ex + ew / 2.0) as i64, (wy as f64 + ey + eh / 2.0) as i64);
        // The source window sits right of the app's, inside the 1280-pixel screen.
        let origin = (wx + ww + 5, 40);
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/e2e/drag_source.py");
        let mut source = Command::new("/usr/bin/python3")
            .arg(script)
            .args([origin.0.to_string(), origin.1.to_string()])
            .args(files)
            .stdout(Stdio::piped())
            .spawn()
            .expect("start the GTK drag source");
        let mut ready = String::new();
        std::io::BufRead::read_line(&mut std::io::BufReader::new(source.stdout.take().unwrap()), &mut ready).unwrap();
        assert_eq!(ready.trim(), "ready", "the drag source did not start");
        let start = (origin.0 as i64 + 60, origin.1 as i64 + 50);
        xdotool(&["mousemove", "--sync", &start.0.to_string(), &start.1.to_string()]);
        xdotool(&["mousedown", "1"]);
        // Past GTK's drag threshold, then across to the target in steps.
        for step in 1..=10 {
            let x = start.0 + (target.0 - start.0) * step / 10;
            let y = start.1 + (target.1 - start.1) * step / 10;
            xdotool(&["mousemove", &x.to_string(), &y.to_string()]);
            tokio::time::sleep(Duration::from_millis(60)).await;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        xdotool(&["mouseup", "1"]);
        let deadline = Instant::now() + Duration::from_secs(10);
        while source.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let _ = source.kill();
    }

    /// Ends the session, which closes the app (dropping `App` then stops
    /// tauri-driver).
    pub async fn stop(self) {
        let _ = self.client.clone().close().await;
    }
}

impl Drop for App {
    /// Stops tauri-driver's process group (the driver, WebKitWebDriver and
    /// the app) with SIGTERM, then SIGKILL for whatever is left after 10 s,
    /// also when a test fails: no app outlives its test holding its output.
    fn drop(&mut self) {
        let group = format!("-{}", self.driver.id());
        let signal = |name: &str| Command::new("kill").args([name, "--", &group]).stderr(Stdio::null()).status().is_ok_and(|s| s.success());
        signal("-TERM");
        let deadline = Instant::now() + Duration::from_secs(10);
        // The group is gone once `kill -0` finds nobody in it (the driver reaped).
        while Instant::now() < deadline && (!matches!(self.driver.try_wait(), Ok(Some(_))) || signal("-0")) {
            std::thread::sleep(Duration::from_millis(100));
        }
        signal("-KILL");
        let _ = self.driver.wait();
    }
}

impl App {
    /// Resident memory (KiB) of the app process and of its WebKit helpers
    /// (web and network processes), found under /proc by parentage.
    pub fn memory_kib(&self) -> (u64, u64) {
        let data_dir = self.root.path().join("data").display().to_string();
        let procs: Vec<(u32, u32, String, u64)> = std::fs::read_dir("/proc")
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|entry| {
                let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
                let status = std::fs::read_to_string(entry.path().join("status")).ok()?;
                let field = |name: &str| status.lines().find_map(|l| l.strip_prefix(name)).map(|v| v.split_whitespace().next().unwrap_or("0").to_string());
                let cmdline = std::fs::read_to_string(entry.path().join("cmdline")).unwrap_or_default().replace('\0', " ");
                Some((pid, field("PPid:")?.parse().ok()?, cmdline, field("VmRSS:").and_then(|v| v.parse().ok()).unwrap_or(0)))
            })
            .collect();
        let Some(app) = procs.iter().find(|p| p.2.contains("kea-desktop") && p.2.contains(&data_dir)) else { return (0, 0) };
        (app.3, procs.iter().filter(|p| p.1 == app.0).map(|p| p.3).sum::<u64>())
    }
}

impl App {
    /// Which of the processes behind the session are still running, for
    /// the message of a step that lost its session.
    pub fn processes(&self) -> String {
        let data_dir = self.root.path().join("data").display().to_string();
        let commands: Vec<(String, String)> = std::fs::read_dir("/proc")
            .into_iter()
            .flatten()
            .flatten()
            .filter(|entry| entry.file_name().to_str().is_some_and(|n| n.parse::<u32>().is_ok()))
            .filter_map(|entry| {
                let state =
                    std::fs::read_to_string(entry.path().join("status")).ok()?.lines().find_map(|l| l.strip_prefix("State:").map(|s| s.trim().to_string()))?;
                Some((std::fs::read_to_string(entry.path().join("cmdline")).ok()?.replace('\0', " "), state))
            })
            .collect();
        let state = |name: &str, also: &str| commands.iter().find(|(c, _)| c.contains(name) && c.contains(also)).map_or("gone".to_string(), |(_, s)| s.clone());
        format!(
            "tauri-driver: {}; WebKitWebDriver: {}; kea-desktop: {}",
            state("tauri-driver", ""),
            state("WebKitWebDriver", ""),
            state("kea-desktop", &data_dir)
        )
    }
}

/// Polls `f` every 200 ms until it gives a value or `timeout` passes.
pub async fn retry<T, F: Future<Output = Option<T>>>(timeout: Duration, mut f: impl FnMut() -> F) -> Option<T> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(value) = f().await {
            return Some(value);
        }
        if Instant::now() > deadline {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Copies `from` with its subfolders into a new folder `to`.
fn copy_folder(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        match entry.path().is_dir() {
            true => copy_folder(&entry.path(), &to.join(entry.file_name())),
            false => drop(std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap()),
        }
    }
}

/// The repository's sample knowledge (English species pages).
pub fn sample_parrots() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("knowledge/parrots")
}
