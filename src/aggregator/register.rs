//! Local APIServices for every group/version this server serves (kube-apiserver's
//! autoregister and crdregistration controllers, hook `kube-apiserver-autoregistration`):
//! built-in ones with upstream's priorities and the label
//! `kube-aggregator.kubernetes.io/automanaged: onstart`, CRD ones with priority 1000/100 and
//! `automanaged: true`. An automanaged APIService whose group/version is no longer served is
//! deleted; one a user changed is set back. The `autoregister-completion` check passes once
//! every one of them has been seen Available.

use super::{Aggregator, ApiService, GROUP};
use crate::registry::Registry;
use kube::api::{DeleteParams, DynamicObject, PostParams};
use kube::Api;
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The label of automanaged APIServices.
pub(crate) const AUTOMANAGED_LABEL: &str = "kube-aggregator.kubernetes.io/automanaged";

/// How often the served set is compared with the APIServices besides their changes.
const POLL: Duration = Duration::from_secs(1);

/// (group, version) → (groupPriorityMinimum, versionPriority) of the built-in group/versions
/// (pkg/controlplane/apiserver/aggregator.go DefaultGenericAPIServicePriorities, with
/// kube-aggregator's own group).
const PRIORITIES: &[(&str, &str, i64, i64)] = &[
    ("", "v1", 18000, 1),
    ("apiregistration.k8s.io", "v1", 17800, 15),
    ("events.k8s.io", "v1", 17750, 15),
    ("events.k8s.io", "v1beta1", 17750, 5),
    ("authentication.k8s.io", "v1", 17700, 15),
    ("authentication.k8s.io", "v1beta1", 17700, 9),
    ("authentication.k8s.io", "v1alpha1", 17700, 1),
    ("authorization.k8s.io", "v1", 17600, 15),
    ("certificates.k8s.io", "v1", 17300, 15),
    ("certificates.k8s.io", "v1beta1", 17300, 9),
    ("certificates.k8s.io", "v1alpha1", 17300, 1),
    ("rbac.authorization.k8s.io", "v1", 17000, 15),
    ("apiextensions.k8s.io", "v1", 16700, 15),
    ("admissionregistration.k8s.io", "v1", 16700, 15),
    ("admissionregistration.k8s.io", "v1beta1", 16700, 12),
    ("admissionregistration.k8s.io", "v1alpha1", 16700, 9),
    ("coordination.k8s.io", "v1", 16500, 15),
    ("coordination.k8s.io", "v1beta1", 16500, 13),
    ("coordination.k8s.io", "v1alpha2", 16500, 12),
    ("discovery.k8s.io", "v1", 16200, 15),
    ("discovery.k8s.io", "v1beta1", 16200, 12),
    ("flowcontrol.apiserver.k8s.io", "v1", 16100, 21),
    ("internal.apiserver.k8s.io", "v1alpha1", 16000, 9),
    ("storagemigration.k8s.io", "v1beta1", 15800, 9),
];

/// One APIService the server wants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Wanted {
    pub name: String,
    pub group: String,
    pub version: String,
    pub group_priority: i64,
    pub version_priority: i64,
    /// `onstart` (built-in) or `true` (CRD).
    pub managed: &'static str,
}

/// The APIServices for the group/versions in `served`.
pub(crate) fn wanted(
    served: impl IntoIterator<Item = (String, String)>,
) -> BTreeMap<String, Wanted> {
    let mut out = BTreeMap::new();
    for (group, version) in served {
        let name = format!("{version}.{group}");
        let built_in = PRIORITIES
            .iter()
            .find(|(g, v, _, _)| *g == group && *v == version);
        let (gp, vp, managed) = match built_in {
            Some((_, _, gp, vp)) => (*gp, *vp, "onstart"),
            None => (1000, 100, "true"),
        };
        out.insert(
            name.clone(),
            Wanted {
                name,
                group,
                version,
                group_priority: gp,
                version_priority: vp,
                managed,
            },
        );
    }
    out
}

/// What the autoregister-completion check waits for.
#[derive(Default)]
pub(crate) struct Completion {
    pending: RwLock<Option<Vec<String>>>,
}

impl Completion {
    /// Err naming the APIServices not seen Available yet (upstream's message).
    pub(crate) fn check(&self) -> Result<(), String> {
        let pending = self.pending.read().unwrap_or_else(|e| e.into_inner());
        match pending.as_deref() {
            None => Err("missing APIService: autoregistration has not run yet".into()),
            Some([]) => Ok(()),
            Some(names) => Err(format!("missing APIService: [{}]", names.join(" "))),
        }
    }
}

fn object(w: &Wanted) -> Result<DynamicObject, serde_json::Error> {
    serde_json::from_value(json!({
        "apiVersion": format!("{GROUP}/v1"),
        "kind": "APIService",
        "metadata": { "name": w.name, "labels": { AUTOMANAGED_LABEL: w.managed } },
        "spec": {
            "group": w.group,
            "version": w.version,
            "groupPriorityMinimum": w.group_priority,
            "versionPriority": w.version_priority,
        },
    }))
}

