//! Delete of the GenericStore: preconditions (uid, resourceVersion) with kube's messages,
//! finalizers and graceful deletion (deletionTimestamp), the garbage collector's finalizers
//! from propagationPolicy / orphanDependents (generic/registry/store.go
//! `deletionFinalizersForGarbageCollection`), and the system namespaces that cannot be
//! deleted. May use: storage, api.

use super::{metadata_mut, now_rfc3339, DeleteOptions, GenericStore, WriteResult};
use crate::api::well_known::{FINALIZER_FOREGROUND, FINALIZER_ORPHAN};
use crate::api::At;
use crate::registry::admission::Operation;
use crate::registry::codec::memo::Decoded;
use crate::registry::error::{Error, FieldError, Result};
use crate::registry::Context;
use crate::storage::{self, KeyValue, Update};
use serde_json::Value;
use std::sync::Arc;

impl GenericStore {
    /// Deletes one object, honouring preconditions and finalizers (graceful deletion:
    /// with finalizers the object gets a deletionTimestamp and stays).
    pub(crate) async fn delete(
        &self,
        ctx: &Context,
        name: &str,
        opts: &DeleteOptions,
    ) -> Result<WriteResult> {
        opts.validate()?;
        self.start_cache().await;
        self.strategy.admit_delete(name).map_err(|message| {
            let i = self.strategy.info();
            Error::Forbidden {
                group: i.group.to_string(),
                resource: i.resource.to_string(),
                name: name.into(),
                message,
                causes: vec![],
            }
        })?;
        let key = self.key(&ctx.namespace, name);
        let kv = self
            .metered(
                crate::metrics::storage::Operation::Get,
                self.storage.get(&key),
            )
            .await
            .map_err(|e| self.storage_error(name, e))?;
        let current = self.decode_kv(&kv)?;
        self.admit_mutating(ctx, Operation::Delete, name, None, None)
            .await?;
        self.check_preconditions(name, &current, opts)?;
        self.admit_validating(
            ctx,
            Operation::Delete,
            name,
            (None, None),
            Some((&current).into()),
        )
        .await?;
        let mut pending = current.clone();
        let keep = self.strategy.begin_delete(&mut pending);
        if let Some(finalizers) = gc_finalizers(&pending, opts) {
            metadata_mut(&mut pending).insert("finalizers".into(), Value::from(finalizers));
        }
        let has_finalizers = pending
            .at("/metadata/finalizers")
            .and_then(Value::as_array)
            .is_some_and(|f| !f.is_empty());
        if keep || has_finalizers {
            if pending.at("/metadata/deletionTimestamp").is_none() {
                let meta = metadata_mut(&mut pending);
                meta.insert("deletionTimestamp".into(), Value::from(now_rfc3339()));
                meta.insert("deletionGracePeriodSeconds".into(), Value::from(0));
            }
            if pending == current || ctx.dry_run {
                return Ok(WriteResult {
                    object: Arc::new(Decoded::new(pending)),
                    created_or_gone: false,
                });
            }
            let next = pending.clone();
            let rev = kv.mod_revision;
            let write = |cur: Option<&KeyValue>| -> storage::Result<Update> {
                match cur {
                    Some(c) if c.mod_revision == rev => Ok(Update::Set(
                        self.encode_for_write(&key, next.clone())
                            .map_err(Error::abort)?,
                    )),
                    _ => Err(storage::Error::Conflict {
                        key: key.clone(),
                        message: crate::registry::OPTIMISTIC_LOCK_MSG.into(),
                    }),
                }
            };
            let kv = self
                .metered(
                    crate::metrics::storage::Operation::Update,
                    self.storage.guaranteed_update(&key, false, &write),
                )
                .await
                .map_err(|e| self.storage_error(name, e))?;
            if self.key_root == "namespaces" {
                // NamespaceLifecycle reads namespaces from the watch cache: once the DELETE
                // answers, a create in the namespace must see it Terminating, so wait for the
                // cache to hold this revision (a page of one at NotOlderThan waits for that).
                let fresh = storage::ListOptions {
                    revision: storage::ListRevision::NotOlderThan(kv.mod_revision),
                    limit: 1,
                    start_key: None,
                };
                let _ = self.storage.list(&self.list_prefix(""), fresh).await;
            }
            return Ok(WriteResult {
                object: self.decode_shared(&kv)?,
                created_or_gone: false,
            });
        }
        if ctx.dry_run {
            return Ok(WriteResult {
                object: Arc::new(Decoded::new(current)),
                created_or_gone: true,
            });
        }
        let rv = opts.resource_version.clone();
        let check = move |cur: &KeyValue| -> storage::Result<()> {
            if let Some(rv) = &rv {
                if cur.mod_revision.to_string() != *rv {
                    return Err(storage::Error::Conflict {
                        key: cur.key.clone(),
                        message: rv_precondition_msg(rv, cur.mod_revision),
                    });
                }
            }
            Ok(())
        };
        let deleted = self
            .metered(
                crate::metrics::storage::Operation::Delete,
                self.storage.delete(&key, &check),
            )
            .await
            .map_err(|e| self.storage_error(name, e))?;
        Ok(WriteResult {
            object: self.decode_shared(&deleted)?,
            created_or_gone: true,
        })
    }

