//! The `kea-desktop` binary: starts the Tauri app.

#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

fn main() {
    kea_desktop::run();
}
