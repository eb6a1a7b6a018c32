//! Namespace finalization (kube-controller-manager's namespace controller,
//! `pkg/controller/namespace/deletion`), run in-process as hook
//! `start-namespace-finalizer-controller`: for every namespace being deleted (the API has set
//! deletionTimestamp and phase Terminating) it discovers all namespaced resources, empties
//! the namespace with deletecollection (DELETE of each object where deletecollection is not
//! offered), and once nothing is left removes the `kubernetes` finalizer through
//! `PUT /api/v1/namespaces/<ns>/finalize`; the API then removes the namespace.
//! Objects that keep finalizers of their own make it requeue until they are gone.

use super::util;
use futures::StreamExt;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{DeleteParams, DynamicObject, ListParams, PostParams};
use kube::discovery::{verbs, Discovery, Scope};
use kube::runtime::{watcher, WatchStreamExt};
use kube::{Api, Client, ResourceExt};
use std::collections::HashMap;
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, info_span, warn, Instrument};

/// The finalizer this controller owns (`v1.FinalizerKubernetes`).
pub(super) const FINALIZER: &str = crate::api::well_known::FINALIZER_KUBERNETES;
const RETRY: Duration = Duration::from_secs(2);
const SWEEP: Duration = Duration::from_secs(30);

/// What a finalization step failed on.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Error {
    /// Reading the namespace failed.
    #[error("reading namespace failed")]
    Get(#[source] kube::Error),
    /// Discovery of the served resources failed.
    #[error("discovering namespaced resources failed")]
    Discovery(#[source] kube::Error),
    /// Deleting or listing the objects of one resource failed.
    #[error("deleting {0} failed")]
    DeleteContent(String, #[source] kube::Error),
    /// The finalize call failed.
    #[error("removing the kubernetes finalizer failed")]
    Finalize(#[source] kube::Error),
}

fn terminating_with_finalizer(ns: &Namespace) -> bool {
    ns.metadata.deletion_timestamp.is_some()
        && ns
            .spec
            .as_ref()
            .and_then(|s| s.finalizers.as_ref())
            .is_some_and(|f| f.iter().any(|x| x == FINALIZER))
}

/// Runs the controller until `cancel` fires.
pub(crate) async fn run(client: Client, cancel: CancellationToken) {
    let api: Api<Namespace> = Api::all(client.clone());
    let mut events = watcher(api.clone(), watcher::Config::default())
        .default_backoff()
        .boxed()
        .fuse();
    let mut due: HashMap<String, Instant> = HashMap::new();
    let mut sweep = tokio::time::interval(SWEEP);
    loop {
        let now = Instant::now();
        let ready: Vec<String> = due
            .iter()
            .filter(|(_, t)| **t <= now)
            .map(|(k, _)| k.clone())
            .collect();
        for name in ready {
            due.remove(&name);
            if cancel.is_cancelled() {
                return;
            }
            let span = info_span!("reconcile", controller = "namespace", object = %name);
            match finalize(&client, &name).instrument(span).await {
                Ok(true) => {}
                Ok(false) => {
                    due.insert(name, Instant::now() + RETRY);
                }
                Err(e) => {
                    warn!(namespace = %name, error = %format!("{e:#}"), "namespace finalization failed");
                    due.insert(name, Instant::now() + RETRY);
                }
            }
        }
        let deadline = due
            .values()
            .min()
            .copied()
            .unwrap_or_else(|| Instant::now() + SWEEP);
        tokio::select! {
            () = cancel.cancelled() => return,
            Some(ev) = events.next() => match ev {
                Ok(watcher::Event::Apply(ns) | watcher::Event::InitApply(ns))
                    if terminating_with_finalizer(&ns) => {
                    due.entry(ns.name_any()).or_insert_with(Instant::now);
                }
                Ok(_) => {}
                Err(e) => debug!(error = %e, "namespace watch error"),
            },
            () = tokio::time::sleep_until(deadline) => {}
            _ = sweep.tick() => match api.list(&ListParams::default()).await {
                Ok(list) => for ns in list.items.iter().filter(|n| terminating_with_finalizer(n)) {
                    due.entry(ns.name_any()).or_insert_with(Instant::now);
                },
                Err(e) => debug!(error = %util::Brief(&e), "listing namespaces failed"),
            },
        }
    }
}

/// One finalization attempt; Ok(true) when done (finalized or nothing to do), Ok(false)
/// when objects remain and it must be retried.
async fn finalize(client: &Client, name: &str) -> Result<bool, Error> {
    let api: Api<Namespace> = Api::all(client.clone());
    let Some(ns) = api.get_opt(name).await.map_err(Error::Get)? else {
        return Ok(true);
    };
    if !terminating_with_finalizer(&ns) {
        return Ok(true);
    }
    let remaining = delete_content(client, name).await?;
    if remaining > 0 {
        debug!(
            namespace = name,
            remaining, "waiting for namespace content to be deleted"
        );
        return Ok(false);
    }
    let mut finalized = ns;
    if let Some(f) = finalized.spec.as_mut().and_then(|s| s.finalizers.as_mut()) {
        f.retain(|x| x != FINALIZER);
    }
    match api
        .replace_subresource("finalize", name, &PostParams::default(), &finalized)
        .await
    {
        Ok(_) => {
            info!(
                namespace = name,
                "namespace content deleted, finalizer removed"
            );
            Ok(true)
        }
        Err(e) if util::is_not_found(&e) => Ok(true),
        Err(e) if util::is_conflict(&e) => Ok(false),
        Err(e) => Err(Error::Finalize(e)),
    }
}

/// Deletes everything in namespace `ns`; returns how many objects are still listed.
async fn delete_content(client: &Client, ns: &str) -> Result<usize, Error> {
    let discovery = Discovery::new(client.clone())
        .run()
        .await
        .map_err(Error::Discovery)?;
    let mut remaining = 0;
    for group in discovery.groups() {
        for (ar, caps) in group.recommended_resources() {
            if caps.scope != Scope::Namespaced || !caps.supports_operation(verbs::LIST) {
                continue;
            }
            let what = if ar.group.is_empty() {
                ar.plural.clone()
            } else {
                format!("{}.{}", ar.plural, ar.group)
            };
            let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns, &ar);
            let dp = DeleteParams::background();
            if caps.supports_operation(verbs::DELETE_COLLECTION) {
                match api.delete_collection(&dp, &ListParams::default()).await {
                    Ok(_) => {}
                    Err(e) if matches!(util::api_code(&e), Some(404 | 405)) => {}
                    Err(e) => return Err(Error::DeleteContent(what, e)),
                }
            }
            let left = match api.list(&ListParams::default()).await {
                Ok(l) => l.items,
                Err(e) if matches!(util::api_code(&e), Some(404 | 405)) => continue,
                Err(e) => return Err(Error::DeleteContent(what, e)),
            };
            for obj in &left {
                if obj.metadata.deletion_timestamp.is_some()
                    || !caps.supports_operation(verbs::DELETE)
                {
                    continue;
                }
                match api.delete(&obj.name_any(), &dp).await {
                    Ok(_) => {}
                    Err(e) if util::is_not_found(&e) => {}
                    Err(e) => return Err(Error::DeleteContent(what.clone(), e)),
                }
            }
            remaining += left.len();
        }
    }
    Ok(remaining)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::NamespaceSpec;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    #[test]
    fn only_terminating_namespaces_with_our_finalizer() {
        let mut ns = Namespace {
            spec: Some(NamespaceSpec {
                finalizers: Some(vec![FINALIZER.into()]),
            }),
            ..Namespace::default()
        };
        assert!(!terminating_with_finalizer(&ns));
        ns.metadata.deletion_timestamp = Some(Time(util::now()));
        assert!(terminating_with_finalizer(&ns));
        ns.spec = Some(NamespaceSpec {
            finalizers: Some(vec!["other".into()]),
        });
        assert!(!terminating_with_finalizer(&ns));
    }
}
