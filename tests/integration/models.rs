//! The model manager through the real `kea models` commands and the real
//! download code, against a local hub on 127.0.0.1 (`HF_ENDPOINT`): a cut
//! connection resumes, a wrong checksum and a missing file install nothing.
//! The served files are the generated fixture cross-encoder (no real
//! reranker weights are available here), placed where the catalog's
//! bge-reranker-base lives, so the installed model really reranks.

use std::collections::HashMap;

use super::hub::{git_blob_id, repository, sha256_hex, Fault, LocalHub, COMMIT, ONNX_TEXT_MODEL};
use super::util::{repo_root, Sandbox};

const REPO: &str = "BAAI/bge-reranker-base";

/// The fixture reranker's files under the catalog's repository paths.
pub fn reranker_files() -> HashMap<String, Vec<u8>> {
    repository(REPO, &super::util::fixture_models().join("fixture-reranker"), &ONNX_TEXT_MODEL)
}

fn install(sandbox: &Sandbox, hub: &LocalHub, id: &str) -> std::process::Output {
    sandbox.command(&["--models-dir", &models_dir(sandbox), "models", "install", id]).env("HF_ENDPOINT", &hub.endpoint).output().unwrap()
}

fn models_dir(sandbox: &Sandbox) -> String {
    sandbox.data.join("models").display().to_string()
}

fn listed(sandbox: &Sandbox, id: &str) -> serde_json::Value {
    let rows = sandbox.json(&["--models-dir", &models_dir(sandbox), "models", "list", "--json"]);
    rows.as_array().unwrap().iter().find(|r| r["id"] == id).cloned().unwrap_or_else(|| panic!("{id} not listed: {rows}"))
}

#[test]
fn a_cut_download_resumes_and_the_installed_reranker_is_used() {
    let sandbox = Sandbox::with_samples();
    let hub = LocalHub::start(reranker_files(), HashMap::from([(format!("{REPO}/tokenizer.json"), Fault::CutOnce(200_000))]));
    let before = listed(&sandbox, "bge-reranker-base");
    assert_eq!((before["role"].as_str(), before["installed"].as_bool(), before["active"].as_bool()), (Some("reranker"), Some(false), Some(false)));
    assert!(before["languages"].as_array().unwrap().iter().any(|l| l == "zh") && before["size_bytes"].as_u64().unwrap() > 0);

    let out = install(&sandbox, &hub, "bge-reranker-base");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let log = hub.log();
    let pinned = format!("GET /BAAI/bge-reranker-base/resolve/{COMMIT}/tokenizer.json range=200000");
    assert!(log.iter().any(|r| r.starts_with(&pinned)), "resumed with Range, from the resolved commit: {log:?}");
    assert!(log.iter().any(|r| r.starts_with("GET /cdn/BAAI/bge-reranker-base/onnx/model.onnx")), "large files follow the hub's redirect: {log:?}");
    let folder = sandbox.data.join("models/bge-reranker-base");
    assert_eq!(std::fs::read(folder.join("tokenizer.json")).unwrap(), reranker_files()[&format!("{REPO}/tokenizer.json")]);
    assert!(folder.join("kea-model.json").is_file() && folder.join("kea-install.json").is_file());

    let models = models_dir(&sandbox);
    let used = sandbox.run(&["--models-dir", &models, "models", "use", "reranker", "bge-reranker-base"]);
    assert!(used.status.success(), "{}", String::from_utf8_lossy(&used.stderr));
    assert_eq!(listed(&sandbox, "bge-reranker-base")["active"], true);
    sandbox.index();
    // No --reranker flag: the saved choice is used.
    let out = sandbox.json(&["--models-dir", &models, "search", "cuttlebone mineral block calcium", "--trace", "--json"]);
    let stages: Vec<&str> = out["trace"]["stages"].as_array().unwrap().iter().map(|s| s["stage"].as_str().unwrap()).collect();
    assert!(stages.contains(&"rerank"), "{stages:?}");
    assert!(!out["trace"]["fallbacks"].to_string().contains("rerank"), "{}", out["trace"]["fallbacks"]);

    let removed = sandbox.run(&["--models-dir", &models, "models", "remove", "bge-reranker-base"]);
    assert!(removed.status.success(), "{}", String::from_utf8_lossy(&removed.stderr));
    assert!(!folder.exists());
    assert_eq!(listed(&sandbox, "bge-reranker-base")["active"], false, "a removed model is no longer chosen");
}

