//! The apiextensions-apiserver hooks that belong to the server rather than to a controller:
//! `start-apiextensions-informers` starts following the stored CustomResourceDefinitions and
//! serving their resources (the crdHandler's informer), and `crd-informer-synced` completes
//! once the CRDs stored at start are served, so /readyz does not pass before every custom
//! resource that existed before a restart can be reached. `start-apiextensions-controllers`
//! (naming, API approval, NonStructuralSchema, finalizing) is registered between them by the
//! composition root. May use: registry.

use super::hooks::{HookContext, PostStartHookFn};
use crate::registry::apiextensions::serving;
use crate::registry::Registry;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use tokio::sync::Notify;

/// Whether the CRDs stored at start are served.
#[derive(Default)]
struct Synced {
    done: AtomicBool,
    notify: Notify,
}

/// The `start-apiextensions-informers` and `crd-informer-synced` hooks over `registry`.
pub(crate) fn hooks(registry: Arc<Registry>) -> (PostStartHookFn, PostStartHookFn) {
    let synced = Arc::new(Synced::default());
    let informers: PostStartHookFn = {
        let synced = synced.clone();
        Arc::new(move |ctx: HookContext| {
            let (registry, synced) = (registry.clone(), synced.clone());
            Box::pin(async move {
                ctx.tasks
                    .spawn(follow(registry, synced, ctx.cancel.clone()));
                Ok(())
            })
        })
    };
    let wait: PostStartHookFn = Arc::new(move |ctx: HookContext| {
        let synced = synced.clone();
        Box::pin(async move {
            loop {
                let notified = synced.notify.notified();
                if synced.done.load(Ordering::Acquire) {
                    return Ok(());
                }
                tokio::select! {
                    () = notified => {}
                    () = ctx.cancel.cancelled() => return Err("the server is stopping".into()),
                }
            }
        })
    });
    (informers, wait)
}

/// Follows the CRDs until `cancel`, starting over (with backoff) when storage fails.
async fn follow(
    registry: Arc<Registry>,
    synced: Arc<Synced>,
    cancel: tokio_util::sync::CancellationToken,
) {
    super::informers::retrying("following CustomResourceDefinitions", cancel, || {
        let synced = synced.clone();
        let mark = move || {
            synced.done.store(true, Ordering::Release);
            synced.notify.notify_waiters();
        };
        serving::run(registry.clone(), mark)
    })
    .await;
}
