//! The model manager in the real app: a photo with no image model offers
//! the download; the Models page downloads CLIP (the generated fixture CLIP
//! files, served by a local hub on loopback in the hub's URL layout through
//! `HF_ENDPOINT`) with progress, and shows it installed.

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use fantoccini::Locator;

use crate::harness::App;
use crate::hub::{Fault, LocalHub};

const VISION_REPO: &str = "Qdrant/clip-ViT-B-32-vision";
const TEXT_REPO: &str = "Qdrant/clip-ViT-B-32-text";
const WAIT: Duration = Duration::from_secs(120);

/// The fixture CLIP towers under the catalog's repository paths.
fn clip_files() -> HashMap<String, Vec<u8>> {
    let models = Path::new(env!("CARGO_MANIFEST_DIR")).join("models");
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
    let mut app = App::start_with("models", None, &env).await;
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
    assert!(hub.log().iter().any(|r| r.starts_with("GET /Qdrant/clip-ViT-B-32-text/resolve/main/tokenizer.json")), "{:?}", hub.log());
    app.shot("models-page-installed").await;
    app.stop().await;
}
