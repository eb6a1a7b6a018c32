//! Typed storage errors (k8s.io/apiserver pkg/storage/errors.go). A failure of the backend
//! itself (unreachable, damaged data, a failed write) says what failed and keeps the error of
//! the engine or client underneath (redb, etcd-client, std::io) as its source, so whoever
//! reports it prints the whole chain once ([`Chain`]). An error of a caller's update function
//! or delete check passes through as it is ([`Error::Aborted`]).

use std::sync::Arc;

/// Result of a storage call.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The error underneath a backend failure. Shared, so that one failed commit can fail every
/// write of its batch with the same cause.
pub type Source = Arc<dyn std::error::Error + Send + Sync>;

/// Why a storage call failed. The three failures of the backend itself keep the error
/// underneath as their `source` (Display and Error are written out below, so that `source()`
/// yields that error itself, ready to downcast, rather than the `Arc` around it).
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The key does not exist.
    NotFound {
        /// The key.
        key: String,
    },
    /// The key already exists (create).
    AlreadyExists {
        /// The key.
        key: String,
    },
    /// A precondition or compare failed; `message` is shown to API clients.
    Conflict {
        /// The key.
        key: String,
        /// Human message (e.g. the precondition that failed).
        message: String,
    },
    /// The requested revision is older than the retained history.
    Compacted {
        /// Revision asked for.
        requested: i64,
        /// Oldest revision still available.
        oldest: i64,
    },
    /// The requested revision is newer than the store's current revision
    /// ("Too large resource version" in k8s).
    TooLargeRevision {
        /// Revision asked for.
        requested: i64,
        /// The store's current revision.
        current: i64,
    },
    /// The backend cannot be reached or is not ready.
    Unavailable {
        /// What could not be reached or done.
        context: String,
        /// The error underneath, when there is one.
        source: Option<Source>,
    },
    /// Stored data is damaged or not ours.
    Corrupt {
        /// What is damaged.
        context: String,
        /// The error underneath, when there is one.
        source: Option<Source>,
    },
    /// An I/O error while writing (disk full...). Nothing was acknowledged.
    Io {
        /// What could not be written.
        context: String,
        /// The error underneath, when there is one.
        source: Option<Source>,
    },
    /// The error of a caller's update function or delete check, passed through unchanged for
    /// the caller to downcast back to its own type (boxed only when an update is refused).
    Aborted(Box<dyn std::error::Error + Send + Sync>),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::NotFound { key } => write!(f, "key not found: {key}"),
            Error::AlreadyExists { key } => write!(f, "key already exists: {key}"),
            Error::Conflict { message, .. } => f.write_str(message),
            Error::Compacted { requested, oldest } => write!(
                f,
                "revision {requested} has been compacted (oldest available {oldest})"
            ),
            Error::TooLargeRevision { requested, current } => write!(
                f,
                "too large resource version: {requested}, current: {current}"
            ),
            Error::Unavailable { context, .. } => write!(f, "storage unavailable: {context}"),
            Error::Corrupt { context, .. } => write!(f, "storage corrupt: {context}"),
            Error::Io { context, .. } => write!(f, "storage write failed: {context}"),
            Error::Aborted(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Unavailable { source, .. }
            | Error::Corrupt { source, .. }
            | Error::Io { source, .. } => source.as_deref().map(|s| s as _),
            // Transparent: the caller's error is shown as itself, so its sources are ours.
            Error::Aborted(e) => e.source(),
            _ => None,
        }
    }
}

impl Error {
    /// [`Error::Unavailable`] without a source.
    pub(crate) fn unavailable(context: impl Into<String>) -> Error {
        Error::Unavailable {
            context: context.into(),
            source: None,
        }
    }

    /// [`Error::Corrupt`] without a source.
    pub(crate) fn corrupt(context: impl Into<String>) -> Error {
        Error::Corrupt {
            context: context.into(),
            source: None,
        }
    }

    /// [`Error::Io`] without a source.
    pub(crate) fn io(context: impl Into<String>) -> Error {
        Error::Io {
            context: context.into(),
            source: None,
        }
    }

    /// This backend failure, caused by `source`.
    pub(crate) fn caused_by(self, source: impl std::error::Error + Send + Sync + 'static) -> Error {
        self.with_source(Arc::new(source))
    }

    /// This backend failure, caused by a shared `source`; other errors are returned as they are.
    pub(crate) fn with_source(mut self, cause: Source) -> Error {
        if let Error::Unavailable { source, .. }
        | Error::Corrupt { source, .. }
        | Error::Io { source, .. } = &mut self
        {
            *source = Some(cause);
        }
        self
    }

    /// What failed and why, without the kind of failure: the context followed by the sources
    /// (the message API clients get for an unavailable store). Other errors: their message.
    pub fn detail(&self) -> String {
        match self {
            Error::Unavailable { context, source }
            | Error::Corrupt { context, source }
            | Error::Io { context, source } => match source {
                Some(s) => format!("{context}: {}", Chain(s.as_ref())),
                None => context.clone(),
            },
            other => other.to_string(),
        }
    }
}

/// Displays an error followed by each of its sources, joined with `: `.
pub struct Chain<'a>(pub &'a (dyn std::error::Error + 'static));

impl std::fmt::Display for Chain<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)?;
        let mut source = self.0.source();
        while let Some(s) = source {
            write!(f, ": {s}")?;
            source = s.source();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_backend_failure_keeps_its_source_chain() {
        let io = std::io::Error::new(std::io::ErrorKind::StorageFull, "no space left on device");
        let err = Error::io("the write transaction was not committed").caused_by(io);
        assert_eq!(
            err.to_string(),
            "storage write failed: the write transaction was not committed"
        );
        let source = std::error::Error::source(&err).expect("the source is kept");
        let io = source
            .downcast_ref::<std::io::Error>()
            .expect("the source is the io::Error itself");
        assert_eq!(io.kind(), std::io::ErrorKind::StorageFull);
        assert_eq!(
            Chain(&err).to_string(),
            "storage write failed: the write transaction was not committed: no space left on device"
        );
        assert_eq!(
            err.detail(),
            "the write transaction was not committed: no space left on device"
        );
    }

    #[test]
    fn an_aborted_error_is_the_callers_own() {
        #[derive(Debug, thiserror::Error)]
        #[error("precondition failed")]
        struct Mine;
        let err = Error::Aborted(Box::new(Mine));
        assert_eq!(err.to_string(), "precondition failed");
        let Error::Aborted(inner) = err else {
            unreachable!("built as Aborted")
        };
        assert!(inner.downcast::<Mine>().is_ok());
    }
}
