//! The serving half of apiextensions-apiserver's crdHandler: keeps the registry's custom
//! resources equal to what the stored CustomResourceDefinitions say. A CRD's served versions
//! are served once its names are accepted or it is Established, under its accepted names,
//! until it is gone; its versions in kube's version priority (v1 before v1beta1 before
//! v1alpha1), which is also discovery's preference order. The CRDs are read and watched
//! through the registry's own store, so every replica on one etcd serves the same set.
//! [`run`] is what the `start-apiextensions-informers` post-start hook runs; it reports
//! when the CRDs stored at start are all served (`crd-informer-synced`).
//! May use: registry, storage (through the store), api.

use super::conversion::Converter;
use super::custom::CustomResource;
use crate::api::At;
use crate::registry::error::Error;
use crate::registry::resources::customresourcedefinitions::set_condition;
use crate::registry::store::list::{ListOptions, WatchEvent};
use crate::registry::strategy::{name_of, Strategy};
use crate::registry::{Context, GenericStore, Registry, Resource};
use futures::StreamExt;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde_json::{json, Value};
use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// A group/version/resource triple.
type Gvr = (String, String, String);

/// What the installer serves for each CRD.
pub(crate) struct Installer {
    registry: Arc<Registry>,
    /// CRD name → (the digest of the parts of the CRD its serving depends on, the resources
    /// served). A digest, not the parts: a CRD's schemas can be tens of KB.
    served: HashMap<String, (Fingerprint, Vec<Gvr>)>,
}

/// Whether condition `type_` of a CRD object is True.
fn condition_true(crd: &Value, type_: &str) -> bool {
    crd.at("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| {
            cs.iter().any(|c| {
                c.get("type").and_then(Value::as_str) == Some(type_)
                    && c.get("status").and_then(Value::as_str) == Some("True")
            })
        })
}

/// What decides whether and how a CRD is served: a digest of its uid, spec and accepted
/// names, whether it is to be served, and whether it is terminating. When it is unchanged, a
/// write to the CRD (most are status updates by the controllers) leaves the served set as it
/// is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Fingerprint {
    digest: [u8; 32],
    serve: bool,
    terminating: bool,
}

fn fingerprint(crd: &Value) -> Fingerprint {
    use sha2::Digest;
    let parts = json!([
        crd.at("/metadata/uid"),
        crd.get("spec"),
        crd.at("/status/acceptedNames"),
    ]);
    Fingerprint {
        digest: sha2::Sha256::digest(parts.to_string().as_bytes()).into(),
        serve: condition_true(crd, "NamesAccepted") || condition_true(crd, "Established"),
        terminating: condition_true(crd, "Terminating"),
    }
}

/// kube's version priority (version.CompareKubeAwareVersionStrings): GA before beta before
/// alpha, higher numbers first; versions not of that form after them, alphabetically.
pub(crate) fn compare_versions(a: &str, b: &str) -> Ordering {
    fn parse(v: &str) -> Option<(u64, u8, u64)> {
        let rest = v.strip_prefix('v')?;
        let end = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        let major: u64 = rest[..end].parse().ok()?;
        let tail = &rest[end..];
        if tail.is_empty() {
            return Some((major, 2, 0));
        }
        let (level, num) = if let Some(n) = tail.strip_prefix("beta") {
            (1, n)
        } else if let Some(n) = tail.strip_prefix("alpha") {
            (0, n)
        } else {
            return None;
        };
        Some((major, level, num.parse().ok()?))
    }
    match (parse(a), parse(b)) {
        (Some((ma, la, na)), Some((mb, lb, nb))) => lb.cmp(&la).then(mb.cmp(&ma)).then(nb.cmp(&na)),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => a.cmp(b),
    }
}

impl Installer {
    /// An installer that serves nothing yet.
    pub(crate) fn new(registry: Arc<Registry>) -> Installer {
        Installer {
            registry,
            served: HashMap::new(),
        }
    }

    /// Makes the served set follow one CRD (created or changed). Returns whether the CRD is
    /// to be marked Established now: its names are accepted, it is served here, and it is not
    /// Established yet (the establishing controller's work, done once this replica serves
    /// it, so a client that sees Established finds the resource served).
    pub(crate) fn apply(&mut self, obj: &Value) -> bool {
        let name = name_of(obj).to_string();
        let fp = fingerprint(obj);
        let establish = condition_true(obj, "NamesAccepted")
            && !condition_true(obj, "Established")
            && obj.at("/metadata/deletionTimestamp").is_none();
        if self.served.get(&name).is_some_and(|(f, _)| *f == fp) {
            return establish;
        }
        let mut add = Vec::new();
        if fp.serve {
            if let Ok(crd) = serde_json::from_value::<CustomResourceDefinition>(obj.clone()) {
                let terminating = fp.terminating;
                let converter = Converter::of(&crd).on(self.registry.serving());
                let converter = Arc::new(converter);
                let mut versions: Vec<_> = crd.spec.versions.iter().filter(|v| v.served).collect();
                versions.sort_by(|a, b| compare_versions(&a.name, &b.name));
                for v in versions {
                    let strategy = Arc::new(CustomResource::new(
                        &crd,
                        v,
                        terminating,
                        Arc::clone(&converter),
                    ));
                    let key_root = format!("{}/{}", crd.spec.group, strategy.info().resource);
                    let store = self.registry.store_for(strategy, &key_root);
                    add.push(Arc::new(Resource::Stored(Arc::new(store))));
                }
            }
        }
        let old = self
            .served
            .remove(&name)
            .map(|(_, gvrs)| gvrs)
            .unwrap_or_default();
        let now = self.registry.replace(&old, add);
        self.served.insert(name, (fp, now));
        establish
    }

