//! GenericStore: the one REST mechanism over storage::Storage for every stored resource
//! (registry/generic/registry/store.go in k8s). Keys are `<prefix>/<resource>/<ns>/<name>`
//! (cluster-scoped: `<prefix>/<resource>/<name>`), values are JSON without
//! resourceVersion; the storage revision is the resourceVersion. Create runs, in order:
//! decode → namespace match → NamespaceLifecycle → generateName → system fields →
//! PrepareForCreate → validate → write. Updates (update.rs) re-run a caller's transform on
//! fresh state inside GuaranteedUpdate. This file is the storage::Error → registry::Error
//! boundary.
//! Creates live in create.rs, list and watch in list.rs, deletes in delete.rs, encoding in
//! codec.rs. May use: storage, api.

mod admit;
mod codec;
mod create;
pub(crate) mod delete;
pub(crate) mod list;
mod update;

use super::Context;
use crate::api::At;
use crate::registry::codec::memo::{Decoded, Memo};
use crate::registry::error::{Error, FieldError, Result};
use crate::registry::strategy::{name_of, Strategy};
use crate::registry::validation::validate_object_meta;
use crate::storage::{self, KeyValue, Storage};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

pub(crate) use create::generate_name;

/// Largest object the store accepts (etcd's default request limit, 1.5 MiB).
pub(crate) const MAX_OBJECT_BYTES: usize = 1536 * 1024;

/// Namespaces that can never be deleted (NamespaceLifecycle's immortal namespaces).
pub(crate) const IMMORTAL_NAMESPACES: [&str; 4] =
    ["default", "kube-system", "kube-public", "kube-node-lease"];

/// The caller's transform of the current object into the desired one (rest.UpdatedObjectInfo).
/// `None` = the object does not exist (create-on-update, e.g. server-side apply).
pub(crate) type Transform<'a> = &'a (dyn Fn(Option<&Value>) -> Result<Value> + Send + Sync);

/// DeleteOptions that reach the store.
#[derive(Debug, Clone, Default)]
pub(crate) struct DeleteOptions {
    /// Precondition on the UID.
    pub uid: Option<String>,
    /// Precondition on the resourceVersion.
    pub resource_version: Option<String>,
    /// propagationPolicy (`Orphan`, `Background`, `Foreground`); see delete.rs.
    pub propagation_policy: Option<String>,
    /// The deprecated orphanDependents.
    pub orphan_dependents: Option<bool>,
}

/// Outcome of a write.
#[derive(Debug, Clone)]
pub(crate) struct WriteResult {
    /// The object as stored (or as it would be with dryRun), shared with the memo so the
    /// response and the watchers encode it once.
    pub object: Arc<Decoded>,
    /// For update: whether the object was created. For delete: whether it is gone now.
    pub created_or_gone: bool,
}

/// One stored resource: storage + key layout + strategy.
pub(crate) struct GenericStore {
    pub(crate) storage: Arc<dyn Storage>,
    pub(crate) prefix: String,
    pub(crate) strategy: Arc<dyn Strategy>,
    /// Key folder: usually the resource name (events of both groups share `events`).
    pub(crate) key_root: String,
    /// Decoded objects by key and revision.
    pub(crate) memo: Memo,
    /// Makes a name from a `generateName` prefix ([`generate_name`]; tests make it collide).
    pub(crate) name_generator: fn(&str) -> String,
    /// Whether the watch cache was started before the first write ([`Self::start_cache`]).
    cache_started: AtomicBool,
    /// Times and counts the requests of the store (etcd_request_duration_seconds, ...).
    meter: crate::metrics::storage::Meter,
}

impl GenericStore {
    /// A store for `strategy` under `prefix` (e.g. `/registry`).
    pub(crate) fn new(
        storage: Arc<dyn Storage>,
        prefix: &str,
        strategy: Arc<dyn Strategy>,
        key_root: &str,
    ) -> Self {
        let metrics = crate::metrics::global();
        let info = strategy.info();
        let meter = metrics.storage.meter(&info.group, &info.resource);
        let store = GenericStore {
            storage,
            prefix: prefix.trim_end_matches('/').to_string(),
            strategy,
            key_root: key_root.to_string(),
            memo: Memo::default(),
            name_generator: generate_name,
            cache_started: AtomicBool::new(false),
            meter,
        };
        let info = store.strategy.info();
        metrics
            .watch
            .name_prefix(&store.list_prefix(""), &info.group, &info.resource);
        store
    }

