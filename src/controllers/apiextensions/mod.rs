//! apiextensions-apiserver's CRD controllers, run by `start-apiextensions-controllers` as
//! clients of the API (pkg/controller/{status,apiapproval,nonstructuralschema,finalizer}):
//! naming (status.acceptedNames, NamesAccepted, Established False until installed),
//! KubernetesAPIApprovalPolicyConformant for `*.k8s.io` and `*.kubernetes.io` groups,
//! NonStructuralSchema, and the finalizer that deletes a deleted CRD's objects before the
//! CRD goes. One watch of the CRDs feeds them all; one status write carries what the first
//! three decide. The establishing step (Established True) is the server's, taken once it
//! serves the CRD (`registry::apiextensions::serving`).
//! May use: api, registry::apiextensions (its pure validation functions and built-in names),
//! otherwise a client of the API.

mod finalizer;
mod naming;

use super::util::Brief;
use crate::registry::apiextensions::validation::non_structural_condition;
use futures::StreamExt;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, CustomResourceDefinitionCondition, CustomResourceDefinitionStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::PostParams;
use kube::runtime::watcher;
use kube::{Api, Client, ResourceExt};
use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// The annotation protected groups need (apiextensionsv1beta1.KubeAPIApprovedAnnotation).
const APPROVAL_ANNOTATION: &str = "api-approved.kubernetes.io";

/// Runs the controllers until `cancel`.
pub(crate) async fn run(client: Client, cancel: CancellationToken, tasks: TaskTracker) {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    // Every CRD without its schemas (naming needs names and status only): the full objects
    // of a few thousand CRDs with large schemas would be hundreds of MB.
    let mut cache: BTreeMap<String, CustomResourceDefinition> = BTreeMap::new();
    let mut listing: Option<BTreeMap<String, CustomResourceDefinition>> = None;
    let finalizing = Arc::new(Mutex::new(HashSet::new()));
    let events = watcher(api.clone(), watcher::Config::default());
    let mut events = std::pin::pin!(kube::runtime::WatchStreamExt::default_backoff(events));
    loop {
        let event = tokio::select! {
            () = cancel.cancelled() => return,
            e = events.next() => match e {
                Some(e) => e,
                None => return,
            },
        };
        let changed: Vec<CustomResourceDefinition> = match event {
            Ok(watcher::Event::Init) => {
                listing = Some(BTreeMap::new());
                Vec::new()
            }
            Ok(watcher::Event::InitApply(crd)) => {
                if let Some(l) = listing.as_mut() {
                    l.insert(crd.name_any(), crd);
                }
                Vec::new()
            }
            Ok(watcher::Event::InitDone) => {
                let full = listing.take().unwrap_or_default();
                cache = full.iter().map(|(k, v)| (k.clone(), slim(v))).collect();
                full.into_values().collect()
            }
            Ok(watcher::Event::Apply(crd)) => {
                cache.insert(crd.name_any(), slim(&crd));
                vec![crd]
            }
            Ok(watcher::Event::Delete(crd)) => {
                // Its names are free now: the others of its group may take them.
                cache.remove(&crd.name_any());
                fetch(&api, group_of(&cache, &crd.spec.group)).await
            }
            Err(e) => {
                tracing::debug!(error = %e, "watching CustomResourceDefinitions");
                Vec::new()
            }
        };
        for crd in changed {
            let name = crd.name_any();
            if needs_finalizing(&crd) {
                finalizer::start(&client, &tasks, &cancel, &finalizing, crd);
                continue;
            }
            if let Some(released) = sync_status(&api, &crd, &cache).await {
                // Names it held are free: let the others of its group try again.
                let others = group_of(&cache, &released)
                    .into_iter()
                    .filter(|o| *o != name)
                    .collect();
                for o in fetch(&api, others).await {
                    sync_status(&api, &o, &cache).await;
                }
            }
        }
    }
}

/// `crd` without its versions' schemas and managedFields: what the cache keeps.
fn slim(crd: &CustomResourceDefinition) -> CustomResourceDefinition {
    let mut spec = crd.spec.clone();
    for v in &mut spec.versions {
        v.schema = None;
    }
    CustomResourceDefinition {
        metadata: kube::api::ObjectMeta {
            managed_fields: None,
            ..crd.metadata.clone()
        },
        spec,
        status: crd.status.clone(),
    }
}

/// The current objects of the CRDs `names` (the cache keeps them without schemas); those that
/// cannot be read are skipped (their next event brings them).
async fn fetch(
    api: &Api<CustomResourceDefinition>,
    names: Vec<String>,
) -> Vec<CustomResourceDefinition> {
    let mut out = Vec::with_capacity(names.len());
    for n in names {
        match api.get(&n).await {
            Ok(crd) => out.push(crd),
            Err(e) => tracing::debug!(crd = %n, error = %Brief(&e), "reading a CRD"),
        }
    }
    out
}

/// The names of the cached CRDs of `group`.
fn group_of(cache: &BTreeMap<String, CustomResourceDefinition>, group: &str) -> Vec<String> {
    cache
        .values()
        .filter(|c| c.spec.group == group)
        .map(ResourceExt::name_any)
        .collect()
}

