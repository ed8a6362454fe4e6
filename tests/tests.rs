//! Kea's integration tests: one binary (ripgrep style), each module a theme.
//! They drive the real `kea` binary on real files with the real MiniLM model
//! (installed by `make models`); regression tests are named after the bug.

#[path = "integration/util.rs"]
mod util;

#[path = "integration/answers.rs"]
mod answers;
#[path = "integration/architecture.rs"]
mod architecture;
#[path = "integration/chat.rs"]
mod chat;
#[path = "integration/collections.rs"]
mod collections;
#[path = "integration/crash.rs"]
mod crash;
#[path = "integration/decisions.rs"]
mod decisions;
#[path = "integration/domain.rs"]
mod domain;
#[path = "integration/hostile.rs"]
mod hostile;
#[path = "integration/html.rs"]
mod html;
#[path = "integration/hub.rs"]
mod hub;
#[path = "integration/identify.rs"]
mod identify;
#[path = "integration/ignore_files.rs"]
mod ignore_files;
#[path = "integration/index.rs"]
mod index;
#[path = "integration/keakb.rs"]
mod keakb;
#[path = "integration/keys.rs"]
mod keys;
#[path = "integration/language_model.rs"]
mod language_model;
#[path = "integration/library.rs"]
mod library;
#[path = "integration/locks.rs"]
mod locks;
#[path = "integration/mcp.rs"]
mod mcp;
#[path = "integration/models.rs"]
mod models;
#[path = "integration/network.rs"]
mod network;
#[path = "integration/new_folders.rs"]
mod new_folders;
#[path = "integration/ocr.rs"]
mod ocr;
#[path = "integration/remote_embed.rs"]
mod remote_embed;
#[path = "integration/retrieval.rs"]
mod retrieval;
#[path = "integration/setup.rs"]
mod setup;
#[path = "integration/sheets.rs"]
mod sheets;
#[path = "integration/team.rs"]
mod team;
#[path = "integration/watch.rs"]
mod watch;
#[path = "integration/web_pages.rs"]
mod web_pages;
