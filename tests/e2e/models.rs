//! The model manager in the real app: a photo with no image model offers
//! the download; the Models page downloads CLIP (the generated fixture CLIP
//! files, served by a local hub on loopback in the hub's URL layout through
//! `HF_ENDPOINT`) with progress, and shows it installed.

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use fantoccini::Locator;

use crate::harness::App;
use crate::hub::{Fault, LocalHub, COMMIT};

const VISION_REPO: &str = "Qdrant/clip-ViT-B-32-vision";
const TEXT_REPO: &str = "Qdrant/clip-ViT-B-32-text";
const WAIT: Duration = Duration::from_secs(120);

/// The fixture CLIP towers under the catalog's repository paths.
fn clip_files() -> HashMap<String, Vec<u8>> {
    let models = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixture-models");
    let read = |dir: &str, file: &str| std::fs::read(models.join(dir).join(file)).unwrap();
    let mut files = HashMap::new();
    for file in ["model.onnx", "preprocessor_config.json"] {
        files.insert(format!("{VISION_REPO}/{file}"), read("fixture-clip-vision", file));
    }
    for file in ["model.onnx", "tokenizer.json", "config.json", "special_tokens_map.json", "tokenizer_config.json"] {
        files.insert(format!("{TEXT_REPO}/{file}"), read("fixture-clip-text", file));
    }
    files
}

#[tokio::test(flavor = "multi_thread")]
async fn a_photo_without_an_image_model_offers_the_download_and_the_models_page_installs_it() {
    let hub = LocalHub::start(clip_files(), HashMap::from([(format!("{TEXT_REPO}/tokenizer.json"), Fault::Slow)]));
    // Installs go to a fresh models folder that links to the embedder and ONNX Runtime.
    let models = tempfile::tempdir().unwrap();
    let repo_models = Path::new(env!("CARGO_MANIFEST_DIR")).join("models");
    for shared in ["all-minilm-l6-v2", "onnxruntime"] {
        std::os::unix::fs::symlink(repo_models.join(shared), models.path().join(shared)).unwrap();
    }
    let env = [("HF_ENDPOINT", hub.endpoint.clone()), ("KEA_MODELS_DIR", models.path().display().to_string()), ("KEA_IMAGE_MODEL", String::new())];
    let mut app = App::start_with("models", None, &env, &[]).await;
    app.wait_text("#engine-state", WAIT, |t| t.contains("all-minilm")).await;

    let photo = app.root.path().join("bird.png");
    image::RgbImage::from_pixel(64, 64, image::Rgb([0, 255, 0])).save(&photo).unwrap();
    app.client.find(Locator::Css("#pick-image")).await.unwrap().send_keys(photo.to_str().unwrap()).await.unwrap();
    let offer = app.wait_text(".message.failed .body", WAIT, |t| t.contains("Download the image model")).await;
    assert!(offer.contains("No image model is installed"), "{offer}");
    app.shot("photo-without-image-model").await;

    app.click(r#"[role=tab][data-view="settings"]"#).await;
    let row = r#"tr[data-model="clip-vit-b-32-vision"]"#;
    app.wait_for(row, WAIT).await;
    app.client.execute("document.getElementById('models').scrollIntoView()", vec![]).await.unwrap();
    app.wait_text(&format!("{row} .model-actions"), WAIT, |t| t.contains("Download")).await;
    app.click(&format!("{row} .model-actions button")).await;
    app.wait_for(".download progress", WAIT).await;
    app.wait_text(".download span", WAIT, |t| t.contains(" of ")).await;
    app.shot("models-page-mid-download").await;

    // The default image model, now installed, is the one in use.
    app.wait_text(&format!("{row} .model-actions"), WAIT, |t| t.contains("In use")).await;
    for (folder, file) in
        [("clip-vit-b-32-vision", "preprocessor_config.json"), ("clip-vit-b-32-text", "tokenizer.json"), ("clip-vit-b-32-vision", "kea-model.json")]
    {
        assert!(models.path().join(folder).join(file).is_file(), "{folder}/{file} installed");
    }
    let pinned = format!("GET /Qdrant/clip-ViT-B-32-text/resolve/{COMMIT}/tokenizer.json");
    assert!(hub.log().iter().any(|r| r.starts_with(&pinned)), "{:?}", hub.log());
    app.shot("models-page-installed").await;
    model_ids_and_paths_from_the_webview_are_refused(&app).await;
    app.stop().await;
}

/// Issue 24: the webview's model commands refuse an id that is a path
/// (absolute, `..`, a separator, a NUL), and its file commands refuse a path
/// the person did not pick or drop; nothing outside Kea's folders changes
/// or is read.
async fn model_ids_and_paths_from_the_webview_are_refused(app: &App) {
    let victim = app.root.path().join("victim");
    std::fs::create_dir_all(&victim).unwrap();
    std::fs::write(victim.join("kea-model.json"), r#"{"kind": "llm"}"#).unwrap();
    let absolute = victim.display().to_string();
    let channel = app.channel().await;
    for id in [absolute.as_str(), "../../victim", "../victim", "a/../../victim", "victim\0", "..", ".downloads"] {
        for (command, args) in [
            ("model_remove", serde_json::json!({"id": id})),
            ("model_install", serde_json::json!({"ids": [id], "onProgress": channel})),
            ("model_use", serde_json::json!({"role": "llm", "id": id})),
        ] {
            let err = app.try_invoke(command, args).await.expect_err(command);
            assert_eq!(err["kind"], "invalid_input", "{command} {id:?}: {err}");
        }
    }
    assert!(victim.join("kea-model.json").is_file(), "a folder outside the models folder was touched");

    // Files nobody picked: a secret next to the app's folders, a system file.
    let secret = app.root.path().join("secret.md");
    std::fs::write(&secret, "# Secret\n\nnot for the webview\n").unwrap();
    let photo = app.root.path().join("bird.png");
    let outside = [secret.display().to_string(), "/etc/passwd".to_string(), photo.display().to_string()];
    let on_event = app.channel().await;
    for path in &outside {
        for (command, args) in [
            ("import_files", serde_json::json!({"paths": [path], "onProgress": channel})),
            ("identify", serde_json::json!({"path": path, "onEvent": on_event})),
            ("run_eval", serde_json::json!({"golden": path, "configs": ["full"]})),
        ] {
            let err = app.try_invoke(command, args).await.expect_err(command);
            assert_eq!(err["kind"], "invalid_input", "{command} {path}: {err}");
            assert!(err["message"].as_str().unwrap().contains("was not chosen"), "{err}");
        }
    }
    for key in ["../secret.md", "/etc/passwd", "run.sh"] {
        let err = app.try_invoke("open_document", serde_json::json!({"path": key})).await.expect_err("open_document");
        assert_eq!(err["kind"], "invalid_input", "open_document {key}: {err}");
    }
    assert!(!app.knowledge().join("secret.md").exists(), "nothing was imported");
    // Settings paths Kea would read (a GGUF, a models folder) must be chosen too.
    for (field, path) in [("gguf", "/etc/passwd"), ("models_dir", "/etc")] {
        let mut settings = app.try_invoke("get_settings", serde_json::json!({})).await.unwrap();
        settings[field] = serde_json::json!(path);
        let err = app.try_invoke("save_settings", serde_json::json!({"settings": settings})).await.expect_err("save_settings");
        assert_eq!(err["kind"], "invalid_input", "{field}: {err}");
    }
}