    /// Stops serving a deleted CRD's resources, and drops their watch cache.
    pub(crate) fn delete(&mut self, name: &str) {
        if let Some((_, gvrs)) = self.served.remove(name) {
            self.registry.replace(&gvrs, Vec::new());
            let mut roots: Vec<String> = gvrs.iter().map(|(g, _, r)| format!("{g}/{r}")).collect();
            roots.dedup();
            for root in roots {
                self.registry.forget_cached(&root);
            }
        }
    }

    /// After a full list: stops serving the CRDs not in it.
    fn retain(&mut self, names: &HashSet<String>) {
        let gone: Vec<String> = self
            .served
            .keys()
            .filter(|n| !names.contains(*n))
            .cloned()
            .collect();
        for n in gone {
            self.delete(&n);
        }
    }
}

/// The registry's CRD store.
fn crd_store(registry: &Registry) -> Option<Arc<GenericStore>> {
    registry
        .resources()
        .stored("apiextensions.k8s.io", "v1", "customresourcedefinitions")
}

/// Serves the custom resources of the stored CRDs, following them until the future is
/// dropped or storage fails: lists the CRDs, serves them, calls `synced` once, then applies
/// every watch event; an expired watch lists again.
///
/// # Errors
///
/// The registry does not serve CRDs, or reading them failed (the caller retries).
pub(crate) async fn run(registry: Arc<Registry>, synced: impl Fn() + Send) -> Result<(), Error> {
    let store = crd_store(&registry)
        .ok_or_else(|| Error::Internal("customresourcedefinitions are not served".into()))?;
    let mut installer = Installer::new(registry);
    let ctx = Context::default();
    loop {
        let list = store.list(&ctx, &ListOptions::default()).await?;
        let mut names = HashSet::new();
        for item in &list.items {
            names.insert(name_of(&item.obj).to_string());
            if installer.apply(&item.obj) {
                establish(&store, name_of(&item.obj)).await;
            }
        }
        installer.retain(&names);
        synced();
        let opts = ListOptions {
            resource_version: Some(list.resource_version.clone()),
            ..ListOptions::default()
        };
        let (mut events, _) = store.watch_with_progress(&ctx, &opts).await?;
        while let Some(event) = events.next().await {
            match event {
                WatchEvent::Added(d) | WatchEvent::Modified(d) => {
                    if installer.apply(&d.obj) {
                        establish(&store, name_of(&d.obj)).await;
                    }
                }
                WatchEvent::Deleted(d) => installer.delete(name_of(&d.obj)),
                WatchEvent::Bookmark { .. } => {}
                // Expired or failed: list again.
                WatchEvent::Error(_) => break,
            }
        }
    }
}

/// The establishing controller's step: Established=True (InitialNamesAccepted) on a CRD whose
/// names are accepted. A failure is logged; the next event of the CRD tries again.
async fn establish(store: &GenericStore, name: &str) {
    let transform = |cur: Option<&Value>| -> Result<Value, Error> {
        let mut obj = cur.cloned().ok_or_else(|| store.not_found(name))?;
        if condition_true(&obj, "NamesAccepted") && !condition_true(&obj, "Established") {
            set_condition(
                &mut obj,
                "Established",
                "True",
                "InitialNamesAccepted",
                "the initial names have been accepted",
            );
        }
        Ok(obj)
    };
    if let Err(e) = store
        .update(&Context::default(), name, "status", false, &transform)
        .await
    {
        tracing::debug!(crd = name, error = %e, "establishing a CustomResourceDefinition failed");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_in_kube_priority() {
        let mut v = vec![
            "v1alpha1",
            "foo",
            "v2beta1",
            "v1",
            "v11alpha2",
            "v1beta1",
            "v2",
            "bar",
            "v12alpha1",
        ];
        v.sort_by(|a, b| compare_versions(a, b));
        assert_eq!(
            v,
            [
                "v2",
                "v1",
                "v2beta1",
                "v1beta1",
                "v12alpha1",
                "v11alpha2",
                "v1alpha1",
                "bar",
                "foo"
            ]
        );
    }
}
