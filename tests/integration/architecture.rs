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
    let offending: Vec<String> =
        engine_code_lines().into_iter().filter(|(_, _, code)| names_the_domain(code)).map(|(file, n, code)| format!("{file}:{n}: {code}")).collect();
    assert!(offending.is_empty(), "domain words in engine code:\n{}", offending.join("\n"));
}

/// Words of the sample collection that no engine code, UI string or CLI help may use.
const DOMAIN_WORDS: [&str; 9] = ["parrot", "鹦鹉", "species", "bird", "cockatiel", "budgie", "macaw", "玄凤", "虎皮"];

fn names_the_domain(text: &str) -> bool {
    DOMAIN_WORDS.iter().any(|w| text.to_lowercase().contains(w))
}

/// The subcommands a clap help text lists (its "Commands:" section), `help` left out.
fn subcommands(help: &str) -> Vec<String> {
    let listed = help.split_once("Commands:\n").map_or("", |(_, rest)| rest.split("\n\n").next().unwrap_or(""));
    listed.lines().filter_map(|l| l.split_whitespace().next()).filter(|c| *c != "help").map(str::to_string).collect()
}

/// Architecture Invariant: what users read names no domain either: every
/// UI string (`ui/src/i18n.ts`) and the help of every CLI command.
#[test]
fn ui_strings_and_cli_help_name_no_domain() {
    let sandbox = super::util::Sandbox::empty();
    let i18n = std::fs::read_to_string(super::util::repo_root().join("ui/src/i18n.ts")).unwrap();
    let mut offending: Vec<String> = i18n.lines().filter(|l| names_the_domain(l)).map(|l| format!("ui/src/i18n.ts: {l}")).collect();
    let mut commands: Vec<Vec<String>> = vec![vec![]];
    let mut read = 0;
    while let Some(command) = commands.pop() {
        let mut args: Vec<&str> = command.iter().map(String::as_str).collect();
        args.push("--help");
        let help = String::from_utf8(sandbox.run(&args).stdout).unwrap();
        read += 1;
        offending.extend(help.lines().filter(|l| names_the_domain(l)).map(|l| format!("kea {}: {l}", command.join(" "))));
        commands.extend(subcommands(&help).into_iter().map(|sub| [command.clone(), vec![sub]].concat()));
    }
    assert!(read > 10, "every command's help is read ({read})");
    assert!(offending.is_empty(), "domain words where users read them:\n{}", offending.join("\n"));
}

/// Architecture Invariant: the engine's top-level modules depend on each
/// other in one direction (no cycle), so each layer can be read, tested and
/// replaced without the ones above it: storage and models at the bottom,
/// the `Retriever` over them, chat and identification over it, and
/// `Engine` (the façade) and settings on top. A use of `crate::m` (or of
/// an item `lib.rs` re-exports from `m`) is a dependency on `m`.
#[test]
fn engine_modules_form_no_dependency_cycle() {
    let graph = module_graph("kea-engine");
    assert!(graph.len() > 15 && graph["engine"].contains("retrieve"), "the scan found the modules: {graph:?}");
    let cycle = find_cycle(&graph);
    assert!(cycle.is_none(), "module dependency cycle: {}", cycle.unwrap_or_default().join(" → "));
}

/// The language-model layer too: the GGUF model description is its own
/// module, used by the provider choice and by the llama.cpp provider.
#[test]
fn language_model_modules_form_no_dependency_cycle() {
    let graph = module_graph("kea-llm");
    assert!(graph["llama"].contains("gguf") && graph["select"].contains("llama"), "the scan found the modules: {graph:?}");
    let cycle = find_cycle(&graph);
    assert!(cycle.is_none(), "module dependency cycle: {}", cycle.unwrap_or_default().join(" → "));
}

/// The chat modules too (the answer, its sentence check, the markers they
/// share, the extractive scorer, the question they all read): each uses
/// its siblings through `super::`, and none is reached back.
#[test]
fn chat_modules_form_no_dependency_cycle() {
    let dir = super::util::repo_root().join("crates/kea-engine/src/chat");
    let siblings: Vec<String> =
        std::fs::read_dir(&dir).unwrap().filter_map(|e| e.ok()?.file_name().to_str()?.strip_suffix(".rs").map(str::to_string)).collect();
    let mut graph: HashMap<String, HashSet<String>> = HashMap::new();
    for module in siblings.iter().filter(|m| *m != "mod") {
        let code = std::fs::read_to_string(dir.join(format!("{module}.rs"))).unwrap();
        let code = code.split("#[cfg(test)]").next().unwrap_or_default();
        let used = code.split("super::").skip(1).map(|u| u.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect::<String>());
        graph.insert(module.clone(), used.filter(|u| u != module && siblings.contains(u)).collect());
    }
    assert!(graph["answer"].contains("verify") && graph["verify"].contains("markers"), "the scan found the modules: {graph:?}");
    let cycle = find_cycle(&graph);
    assert!(cycle.is_none(), "chat module dependency cycle: {}", cycle.unwrap_or_default().join(" → "));
}