/// Whether `have` matches what `w` asks for.
fn matches(have: &ApiService, w: &Wanted) -> bool {
    have.service.is_none()
        && have.group == w.group
        && have.version == w.version
        && have.group_priority_minimum == w.group_priority
        && have.version_priority == w.version_priority
}

/// `kube-apiserver-autoregistration`: keeps the Local APIServices in step with what the
/// registry serves, until `cancel`.
pub(crate) async fn run(
    registry: Arc<Registry>,
    agg: Arc<Aggregator>,
    completion: Arc<Completion>,
    client: kube::Client,
    cancel: CancellationToken,
) {
    agg.wait_synced().await;
    if registry
        .resources()
        .lookup(GROUP, "v1", "apiservices")
        .is_none()
    {
        // No APIServices served: nothing to register, nothing to wait for.
        *completion
            .pending
            .write()
            .unwrap_or_else(|e| e.into_inner()) = Some(Vec::new());
        return;
    }
    let api: Api<DynamicObject> = Api::all_with(client, &super::api_resource());
    let mut first: Option<Vec<String>> = None;
    loop {
        let changed = agg.changed();
        let resources = registry.resources();
        let served: Vec<(String, String)> = resources
            .iter()
            .map(|r| {
                let i = r.info();
                (i.group.to_string(), i.version.to_string())
            })
            .collect();
        drop(resources);
        let want = wanted(served);
        let have: BTreeMap<String, ApiService> = agg
            .api_services()
            .into_iter()
            .map(|a| (a.name.clone(), a))
            .collect();
        sync(&api, &want, &have).await;
        let names = first.get_or_insert_with(|| want.keys().cloned().collect());
        let pending: Vec<String> = names
            .iter()
            .filter(|n| !have.get(*n).is_some_and(|a| a.available))
            .cloned()
            .collect();
        *completion
            .pending
            .write()
            .unwrap_or_else(|e| e.into_inner()) = Some(pending);
        tokio::select! {
            () = cancel.cancelled() => return,
            () = changed => {}
            () = tokio::time::sleep(POLL) => {}
        }
    }
}

/// Creates, updates and deletes APIServices so that `have` becomes `want`, concurrently.
async fn sync(
    api: &Api<DynamicObject>,
    want: &BTreeMap<String, Wanted>,
    have: &BTreeMap<String, ApiService>,
) {
    let puts = want
        .values()
        .filter(|w| !have.get(&w.name).is_some_and(|h| matches(h, w)))
        .map(|w| put(api, w, have.contains_key(&w.name)));
    let deletes = have
        .iter()
        .filter(|(name, h)| h.automanaged && !want.contains_key(*name))
        .map(|(name, _)| async move {
            match api.delete(name, &DeleteParams::default()).await {
                Ok(_) => {}
                Err(kube::Error::Api(s)) if s.code == 404 => {}
                Err(e) => {
                    tracing::warn!(apiservice = %name, error = %e, "cannot delete the APIService")
                }
            }
        });
    futures::future::join(
        futures::future::join_all(puts),
        futures::future::join_all(deletes),
    )
    .await;
}

/// Creates `w`, or (`exists`) sets it back to what it should be, keeping its other labels.
async fn put(api: &Api<DynamicObject>, w: &Wanted, exists: bool) {
    let Ok(mut obj) = object(w) else { return };
    let result = if exists {
        let Ok(Some(mut current)) = api.get_opt(&w.name).await else {
            return;
        };
        obj.metadata.resource_version = current.metadata.resource_version.take();
        let mut labels = current.metadata.labels.take().unwrap_or_default();
        labels.insert(AUTOMANAGED_LABEL.into(), w.managed.into());
        obj.metadata.labels = Some(labels);
        api.replace(&w.name, &PostParams::default(), &obj)
            .await
            .map(drop)
    } else {
        api.create(&PostParams::default(), &obj).await.map(drop)
    };
    match result {
        Ok(()) => {}
        Err(kube::Error::Api(s)) if s.code == 409 => {}
        Err(e) => tracing::warn!(apiservice = %w.name, error = %e, "cannot write the APIService"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_in_versions_get_upstreams_priorities_and_crds_the_crd_ones() {
        let w = wanted([
            (String::new(), "v1".to_string()),
            ("coordination.k8s.io".into(), "v1beta1".into()),
            ("example.com".into(), "v1".into()),
        ]);
        let core = &w["v1."];
        assert_eq!(
            (core.group_priority, core.version_priority, core.managed),
            (18000, 1, "onstart")
        );
        assert_eq!(w["v1beta1.coordination.k8s.io"].version_priority, 13);
        let crd = &w["v1.example.com"];
        assert_eq!(
            (crd.group_priority, crd.version_priority, crd.managed),
            (1000, 100, "true")
        );
    }

    #[test]
    fn completion_names_what_is_missing() {
        let c = Completion::default();
        assert!(c.check().is_err());
        *c.pending.write().unwrap() = Some(vec!["v1.".into(), "v1.example.com".into()]);
        assert_eq!(
            c.check().unwrap_err(),
            "missing APIService: [v1. v1.example.com]"
        );
        *c.pending.write().unwrap() = Some(Vec::new());
        assert!(c.check().is_ok());
    }
}