#[test]
fn a_wrong_checksum_installs_nothing() {
    let sandbox = Sandbox::empty();
    let hub = LocalHub::start(reranker_files(), HashMap::from([(format!("{REPO}/onnx/model.onnx"), Fault::WrongContent)]));
    let out = install(&sandbox, &hub, "bge-reranker-base");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("[download]") && stderr.contains("checksum mismatch"), "{stderr}");
    assert!(!sandbox.data.join("models/bge-reranker-base").exists(), "nothing half-installed");
    assert_eq!(listed(&sandbox, "bge-reranker-base")["installed"], false);
    let partial = sandbox.data.join("models/.downloads/bge-reranker-base/model.onnx.part");
    assert!(!partial.exists(), "the bad file was discarded so the next try starts over");
}

#[test]
fn a_body_longer_than_announced_is_refused_and_nothing_installed() {
    let sandbox = Sandbox::empty();
    let hub = LocalHub::start(reranker_files(), HashMap::from([(format!("{REPO}/tokenizer.json"), Fault::Overlong)]));
    let out = install(&sandbox, &hub, "bge-reranker-base");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("runs past") && stderr.contains("tokenizer.json"), "{stderr}");
    assert!(!sandbox.data.join("models/bge-reranker-base").exists(), "nothing installed");
    assert!(!sandbox.data.join("models/.downloads/bge-reranker-base/tokenizer.json.part").exists(), "the overlong body was discarded");
    let gets = hub.log().iter().filter(|r| r.starts_with("GET") && r.contains("tokenizer.json")).count();
    assert_eq!(gets, 1, "not retried: {:?}", hub.log());
}

/// The installed manifest records the commit and every file's checksum and
/// size; a later install (a repair) must match them, so a file changed
/// upstream is refused and the installed model stays as it was.
#[test]
fn an_install_is_pinned_to_its_commit_and_hashes_and_a_repair_must_match_them() {
    let sandbox = Sandbox::empty();
    let hub = LocalHub::start(reranker_files(), HashMap::new());
    let out = install(&sandbox, &hub, "bge-reranker-base");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let folder = sandbox.data.join("models/bge-reranker-base");
    let manifest: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(folder.join("kea-model.json")).unwrap()).unwrap();
    let source = &manifest["source"];
    assert_eq!(source["commit"], COMMIT, "{source}");
    let files = source["files"].as_array().unwrap();
    assert_eq!(files.len(), ONNX_TEXT_MODEL.len());
    for (path, local) in ONNX_TEXT_MODEL {
        let record = files.iter().find(|f| f["path"] == path).unwrap_or_else(|| panic!("{path} recorded: {source}"));
        let bytes = std::fs::read(folder.join(local)).unwrap();
        assert_eq!(record["size"].as_u64(), Some(bytes.len() as u64), "{record}");
        let hash = if path.ends_with(".onnx") { sha256_hex(&bytes) } else { git_blob_id(&bytes) };
        let key = if path.ends_with(".onnx") { "sha256" } else { "git_sha1" };
        assert_eq!(record[key].as_str(), Some(hash.as_str()), "{record}");
    }
    assert!(hub.log().iter().filter(|r| r.starts_with("GET /BAAI")).all(|r| r.contains(COMMIT)), "every file from the commit: {:?}", hub.log());

    let original = std::fs::read(folder.join("tokenizer.json")).unwrap();
    hub.replace(&format!("{REPO}/tokenizer.json"), b"{\"changed\": \"upstream\"}".to_vec());
    let repair = install(&sandbox, &hub, "bge-reranker-base");
    assert!(!repair.status.success(), "a file that changed upstream is not installed");
    // The recorded size and hash both hold it: shorter than recorded, it never completes.
    let stderr = String::from_utf8_lossy(&repair.stderr);
    assert!(stderr.contains("[download]") && stderr.contains("tokenizer.json"), "{stderr}");
    assert_eq!(std::fs::read(folder.join("tokenizer.json")).unwrap(), original, "the installed model is untouched");
}

#[test]
fn a_missing_file_is_a_clear_not_found() {
    let sandbox = Sandbox::empty();
    let mut files = reranker_files();
    files.remove(&format!("{REPO}/special_tokens_map.json"));
    let hub = LocalHub::start(files, HashMap::new());
    let out = install(&sandbox, &hub, "bge-reranker-base");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("[not_found]") && stderr.contains("special_tokens_map.json"), "{stderr}");
    assert!(!sandbox.data.join("models/bge-reranker-base").exists());
    let unknown = install(&sandbox, &hub, "no-such-model");
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("in the catalog"));
}

