//! **Architecture Invariant:** the engine never depends on Tauri (or any
//! webview/GUI crate). Checked on the resolved dependency graph.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

const GUI_CRATES: &[&str] = &["tauri", "wry", "tao", "webkit2gtk", "gtk", "gdk"];

#[test]
fn engine_and_cli_never_depend_on_tauri() {
    let out = std::process::Command::new(env!("CARGO"))
        .args(["metadata", "--format-version", "1", "--manifest-path"])
        .arg(super::util::repo_root().join("Cargo.toml"))
        .output()
        .unwrap();
    assert!(out.status.success(), "cargo metadata failed: {}", String::from_utf8_lossy(&out.stderr));
    let meta: Value = serde_json::from_slice(&out.stdout).unwrap();
    let names: HashMap<&str, &str> = meta["packages"].as_array().unwrap().iter().map(|p| (p["id"].as_str().unwrap(), p["name"].as_str().unwrap())).collect();
    let deps: HashMap<&str, Vec<&str>> = meta["resolve"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            let normal: Vec<&str> = n["deps"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|d| d["dep_kinds"].as_array().unwrap().iter().any(|k| k["kind"].is_null()))
                .map(|d| d["pkg"].as_str().unwrap())
                .collect();
            (n["id"].as_str().unwrap(), normal)
        })
        .collect();
    let mut checked_desktop = false;
    for root in ["kea-engine", "kea-cli", "kea-desktop"] {
        let id = names.iter().find(|(_, n)| **n == root).map(|(id, _)| *id).unwrap_or_else(|| panic!("{root} not in workspace"));
        let mut seen = HashSet::new();
        let mut stack = vec![id];
        while let Some(next) = stack.pop() {
            if seen.insert(next) {
                stack.extend(deps.get(next).into_iter().flatten());
            }
        }
        let gui: Vec<&str> = seen.iter().map(|id| names[id]).filter(|n| GUI_CRATES.iter().any(|g| n == g || n.starts_with(&format!("{g}-")))).collect();
        if root == "kea-desktop" {
            // Sanity check of this test itself: the shell does depend on tauri.
            assert!(gui.contains(&"tauri"), "the desktop shell should depend on tauri");
            checked_desktop = true;
        } else {
            assert!(gui.is_empty(), "{root} depends on GUI crates {gui:?}: move that code into src-tauri/");
        }
    }
    assert!(checked_desktop);
}

/// The engine's and the LLM layer's code (not comments or unit tests) as
/// `(file, line number, line)`.
fn engine_code_lines() -> Vec<(String, usize, String)> {
    let mut lines = Vec::new();
    for crate_dir in ["crates/kea-engine/src", "crates/kea-llm/src"] {
        for entry in walk(&super::util::repo_root().join(crate_dir)) {
            if entry.extension().is_none_or(|e| e != "rs") || entry.file_name().is_some_and(|n| n == "tests.rs" || n == "testing.rs") {
                continue;
            }
            let text = std::fs::read_to_string(&entry).unwrap();
            for (n, line) in text.lines().enumerate().take_while(|(_, l)| !l.contains("#[cfg(test)]")) {
                let code = line.split("//").next().unwrap_or_default().trim();
                if !code.is_empty() {
                    lines.push((entry.display().to_string(), n + 1, code.to_string()));
                }
            }
        }
    }
    lines
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}

/// Architecture Invariant: the engine knows no domain. The kind of thing a
/// collection labels comes from its kea.toml; no prompt or rule names the
/// sample collection's animals.
#[test]
fn engine_code_and_prompts_name_no_domain() {
    let words = ["parrot", "鹦鹉", "species", "bird", "cockatiel", "budgie", "macaw"];
    let offending: Vec<String> = engine_code_lines()
        .into_iter()
        .filter(|(_, _, code)| words.iter().any(|w| code.to_lowercase().contains(w)))
        .map(|(file, n, code)| format!("{file}:{n}: {code}"))
        .collect();
    assert!(offending.is_empty(), "domain words in engine code:\n{}", offending.join("\n"));
}
