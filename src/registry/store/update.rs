//! Updates (PUT, PATCH, apply, subresources): the caller's transform re-run on the current
//! state inside storage's GuaranteedUpdate, as registry/generic/registry/store.go does, with
//! mutating and validating admission at upstream's points. When a webhook may be called, the
//! update is computed and admitted outside the storage function and written with a compare
//! on the revision it was computed from ([`GenericStore::update_awaiting_admission`]).

use super::{metadata_mut, GenericStore, Transform, WriteResult};
use crate::api::At;
use crate::registry::admission::Operation;
use crate::registry::codec::memo::{Decoded, Encoded};
use crate::registry::error::{Error, Result};
use crate::registry::validation::{validate_object_meta, validate_object_meta_update};
use crate::registry::Context;
use crate::storage::{self, KeyValue, Update};
use serde_json::Value;
use std::sync::{Arc, Mutex, OnceLock};

/// How many times an update awaiting webhooks is computed again because the object changed
/// meanwhile, before it fails with a conflict.
const ADMISSION_ROUNDS: usize = 16;

/// The object changed between the read an update was admitted on and its write.
#[derive(Debug, thiserror::Error)]
#[error("the object changed since it was read for admission")]
struct ChangedSinceRead;

impl GenericStore {
    /// The update pipeline on a current state: run the transform, check preconditions,
    /// carry system fields over, prepare and validate; and what the result changes.
    async fn compute_update(
        &self,
        ctx: &Context,
        name: &str,
        subresource: &str,
        current: Option<&KeyValue>,
        transform: Transform<'_>,
        made: Option<&OnceLock<Encoded>>,
    ) -> Result<(Value, Changes)> {
        let Some(kv) = current else {
            let obj = transform(None)?;
            if !obj.is_object() {
                return Err(Error::BadRequest("the object must be a JSON object".into()));
            }
            let mut obj = self
                .admit_mutating(ctx, Operation::Create, name, Some(obj), None)
                .await?
                .unwrap_or(Value::Null);
            self.prepare_create(ctx, &mut obj)?;
            self.admit_validating(ctx, Operation::Create, name, (Some(&obj), made), None)
                .await?;
            return Ok((obj, Changes::More));
        };
        let decoded = self.decode_shared(kv)?;
        let old = &decoded.obj;
        let new = transform(Some(old))?;
        if !new.is_object() {
            return Err(Error::BadRequest("the object must be a JSON object".into()));
        }
        let old_rv = kv.mod_revision.to_string();
        let new_rv = new
            .at("/metadata/resourceVersion")
            .and_then(Value::as_str)
            .unwrap_or("");
        if !new_rv.is_empty() && new_rv != old_rv {
            return Err(self.conflict(name, crate::registry::OPTIMISTIC_LOCK_MSG));
        }
        let old_uid = old
            .at("/metadata/uid")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        if let Some(uid) = new.at("/metadata/uid").and_then(Value::as_str) {
            if !uid.is_empty() && uid != old_uid {
                return Err(self.conflict(
                    name,
                    format!("Precondition failed: UID in precondition: {uid}, UID in object meta: {old_uid}"),
                ));
            }
        }
        let mut new = self
            .admit_mutating(
                ctx,
                Operation::Update,
                name,
                Some(new),
                Some((&*decoded).into()),
            )
            .await?
            .unwrap_or(Value::Null);
        self.ensure_namespace(ctx, &mut new)?;
        {
            let old_meta = old.get("metadata");
            let meta = metadata_mut(&mut new);
            for f in [
                "uid",
                "creationTimestamp",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
                "generation",
            ] {
                match old_meta.and_then(|m| m.get(f)) {
                    Some(v) => meta.insert(f.into(), v.clone()),
                    None => meta.remove(f),
                };
            }
            meta.insert("resourceVersion".into(), Value::from(old_rv.clone()));
            meta.remove("selfLink");
        }
        if subresource.is_empty() {
            self.strategy.prepare_for_update(&mut new, old);
        } else if !self
            .strategy
            .prepare_for_subresource_update(subresource, &mut new, old)
        {
            return Err(self.not_found(name));
        }
        if self.strategy.uses_generation() && spec_changed(&new, old) {
            let g = old
                .at("/metadata/generation")
                .and_then(Value::as_i64)
                .unwrap_or(0)
                + 1;
            metadata_mut(&mut new).insert("generation".into(), Value::from(g));
        }
        let mut errs = Vec::new();
        if !self.strategy.validates_object_meta() {
            let namespaced = self.strategy.info().namespaced;
            errs = validate_object_meta(&new, namespaced, self.strategy.name_rule());
            errs.extend(validate_object_meta_update(&new, old));
        }
        errs.extend(
            self.strategy
                .validate_update_warning(subresource, &new, old, &ctx.warnings),
        );
        if !errs.is_empty() {
            return Err(self.invalid(name, errs));
        }
        for w in self.strategy.warnings_on_update(&new, old) {
            ctx.warnings.add(w);
        }
        self.admit_validating(
            ctx,
            Operation::Update,
            name,
            (Some(&new), made),
            Some((&*decoded).into()),
        )
        .await?;
        if subresource.is_empty() {
            self.strategy.authorize_write(ctx, &new, Some(old))?;
        }
        let changes = if crate::api::json::same_with_last(&new, old, "metadata") {
            Changes::Nothing
        } else if self.strategy.is_renewal(old, &new) {
            Changes::Renewal
        } else {
            Changes::More
        };
        Ok((new, changes))
    }