/// Regression (issue 24): `kea models remove /some/folder` deleted it. An
/// id that is a path (absolute, `..`, a separator; a NUL, which no argv can
/// hold, in the engine's unit test) is refused by
/// every `kea models` command, and nothing outside the models folder changes.
#[test]
fn model_ids_that_are_paths_are_refused_by_every_models_command() {
    let sandbox = Sandbox::empty();
    let models = models_dir(&sandbox);
    let victim = sandbox.data.join("victim");
    std::fs::create_dir_all(&victim).unwrap();
    std::fs::write(victim.join("kea-model.json"), r#"{"kind": "llm"}"#).unwrap();
    std::fs::write(victim.join("keep.txt"), "user data").unwrap();
    let gguf = sandbox.data.join("model.gguf");
    std::fs::write(&gguf, b"GGUF").unwrap();
    let absolute = victim.display().to_string();
    let gguf_arg = gguf.display().to_string();
    for id in [absolute.as_str(), "../victim", "../../data/victim", "sub/../../victim", "a\\..\\victim", "..", ".downloads"] {
        let commands: [Vec<&str>; 4] =
            [vec!["models", "remove", id], vec!["models", "install", id], vec!["models", "use", "llm", id], vec!["models", "import", &gguf_arg, "--id", id]];
        for args in commands {
            let out = sandbox.command(&[["--models-dir", models.as_str()].as_slice(), &args].concat()).output().unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(!out.status.success() && stderr.contains("is not a model id"), "kea {args:?}: {stderr}");
        }
    }
    assert_eq!(std::fs::read_to_string(victim.join("keep.txt")).unwrap(), "user data");
    assert!(!sandbox.data.join("models").join("victim").exists());
}

/// `make fixtures` writes its generated models to their own folder: the
/// models folder the app and the CLI use lists none of them.
#[test]
fn test_fixtures_never_show_in_the_users_model_list() {
    let fixtures = super::util::fixture_models();
    for id in ["fixture-reranker", "fixture-clip-vision", "fixture-clip-text"] {
        assert!(fixtures.join(id).join("kea-model.json").is_file(), "{id} is generated into {}", fixtures.display());
        assert!(!repo_root().join("models").join(id).exists(), "{id} must not be written to the app's models folder");
    }
    let sandbox = Sandbox::with_samples();
    let out = sandbox.command(&["models", "list", "--json"]).env("KEA_MODELS_DIR", repo_root().join("models")).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let installed: Vec<&str> = rows.as_array().unwrap().iter().filter(|r| r["installed"] == true).map(|r| r["id"].as_str().unwrap()).collect();
    assert!(installed.contains(&"all-minilm-l6-v2"), "the bundled embedder is listed: {installed:?}");
    assert!(!installed.iter().any(|id| id.starts_with("fixture-")), "{installed:?}");
}

/// Issue 41: a redirect to plain http on another host was followed and its
/// bytes installed. Every hop must be https:// or this machine's loopback
/// (127.0.0.1, localhost, [::1]): here a second hub on 127.0.0.2 serves the
/// very same bytes, and is never asked.
#[test]
fn a_redirect_to_plain_http_elsewhere_is_refused_and_nothing_installed() {
    let sandbox = Sandbox::empty();
    let elsewhere = LocalHub::start_on("127.0.0.2", reranker_files());
    let target = elsewhere.as_ref().map_or_else(|| "http://127.0.0.2:9".to_string(), |hub| hub.endpoint.clone());
    let location = format!("{target}/{REPO}/resolve/{COMMIT}/tokenizer.json");
    let hub = LocalHub::start(reranker_files(), HashMap::from([(format!("{REPO}/tokenizer.json"), Fault::RedirectTo(location))]));
    let out = install(&sandbox, &hub, "bge-reranker-base");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && stderr.contains("redirect left https://"), "{stderr}");
    assert!(!sandbox.data.join("models/bge-reranker-base").exists(), "nothing installed");
    if let Some(elsewhere) = elsewhere {
        assert_eq!(elsewhere.log(), Vec::<String>::new(), "the plain-http host was never asked");
    }
}

/// A catalog entry for the fixture reranker's files, `size_bytes` their
/// total, pinned to `COMMIT` and to `pins` (`path` → sha256).
fn fixture_entry(pins: &HashMap<&str, String>) -> kea_engine::model::catalog::CatalogEntry {
    let mut entry = kea_engine::model::catalog::find("bge-reranker-base").unwrap();
    entry.size_bytes = reranker_files().values().map(|b| b.len() as u64).sum();
    let hub = entry.hub.as_mut().unwrap();
    hub.revision = COMMIT.into();
    for file in &mut hub.files {
        file.sha256 = pins.get(file.path.as_str()).cloned();
    }
    entry
}

