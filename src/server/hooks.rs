//! Post-start and pre-shutdown hooks (k8s.io/apiserver pkg/server/hooks.go), supervised:
//! a hook that fails or panics is retried with capped backoff and its readyz check stays
//! `[-]` until it succeeds; the server never exits because of a hook.

use futures::future::BoxFuture;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// Error a hook returns; logged by the supervisor, then the hook is retried.
pub(crate) type HookError = Box<dyn std::error::Error + Send + Sync>;

/// What every post-start hook receives.
#[derive(Clone)]
pub(crate) struct HookContext {
    /// A privileged client to this very server (loopback, its own credentials).
    pub client: kube::Client,
    /// Cancelled when the server stops accepting requests; every loop selects on it.
    pub cancel: CancellationToken,
    /// Owner of the long-lived tasks a hook starts; the server waits for them at shutdown.
    pub tasks: TaskTracker,
}

/// A post-start hook: runs once the listener accepts connections; `Ok` marks it done.
pub(crate) type PostStartHookFn =
    Arc<dyn Fn(HookContext) -> BoxFuture<'static, Result<(), HookError>> + Send + Sync>;

/// A pre-shutdown hook: runs once at shutdown, before hook contexts are cancelled.
pub(crate) type PreShutdownHookFn =
    Arc<dyn Fn() -> BoxFuture<'static, Result<(), HookError>> + Send + Sync>;

/// Why a hook could not be registered (messages as kube-apiserver's).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub(crate) enum Error {
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

use super::error_chain;
use super::health::{CheckFn, HealthCheck};
use futures::FutureExt;
use std::panic::AssertUnwindSafe;
use std::sync::Mutex;
use std::time::Duration;

/// First retry delay of a failed post-start hook.
const BACKOFF_START: Duration = Duration::from_millis(100);
/// Cap of the retry delay.
const BACKOFF_MAX: Duration = Duration::from_secs(30);

/// What a post-start hook's readyz check reports.
#[derive(Debug, Default)]
struct HookState {
    done: bool,
    last_error: Option<String>,
}

struct PostStartEntry {
    name: String,
    hook: PostStartHookFn,
    state: Arc<Mutex<HookState>>,
}

/// The registry of a server's hooks (postStartHooks / preShutdownHooks in k8s).
#[derive(Default)]
pub(crate) struct Hooks {
    post_start: Vec<PostStartEntry>,
    pre_shutdown: Vec<(String, PreShutdownHookFn)>,
    started: bool,
    shut_down: bool,
}

impl Hooks {
    /// Registers a post-start hook (AddPostStartHook in k8s).
    pub(crate) fn add_post_start_hook(
        &mut self,
        name: &str,
        hook: PostStartHookFn,
    ) -> Result<(), Error> {
        if name.is_empty() {
            return Err(Error::MissingName);
        }
        if self.started {
            return Err(Error::AlreadyStarted(name.into()));
        }
        if self.post_start.iter().any(|e| e.name == name) {
            return Err(Error::Duplicate(name.into()));
        }
        self.post_start.push(PostStartEntry {
            name: name.into(),
            hook,
            state: Arc::default(),
        });
        Ok(())
    }

    /// Registers a pre-shutdown hook (AddPreShutdownHook in k8s).
    pub(crate) fn add_pre_shutdown_hook(
        &mut self,
        name: &str,
        hook: PreShutdownHookFn,
    ) -> Result<(), Error> {
        if name.is_empty() {
            return Err(Error::MissingName);
        }
        if self.shut_down {
            return Err(Error::AlreadyShutDown(name.into()));
        }
        if self.pre_shutdown.iter().any(|(n, _)| n == name) {
            return Err(Error::Duplicate(name.into()));
        }
        self.pre_shutdown.push((name.into(), hook));
        Ok(())
    }