/// Which top-level modules of `crates/<name>/src` each one uses.
fn module_graph(name: &str) -> HashMap<String, HashSet<String>> {
    let prefix = format!("{name}/src/");
    let src = super::util::repo_root().join("crates").join(&prefix);
    let lib = std::fs::read_to_string(src.join("lib.rs")).unwrap();
    let mut reexports: HashMap<String, String> = HashMap::new();
    for line in lib.lines().filter_map(|l| l.strip_prefix("pub use ")) {
        let (module, items) = line.split_once("::").unwrap();
        for item in items.trim_end_matches(';').trim_matches(|c| c == '{' || c == '}').split(',') {
            reexports.insert(item.trim().to_string(), module.to_string());
        }
    }
    let mut graph: HashMap<String, HashSet<String>> = HashMap::new();
    for (file, _, code) in engine_code_lines().into_iter().filter(|(f, _, _)| f.contains(&prefix) && !f.ends_with("/lib.rs")) {
        let module = file.split(&prefix).nth(1).unwrap().split(['/', '.']).next().unwrap().to_string();
        let deps = graph.entry(module.clone()).or_default();
        let used = code.split("crate::").skip(1);
        // `crate::{a::X, b}` names several modules.
        let paths = used.flat_map(|u| match u.strip_prefix('{') {
            Some(group) => group.split('}').next().unwrap_or_default().split(',').map(str::trim).collect::<Vec<_>>(),
            None => vec![u],
        });
        for path in paths {
            let name: String = path.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            let target = reexports.get(&name).cloned().unwrap_or(name);
            if target != module && (src.join(format!("{target}.rs")).exists() || src.join(&target).is_dir()) {
                deps.insert(target);
            }
        }
    }
    graph
}

/// A path `a → b → … → a` in `graph`, if there is one.
fn find_cycle(graph: &HashMap<String, HashSet<String>>) -> Option<Vec<String>> {
    fn visit(node: &str, graph: &HashMap<String, HashSet<String>>, path: &mut Vec<String>, done: &mut HashSet<String>) -> Option<Vec<String>> {
        if let Some(start) = path.iter().position(|n| n == node) {
            return Some([&path[start..], &[node.to_string()]].concat());
        }
        if !done.insert(node.to_string()) {
            return None;
        }
        path.push(node.to_string());
        let mut next: Vec<&String> = graph.get(node).into_iter().flatten().collect();
        next.sort();
        let found = next.into_iter().find_map(|n| visit(n, graph, path, done));
        path.pop();
        found
    }
    let mut done = HashSet::new();
    let mut nodes: Vec<&String> = graph.keys().collect();
    nodes.sort();
    nodes.into_iter().find_map(|n| visit(n, graph, &mut Vec::new(), &mut done))
}

/// Tidy: ARCHITECTURE.md describes what exists. Every source file it names
/// (`name.rs`, `name.ts`, …) is in the tree, every module of the engine,
/// the LLM layer and the CLI is named in it, and every test it says
/// enforces an invariant exists.
#[test]
fn the_architecture_document_names_what_exists() {
    let root = super::util::repo_root();
    let doc = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
    let quoted: Vec<&str> = doc.split('`').skip(1).step_by(2).collect();
    let mut files: HashSet<String> = HashSet::new();
    let mut code = String::new();
    for dir in ["crates", "src-tauri", "ui/src", "tests", "scripts", "fuzz"] {
        for path in walk(&root.join(dir)) {
            let relative = path.strip_prefix(&root).unwrap().to_string_lossy().into_owned();
            if relative.ends_with(".rs") {
                code.push_str(&std::fs::read_to_string(&path).unwrap_or_default());
            }
            files.insert(path.file_name().unwrap().to_string_lossy().into_owned());
            files.insert(relative);
        }
    }
    let source = |q: &str| [".rs", ".ts", ".py", ".sh"].iter().any(|ext| q.ends_with(ext)) && !q.contains(' ');
    let exists = |q: &str| files.contains(q) || files.contains(q.rsplit('/').next().unwrap_or(q));
    let missing: Vec<&str> = quoted.iter().copied().filter(|q| source(q) && !exists(q)).collect();
    assert!(missing.is_empty(), "ARCHITECTURE.md names files that do not exist: {missing:?}");

    for krate in ["kea-engine", "kea-llm", "kea-cli"] {
        let src = root.join("crates").join(krate).join("src");
        for entry in std::fs::read_dir(&src).unwrap().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let module = name.trim_end_matches(".rs");
            let named = [format!("{module}.rs"), format!("{module}/"), module.to_string()].iter().any(|n| quoted.contains(&n.as_str()));
            assert!(name == "lib.rs" || named, "crates/{krate}/src/{name} is not described in ARCHITECTURE.md");
        }
    }

    // The clause after each "Enforced by" (up to a full stop or a semicolon, not the dot of `ipc.ts`).
    let enforcers: Vec<String> = doc
        .split("Enforced by")
        .skip(1)
        .flat_map(|rest| {
            let end = [". ", ".\n", ";"].iter().filter_map(|stop| rest.find(stop)).min().unwrap_or(rest.len());
            rest[..end].split('`').skip(1).step_by(2).map(str::to_string).collect::<Vec<_>>()
        })
        .collect();
    assert!(enforcers.len() > 5, "{enforcers:?}");
    // Test names (a tool like `tsc` is not one).
    for test in enforcers.iter().filter(|t| t.contains('_') && t.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')) {
        assert!(code.contains(&format!("fn {test}(")), "ARCHITECTURE.md says `{test}` enforces an invariant, but no such test exists");
    }
}

