//! Typed engine errors. Every error carries an [`ErrorKind`] that callers (the
//! CLI, the desktop shell, the UI) branch on; messages are for people only.

/// What went wrong, as a stable code. The desktop shell sends it to the UI
/// verbatim (snake_case), so never rename a variant without a migration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// The configured model folder or one of its files is missing or invalid.
    ModelMissing,
    /// `libonnxruntime` could not be found or loaded.
    RuntimeMissing,
    /// Running the model failed.
    Embedding,
    /// The language model failed (unreachable, an error answer, unusable output).
    Llm,
    /// The SQLite store failed.
    Store,
    /// The vector index failed.
    VectorIndex,
    /// Filesystem access outside a single document failed.
    Io,
    /// The watcher could not be started.
    Watch,
    /// The caller gave something unusable (empty query, bad setting).
    InvalidInput,
    /// The operation was cancelled by the caller.
    Cancelled,
    /// A document, passage or conversation that is not (or no longer) there.
    NotFound,
    /// A model download failed (network, HTTP status, checksum).
    Download,
    /// The index was built with another embedding model; switching re-embeds
    /// everything and must be asked for explicitly.
    ReembedRequired,
    /// The index is still opening (the desktop app starts it in the background).
    NotReady,
    /// A bug: a worker panicked. Never expected; reported with its message.
    Internal,
}

impl ErrorKind {
    /// The stable snake_case code used across process boundaries.
    pub fn code(self) -> &'static str {
        match self {
            ErrorKind::ModelMissing => "model_missing",
            ErrorKind::RuntimeMissing => "runtime_missing",
            ErrorKind::Embedding => "embedding",
            ErrorKind::Llm => "llm",
            ErrorKind::Store => "store",
            ErrorKind::VectorIndex => "vector_index",
            ErrorKind::Io => "io",
            ErrorKind::Watch => "watch",
            ErrorKind::InvalidInput => "invalid_input",
            ErrorKind::Cancelled => "cancelled",
            ErrorKind::NotFound => "not_found",
            ErrorKind::Download => "download",
            ErrorKind::ReembedRequired => "reembed_required",
            ErrorKind::NotReady => "not_ready",
            ErrorKind::Internal => "internal",
        }
    }

    /// Every kind, in declaration order (the desktop's TypeScript union of codes).
    pub const ALL: [ErrorKind; 15] = [
        ErrorKind::ModelMissing,
        ErrorKind::RuntimeMissing,
        ErrorKind::Embedding,
        ErrorKind::Llm,
        ErrorKind::Store,
        ErrorKind::VectorIndex,
        ErrorKind::Io,
        ErrorKind::Watch,
        ErrorKind::InvalidInput,
        ErrorKind::Cancelled,
        ErrorKind::NotFound,
        ErrorKind::Download,
        ErrorKind::ReembedRequired,
        ErrorKind::NotReady,
        ErrorKind::Internal,
    ];
}

/// The engine's error type.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("model '{model}' is not installed: {reason}")]
    ModelMissing { model: String, reason: String },
    #[error("ONNX Runtime could not be loaded: {0}")]
    RuntimeMissing(String),
    #[error("embedding failed: {0}")]
    Embedding(String),
    #[error("the language model failed: {0}")]
    Llm(String),
    #[error("store error: {0}")]
    Store(#[from] rusqlite::Error),
    #[error("vector index error: {0}")]
    VectorIndex(String),
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
    #[error("watcher error: {0}")]
    Watch(String),
    #[error("invalid input: {0}")]
    InvalidInput(String),
    #[error("cancelled")]
    Cancelled,
    #[error("not found: {0}")]
    NotFound(String),
    #[error("download failed: {0}")]
    Download(String),
    #[error(
        "the index was built with '{indexed}' ({chunks} chunks); using '{requested}' re-embeds all of them: \
         pass --reembed (or confirm in the app), or drop the model option to keep '{indexed}'"
    )]
    ReembedRequired { indexed: String, requested: String, chunks: usize },
}

impl Error {
    /// The code the UI branches on.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::ModelMissing { .. } => ErrorKind::ModelMissing,
            Error::RuntimeMissing(_) => ErrorKind::RuntimeMissing,
            Error::Embedding(_) => ErrorKind::Embedding,
            Error::Llm(_) => ErrorKind::Llm,
            Error::Store(_) => ErrorKind::Store,
            Error::VectorIndex(_) => ErrorKind::VectorIndex,
            Error::Io { .. } => ErrorKind::Io,
            Error::Watch(_) => ErrorKind::Watch,
            Error::InvalidInput(_) => ErrorKind::InvalidInput,
            Error::Cancelled => ErrorKind::Cancelled,
            Error::NotFound(_) => ErrorKind::NotFound,
            Error::Download(_) => ErrorKind::Download,
            Error::ReembedRequired { .. } => ErrorKind::ReembedRequired,
        }
    }

    /// Wraps an I/O error with what was being done.
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io { context: context.into(), source }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::ErrorKind;

    #[test]
    fn all_lists_every_kind_once_with_a_unique_code() {
        // An exhaustive match: a new kind does not compile here until it is placed in ALL.
        let declared = |k: ErrorKind| match k {
            ErrorKind::ModelMissing => 0,
            ErrorKind::RuntimeMissing => 1,
            ErrorKind::Embedding => 2,
            ErrorKind::Llm => 3,
            ErrorKind::Store => 4,
            ErrorKind::VectorIndex => 5,
            ErrorKind::Io => 6,
            ErrorKind::Watch => 7,
            ErrorKind::InvalidInput => 8,
            ErrorKind::Cancelled => 9,
            ErrorKind::NotFound => 10,
            ErrorKind::Download => 11,
            ErrorKind::ReembedRequired => 12,
            ErrorKind::NotReady => 13,
            ErrorKind::Internal => 14,
        };
        for (i, kind) in ErrorKind::ALL.iter().enumerate() {
            assert_eq!(declared(*kind), i, "{kind:?}");
        }
        let codes: std::collections::HashSet<&str> = ErrorKind::ALL.iter().map(|k| k.code()).collect();
        assert_eq!(codes.len(), ErrorKind::ALL.len());
    }
}
