//! No outbound network: with the default configuration, indexing, searching
//! and asking open no connection except to loopback (the optional local
//! Ollama probe). Every `connect(2)` of the process tree is traced with
//! strace (installed by `make test`).

use super::util::Sandbox;

/// The non-loopback inet connections in an strace log of `connect` calls.
fn outbound(log: &str) -> Vec<String> {
    log.lines()
        .filter(|l| l.contains("connect(") && (l.contains("AF_INET") || l.contains("AF_INET6")))
        .filter(|l| !(l.contains("inet_addr(\"127.") || l.contains("\"::1\"") || l.contains("::ffff:127.")))
        .map(str::to_string)
        .collect()
}

#[test]
fn the_default_configuration_opens_no_outbound_connection() {
    let sandbox = Sandbox::with_samples();
    let log = sandbox.data.parent().unwrap().join("connect.log");
    let traced = |args: &[&str]| {
        let kea = env!("CARGO_BIN_EXE_kea");
        let mut full = vec!["-f", "-e", "trace=connect", "-o", log.to_str().unwrap(), kea, "--knowledge"];
        let (knowledge, data) = (sandbox.knowledge.to_str().unwrap(), sandbox.data.to_str().unwrap());
        full.extend_from_slice(&[knowledge, "--data-dir", data]);
        full.extend_from_slice(args);
        let out = std::process::Command::new("strace")
            .args(&full)
            .env("KEA_MODELS_DIR", super::util::models_dirs())
            .env_remove("KEA_LLM_BASE_URL")
            .output()
            .expect("strace is installed by `make test` (scripts/install-system-deps.sh --test)");
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        std::fs::read_to_string(&log).unwrap()
    };
    for args in [&["index"][..], &["search", "What do cockatiels eat?"], &["ask", "What do cockatiels eat?", "--max-tokens", "8"]] {
        let log = traced(args);
        assert!(log.contains("+++ exited with 0 +++"), "strace did not follow {args:?} to its end: is it working?");
        if args[0] == "ask" {
            assert!(log.contains("connect("), "ask probes for local model servers; the trace must show it: {args:?}");
        }
        assert_eq!(outbound(&log), Vec::<String>::new(), "{args:?} opened outbound connections");
    }
}

#[test]
fn the_outbound_filter_tells_loopback_from_the_internet() {
    let log = "123 connect(3, {sa_family=AF_INET, sin_port=htons(11434), sin_addr=inet_addr(\"127.0.0.1\")}, 16) = -1 ECONNREFUSED\n\
               124 connect(4, {sa_family=AF_INET, sin_port=htons(443), sin_addr=inet_addr(\"93.184.216.34\")}, 16) = 0\n\
               125 connect(5, {sa_family=AF_UNIX, sun_path=\"/run/x\"}, 110) = 0";
    assert_eq!(outbound(log).len(), 1);
    assert!(outbound(log)[0].contains("93.184.216.34"));
}
