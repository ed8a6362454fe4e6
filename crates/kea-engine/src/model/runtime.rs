//! Finding and loading ONNX Runtime (`libonnxruntime.so`) at run time. It is
//! looked for in `$ORT_DYLIB_PATH`, next to the executable, and in
//! `onnxruntime/` inside each model folder. Loading it ourselves first turns
//! fastembed's panic on a missing library into a typed error.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use super::ModelPaths;
use crate::error::{Error, Result};

static LOADED: OnceLock<Result<PathBuf, String>> = OnceLock::new();

/// Loads ONNX Runtime once per process; later calls return the first result.
pub fn ensure_loaded(paths: &ModelPaths) -> Result<PathBuf> {
    LOADED
        .get_or_init(|| {
            let candidates = candidates(paths);
            let Some(path) = candidates.iter().find(|p| p.is_file()) else {
                let looked: Vec<String> = candidates.iter().map(|p| p.display().to_string()).collect();
                return Err(format!("libonnxruntime not found (looked in: {}); run `make models` or set ORT_DYLIB_PATH", looked.join(", ")));
            };
            ort::init_from(path).map(|_| path.clone()).map_err(|e| format!("{}: {e}", path.display()))
        })
        .clone()
        .map_err(Error::RuntimeMissing)
}

fn candidates(paths: &ModelPaths) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Some(p) = std::env::var_os("ORT_DYLIB_PATH").filter(|p| !p.is_empty()) {
        out.push(PathBuf::from(p));
    }
    if let Some(dir) = std::env::current_exe().ok().and_then(|e| e.parent().map(Path::to_path_buf)) {
        out.push(dir.join(library_name()));
    }
    for dir in &paths.dirs {
        out.push(dir.join("onnxruntime").join(library_name()));
    }
    out
}

fn library_name() -> &'static str {
    if cfg!(target_os = "windows") {
        "onnxruntime.dll"
    } else if cfg!(target_os = "macos") {
        "libonnxruntime.dylib"
    } else {
        "libonnxruntime.so"
    }
}