    /// Updates (PUT, PATCH, subresources) by running `transform` on the current state,
    /// retrying on conflict. With `allow_create` a missing object is created (apply).
    pub(crate) async fn update(
        &self,
        ctx: &Context,
        name: &str,
        subresource: &str,
        allow_create: bool,
        transform: Transform<'_>,
    ) -> Result<WriteResult> {
        self.start_cache().await;
        let key = self.key(&ctx.namespace, name);
        if allow_create {
            let current = self
                .metered(
                    crate::metrics::storage::Operation::Get,
                    self.storage.get(&key),
                )
                .await;
            if let Err(storage::Error::NotFound { .. }) = current {
                self.admit_namespace(&ctx.namespace, name).await?;
            }
        }
        if ctx.dry_run {
            let current = match self
                .metered(
                    crate::metrics::storage::Operation::Get,
                    self.storage.get(&key),
                )
                .await
            {
                Ok(kv) => Some(kv),
                Err(storage::Error::NotFound { .. }) if allow_create => None,
                Err(e) => return Err(self.storage_error(name, e)),
            };
            let created = current.is_none();
            let (obj, _) = self
                .compute_update(ctx, name, subresource, current.as_ref(), transform, None)
                .await?;
            return Ok(WriteResult {
                object: Arc::new(Decoded::new(obj)),
                created_or_gone: created,
            });
        }
        if self.may_call_webhooks(ctx) {
            return self
                .update_awaiting_admission(ctx, &key, name, subresource, allow_create, transform)
                .await;
        }
        let created = Mutex::new(false);
        let update = |current: Option<&KeyValue>| -> storage::Result<Update> {
            // Nothing in it waits (no webhook is configured): done in one poll.
            let (obj, changes) = crate::registry::webhook::wait(self.compute_update(
                ctx,
                name,
                subresource,
                current,
                transform,
                None,
            ))
            .map_err(Error::abort)?;
            if let Ok(mut c) = created.lock() {
                *c = current.is_none();
            }
            let encode = |obj| self.encode_for_write(&key, obj).map_err(Error::abort);
            Ok(match changes {
                Changes::Nothing => Update::Unchanged,
                // Marked, so that the watches that leave renewals out are not even sent it.
                Changes::Renewal => Update::Heartbeat(encode(obj)?),
                Changes::More => Update::Set(encode(obj)?),
            })
        };
        let kv = self
            .metered(
                crate::metrics::storage::Operation::Update,
                self.storage.guaranteed_update(&key, allow_create, &update),
            )
            .await
            .map_err(|e| self.storage_error(name, e))?;
        let created = created.lock().map(|c| *c).unwrap_or(false);
        self.finish_update(&key, name, &kv, created).await
    }

