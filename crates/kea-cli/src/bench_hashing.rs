//! A cheap, deterministic stand-in embedder for `kea bench scale
//! --embedder hashing`: an OpenAI-compatible `/v1/embeddings` server on
//! loopback whose vectors are hashed bags of words (CJK characters as
//! bigrams), so texts sharing words are near. It lets a million chunks be
//! indexed in minutes through Kea's real remote-embedder path; it is not a
//! language model, and the bench says so in its output.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use kea_engine::remote_embed::RemoteEmbedConfig;

/// The vectors' dimension (that of the default local model).
pub const DIMENSION: usize = 384;
/// What the bench's output says about its vectors.
pub const DESCRIPTION: &str = "feature hashing over words and CJK bigrams (384-d, deterministic; not a language model), served on loopback";

/// The running server; stops accepting when dropped.
pub struct HashingServer {
    address: SocketAddr,
    stopped: Arc<AtomicBool>,
}

impl HashingServer {
    pub fn start() -> anyhow::Result<HashingServer> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let address = listener.local_addr()?;
        let stopped = Arc::new(AtomicBool::new(false));
        let stop = stopped.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stop.load(Ordering::SeqCst) {
                    break;
                }
                if let Ok(stream) = stream {
                    std::thread::spawn(move || serve(stream));
                }
            }
        });
        Ok(HashingServer { address, stopped })
    }

    /// The remote-embedder settings that reach this server.
    pub fn config(&self) -> RemoteEmbedConfig {
        RemoteEmbedConfig { base_url: format!("http://{}/v1", self.address), model: format!("feature-hashing-{DIMENSION}"), ..Default::default() }
    }
}

impl Drop for HashingServer {
    fn drop(&mut self) {
        self.stopped.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.address); // wakes the accept loop
    }
}

/// Answers requests on one kept-alive connection until the client closes it.
fn serve(stream: TcpStream) {
    let _ = stream.set_nodelay(true); // one write per reply, sent at once
    let Ok(mut writer) = stream.try_clone() else { return };
    let mut reader = BufReader::new(stream);
    while let Some(body) = read_request(&mut reader) {
        let (status, reply) = match embeddings(&body) {
            Ok(reply) => ("200 OK", reply),
            Err(e) => ("400 Bad Request", serde_json::json!({"error": {"message": e}}).to_string()),
        };
        let response = format!("HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{reply}", reply.len());
        if writer.write_all(response.as_bytes()).is_err() {
            return;
        }
    }
}

/// One request's body (its head read up to the blank line), or `None` at the end.
fn read_request(reader: &mut BufReader<TcpStream>) -> Option<Vec<u8>> {
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().ok()?;
            }
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(body)
}

/// The OpenAI-style response for an `{"input": [...]}` request.
fn embeddings(body: &[u8]) -> Result<String, String> {
    let request: serde_json::Value = serde_json::from_slice(body).map_err(|e| e.to_string())?;
    let inputs = request["input"].as_array().ok_or("input must be a list of texts")?;
    let data: Vec<serde_json::Value> =
        inputs.iter().enumerate().map(|(index, text)| serde_json::json!({"index": index, "embedding": embed(text.as_str().unwrap_or_default())})).collect();
    Ok(serde_json::json!({"data": data, "model": request["model"]}).to_string())
}

/// A unit vector: each word (lower-cased) or pair of adjacent CJK
/// characters adds ±1 at a hashed position, so shared words make a cosine.
pub fn embed(text: &str) -> Vec<f32> {
    let mut vector = vec![0f32; DIMENSION];
    let mut add = |feature: &str| {
        let hash = fnv1a(feature.as_bytes());
        vector[(hash % DIMENSION as u64) as usize] += if hash >> 63 == 0 { 1.0 } else { -1.0 };
    };
    let lower = text.to_lowercase();
    for word in lower.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()) {
        let characters: Vec<char> = word.chars().collect();
        if characters.iter().any(|c| kea_engine::segment::is_cjk(*c)) {
            for pair in characters.windows(2) {
                add(&pair.iter().collect::<String>());
            }
        } else {
            add(word);
        }
    }
    let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt().max(f32::EPSILON);
    vector.iter_mut().for_each(|x| *x /= norm);
    vector
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, b| (hash ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cosine(a: &[f32], b: &[f32]) -> f32 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }

    #[test]
    fn shared_words_are_near_and_the_server_speaks_the_embeddings_api() {
        let (a, b, c) = (embed("The keeper feeds seeds daily"), embed("seeds the keeper feeds"), embed("完全不同的句子"));
        assert!((cosine(&a, &a) - 1.0).abs() < 1e-5);
        assert!(cosine(&a, &b) > 0.8 && cosine(&a, &c).abs() < 0.3, "{} {}", cosine(&a, &b), cosine(&a, &c));
        let server = HashingServer::start().unwrap();
        let mut embedder = kea_engine::remote_embed::HttpEmbedder::connect(server.config()).unwrap();
        let vectors = kea_engine::embed::Embedder::embed_passages(&mut embedder, &["seeds the keeper feeds".to_string()]).unwrap();
        assert!(cosine(&vectors[0], &b) > 0.999);
    }
}
