//! The system keyring against a real Secret Service: gnome-keyring (Debian
//! `gnome-keyring`, installed by `make test`) on a private D-Bus session
//! bus, both started and stopped by the test. The keyring passes the
//! suite every secret store passes, and the settings keep their secrets in
//! it, never in `settings.json`. One test in its own binary: the keyring
//! connects to the session bus once per process.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use kea_engine::secrets::{conformance, OsKeyring, SecretStore, SecretStoreKind};
use kea_engine::settings::Settings;

/// A session bus with an unlocked gnome-keyring on it.
struct SecretService {
    bus: Child,
    keyring: Child,
    address: String,
    _home: tempfile::TempDir,
}

impl SecretService {
    fn start() -> SecretService {
        let home = tempfile::tempdir().unwrap();
        let mut bus = Command::new("dbus-daemon")
            .args(["--session", "--nofork", "--print-address=1"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("dbus-daemon (Debian: dbus-daemon)");
        let mut address = String::new();
        BufReader::new(bus.stdout.take().unwrap()).read_line(&mut address).unwrap();
        let address = address.trim().to_string();
        let mut keyring = Command::new("gnome-keyring-daemon")
            .args(["--foreground", "--unlock", "--components=secrets"])
            .env("DBUS_SESSION_BUS_ADDRESS", &address)
            .env("HOME", home.path())
            .env("XDG_RUNTIME_DIR", home.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("gnome-keyring-daemon (Debian: gnome-keyring)");
        keyring.stdin.take().unwrap().write_all(b"test-password").unwrap();
        let service = SecretService { bus, keyring, address, _home: home };
        let started = Instant::now();
        while !service.has_secret_service() {
            assert!(started.elapsed() < Duration::from_secs(30), "the Secret Service did not appear on the bus");
            std::thread::sleep(Duration::from_millis(100));
        }
        service
    }

    fn has_secret_service(&self) -> bool {
        let asked = Command::new("dbus-send")
            .args([&format!("--bus={}", self.address), "--print-reply", "--dest=org.freedesktop.DBus", "/org/freedesktop/DBus"])
            .args(["org.freedesktop.DBus.NameHasOwner", "string:org.freedesktop.secrets"])
            .output();
        asked.is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("boolean true"))
    }
}

impl Drop for SecretService {
    fn drop(&mut self) {
        for child in [&mut self.keyring, &mut self.bus] {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

#[test]
fn the_system_keyring_passes_the_suite_and_holds_the_settings_secrets() {
    let service = SecretService::start();
    // The only test of this binary: nothing has connected to a bus yet.
    std::env::set_var("DBUS_SESSION_BUS_ADDRESS", &service.address);
    std::env::remove_var("KEA_SECRETS");
    let data = tempfile::tempdir().unwrap();
    let keyring = OsKeyring::open(data.path()).expect("the Secret Service answers");
    conformance::check("keyring", &keyring);

    let path = data.path().join(Settings::FILE_NAME);
    assert_eq!(Settings::secrets_kind(&path), SecretStoreKind::Keyring);
    let mut settings = Settings::default();
    settings.llm.api_key = Some("sk-in-the-keyring".into());
    settings.team.token = Some("root:Milvus".into());
    settings.save(&path).unwrap();
    let on_disk = std::fs::read_to_string(&path).unwrap();
    assert!(!on_disk.contains("sk-in-the-keyring") && !on_disk.contains("root:Milvus"), "{on_disk}");
    assert!(!data.path().join(kea_engine::secrets::FILE_NAME).exists(), "no fallback file with a keyring");
    assert_eq!(keyring.get("llm-api-key").unwrap().as_deref(), Some("sk-in-the-keyring"));
    let loaded = Settings::load(&path).unwrap();
    assert_eq!((loaded.llm.api_key.as_deref(), loaded.team.token.as_deref()), (Some("sk-in-the-keyring"), Some("root:Milvus")));

    // Another data folder has keys of its own; clearing one forgets it.
    let other = tempfile::tempdir().unwrap();
    assert_eq!(Settings::load(&other.path().join(Settings::FILE_NAME)).unwrap().llm.api_key, None);
    let mut cleared = loaded;
    cleared.llm.api_key = None;
    cleared.save(&path).unwrap();
    assert_eq!(keyring.get("llm-api-key").unwrap(), None);
    assert_eq!(Settings::load(&path).unwrap().team.token.as_deref(), Some("root:Milvus"));
}