    fn check_preconditions(&self, name: &str, obj: &Value, opts: &DeleteOptions) -> Result<()> {
        if let Some(uid) = &opts.uid {
            let have = obj
                .at("/metadata/uid")
                .and_then(Value::as_str)
                .unwrap_or("");
            if have != uid {
                return Err(self.conflict(
                    name,
                    format!("Precondition failed: UID in precondition: {uid}, UID in object meta: {have}"),
                ));
            }
        }
        if let Some(rv) = &opts.resource_version {
            let have = obj
                .at("/metadata/resourceVersion")
                .and_then(Value::as_str)
                .unwrap_or("");
            if have != rv {
                return Err(self.conflict(
                    name,
                    format!("Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {have}"),
                ));
            }
        }
        Ok(())
    }
}

impl DeleteOptions {
    /// ValidateDeleteOptions: a 422 on `DeleteOptions.meta.k8s.io ""` naming propagationPolicy.
    ///
    /// # Errors
    /// Both orphanDependents and propagationPolicy set, or an unknown policy.
    pub(crate) fn validate(&self) -> Result<()> {
        let mut errs = Vec::new();
        if let Some(policy) = &self.propagation_policy {
            if self.orphan_dependents.is_some() {
                errs.push(FieldError::invalid(
                    "propagationPolicy",
                    policy,
                    "orphanDependents and deletionPropagation cannot be both set",
                ));
            }
            if !matches!(policy.as_str(), "Foreground" | "Background" | "Orphan") {
                errs.push(FieldError::not_supported(
                    "propagationPolicy",
                    policy,
                    &["Foreground", "Background", "Orphan", "nil"],
                ));
            }
        }
        if errs.is_empty() {
            Ok(())
        } else {
            Err(Error::invalid("meta.k8s.io", "DeleteOptions", "", errs))
        }
    }
}

/// The first of `orphan` / `foregroundDeletion` among the object's finalizers, if any.
fn first_gc_finalizer(obj: &Value) -> Option<&str> {
    obj.at("/metadata/finalizers")
        .and_then(Value::as_array)?
        .iter()
        .filter_map(Value::as_str)
        .find(|f| *f == FINALIZER_ORPHAN || *f == FINALIZER_FOREGROUND)
}

/// shouldOrphanDependents: the options, else the object's finalizers, else no (the default
/// policy of every served kind is to delete dependents).
fn should_orphan(obj: &Value, opts: &DeleteOptions) -> bool {
    if let Some(orphan) = opts.orphan_dependents {
        return orphan;
    }
    match opts.propagation_policy.as_deref() {
        Some("Orphan") => true,
        Some("Background" | "Foreground") => false,
        _ => first_gc_finalizer(obj) == Some(FINALIZER_ORPHAN),
    }
}

