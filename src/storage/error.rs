//! Typed storage errors (k8s.io/apiserver pkg/storage/errors.go).

/// Result of a storage call.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Why a storage call failed.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// The key does not exist.
    #[error("key not found: {key}")]
    NotFound {
        /// The key.
        key: String,
    },
    /// The key already exists (create).
    #[error("key already exists: {key}")]
    AlreadyExists {
        /// The key.
        key: String,
    },
    /// A precondition or compare failed; `message` is shown to API clients.
    #[error("{message}")]
    Conflict {
        /// The key.
        key: String,
        /// Human message (e.g. the precondition that failed).
        message: String,
    },
    /// The requested revision is older than the retained history.
    #[error("revision {requested} has been compacted (oldest available {oldest})")]
    Compacted {
        /// Revision asked for.
        requested: i64,
        /// Oldest revision still available.
        oldest: i64,
    },
    /// The requested revision is newer than the store's current revision
    /// ("Too large resource version" in k8s).
    #[error("too large resource version: {requested}, current: {current}")]
    TooLargeRevision {
        /// Revision asked for.
        requested: i64,
        /// The store's current revision.
        current: i64,
    },
    /// The backend cannot be reached or is not ready.
    #[error("storage unavailable: {0}")]
    Unavailable(String),
    /// Stored data is damaged or not ours.
    #[error("storage corrupt: {0}")]
    Corrupt(String),
    /// An I/O error while writing (disk full...). Nothing was acknowledged.
    #[error("storage write failed: {0}")]
    Io(String),
    /// Error returned by a caller's update function or delete check, passed through.
    #[error("{0}")]
    Aborted(String),
}
