//! `generic-apiserver-start-informers`: starts what the server itself follows in storage,
//! as kube-apiserver starts its shared informer factory: the RBAC objects the authorizer and
//! the escalation checks read, and the service accounts and secrets bound tokens are checked
//! against, and the admission webhook configurations. The hook completes once each kind has
//! been listed, so /readyz does not pass
//! while the authorizer still knows no roles. It also writes the last-used labels the
//! legacy-token authenticator asks for, through the loopback client as upstream's
//! authenticator does.
//! May use: registry, serviceaccount.

use super::hooks::{HookContext, PostStartHookFn};
use crate::registry::rbac::Kind;
use crate::registry::Registry;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// First retry delay after following failed (storage unavailable...).
const RETRY_START: Duration = Duration::from_millis(200);
/// Cap of that delay.
const RETRY_MAX: Duration = Duration::from_secs(10);

/// Runs `follow` until `cancel`, starting over with backoff when it fails (`what` names it
/// in the log line).
pub(super) async fn retrying<F, Fut, E>(what: &'static str, cancel: CancellationToken, follow: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Result<(), E>>,
    E: std::fmt::Display,
{
    let mut delay = RETRY_START;
    loop {
        let err = tokio::select! {
            () = cancel.cancelled() => return,
            r = follow() => match r {
                Ok(()) => continue,
                Err(e) => e,
            },
        };
        tracing::warn!(error = %err, "{what} failed; retrying");
        tokio::select! {
            () = cancel.cancelled() => return,
            () = tokio::time::sleep(delay) => {}
        }
        delay = (delay * 2).min(RETRY_MAX);
    }
}

/// The `generic-apiserver-start-informers` hook over `registry`.
pub(crate) fn hook(registry: Arc<Registry>) -> PostStartHookFn {
    Arc::new(move |ctx: HookContext| {
        let registry = registry.clone();
        Box::pin(async move {
            for kind in crate::registry::subjects::Kind::ALL {
                let registry = registry.clone();
                ctx.tasks.spawn(retrying(
                    "following service accounts and secrets",
                    ctx.cancel.clone(),
                    move || {
                        let registry = registry.clone();
                        async move { registry.subjects().follow(&registry, kind).await }
                    },
                ));
            }
            for kind in Kind::ALL {
                let registry = registry.clone();
                ctx.tasks.spawn(retrying(
                    "following RBAC objects",
                    ctx.cancel.clone(),
                    move || {
                        let registry = registry.clone();
                        async move { registry.rbac().follow(&registry, kind).await }
                    },
                ));
            }
            for kind in crate::registry::admission::WebhookKind::ALL {
                let registry = registry.clone();
                ctx.tasks.spawn(retrying(
                    "following admission webhook configurations",
                    ctx.cancel.clone(),
                    move || {
                        let registry = registry.clone();
                        async move { registry.admission().follow(&registry, kind).await }
                    },
                ));
            }
            ctx.tasks.spawn(label_used_tokens(
                registry.clone(),
                ctx.client.clone(),
                ctx.cancel.clone(),
            ));
            let synced = async {
                registry.rbac().wait_synced().await;
                registry.subjects().wait_synced().await;
                registry.admission().wait_synced().await;
            };
            tokio::select! {
                () = synced => Ok(()),
                () = ctx.cancel.cancelled() => Err("the server is stopping".into()),
            }
        })
    })
}

/// Writes `kubernetes.io/legacy-token-last-used` on the secrets whose legacy tokens were
/// used, as a merge patch with the secret's UID (so a recreated secret is not labelled);
/// failures are logged and dropped, as upstream's.
async fn label_used_tokens(
    registry: Arc<Registry>,
    client: kube::Client,
    cancel: CancellationToken,
) {
    use crate::serviceaccount::legacy::LAST_USED_LABEL;
    use k8s_openapi::api::core::v1::Secret;
    loop {
        let marks = tokio::select! {
            () = cancel.cancelled() => return,
            marks = registry.subjects().last_used() => marks,
        };
        for m in marks {
            let api: kube::Api<Secret> = kube::Api::namespaced(client.clone(), &m.namespace);
            let patch = serde_json::json!({
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {
                    "name": m.name,
                    "namespace": m.namespace,
                    "uid": m.uid,
                    "labels": { LAST_USED_LABEL: m.date },
                },
            });
            let params = kube::api::PatchParams::default();
            if let Err(e) = api
                .patch(&m.name, &params, &kube::api::Patch::Merge(&patch))
                .await
            {
                tracing::warn!(
                    secret = %format!("{}/{}", m.namespace, m.name),
                    error = %brief(&e),
                    "failed to label legacy service account token with last-used date"
                );
            }
        }
    }
}

/// A kube error in one line: the API's message and code rather than the client's dump.
fn brief(e: &kube::Error) -> String {
    match e {
        kube::Error::Api(status) => format!("{} ({})", status.message, status.code),
        other => other.to_string(),
    }
}