/// shouldDeleteDependents: the options, else the object's finalizers, else no.
fn should_delete_dependents(obj: &Value, opts: &DeleteOptions) -> bool {
    if opts.orphan_dependents.is_some() {
        return false;
    }
    match opts.propagation_policy.as_deref() {
        Some("Foreground") => true,
        Some("Background" | "Orphan") => false,
        _ => first_gc_finalizer(obj) == Some(FINALIZER_FOREGROUND),
    }
}

/// deletionFinalizersForGarbageCollection: the object's finalizers with `orphan` /
/// `foregroundDeletion` removed and added back as the options say; None when the set is
/// unchanged.
fn gc_finalizers(obj: &Value, opts: &DeleteOptions) -> Option<Vec<Value>> {
    let current: Vec<Value> = obj
        .at("/metadata/finalizers")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut next: Vec<Value> = current
        .iter()
        .filter(|f| *f != FINALIZER_ORPHAN && *f != FINALIZER_FOREGROUND)
        .cloned()
        .collect();
    if should_orphan(obj, opts) {
        next.push(Value::from(FINALIZER_ORPHAN));
    }
    if should_delete_dependents(obj, opts) {
        next.push(Value::from(FINALIZER_FOREGROUND));
    }
    let set = |v: &[Value]| {
        v.iter()
            .map(Value::to_string)
            .collect::<std::collections::BTreeSet<_>>()
    };
    (set(&current) != set(&next)).then_some(next)
}

fn rv_precondition_msg(rv: &str, have: i64) -> String {
    format!("Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {have}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn opts(policy: Option<&str>, orphan: Option<bool>) -> DeleteOptions {
        DeleteOptions {
            propagation_policy: policy.map(String::from),
            orphan_dependents: orphan,
            ..DeleteOptions::default()
        }
    }

    #[test]
    fn policies_set_and_clear_gc_finalizers() {
        let plain = json!({"metadata": {"finalizers": ["example.com/x"]}});
        assert_eq!(
            gc_finalizers(&plain, &opts(Some("Foreground"), None)),
            Some(vec![json!("example.com/x"), json!("foregroundDeletion")])
        );
        assert_eq!(
            gc_finalizers(&plain, &opts(Some("Orphan"), None)),
            Some(vec![json!("example.com/x"), json!("orphan")])
        );
        assert_eq!(gc_finalizers(&plain, &opts(Some("Background"), None)), None);
        assert_eq!(gc_finalizers(&plain, &opts(None, None)), None);
        assert_eq!(
            gc_finalizers(&json!({}), &opts(None, Some(true))),
            Some(vec![json!("orphan")])
        );
        let orphaning = json!({"metadata": {"finalizers": ["orphan"]}});
        // Background (and legacy orphanDependents=false) remove the GC finalizers.
        assert_eq!(
            gc_finalizers(&orphaning, &opts(Some("Background"), None)),
            Some(vec![])
        );
        assert_eq!(
            gc_finalizers(&orphaning, &opts(None, Some(false))),
            Some(vec![])
        );
        // Without options the existing finalizer stays.
        assert_eq!(gc_finalizers(&orphaning, &opts(None, None)), None);
        assert_eq!(
            gc_finalizers(&orphaning, &opts(Some("Foreground"), None)),
            Some(vec![json!("foregroundDeletion")])
        );
    }

    #[test]
    fn invalid_options_are_422_naming_the_field() {
        assert!(opts(Some("Orphan"), None).validate().is_ok());
        assert!(opts(None, Some(true)).validate().is_ok());
        let Err(Error::Invalid { kind, errors, .. }) = opts(Some("Sideways"), None).validate()
        else {
            panic!("expected Invalid");
        };
        assert_eq!(kind, "DeleteOptions");
        assert_eq!(errors[0].field, "propagationPolicy");
        assert_eq!(
            errors[0].message(),
            r#"Unsupported value: "Sideways": supported values: "Foreground", "Background", "Orphan", "nil""#
        );
        let Err(Error::Invalid { errors, .. }) = opts(Some("Orphan"), Some(false)).validate()
        else {
            panic!("expected Invalid");
        };
        assert_eq!(
            errors[0].message(),
            r#"Invalid value: "Orphan": orphanDependents and deletionPropagation cannot be both set"#
        );
    }
}