fn manager(sandbox: &Sandbox, hub: &LocalHub) -> kea_engine::model::manager::ModelManager {
    let models = sandbox.data.join("models");
    kea_engine::model::manager::ModelManager::new(kea_engine::model::ModelPaths { dirs: vec![models.clone()] }, models, hub.endpoint.clone())
}

/// Issue 41: a HEAD claiming 50 GB let 1.26 GB be written. The catalog's
/// size (and a tenth) caps the bytes received, whatever a HEAD or a body's
/// own length claims: a claim over it is refused before any GET, and a
/// body that never ends is cut at the cap and discarded.
#[test]
fn downloads_are_capped_by_the_catalogs_size_whatever_the_headers_claim() {
    let sandbox = Sandbox::empty();
    let entry = fixture_entry(&HashMap::new());
    let cap = kea_engine::model::manager::size_cap(&entry);
    let key = format!("{REPO}/tokenizer.json");
    let claims = LocalHub::start(reranker_files(), HashMap::from([(key.clone(), Fault::ClaimsHuge)]));
    let err = manager(&sandbox, &claims).install_entry(&entry, &mut |_| {}, &kea_engine::CancelToken::new()).unwrap_err();
    assert_eq!(err.kind(), kea_engine::ErrorKind::Download, "{err}");
    assert!(err.to_string().contains("over the") && err.to_string().contains("catalog allows"), "{err}");
    assert!(claims.log().iter().all(|r| !r.starts_with("GET")), "nothing fetched: {:?}", claims.log());

    let endless = LocalHub::start(reranker_files(), HashMap::from([(key, Fault::Endless)]));
    let err = manager(&sandbox, &endless).install_entry(&entry, &mut |_| {}, &kea_engine::CancelToken::new()).unwrap_err();
    assert!(err.to_string().contains("more than the catalog allows"), "{err}");
    let part = sandbox.data.join("models/.downloads/bge-reranker-base/tokenizer.json.part");
    assert!(!part.exists(), "the cut body was discarded");
    assert!(!sandbox.data.join("models/bge-reranker-base").exists(), "nothing installed");
    let gets = endless.log().iter().filter(|r| r.starts_with("GET") && r.contains("tokenizer.json")).count();
    assert_eq!(gets, 1, "not retried: {:?}", endless.log());
    assert!(cap < super::hub::ENDLESS_BYTES as u64, "the cap ({cap}) is what stopped it");
}

/// A catalog entry pinned to a commit and to each file's sha256 installs
/// only those bytes, from that commit (`main` is never asked); a pin the
/// hub's announcement contradicts is refused before the file is fetched,
/// and one the bytes contradict after, with nothing installed.
#[test]
fn a_pinned_catalog_entry_installs_only_its_commit_and_hashes() {
    let files = reranker_files();
    let sha = |path: &str| sha256_hex(&files[&format!("{REPO}/{path}")]);
    let all: HashMap<&str, String> = ONNX_TEXT_MODEL.iter().map(|(path, _)| (*path, sha(path))).collect();

    let sandbox = Sandbox::empty();
    let hub = LocalHub::start(reranker_files(), HashMap::new());
    let installed = manager(&sandbox, &hub).install_entry(&fixture_entry(&all), &mut |_| {}, &kea_engine::CancelToken::new()).unwrap();
    assert!(installed.join("model.onnx").is_file());
    assert!(hub.log().iter().all(|r| !r.contains("/resolve/main/")), "only the pinned commit: {:?}", hub.log());

    let wrong = sha256_hex(b"another file");
    for (path, announced) in [("onnx/model.onnx", true), ("tokenizer.json", false)] {
        let sandbox = Sandbox::empty();
        let hub = LocalHub::start(reranker_files(), HashMap::new());
        let mut pins = all.clone();
        pins.insert(path, wrong.clone());
        let err = manager(&sandbox, &hub).install_entry(&fixture_entry(&pins), &mut |_| {}, &kea_engine::CancelToken::new()).unwrap_err();
        assert_eq!(err.kind(), kea_engine::ErrorKind::Download, "{err}");
        assert!(err.to_string().contains(&wrong), "{path}: {err}");
        assert!(!sandbox.data.join("models/bge-reranker-base").exists(), "{path}: nothing installed");
        let fetched = hub.log().iter().any(|r| r.starts_with("GET") && r.contains(path));
        assert_eq!(fetched, !announced, "{path}: a contradicted announcement is refused before the GET: {:?}", hub.log());
    }
}
