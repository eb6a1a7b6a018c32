//! Stable process exit codes shared by every command. May use: nothing internal.

/// The exit codes kapi documents in `--help` and the man pages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitCode {
    /// Everything is fine.
    Ok = 0,
    /// The command ran and found a problem (a failing check or hook, an expired lease).
    Problem = 1,
    /// Usage error (bad flags or arguments).
    Usage = 2,
    /// No answer from the cluster (unreachable, TLS, 401/403, timeout, API not served).
    NoAnswer = 3,
    /// Interrupted by a signal.
    Interrupted = 130,
}

impl ExitCode {
    /// The numeric code handed to the operating system.
    pub fn code(self) -> i32 {
        self as i32
    }
}

/// An error that carries the exit code it must produce; the edge (main) prints it once.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct CodedError {
    /// Exit code to use.
    pub code: ExitCode,
    /// One line naming the cause and the fix.
    pub message: String,
}

impl CodedError {
    /// Builds an error with the given exit code and message.
    pub fn new(code: ExitCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }
}

/// Picks the exit code for an error chain: a [`CodedError`] anywhere in it decides, else 1.
pub fn classify(err: &anyhow::Error) -> ExitCode {
    err.chain()
        .find_map(|e| e.downcast_ref::<CodedError>().map(|c| c.code))
        .unwrap_or(ExitCode::Problem)
}