    /// Runs one request of the store, timed and counted in the metrics (a failure of the
    /// store counts as an error; an answer such as not found or a conflict does not).
    async fn metered<T>(
        &self,
        op: crate::metrics::storage::Operation,
        request: impl std::future::Future<Output = storage::Result<T>>,
    ) -> storage::Result<T> {
        let failed = |e: &storage::Error| {
            matches!(
                e,
                storage::Error::Unavailable { .. }
                    | storage::Error::Corrupt { .. }
                    | storage::Error::Io { .. }
            )
        };
        self.meter.time(op, request, failed).await
    }

    /// Lists from storage; a list the backend answers (the latest state, or an exact
    /// revision) is an etcd request in the metrics, one the watch cache serves is not, as
    /// upstream counts them.
    async fn list_storage(
        &self,
        prefix: &str,
        opts: storage::ListOptions,
    ) -> storage::Result<storage::ListResult> {
        let backend = matches!(
            opts.revision,
            storage::ListRevision::Latest | storage::ListRevision::Exact(_)
        );
        let list = self.storage.list(prefix, opts);
        if backend {
            self.metered(crate::metrics::storage::Operation::List, list)
                .await
        } else {
            list.await
        }
    }

    /// Records how many objects the store holds (apiserver_storage_objects); -1 when they
    /// cannot be counted, as upstream.
    pub(crate) async fn record_count(&self) {
        let count = self
            .storage
            .count(&self.list_prefix(""))
            .await
            .unwrap_or(-1);
        let info = self.strategy.info();
        crate::metrics::global()
            .storage
            .set_objects(&info.group, &info.resource, count);
    }

    /// Before the first write: starts the resource's watch cache, so that a watch from the
    /// revision of any write is served (a cache started later would begin after it, and
    /// answer "too old resource version"). One atomic load after that.
    async fn start_cache(&self) {
        if !self.cache_started.load(Ordering::Relaxed) {
            self.storage.start_cache(&self.list_prefix("")).await;
            self.cache_started.store(true, Ordering::Relaxed);
        }
    }

    /// The strategy.
    pub(crate) fn strategy(&self) -> &Arc<dyn Strategy> {
        &self.strategy
    }

    pub(crate) fn key(&self, namespace: &str, name: &str) -> String {
        if self.strategy.info().namespaced {
            format!("{}/{}/{}/{}", self.prefix, self.key_root, namespace, name)
        } else {
            format!("{}/{}/{}", self.prefix, self.key_root, name)
        }
    }

    /// The prefix of a list: one namespace, or all of them when `namespace` is empty.
    pub(crate) fn list_prefix(&self, namespace: &str) -> String {
        if self.strategy.info().namespaced && !namespace.is_empty() {
            format!("{}/{}/{}/", self.prefix, self.key_root, namespace)
        } else {
            format!("{}/{}/", self.prefix, self.key_root)
        }
    }

    pub(crate) fn not_found(&self, name: &str) -> Error {
        let i = self.strategy.info();
        Error::NotFound {
            group: i.group.to_string(),
            resource: i.resource.to_string(),
            name: name.into(),
        }
    }

    pub(crate) fn conflict(&self, name: &str, message: impl Into<String>) -> Error {
        let i = self.strategy.info();
        Error::Conflict {
            group: i.group.to_string(),
            resource: i.resource.to_string(),
            name: name.into(),
            message: message.into(),
        }
    }

    pub(crate) fn invalid(&self, name: &str, errors: Vec<FieldError>) -> Error {
        let i = self.strategy.info();
        Error::invalid(&i.group, &i.kind, name, errors)
    }

    /// storage::Error → registry::Error for an object operation.
    pub(crate) fn storage_error(&self, name: &str, err: storage::Error) -> Error {
        let i = self.strategy.info();
        match err {
            storage::Error::NotFound { .. } => self.not_found(name),
            storage::Error::AlreadyExists { .. } => Error::AlreadyExists {
                group: i.group.to_string(),
                resource: i.resource.to_string(),
                name: name.into(),
                generated: false,
            },
            storage::Error::Conflict { message, .. } => self.conflict(name, message),
            storage::Error::Compacted { requested, oldest } => Error::Expired {
                message: format!("too old resource version: {requested} ({})", oldest - 1),
            },
            storage::Error::TooLargeRevision { requested, current } => {
                Error::TooLargeResourceVersion { requested, current }
            }
            e @ storage::Error::Unavailable { .. } => Error::Unavailable(e.detail()),
            // Our own error, refusing an update from inside it (Error::abort).
            storage::Error::Aborted(e) => match e.downcast::<Error>() {
                Ok(e) => *e,
                Err(other) => Error::Internal(storage::Chain(other.as_ref()).to_string()),
            },
            other => Error::Internal(storage::Chain(&other).to_string()),
        }
    }

