// The commands the webview may call. Read by build.rs (the app manifest: each
// needs an `allow-<name>` permission) and by the shell's capability test.
pub const COMMANDS: &[&str] = &[
    "status",
    "reindex",
    "cancel_indexing",
    "reindex_document",
    "delete_document",
    "import_files",
    "open_document",
    "open_link",
    "ask",
    "stop_generation",
    "identify",
    "passage",
    "conversations",
    "conversation_messages",
    "rename_conversation",
    "delete_conversation",
    "llm_info",
    "get_settings",
    "save_settings",
    "run_eval",
];
