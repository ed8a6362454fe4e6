//! `kea mcp` driven by a real MCP client (the official Python SDK,
//! `tests/mcp_client.py`): tools and resources on the sample knowledge in
//! English and Chinese, with the same passages `kea search --json` finds;
//! bad input answered with JSON-RPC errors; nothing written to the index
//! (not a byte of its files); and what the app indexes meanwhile (a
//! document, a new collection) seen by the running server.

use std::process::Command;

use serde_json::{json, Value};

use super::decisions::Expect;
use super::util::{models_dirs, Sandbox};
use super::watch::Watcher;

/// Runs `calls` against `kea mcp EXTRA…` on `sandbox`; the initialize result, then each call's outcome.
fn session(sandbox: &Sandbox, extra: &[&str], calls: &[Value]) -> Vec<Value> {
    let python = std::env::var_os("KEA_MCP_PYTHON").expect("set KEA_MCP_PYTHON (make test installs the mcp package)");
    let dir = tempfile::tempdir().unwrap();
    let mut args: Vec<String> = ["--knowledge", &sandbox.knowledge.to_string_lossy(), "--data-dir", &sandbox.data.to_string_lossy()].map(String::from).to_vec();
    args.extend(extra.iter().map(|a| a.to_string()));
    args.extend(["mcp", "--provider", "none"].map(String::from));
    let plan = json!({
        "command": env!("CARGO_BIN_EXE_kea"), "args": args, "calls": calls,
        "env": { "KEA_MODELS_DIR": models_dirs().to_string_lossy(), "HOME": std::env::var("HOME").unwrap_or_default() },
        "stderr": dir.path().join("server.log"),
    });
    let plan_file = dir.path().join("plan.json");
    std::fs::write(&plan_file, plan.to_string()).unwrap();
    let out = Command::new(python).arg(repo_file("tests/mcp_client.py")).arg(&plan_file).output().unwrap();
    let log = std::fs::read_to_string(dir.path().join("server.log")).unwrap_or_default();
    assert!(out.status.success(), "the client failed: {}\nserver: {log}", String::from_utf8_lossy(&out.stderr));
    let lines: Vec<Value> = String::from_utf8(out.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), calls.len() + 1, "one line per call: {lines:?}\nserver: {log}");
    lines
}

fn repo_file(path: &str) -> std::path::PathBuf {
    super::util::repo_root().join(path)
}

fn tool(name: &str, arguments: Value) -> Value {
    json!({ "op": "call_tool", "name": name, "arguments": arguments })
}

/// A call's structured result (it must have succeeded).
fn result(line: &Value) -> &Value {
    let ok = line.get("ok").unwrap_or_else(|| panic!("the call failed: {line}"));
    assert_ne!(ok["isError"], true, "{ok}");
    &ok["structuredContent"]
}

fn error_code(line: &Value) -> i64 {
    line["error"]["code"].as_i64().unwrap_or_else(|| panic!("expected a JSON-RPC error, got {line}"))
}

/// The chunk ids `kea search --json` ranks for `query`.
fn cli_ranking(sandbox: &Sandbox, query: &str) -> Vec<i64> {
    sandbox.search(query, 5).iter().map(|h| h["chunk_id"].as_i64().unwrap()).collect()
}

/// Every file of the index folder with its bytes (the shared-memory index
/// of SQLite's WAL aside: readers use it).
fn index_files(data: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(data)
        .unwrap()
        .flatten()
        .filter(|e| e.path().is_file() && !e.file_name().to_string_lossy().ends_with("-shm"))
        .map(|e| (e.file_name().to_string_lossy().into_owned(), std::fs::read(e.path()).unwrap()))
        .collect();
    files.sort();
    files
}

fn ranking(search: &Value) -> Vec<i64> {
    search["passages"].as_array().unwrap().iter().map(|p| p["chunk_id"].as_i64().unwrap()).collect()
}

/// An off-topic question.
const PERU: &str = "What is the capital of Peru?";