/// Architecture Invariant: one settings precedence. The CLI and the app
/// build the engine's configuration the same way (the settings file, then
/// the environment, then the CLI's flags): every variable the CLI's global
/// flags read is one the engine's overrides read for the app too.
#[test]
fn the_cli_and_the_app_read_the_same_environment_over_the_settings() {
    let sandbox = super::util::Sandbox::empty();
    let help = String::from_utf8(sandbox.run(&["--help"]).stdout).unwrap();
    let read_by_cli: HashSet<String> =
        help.split("[env: ").skip(1).map(|rest| rest.chars().take_while(|c| c.is_ascii_uppercase() || *c == '_').collect()).collect();
    let read_by_app: HashSet<String> = kea_engine::settings::OVERRIDE_ENV.iter().map(|v| v.to_string()).collect();
    assert!(read_by_cli.len() > 5, "{help}");
    assert_eq!(read_by_cli, read_by_app, "the CLI's global flags and the app's overrides read different variables");
}

/// Architecture Invariant: the engine is a narrow façade. `impl Engine`
/// lives in at most two files with at most 20 public methods; indexing,
/// documents, retrieval, answers, identification and conversations are
/// types of their own that `Engine` hands out.
#[test]
fn the_engine_is_a_narrow_facade() {
    let mut files = HashSet::new();
    let mut public = Vec::new();
    for path in walk(&super::util::repo_root().join("crates/kea-engine/src")).into_iter().filter(|p| p.extension().is_some_and(|e| e == "rs")) {
        let text = std::fs::read_to_string(&path).unwrap();
        let mut inside = false;
        for line in text.lines() {
            if line.starts_with("impl Engine {") || line.starts_with("impl Engine<") {
                inside = true;
                files.insert(path.display().to_string());
            } else if inside && line.starts_with('}') {
                inside = false;
            } else if let Some(rest) = line.strip_prefix("    pub fn ").filter(|_| inside) {
                public.push(rest.split('(').next().unwrap_or_default().to_string());
            }
        }
    }
    assert!(public.contains(&"open".to_string()) && public.contains(&"retriever".to_string()), "the scan found the façade: {public:?}");
    assert!(files.len() <= 2, "impl Engine is spread over {files:?}");
    assert!(public.len() <= 20, "Engine has {} public methods: {public:?}", public.len());
}

/// The README stays an entrance (at most 150 lines) and every relative
/// link or image in it and in docs/ points at a file that exists.
#[test]
fn the_readme_is_short_and_the_docs_links_resolve() {
    let root = super::util::repo_root();
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    assert!(readme.lines().count() <= 150, "README.md has {} lines; the guide lives in docs/", readme.lines().count());
    let docs: Vec<std::path::PathBuf> =
        std::fs::read_dir(root.join("docs")).unwrap().filter_map(|e| Some(e.ok()?.path())).filter(|p| p.extension().is_some_and(|e| e == "md")).collect();
    assert!(docs.iter().any(|p| p.ends_with("guide.md")) && docs.iter().any(|p| p.ends_with("cli.md")), "{docs:?}");
    for file in docs.iter().cloned().chain([root.join("README.md")]) {
        let text = std::fs::read_to_string(&file).unwrap();
        for target in text.split("](").skip(1).filter_map(|rest| rest.split(')').next()) {
            let path = target.split('#').next().unwrap_or_default();
            if path.is_empty() || path.contains("://") || path.starts_with("mailto:") {
                continue;
            }
            assert!(file.parent().unwrap().join(path).exists(), "{} links to {target}, which does not exist", file.display());
        }
    }
}
