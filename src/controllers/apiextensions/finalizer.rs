//! The CRD finalizer (pkg/controller/finalizer/crd_finalizer.go): a deleted CRD that carries
//! `customresourcecleanup.apiextensions.k8s.io` gets Terminating (InstanceDeletionInProgress),
//! every object of it is deleted through the API (deletecollection per namespace, so normal
//! deletion rules apply), and once none is left the finalizer is removed so the CRD goes.
//! A failed step leaves the finalizer and is tried again after a pause.

use super::{condition, set_condition};
use crate::controllers::util::{sleep_or_cancel, Brief};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, CustomResourceDefinitionCondition,
};
use kube::api::{ApiResource, DeleteParams, DynamicObject, ListParams, PostParams};
use kube::{Api, Client, ResourceExt};
use std::collections::{BTreeSet, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// apiextensions.CustomResourceCleanupFinalizer.
pub(super) const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";
/// How often the objects left are counted while they go (upstream polls every 5 s; objects
/// without finalizers go at once, so a short poll ends most deletions sooner).
const POLL: Duration = Duration::from_millis(100);
/// How long they may take before the attempt counts as failed (upstream's 1 minute).
const POLL_LIMIT: Duration = Duration::from_secs(60);
/// Pause before a failed attempt is retried.
const RETRY: Duration = Duration::from_secs(1);

/// Starts finalizing `crd` unless that is under way already.
pub(super) fn start(
    client: &Client,
    tasks: &TaskTracker,
    cancel: &CancellationToken,
    running: &Arc<Mutex<HashSet<String>>>,
    crd: CustomResourceDefinition,
) {
    let name = crd.name_any();
    if !running
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(name.clone())
    {
        return;
    }
    let (client, cancel, running) = (client.clone(), cancel.clone(), running.clone());
    tasks.spawn(async move {
        let mut crd = crd;
        loop {
            match finalize(&client, crd.clone()).await {
                Ok(()) => break,
                Err(e) => tracing::debug!(crd = %name, error = %e, "finalizing a CRD"),
            }
            if !sleep_or_cancel(RETRY, &cancel).await {
                break;
            }
            // Go on from the current state (it may be gone, or no longer need us).
            let api: Api<CustomResourceDefinition> = Api::all(client.clone());
            match api.get_opt(&name).await {
                Ok(Some(c)) if super::needs_finalizing(&c) => crd = c,
                Ok(_) => break,
                Err(_) => {}
            }
        }
        running
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&name);
    });
}

/// Why an attempt stopped.
#[derive(Debug, thiserror::Error)]
enum Error {
    #[error("updating the CRD status: {0}")]
    Status(String),
    #[error("{0}")]
    Instances(String),
}

fn is_true(crd: &CustomResourceDefinition, type_: &str) -> bool {
    crd.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == type_ && c.status == "True"))
}

async fn write_status(
    api: &Api<CustomResourceDefinition>,
    mut crd: CustomResourceDefinition,
    c: CustomResourceDefinitionCondition,
) -> Result<CustomResourceDefinition, Error> {
    set_condition(crd.status.get_or_insert_with(Default::default), c);
    crd.metadata.managed_fields = None;
    api.replace_status(&crd.name_any(), &PostParams::default(), &crd)
        .await
        .map_err(|e| Error::Status(Brief(&e).to_string()))
}

/// One attempt: Terminating, delete the objects, drop the finalizer.
async fn finalize(client: &Client, crd: CustomResourceDefinition) -> Result<(), Error> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let mut crd = write_status(
        &api,
        crd,
        condition(
            "Terminating",
            "True",
            "InstanceDeletionInProgress",
            "CustomResource deletion is in progress",
        ),
    )
    .await?;
    let outcome = if is_true(&crd, "Established") {
        delete_instances(client, &crd).await
    } else {
        Ok(condition(
            "Terminating",
            "False",
            "NeverEstablished",
            "resource was never established",
        ))
    };
    let done = match outcome {
        Ok(c) => c,
        Err(c) => {
            let message = c.message.clone().unwrap_or_default();
            write_status(&api, crd, c).await?;
            return Err(Error::Instances(message));
        }
    };
    set_condition(crd.status.get_or_insert_with(Default::default), done);
    if let Some(f) = crd.metadata.finalizers.as_mut() {
        f.retain(|f| f != CLEANUP_FINALIZER);
    }
    crd.metadata.managed_fields = None;
    api.replace_status(&crd.name_any(), &PostParams::default(), &crd)
        .await
        .map_err(|e| Error::Status(Brief(&e).to_string()))?;
    Ok(())
}

/// deleteInstances: the condition to record, `Err` when the objects are not all gone.
async fn delete_instances(
    client: &Client,
    crd: &CustomResourceDefinition,
) -> Result<CustomResourceDefinitionCondition, CustomResourceDefinitionCondition> {
    let names = crd
        .status
        .as_ref()
        .and_then(|s| s.accepted_names.clone())
        .unwrap_or_else(|| crd.spec.names.clone());
    let version = crd
        .spec
        .versions
        .iter()
        .find(|v| v.storage)
        .or_else(|| crd.spec.versions.first())
        .map(|v| v.name.clone())
        .unwrap_or_default();
    let resource = ApiResource {
        group: crd.spec.group.clone(),
        version: version.clone(),
        api_version: format!("{}/{version}", crd.spec.group),
        kind: names.kind.clone(),
        plural: names.plural.clone(),
    };
    let failed = |reason: &str, message: String| condition("Terminating", "True", reason, &message);
    let all: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
    let list = all.list(&ListParams::default()).await.map_err(|e| {
        failed(
            "InstanceDeletionFailed",
            format!("could not list instances: {}", Brief(&e)),
        )
    })?;
    let namespaces: BTreeSet<Option<String>> = list.items.iter().map(|o| o.namespace()).collect();
    let mut errors = Vec::new();
    for ns in namespaces {
        let api: Api<DynamicObject> = match &ns {
            Some(ns) => Api::namespaced_with(client.clone(), ns, &resource),
            None => Api::all_with(client.clone(), &resource),
        };
        if let Err(e) = api
            .delete_collection(&DeleteParams::default(), &ListParams::default())
            .await
        {
            errors.push(Brief(&e).to_string());
        }
    }
    if !errors.is_empty() {
        let joined = if errors.len() == 1 {
            errors.remove(0)
        } else {
            format!("[{}]", errors.join(", "))
        };
        return Err(failed(
            "InstanceDeletionFailed",
            format!("could not issue all deletes: {joined}"),
        ));
    }
    let start = Instant::now();
    loop {
        match all.list(&ListParams::default().limit(1)).await {
            Ok(l) if l.items.is_empty() => break,
            Ok(_) if start.elapsed() < POLL_LIMIT => tokio::time::sleep(POLL).await,
            Ok(_) => {
                return Err(failed(
                    "InstanceDeletionCheck",
                    "could not confirm zero CustomResources remaining: timed out waiting for the condition".into(),
                ))
            }
            Err(e) => {
                return Err(failed(
                    "InstanceDeletionCheck",
                    format!("could not confirm zero CustomResources remaining: {}", Brief(&e)),
                ))
            }
        }
    }
    Ok(condition(
        "Terminating",
        "False",
        "InstanceDeletionCompleted",
        "removed all instances",
    ))
}
