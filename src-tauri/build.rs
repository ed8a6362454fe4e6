//! Tauri build script. The capabilities live in `src-tauri/capabilities/`
//! while `tauri.conf.json` sits at the repository root (next to the package's
//! Cargo.toml), so the path must be given, or every IPC call is denied.

fn main() {
    tauri_build::try_build(tauri_build::Attributes::new().capabilities_path_pattern("./src-tauri/capabilities/**/*"))
        .expect("tauri build script failed");
}