    /// One `poststarthook/<name>` check per hook, in registration order: `not finished` (or
    /// the hook's last error) until the hook returned `Ok`.
    pub(crate) fn health_checks(&self) -> Vec<HealthCheck> {
        self.post_start
            .iter()
            .map(|e| {
                let state = e.state.clone();
                let check: CheckFn = Arc::new(move || {
                    let result = match state.lock() {
                        Ok(s) if s.done => Ok(()),
                        Ok(s) => Err(s
                            .last_error
                            .clone()
                            .unwrap_or_else(|| "not finished".into())),
                        Err(_) => Err("hook state poisoned".into()),
                    };
                    Box::pin(async move { result })
                });
                HealthCheck::new(format!("poststarthook/{}", e.name), check)
            })
            .collect()
    }

    /// Starts every post-start hook under supervision on `runtime` (the tasks a hook spawns
    /// run there too); their tasks go to `ctx.tasks`.
    pub(crate) fn start(&mut self, ctx: &HookContext, runtime: &tokio::runtime::Handle) {
        self.started = true;
        for entry in &self.post_start {
            let (name, hook, state) = (entry.name.clone(), entry.hook.clone(), entry.state.clone());
            ctx.tasks
                .spawn_on(supervise(name, hook, state, ctx.clone()), runtime);
        }
    }

    /// Runs the pre-shutdown hooks once, in order; errors and panics are logged.
    pub(crate) async fn run_pre_shutdown(&mut self) {
        self.shut_down = true;
        for (name, hook) in &self.pre_shutdown {
            tracing::info!(hook = %name, "pre-shutdown hook started");
            let run = std::panic::catch_unwind(AssertUnwindSafe(|| hook()));
            let result = match run {
                Ok(fut) => AssertUnwindSafe(fut).catch_unwind().await,
                Err(panic) => Err(panic),
            };
            match result {
                Ok(Ok(())) => tracing::info!(hook = %name, "pre-shutdown hook finished"),
                Ok(Err(err)) => {
                    tracing::error!(hook = %name, error = %error_chain(&*err), "pre-shutdown hook failed")
                }
                Err(panic) => {
                    tracing::error!(hook = %name, panic = %panic_message(&*panic), "pre-shutdown hook panicked")
                }
            }
        }
    }
}

