//! Model ids and paths from the webview or the command line: an id that
//! parses names exactly one folder directly inside a models folder (never
//! `.`, `..`, a hidden name or a path), an id made from a file name too;
//! and a path the access check lets through lies inside a granted or an
//! own folder, whatever `..`, separators or links it holds.
#![no_main]
use std::path::{Component, Path, PathBuf};
use std::sync::OnceLock;

use kea_engine::access::Grants;
use kea_engine::model::ModelId;
use libfuzzer_sys::fuzz_target;

/// A scratch tree: `granted/` (picked), `own/` (Kea's), `outside/`, and a link out of `granted/`.
fn tree() -> &'static (PathBuf, Grants) {
    static TREE: OnceLock<(PathBuf, Grants)> = OnceLock::new();
    TREE.get_or_init(|| {
        let root = std::env::temp_dir().join(format!("kea-fuzz-paths-{}", std::process::id()));
        for dir in ["granted/sub", "own", "outside"] {
            std::fs::create_dir_all(root.join(dir)).unwrap();
        }
        for file in ["granted/a.md", "granted/sub/b.md", "own/c.md", "outside/secret.md"] {
            std::fs::write(root.join(file), "x").unwrap();
        }
        let _ = std::os::unix::fs::symlink(root.join("outside"), root.join("granted/out"));
        let grants = Grants::default();
        grants.grant([root.join("granted")]);
        (root.canonicalize().unwrap(), grants)
    })
}

fn is_one_folder(id: &ModelId) {
    let root = Path::new("/models");
    let folder = id.folder_in(root);
    assert_eq!(folder.parent(), Some(root), "{id:?}");
    assert!(matches!(folder.components().last(), Some(Component::Normal(_))), "{id:?}");
    assert!(!id.as_str().starts_with('.') && !id.as_str().contains(['/', '\\', '\0']), "{id:?}");
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(id) = ModelId::parse(&text) {
        is_one_folder(&id);
    }
    if let Some(id) = ModelId::from_name(&text) {
        is_one_folder(&id);
    }
    let (root, grants) = tree();
    let own = root.join("own");
    if let Ok(allowed) = grants.check(&root.join(text.trim_start_matches('/')), &[&own]) {
        assert!(allowed.starts_with(root.join("granted")) || allowed.starts_with(&own), "{text:?} → {}", allowed.display());
    }
});