fn needs_finalizing(crd: &CustomResourceDefinition) -> bool {
    crd.metadata.deletion_timestamp.is_some()
        && crd
            .finalizers()
            .iter()
            .any(|f| f == finalizer::CLEANUP_FINALIZER)
}

/// Writes the status the naming, API-approval and NonStructuralSchema controllers decide, if
/// it differs. Returns the CRD's group when its accepted names changed (names may have been
/// released).
async fn sync_status(
    api: &Api<CustomResourceDefinition>,
    crd: &CustomResourceDefinition,
    cache: &BTreeMap<String, CustomResourceDefinition>,
) -> Option<String> {
    let mut status = crd.status.clone().unwrap_or_default();
    let (names, accepted, established) = naming::calculate(crd, cache);
    let names_changed = status.accepted_names.as_ref() != Some(&names);
    status.accepted_names = Some(names);
    set_condition(&mut status, accepted);
    set_condition(&mut status, established);
    match non_structural_condition(crd) {
        Some(c) => set_condition(
            &mut status,
            condition("NonStructuralSchema", c.status, c.reason, &c.message),
        ),
        None => remove_condition(&mut status, "NonStructuralSchema"),
    }
    if let Some(c) = approval_condition(crd) {
        set_condition(&mut status, c);
    } else {
        remove_condition(&mut status, "KubernetesAPIApprovalPolicyConformant");
    }
    if crd.status.as_ref() == Some(&status) {
        return None;
    }
    let mut next = crd.clone();
    next.status = Some(status);
    next.metadata.managed_fields = None;
    match api
        .replace_status(&crd.name_any(), &PostParams::default(), &next)
        .await
    {
        Ok(_) => names_changed.then(|| crd.spec.group.clone()),
        Err(e) => {
            // A conflict means a newer CRD is on its way through the watch.
            tracing::debug!(crd = %crd.name_any(), error = %Brief(&e), "updating CRD status");
            None
        }
    }
}

/// A condition with lastTransitionTime now.
pub(super) fn condition(
    type_: &str,
    status: &str,
    reason: &str,
    message: &str,
) -> CustomResourceDefinitionCondition {
    CustomResourceDefinitionCondition {
        type_: type_.into(),
        status: status.into(),
        reason: Some(reason.into()),
        message: Some(message.into()),
        last_transition_time: Some(Time(super::util::now())),
        ..Default::default()
    }
}

/// SetCRDCondition: replaces the condition of that type, keeping its lastTransitionTime when
/// the status is unchanged (so an unchanged condition compares equal).
pub(super) fn set_condition(
    status: &mut CustomResourceDefinitionStatus,
    mut c: CustomResourceDefinitionCondition,
) {
    let list = status.conditions.get_or_insert_with(Vec::new);
    match list.iter_mut().find(|o| o.type_ == c.type_) {
        Some(old) => {
            if old.status == c.status {
                c.last_transition_time = old.last_transition_time.clone();
            }
            *old = c;
        }
        None => list.push(c),
    }
}

fn remove_condition(status: &mut CustomResourceDefinitionStatus, type_: &str) {
    if let Some(list) = status.conditions.as_mut() {
        list.retain(|c| c.type_ != type_);
    }
}

/// The KubernetesAPIApprovalPolicyConformant condition (apiapproval controller's
/// calculateCondition); None for groups that are not protected.
fn approval_condition(crd: &CustomResourceDefinition) -> Option<CustomResourceDefinitionCondition> {
    let g = crd.spec.group.as_str();
    let protected = g == "k8s.io"
        || g.ends_with(".k8s.io")
        || g == "kubernetes.io"
        || g.ends_with(".kubernetes.io");
    if !protected {
        return None;
    }
    let t = "KubernetesAPIApprovalPolicyConformant";
    let see = "see https://github.com/kubernetes/enhancements/pull/1111";
    let annotation = crd
        .annotations()
        .get(APPROVAL_ANNOTATION)
        .filter(|v| !v.is_empty());
    Some(match annotation {
        None => condition(
            t,
            "False",
            "MissingAnnotation",
            &format!("protected groups must have approval annotation {APPROVAL_ANNOTATION:?}, {see}"),
        ),
        Some(v) if v.starts_with("unapproved") => {
            condition(t, "False", "UnapprovedAnnotation", &format!("not approved: {v:?}"))
        }
        Some(v) if is_url(v) => condition(t, "True", "ApprovedAnnotation", &format!("approved in {v}")),
        Some(_) => condition(
            t,
            "False",
            "InvalidAnnotation",
            &format!("protected groups must have approval annotation {APPROVAL_ANNOTATION:?} with either a URL or a reason starting with \"unapproved\", {see}"),
        ),
    })
}

/// url.ParseRequestURI succeeding (an absolute URL or an absolute path), as
/// GetAPIApprovalState checks.
fn is_url(v: &str) -> bool {
    let scheme_ok = |s: &str| {
        s.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
    };
    !v.contains(' ') && (v.starts_with('/') || v.split_once(':').is_some_and(|(s, _)| scheme_ok(s)))
}

#[cfg(test)]
mod tests;