    #[cfg(test)]
    /// Reads one object.
    pub(crate) async fn get(&self, ctx: &Context, name: &str) -> Result<Value> {
        Ok(self.get_shared(ctx, name).await?.obj.clone())
    }

    /// Reads one object, shared with the memo (its JSON encoding is made once per revision).
    pub(crate) async fn get_shared(&self, ctx: &Context, name: &str) -> Result<Arc<Decoded>> {
        let kv = self
            .metered(
                crate::metrics::storage::Operation::Get,
                self.storage.get(&self.key(&ctx.namespace, name)),
            )
            .await
            .map_err(|e| self.storage_error(name, e))?;
        self.decode_shared(&kv)
    }

    /// NamespaceLifecycle admission for creates in a namespace.
    pub(crate) async fn admit_namespace(&self, namespace: &str, name: &str) -> Result<()> {
        if !self.strategy.info().namespaced {
            return Ok(());
        }
        // From the watch cache, as kube-apiserver's NamespaceLifecycle reads its informer (a
        // namespace the cache does not hold yet is read from storage).
        let key = format!("{}/namespaces/{}", self.prefix, namespace);
        let kv = match self.storage.get_cached(&key).await {
            Ok(kv) => kv,
            Err(storage::Error::NotFound { .. }) => {
                return Err(Error::NotFound {
                    group: String::new(),
                    resource: "namespaces".into(),
                    name: namespace.into(),
                })
            }
            Err(e) => return Err(self.storage_error(name, e)),
        };
        if namespace_phase(&kv.value).as_deref() == Some("Terminating") {
            let i = self.strategy.info();
            return Err(Error::Forbidden {
                group: i.group.to_string(),
                resource: i.resource.to_string(),
                name: name.into(),
                message: format!("unable to create new content in namespace {namespace} because it is being terminated"),
                causes: vec![(
                    "NamespaceTerminating".into(),
                    format!("namespace {namespace} is being terminated"),
                    "metadata.namespace".into(),
                )],
            });
        }
        Ok(())
    }

    /// Fills namespace from the request, or rejects a mismatch.
    fn ensure_namespace(&self, ctx: &Context, obj: &mut Value) -> Result<()> {
        let namespaced = self.strategy.info().namespaced;
        let meta = metadata_mut(obj);
        let body_ns = meta
            .get("namespace")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        if !namespaced {
            meta.remove("namespace");
            return Ok(());
        }
        if body_ns.is_empty() {
            meta.insert("namespace".into(), Value::from(ctx.namespace.clone()));
        } else if body_ns != ctx.namespace {
            return Err(Error::BadRequest(
                "the namespace of the provided object does not match the namespace sent on the request".into(),
            ));
        }
        Ok(())
    }
}

/// `metadata` as a mutable map, created when absent. Objects reaching here were checked to
/// be JSON objects (decode_request, compute_update); anything else is replaced by `{}`.
pub(crate) fn metadata_mut(obj: &mut Value) -> &mut serde_json::Map<String, Value> {
    if !obj.is_object() {
        *obj = json!({});
    }
    // IndexMut on an object inserts the key when missing and never panics.
    let meta = &mut obj["metadata"];
    if !meta.is_object() {
        *meta = json!({});
    }
    meta.as_object_mut()
        .expect("metadata was just made an object")
}

pub(crate) use crate::api::time::now_rfc3339;

/// `status.phase` of a stored namespace, read without building its JSON tree (every create
/// in a namespace asks).
fn namespace_phase(stored: &[u8]) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Namespace {
        status: Option<NamespaceStatus>,
    }
    #[derive(serde::Deserialize)]
    struct NamespaceStatus {
        phase: Option<String>,
    }
    serde_json::from_slice::<Namespace>(stored)
        .ok()?
        .status?
        .phase
}
