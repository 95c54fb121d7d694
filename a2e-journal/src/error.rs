//! What can go wrong with a journal.

/// An error of a journal operation.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    /// An id is not well-formed (a run id, a node id, an idempotency key).
    #[error("invalid {what}: {message}")]
    InvalidId {
        /// `run id`, `node id`, `idempotency key`, …
        what: &'static str,
        /// What is wrong with it.
        message: String,
    },
    /// The run is not in the journal.
    #[error("unknown run `{0}`")]
    UnknownRun(String),
    /// A run with this id is already in the journal.
    #[error("run `{0}` already exists")]
    DuplicateRun(String),
    /// A stored record cannot be read back; the run it belongs to is named.
    #[error("run `{run_id}`: corrupt record: {message}")]
    Corrupt {
        /// The run the record belongs to.
        run_id: String,
        /// What is wrong with it.
        message: String,
    },
    /// The SQLite store failed.
    #[error("sqlite: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// A file or directory of the store could not be used.
    #[error("{path}: {source}")]
    Io {
        /// The path.
        path: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The store's schema is newer than this build understands.
    #[error("schema version {found} is newer than this build's {supported}")]
    Schema {
        /// The version in the file.
        found: i64,
        /// The newest this build writes.
        supported: i64,
    },
    /// A value could not be encoded as JSON.
    #[error("json: {0}")]
    Json(#[from] serde_json::Error),
    /// The journal's writer has stopped (the store was closed, or its thread
    /// ended after a failure).
    #[error("the journal writer has stopped")]
    Closed,
    /// The NATS JetStream store failed: `op` says what was being done.
    #[error("nats: {op}: {message}")]
    Nats {
        /// The operation (`create stream A2E_EVENTS`, `publish`, …).
        op: String,
        /// The client's error.
        message: String,
    },
    /// A lease is held by another host.
    #[error("run `{run_id}` is leased by `{holder}`")]
    Leased {
        /// The run.
        run_id: String,
        /// Who holds it.
        holder: String,
    },
    /// A lease this host held was lost (it expired, or another host took it).
    #[error("lease on run `{0}` lost")]
    LeaseLost(String),
}

impl JournalError {
    /// A stable machine-readable code for the error, for wire answers.
    pub fn code(&self) -> &'static str {
        match self {
            Self::InvalidId { .. } => "schema_violation",
            Self::UnknownRun(_) => "unknown_run",
            Self::DuplicateRun(_) => "duplicate_run",
            Self::Corrupt { .. } => "journal_corrupt",
            Self::Leased { .. } => "leased",
            Self::LeaseLost(_) => "lease_lost",
            Self::Sqlite(_)
            | Self::Io { .. }
            | Self::Schema { .. }
            | Self::Json(_)
            | Self::Closed
            | Self::Nats { .. } => "journal_error",
        }
    }
}

/// A `Result` of a journal operation.
pub type Result<T, E = JournalError> = std::result::Result<T, E>;
