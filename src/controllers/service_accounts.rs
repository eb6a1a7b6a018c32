//! The service-account controller (kube-controller-manager's pkg/controller/serviceaccount,
//! run in-process): every active namespace has a ServiceAccount named `default`, created
//! when the namespace appears and again when it is deleted. Its hook completes once the
//! namespaces that exist at start have theirs.

use super::util;
use futures::StreamExt;
use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::PostParams;
use kube::runtime::{reflector, watcher, WatchStreamExt};
use kube::{Api, Client, ResourceExt};
use std::collections::HashSet;
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tracing::info;

/// The service account every namespace gets.
const DEFAULT: &str = "default";
/// How long changes are gathered before the namespaces are checked.
const SETTLE: Duration = Duration::from_millis(20);
/// A failed pass is retried this soon.
const RETRY: Duration = Duration::from_secs(1);

/// The namespaces that need a `default` service account: active ones without one.
pub(crate) fn missing(namespaces: &[&Namespace], have: &HashSet<String>) -> Vec<String> {
    namespaces
        .iter()
        .filter(|ns| ns.metadata.deletion_timestamp.is_none())
        .filter(|ns| ns.status.as_ref().and_then(|s| s.phase.as_deref()) != Some("Terminating"))
        .map(|ns| ns.name_any())
        .filter(|n| !have.contains(n))
        .collect()
}

async fn create(client: &Client, namespace: &str) -> Result<(), kube::Error> {
    let api: Api<ServiceAccount> = Api::namespaced(client.clone(), namespace);
    let sa = ServiceAccount {
        metadata: ObjectMeta {
            name: Some(DEFAULT.into()),
            ..ObjectMeta::default()
        },
        ..ServiceAccount::default()
    };
    match api.create(&PostParams::default(), &sa).await {
        Ok(_) => {
            info!(namespace, "created the default service account");
            Ok(())
        }
        // Made meanwhile, or the namespace is terminating or gone: nothing to do.
        Err(kube::Error::Api(s)) if matches!(s.code, 404 | 409 | 403) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Creates the `default` service account of every namespace of `namespaces` not in `have`.
async fn ensure(
    client: &Client,
    namespaces: &[&Namespace],
    have: &HashSet<String>,
) -> Result<(), kube::Error> {
    for ns in missing(namespaces, have) {
        create(client, &ns).await?;
    }
    Ok(())
}

/// One pass over what exists now: creates every missing `default` service account. The
/// hook runs it before it reports done, so a client that waits for /readyz finds the default
/// service accounts of the system namespaces (kube-controller-manager's would come later).
pub(crate) async fn sync_once(client: &Client) -> Result<(), kube::Error> {
    let namespaces = Api::<Namespace>::all(client.clone())
        .list(&Default::default())
        .await?;
    let accounts = Api::<ServiceAccount>::all(client.clone())
        .list(&kube::api::ListParams::default().fields(&format!("metadata.name={DEFAULT}")))
        .await?;
    let have = accounts
        .items
        .iter()
        .filter_map(|sa| sa.namespace())
        .collect();
    ensure(client, &namespaces.items.iter().collect::<Vec<_>>(), &have).await
}

/// Runs the controller until `cancel` fires.
pub(crate) async fn run(client: Client, cancel: CancellationToken) {
    let changed = |e: Result<(), watcher::Error>| e.map(|()| true).map_err(|e| e.to_string());
    let (namespaces, ns_writer) = reflector::store();
    let ns_events = watcher(
        Api::<Namespace>::all(client.clone()),
        watcher::Config::default(),
    )
    .default_backoff()
    .reflect(ns_writer)
    .map(move |e| changed(e.map(|_| ())))
    .boxed();
    let (accounts, sa_writer) = reflector::store();
    let by_name = watcher::Config::default().fields(&format!("metadata.name={DEFAULT}"));
    let sa_events = watcher(Api::<ServiceAccount>::all(client.clone()), by_name)
        .default_backoff()
        .reflect(sa_writer)
        .map(move |e| changed(e.map(|_| ())))
        .boxed();
    let changes = futures::stream::select(ns_events, sa_events);
    let pass = || {
        let have: HashSet<String> = accounts
            .state()
            .iter()
            .filter_map(|sa| sa.namespace())
            .collect();
        let (client, all) = (client.clone(), namespaces.state());
        async move {
            let refs: Vec<&Namespace> = all.iter().map(|n| n.as_ref()).collect();
            ensure(&client, &refs, &have)
                .await
                .map_err(|e| util::Brief(&e).to_string())
        }
    };
    util::on_changes(
        changes,
        SETTLE,
        RETRY,
        &cancel,
        "creating default service accounts",
        pass,
    )
    .await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::NamespaceStatus;

    fn ns(name: &str, phase: &str) -> Namespace {
        Namespace {
            metadata: ObjectMeta {
                name: Some(name.into()),
                ..ObjectMeta::default()
            },
            status: Some(NamespaceStatus {
                phase: Some(phase.into()),
                ..NamespaceStatus::default()
            }),
            ..Namespace::default()
        }
    }

    #[test]
    fn active_namespaces_without_one_need_one() {
        let (a, b, c) = (ns("a", "Active"), ns("b", "Active"), ns("c", "Terminating"));
        let have: HashSet<String> = ["b".to_string()].into();
        assert_eq!(missing(&[&a, &b, &c], &have), ["a"]);
    }
}
