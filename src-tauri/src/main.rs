//! The `kea-desktop` binary: starts the Tauri app.

#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

fn main() {
    kea_engine::reader::serve_if_asked();
    kea_desktop::run();
}
