//! Tauri build script. The capabilities live in `src-tauri/capabilities/`
//! while `tauri.conf.json` sits at the repository root (next to the package's
//! Cargo.toml), so the path must be given, or every IPC call is denied. The
//! app manifest lists Kea's commands so each must be allowed by name.

include!("command_list.rs");

fn main() {
    let attributes = tauri_build::Attributes::new()
        .capabilities_path_pattern("./src-tauri/capabilities/**/*")
        .app_manifest(tauri_build::AppManifest::new().commands(COMMANDS));
    tauri_build::try_build(attributes).expect("tauri build script failed");
}