/// Runs a post-start hook until it returns `Ok`, retrying errors and panics with capped
/// exponential backoff. Ends early when the hook context is cancelled.
async fn supervise(
    name: String,
    hook: PostStartHookFn,
    state: Arc<Mutex<HookState>>,
    ctx: HookContext,
) {
    let mut backoff = BACKOFF_START;
    let mut attempt: u32 = 1;
    let metrics = &crate::metrics::global().control;
    metrics.hook_registered(&name);
    loop {
        tracing::info!(hook = %name, attempt, "post-start hook started");
        let run = std::panic::catch_unwind(AssertUnwindSafe(|| hook(ctx.clone())));
        let result = match run {
            Ok(fut) => tokio::select! {
                r = AssertUnwindSafe(fut).catch_unwind() => r,
                _ = ctx.cancel.cancelled() => {
                    tracing::info!(hook = %name, "post-start hook stopped: server shutting down");
                    return;
                }
            },
            Err(panic) => Err(panic),
        };
        let reason = match result {
            Ok(Ok(())) => {
                if let Ok(mut s) = state.lock() {
                    s.done = true;
                    s.last_error = None;
                }
                metrics.hook_completed(&name);
                tracing::info!(hook = %name, attempt, "post-start hook finished");
                return;
            }
            Ok(Err(err)) => error_chain(&*err),
            Err(panic) => format!("panic: {}", panic_message(&*panic)),
        };
        tracing::warn!(hook = %name, attempt, error = %reason, retry_in = ?backoff, "post-start hook failed");
        metrics.hook_failed(&name);
        if let Ok(mut s) = state.lock() {
            s.last_error = Some(reason);
        }
        tokio::select! {
            _ = tokio::time::sleep(backoff) => {}
            _ = ctx.cancel.cancelled() => return,
        }
        backoff = (backoff * 2).min(BACKOFF_MAX);
        attempt = attempt.saturating_add(1);
    }
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

/// A post-start hook that fails `failures` times, then succeeds once the loopback client
/// can read `/version` (`--debug-failing-hook`; also proves the loopback client works).
pub(crate) fn failing_hook(failures: u32) -> PostStartHookFn {
    let calls = Arc::new(std::sync::atomic::AtomicU32::new(0));
    Arc::new(move |ctx: HookContext| {
        let n = calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
        Box::pin(async move {
            if n <= failures {
                return Err(format!("failing on purpose (attempt {n} of {failures})").into());
            }
            ctx.client.apiserver_version().await?;
            Ok(())
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn noop() -> PostStartHookFn {
        Arc::new(|_| Box::pin(async { Ok(()) }))
    }

    #[test]
    fn registration_errors_match_kube_apiserver() {
        let mut hooks = Hooks::default();
        assert_eq!(
            hooks.add_post_start_hook("", noop()),
            Err(Error::MissingName)
        );
        hooks.add_post_start_hook("a", noop()).unwrap();
        let dup = hooks.add_post_start_hook("a", noop()).unwrap_err();
        assert_eq!(
            dup.to_string(),
            "unable to add \"a\" because it was already registered"
        );
        hooks.started = true;
        let late = hooks.add_post_start_hook("b", noop()).unwrap_err();
        assert_eq!(
            late.to_string(),
            "unable to add \"b\" because PostStartHooks have already been called"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn failing_hook_is_retried_until_ok() {
        let mut hooks = Hooks::default();
        let calls = Arc::new(std::sync::atomic::AtomicU32::new(0));
        let flaky: PostStartHookFn = Arc::new(move |_| {
            let n = calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
            Box::pin(async move {
                if n <= 2 {
                    return Err(format!("failing on purpose (attempt {n} of 2)").into());
                }
                Ok(())
            })
        });
        hooks.add_post_start_hook("flaky", flaky).unwrap();
        let panicky_calls = Arc::new(std::sync::atomic::AtomicU32::new(0));
        let c = panicky_calls.clone();
        let panicky: PostStartHookFn = Arc::new(move |_| {
            let n = c.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Box::pin(async move {
                if n == 0 {
                    panic!("first call panics");
                }
                Ok(())
            })
        });
        hooks.add_post_start_hook("panicky", panicky).unwrap();
        let checks = hooks.health_checks();
        assert_eq!(checks[0].name(), "poststarthook/flaky");
        assert_eq!(checks[0].run().await, Err("not finished".into()));
        let client =
            kube::Client::try_from(kube::Config::new("https://127.0.0.1:1".parse().unwrap()))
                .unwrap();
        let ctx = HookContext {
            client,
            cancel: CancellationToken::new(),
            tasks: TaskTracker::new(),
        };
        hooks.start(&ctx, &tokio::runtime::Handle::current());
        tokio::time::sleep(Duration::from_millis(150)).await;
        let err = checks[0].run().await.unwrap_err();
        assert!(err.contains("failing on purpose (attempt 2 of 2)"), "{err}");
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert_eq!(checks[0].run().await, Ok(()));
        assert_eq!(checks[1].run().await, Ok(()));
        ctx.tasks.close();
        ctx.tasks.wait().await;
    }

    #[tokio::test]
    async fn pre_shutdown_hooks_run_once_errors_and_panics_logged() {
        let ran = Arc::new(std::sync::atomic::AtomicU32::new(0));
        let mut hooks = Hooks::default();
        let r = ran.clone();
        let ok: PreShutdownHookFn = Arc::new(move || {
            r.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Box::pin(async { Ok(()) })
        });
        let failing: PreShutdownHookFn = Arc::new(|| Box::pin(async { Err("nope".into()) }));
        let panicking: PreShutdownHookFn = Arc::new(|| panic!("boom"));
        hooks.add_pre_shutdown_hook("failing", failing).unwrap();
        hooks.add_pre_shutdown_hook("panicking", panicking).unwrap();
        hooks.add_pre_shutdown_hook("ok", ok.clone()).unwrap();
        assert_eq!(
            hooks.add_pre_shutdown_hook("ok", ok.clone()).unwrap_err(),
            Error::Duplicate("ok".into())
        );
        hooks.run_pre_shutdown().await;
        assert_eq!(ran.load(std::sync::atomic::Ordering::SeqCst), 1);
        let late = hooks.add_pre_shutdown_hook("late", ok).unwrap_err();
        assert_eq!(
            late.to_string(),
            "unable to add \"late\" because PreShutdownHooks have already been called"
        );
    }
}
