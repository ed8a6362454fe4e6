//! `kea keys`: secrets are set from standard input and never written into
//! `settings.json`. With no system keyring (no session bus, as on a server
//! or in CI) they go to `secrets.json` (0600) and Kea says so; the keyring
//! itself is tested against a real Secret Service in
//! `crates/kea-engine/tests/keyring.rs`.

use std::io::Write;
use std::process::{Output, Stdio};

use super::util::Sandbox;

/// `kea ARGS` with no session bus to find a keyring on, `stdin` as its input.
fn without_keyring(sandbox: &Sandbox, args: &[&str], stdin: &str) -> Output {
    let mut command = sandbox.command(args);
    command.env_remove("DBUS_SESSION_BUS_ADDRESS").env_remove("XDG_RUNTIME_DIR").env_remove("KEA_SECRETS");
    let mut child = command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn without_a_keyring_keys_go_to_a_private_file_and_kea_says_so() {
    let sandbox = Sandbox::empty();
    let set = without_keyring(&sandbox, &["keys", "set", "llm"], "sk-from-stdin\n");
    assert!(set.status.success(), "{}", String::from_utf8_lossy(&set.stderr));
    assert!(String::from_utf8_lossy(&set.stdout).contains("no system keyring answered"));
    let secrets = sandbox.data.join("secrets.json");
    assert!(std::fs::read_to_string(&secrets).unwrap().contains("sk-from-stdin"));
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&secrets).unwrap().permissions().mode() & 0o777, 0o600);
    assert!(!std::fs::read_to_string(sandbox.data.join("settings.json")).unwrap().contains("sk-from-stdin"));

    let status = without_keyring(&sandbox, &["keys", "status", "--json"], "");
    let status: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(status, serde_json::json!({"store": "file", "llm": true, "team": false, "embedder": false}));
    let no_embedder = without_keyring(&sandbox, &["keys", "set", "embedder"], "sk-x\n");
    assert!(!no_embedder.status.success() && String::from_utf8_lossy(&no_embedder.stderr).contains("no remote embedder is configured"));
    let empty = without_keyring(&sandbox, &["keys", "set", "team"], "\n");
    assert!(!empty.status.success(), "an empty key is refused");

    assert!(without_keyring(&sandbox, &["keys", "clear", "llm"], "").status.success());
    assert!(!secrets.exists(), "the last key cleared leaves no file");
}
