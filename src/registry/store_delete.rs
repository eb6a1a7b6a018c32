//! Delete of the GenericStore: preconditions (uid, resourceVersion) with kube's messages,
//! finalizers and graceful deletion (deletionTimestamp), and the system namespaces that cannot
//! be deleted. May use: storage, api.

use super::error::{Error, Result};
use super::store::{metadata_mut, now_rfc3339, DeleteOptions, GenericStore, WriteResult};
use super::Context;
use crate::storage::{self, KeyValue, Update};
use serde_json::Value;

impl GenericStore {
    /// Deletes one object, honouring preconditions and finalizers (graceful deletion:
    /// with finalizers the object gets a deletionTimestamp and stays).
    pub async fn delete(
        &self,
        ctx: &Context,
        name: &str,
        opts: &DeleteOptions,
    ) -> Result<WriteResult> {
        self.strategy.admit_delete(name).map_err(|message| {
            let i = self.strategy.info();
            Error::Forbidden {
                group: i.group.into(),
                resource: i.resource.into(),
                name: name.into(),
                message,
                causes: vec![],
            }
        })?;
        let key = self.key(&ctx.namespace, name);
        let kv = self
            .storage
            .get(&key)
            .await
            .map_err(|e| self.storage_error(name, e))?;
        let current = self.decode_kv(&kv)?;
        self.check_preconditions(name, &current, opts)?;
        let mut pending = current.clone();
        let keep = self.strategy.begin_delete(&mut pending);
        let has_finalizers = pending
            .pointer("/metadata/finalizers")
            .and_then(Value::as_array)
            .is_some_and(|f| !f.is_empty());
        if keep || has_finalizers {
            if pending.pointer("/metadata/deletionTimestamp").is_none() {
                let meta = metadata_mut(&mut pending);
                meta.insert("deletionTimestamp".into(), Value::from(now_rfc3339()));
                meta.insert("deletionGracePeriodSeconds".into(), Value::from(0));
            }
            if pending == current || ctx.dry_run {
                return Ok(WriteResult {
                    object: pending,
                    warnings: vec![],
                    created_or_gone: false,
                });
            }
            let next = pending.clone();
            let rev = kv.mod_revision;
            let write = |cur: Option<&KeyValue>| -> storage::Result<Update> {
                match cur {
                    Some(c) if c.mod_revision == rev => Ok(Update::Set(
                        self.encode(&next)
                            .map_err(|e| storage::Error::Aborted(e.to_string()))?,
                    )),
                    _ => Err(storage::Error::Conflict {
                        key: key.clone(),
                        message: super::OPTIMISTIC_LOCK_MSG.into(),
                    }),
                }
            };
            let kv = self
                .storage
                .guaranteed_update(&key, false, &write)
                .await
                .map_err(|e| self.storage_error(name, e))?;
            return Ok(WriteResult {
                object: self.decode_kv(&kv)?,
                warnings: vec![],
                created_or_gone: false,
            });
        }
        if ctx.dry_run {
            return Ok(WriteResult {
                object: current,
                warnings: vec![],
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
            .storage
            .delete(&key, &check)
            .await
            .map_err(|e| self.storage_error(name, e))?;
        Ok(WriteResult {
            object: self.decode_kv(&deleted)?,
            warnings: vec![],
            created_or_gone: true,
        })
    }

    fn check_preconditions(&self, name: &str, obj: &Value, opts: &DeleteOptions) -> Result<()> {
        if let Some(uid) = &opts.uid {
            let have = obj
                .pointer("/metadata/uid")
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
                .pointer("/metadata/resourceVersion")
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

fn rv_precondition_msg(rv: &str, have: i64) -> String {
    format!("Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {have}")
}