#[test]
fn a_real_mcp_client_searches_asks_lists_and_reads_in_both_languages() {
    let sandbox = Sandbox::with_samples();
    sandbox.index();
    let before = index_files(&sandbox.data);
    let (en, zh) = ("What is a cockatiel's diet?", "玄凤鹦鹉原产于哪里？");
    let lines = session(
        &sandbox,
        &[],
        &[
            json!({ "op": "list_tools" }),
            tool("search", json!({ "query": en })),
            tool("search", json!({ "query": zh, "top_k": 5 })),
            tool("ask", json!({ "question": en })),
            tool("ask", json!({ "question": zh })),
            tool("ask", json!({ "question": PERU })),
            tool("list_documents", json!({})),
            json!({ "op": "list_templates" }),
            json!({ "op": "list_resources" }),
            tool("list_documents", json!({ "offset": 2, "limit": 3 })),
        ],
    );
    let info = &lines[0]["ok"];
    assert_eq!(info["serverInfo"]["name"], "kea");
    assert!(info["capabilities"]["tools"].is_object() && info["capabilities"]["resources"].is_object(), "{info}");

    let tools = lines[1]["ok"]["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["search", "ask", "list_documents"]);
    assert_eq!(tools[0]["inputSchema"]["required"], json!(["query"]), "{}", tools[0]);
    assert!(tools[0]["description"].as_str().unwrap().len() > 100 && tools[0]["annotations"]["readOnlyHint"] == true);

    for (line, query) in [(&lines[2], en), (&lines[3], zh)] {
        let search = result(line);
        assert_eq!(ranking(search), cli_ranking(&sandbox, query), "MCP and `kea search --json` rank alike for {query}");
        let first = &search["passages"][0];
        assert!(first["source"].as_str().unwrap().contains("cockatiel") || first["source"].as_str().unwrap().contains("玄凤"), "{first}");
        assert_eq!(first["citation_id"], format!("default#{}", first["chunk_id"]));
        assert!(first["uri"].as_str().unwrap().starts_with("kea://default/") && first["heading_path"].is_string() && first["title"].is_string());
    }

    for answer in [result(&lines[4]), result(&lines[5])] {
        assert!(answer["citations"][0]["uri"].as_str().unwrap().starts_with("kea://default/"), "{answer}");
    }
    let listed = result(&lines[7]);
    let status = sandbox.status();
    assert_eq!(listed["total"].as_u64().unwrap() as usize, status["documents"].as_array().unwrap().len());
    assert!(listed["documents"].as_array().unwrap().iter().all(|d| d["state"] == "indexed" && d["uri"].is_string()), "{listed}");
    assert_eq!(lines[8]["ok"]["resourceTemplates"][0]["uriTemplate"], "kea://{collection}/{+path}");
    assert_eq!(lines[9]["ok"]["resources"].as_array().unwrap().len(), listed["total"].as_u64().unwrap() as usize);
    let paths = |documents: &Value| -> Vec<String> { documents.as_array().unwrap().iter().map(|d| d["path"].as_str().unwrap().to_string()).collect() };
    assert_eq!(paths(&result(&lines[10])["documents"]), paths(&listed["documents"])[2..5], "a page of the list");

    // A cited passage opens: the document's indexed text holds it.
    let passage = &result(&lines[2])["passages"][0];
    let read = session(&sandbox, &[], &[json!({ "op": "read_resource", "uri": passage["uri"] })]);
    let text = read[1]["ok"]["contents"][0]["text"].as_str().unwrap();
    let opening: String = passage["text"].as_str().unwrap().chars().take(60).collect();
    assert!(text.contains(&opening), "{opening:?} not in {text}");
    let after = index_files(&sandbox.data);
    assert!(after == before, "the server wrote to the index: {:?}", after.iter().map(|f| &f.0).collect::<Vec<_>>());
    let store = rusqlite::Connection::open(sandbox.data.join("kea.sqlite3")).unwrap();
    let kept: i64 = store.query_row("SELECT count(*) FROM conversations", [], |r| r.get(0)).unwrap();
    assert_eq!(kept, 0, "asking through MCP keeps no conversation");
    let asked = [(&lines[4], en, Expect::Is("answered")), (&lines[5], zh, Expect::Is("answered")), (&lines[6], PERU, Expect::Not("answered"))];
    decides_as_the_cli(&sandbox, &asked);
}

/// MCP's `ask` results decide as `kea ask` does, whose decisions are
/// asserted clear of their thresholds (`decisions.rs`).
fn decides_as_the_cli(sandbox: &Sandbox, asked: &[(&Value, &str, Expect)]) {
    for &(line, question, expected) in asked {
        let cli = sandbox.decided(&["ask", question, "--provider", "none", "--json"], expected);
        assert_eq!(result(line)["outcome"], cli["outcome"], "{question}: MCP and `kea ask` decide alike");
    }
}

#[test]
fn bad_input_gets_a_json_rpc_error_and_the_server_goes_on() {
    let sandbox = Sandbox::with_samples();
    sandbox.index();
    let huge = "鹦".repeat(1 << 20);
    let calls = [
        tool("no_such_tool", json!({})),
        tool("search", json!({})),
        tool("search", json!({ "query": 42 })),
        tool("search", json!({ "query": "cockatiel", "top_k": "five" })),
        tool("search", json!({ "query": "cockatiel", "top_k": 0 })),
        tool("search", json!({ "query": "cockatiel", "kb": "nowhere" })),
        tool("search", json!({ "query": huge })),
        tool("search", json!({ "query": "cockatiel", "colour": "red" })),
        tool("ask", json!({ "question": "   " })),
        json!({ "op": "read_resource", "uri": "file:///etc/passwd" }),
        json!({ "op": "read_resource", "uri": "kea://default/..%2F..%2Fetc%2Fpasswd.md" }),
        json!({ "op": "read_resource", "uri": "kea://default/gone.md" }),
        json!({ "op": "read_resource", "uri": "kea://all/parrots/cockatiel.md" }),
        tool("search", json!({ "query": "cockatiel" })),
    ];
    let lines = session(&sandbox, &[], &calls);
    for (line, call) in lines[1..calls.len()].iter().zip(&calls) {
        let not_indexed = call["uri"] == "kea://default/gone.md";
        assert_eq!(error_code(line), if not_indexed { -32002 } else { -32602 }, "{call} → {line}");
    }
    assert!(lines[6]["error"]["message"].as_str().unwrap().contains("nowhere"), "{}", lines[6]);
    assert!(lines[7]["error"]["message"].as_str().unwrap().contains("at most 2000"), "{}", lines[7]);
    assert!(!result(&lines[calls.len()])["passages"].as_array().unwrap().is_empty(), "the server still answers");
}

#[test]
fn what_the_app_indexes_meanwhile_is_seen_by_a_running_server() {
    let sandbox = Sandbox::with_samples();
    let watcher = Watcher::start(&sandbox);
    watcher.wait_for("the initial sync", |_| true);
    let marks = tempfile::tempdir().unwrap();
    let (searched, indexed) = (marks.path().join("searched"), marks.path().join("indexed"));
    let query = "How far does the wandering albatross glide?";
    let calls = [
        tool("search", json!({ "query": query, "top_k": 1 })),
        json!({ "op": "touch", "path": searched }),
        json!({ "op": "wait_file", "path": indexed }),
        tool("search", json!({ "query": query, "top_k": 1 })),
        tool("search", json!({ "query": "When is the bakery open?", "kb": "Errands", "top_k": 1 })),
    ];
    let client = std::thread::scope(|s| {
        let client = s.spawn(|| session(&sandbox, &[], &calls));
        while !searched.exists() {
            assert!(!client.is_finished(), "the client stopped before its first search");
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        std::fs::write(sandbox.path("albatross.md"), "# Albatross\n\nThe wandering albatross glides thousands of kilometres without a wingbeat.\n").unwrap();
        watcher.wait_for("albatross.md indexed", |v| v["documents"].as_u64().is_some_and(|d| d >= 11));
        // A collection made meanwhile is served too.
        let errands = marks.path().join("errands");
        std::fs::create_dir_all(&errands).unwrap();
        std::fs::write(errands.join("bakery.md"), "# Bakery\n\nThe bakery opens at seven every morning but Sunday.\n").unwrap();
        sandbox.json(&["kb", "create", "Errands", "--folder", &errands.to_string_lossy(), "--json"]);
        sandbox.json(&["--kb", "Errands", "index", "--json"]);
        // The server looks again after a few seconds at most.
        std::thread::sleep(std::time::Duration::from_secs(6));
        std::fs::write(&indexed, "").unwrap();
        client.join().unwrap()
    });
    assert_ne!(result(&client[1])["passages"][0]["source"], "albatross.md");
    assert_eq!(result(&client[4])["passages"][0]["source"], "albatross.md", "{}", client[4]);
    assert_eq!(result(&client[5])["passages"][0]["source"], "bakery.md", "{}", client[5]);
}