    /// An update whose admission may call webhooks: computed and admitted on a read of the
    /// object, the webhooks awaited outside storage's update function, then written only if
    /// the object is still at the revision read, and computed again on a fresh read
    /// otherwise. (kube-apiserver admits inside GuaranteedUpdate's function and blocks on
    /// the webhooks there; in kapi that would hold a runtime thread for each call.)
    async fn update_awaiting_admission(
        &self,
        ctx: &Context,
        key: &str,
        name: &str,
        subresource: &str,
        allow_create: bool,
        transform: Transform<'_>,
    ) -> Result<WriteResult> {
        // The first round starts from the value the store last wrote, as an update without
        // webhooks does (the write compares its revision); the others from a read.
        let mut guess = self.storage.remembered(key);
        // A read already made for the next round.
        let mut fresh = None;
        for _ in 0..ADMISSION_ROUNDS {
            let guessed = guess.is_some();
            let current = match (guess.take(), fresh.take()) {
                (Some(kv), _) => Some(kv),
                (None, Some(read)) => read,
                (None, None) => self.read_for_update(key, name, allow_create).await?,
            };
            // What a webhook's review encoded of the object, stored as it is.
            let made = OnceLock::new();
            let computed = self
                .compute_update(
                    ctx,
                    name,
                    subresource,
                    current.as_ref(),
                    transform,
                    Some(&made),
                )
                .await;
            let read = current.as_ref().map(|kv| kv.mod_revision);
            let (obj, changes) = match computed {
                Ok(computed) => computed,
                // A refusal decided on a guess stands only if the guess was the stored value.
                Err(e) if guessed => {
                    let now = self.read_for_update(key, name, allow_create).await?;
                    if now.as_ref().map(|kv| kv.mod_revision) == read {
                        return Err(e);
                    }
                    fresh = Some(now);
                    continue;
                }
                Err(e) => return Err(e),
            };
            let value = match changes {
                Changes::Nothing => None,
                _ => Some(self.encode_for_write_from(key, obj, made.into_inner())?),
            };
            let update = |now: Option<&KeyValue>| -> storage::Result<Update> {
                if now.map(|kv| kv.mod_revision) != read {
                    return Err(storage::Error::Aborted(Box::new(ChangedSinceRead)));
                }
                Ok(match (&value, changes) {
                    (None, _) => Update::Unchanged,
                    (Some(v), Changes::Renewal) => Update::Heartbeat(v.clone()),
                    (Some(v), _) => Update::Set(v.clone()),
                })
            };
            match self
                .metered(
                    crate::metrics::storage::Operation::Update,
                    self.storage.guaranteed_update(key, allow_create, &update),
                )
                .await
            {
                Ok(kv) => return self.finish_update(key, name, &kv, current.is_none()).await,
                Err(storage::Error::Aborted(e)) if e.is::<ChangedSinceRead>() => continue,
                Err(e) => return Err(self.storage_error(name, e)),
            }
        }
        Err(self.conflict(name, "too many concurrent updates"))
    }

    /// The object an update starts from, read from storage: None when absent and the
    /// update may create it.
    async fn read_for_update(
        &self,
        key: &str,
        name: &str,
        allow_create: bool,
    ) -> Result<Option<KeyValue>> {
        match self
            .metered(
                crate::metrics::storage::Operation::Get,
                self.storage.get(key),
            )
            .await
        {
            Ok(kv) => Ok(Some(kv)),
            Err(storage::Error::NotFound { .. }) if allow_create => Ok(None),
            Err(e) => Err(self.storage_error(name, e)),
        }
    }

    /// The written object `kv`, deleted at once when its deletion was pending and this
    /// update removed its last finalizer.
    async fn finish_update(
        &self,
        key: &str,
        name: &str,
        kv: &KeyValue,
        created: bool,
    ) -> Result<WriteResult> {
        let obj = self.decode_shared(kv)?;
        if self.should_delete_during_update(&obj.obj) {
            let rev = kv.mod_revision;
            let check = move |cur: &KeyValue| -> storage::Result<()> {
                if cur.mod_revision == rev {
                    Ok(())
                } else {
                    Err(storage::Error::Aborted("changed meanwhile".into()))
                }
            };
            match self
                .metered(
                    crate::metrics::storage::Operation::Delete,
                    self.storage.delete(key, &check),
                )
                .await
            {
                Ok(_) | Err(storage::Error::NotFound { .. }) | Err(storage::Error::Aborted(_)) => {}
                Err(e) => return Err(self.storage_error(name, e)),
            }
        }
        Ok(WriteResult {
            object: obj,
            created_or_gone: created,
        })
    }

    /// ShouldDeleteDuringUpdate: deletion pending and no finalizer left.
    fn should_delete_during_update(&self, obj: &Value) -> bool {
        obj.at("/metadata/deletionTimestamp").is_some()
            && obj
                .at("/metadata/finalizers")
                .and_then(Value::as_array)
                .is_none_or(Vec::is_empty)
            && self.strategy.may_delete(obj)
    }
}

/// What an update changes in the object it starts from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Changes {
    /// Nothing: the write is skipped.
    Nothing,
    /// Only a renewal ([`super::Strategy::is_renewal`]).
    Renewal,
    /// More than that (or a create).
    More,
}

/// Whether anything but metadata and status differs (what moves metadata.generation).
fn spec_changed(new: &Value, old: &Value) -> bool {
    !crate::api::json::same_except(new, old, &["metadata", "status"])
}
