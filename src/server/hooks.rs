//! Post-start and pre-shutdown hooks (k8s.io/apiserver pkg/server/hooks.go), supervised:
//! a hook that fails or panics is retried with capped backoff and its readyz check stays
//! `[-]` until it succeeds; the server never exits because of a hook.

use futures::future::BoxFuture;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// Error a hook returns; logged by the supervisor, then the hook is retried.
pub type HookError = Box<dyn std::error::Error + Send + Sync>;

/// What every post-start hook receives.
#[derive(Clone)]
pub struct HookContext {
    /// A privileged client to this very server (loopback, its own credentials).
    pub client: kube::Client,
    /// Cancelled when the server stops accepting requests; every loop selects on it.
    pub cancel: CancellationToken,
    /// Owner of the long-lived tasks a hook starts; the server waits for them at shutdown.
    pub tasks: TaskTracker,
}

/// A post-start hook: runs once the listener accepts connections; `Ok` marks it done.
pub type PostStartHookFn =
    Arc<dyn Fn(HookContext) -> BoxFuture<'static, Result<(), HookError>> + Send + Sync>;

/// A pre-shutdown hook: runs once at shutdown, before hook contexts are cancelled.
pub type PreShutdownHookFn = Arc<dyn Fn() -> BoxFuture<'static, Result<(), HookError>> + Send + Sync>;

/// Why a hook could not be registered (messages as kube-apiserver's).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum Error {
    /// Empty name.
    #[error("missing name")]
    MissingName,
    /// Hooks already started.
    #[error("unable to add {0:?} because PostStartHooks have already been called")]
    AlreadyStarted(String),
    /// Pre-shutdown hooks already ran.
    #[error("unable to add {0:?} because PreShutdownHooks have already been called")]
    AlreadyShutDown(String),
    /// Duplicate name.
    #[error("unable to add {0:?} because it was already registered")]
    Duplicate(String),
}
