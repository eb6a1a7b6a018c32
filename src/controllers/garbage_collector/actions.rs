//! What a pass does: classifies each ownerReference, then deletes dangling dependents, orphans
//! them, or finishes a foreground deletion, each write guarded by its resourceVersion.

use super::*;

/// How one ownerReference of a dependent stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Owner {
    /// The owner exists (or cannot be checked): the dependent stays.
    Solid,
    /// The owner is gone (or replaced by another object of the same name).
    Dangling,
    /// The owner is being deleted in the foreground.
    Waiting,
}

/// The outcome of one write: done, or to be retried (conflict, error).
pub(super) type Done = bool;

pub(super) fn outcome(what: &str, obj: &Obj, r: Result<(), kube::Error>) -> Done {
    match r {
        Ok(()) => true,
        Err(kube::Error::Api(s)) if s.code == 404 => true,
        Err(kube::Error::Api(s)) if s.code == 409 => {
            debug!(object = %obj.label(), "{what}: conflict, retrying");
            false
        }
        Err(e) => {
            warn!(object = %obj.label(), error = %e, "garbage collector: {what} failed");
            false
        }
    }
}

/// A JSON merge patch of metadata carrying the resourceVersion it was computed from (so it
/// conflicts instead of overwriting a newer object); an empty list becomes null (removed).
pub(super) async fn patch_meta(
    client: &Client,
    obj: &Obj,
    field: &str,
    list: Value,
) -> Result<(), kube::Error> {
    let list = match list {
        Value::Array(a) if a.is_empty() => Value::Null,
        v => v,
    };
    let body = json!({ "metadata": { "resourceVersion": obj.rv, field: list } });
    api(client, &obj.kind, &obj.namespace)
        .patch_metadata(&obj.name, &PatchParams::default(), &Patch::Merge(body))
        .await
        .map(|_| ())
}

pub(super) async fn remove_finalizer(client: &Client, obj: &Obj, finalizer: &str) -> Done {
    let rest: Vec<&String> = obj.finalizers.iter().filter(|f| *f != finalizer).collect();
    let r = patch_meta(client, obj, "finalizers", json!(rest)).await;
    let done = outcome("removing a finalizer", obj, r);
    if done {
        info!(object = %obj.label(), finalizer, "dependents handled, finalizer removed");
    }
    done
}

pub(super) async fn remove_owner_refs(client: &Client, dep: &Obj, uids: &HashSet<&str>) -> Done {
    let rest: Vec<&OwnerReference> = dep
        .owners
        .iter()
        .filter(|r| !uids.contains(r.uid.as_str()))
        .collect();
    let r = patch_meta(client, dep, "ownerReferences", json!(rest)).await;
    outcome("removing ownerReferences", dep, r)
}

pub(super) async fn delete(client: &Client, obj: &Obj, policy: PropagationPolicy) -> Done {
    let what = format!("{policy:?}");
    let dp = DeleteParams {
        propagation_policy: Some(policy),
        preconditions: Some(Preconditions {
            uid: Some(obj.uid.clone()),
            resource_version: Some(obj.rv.clone()),
        }),
        ..DeleteParams::default()
    };
    let r = api(client, &obj.kind, &obj.namespace)
        .delete(&obj.name, &dp)
        .await
        .map(|_| ());
    let done = outcome("deleting a dependent", obj, r);
    if done {
        info!(object = %obj.label(), policy = what, "deleted: no owner left");
    }
    done
}

/// How `dep`'s reference `r` stands: from the snapshot when it shows the owner, else from a
/// live GET (a list may predate the owner's creation).
pub(super) async fn classify(
    client: &Client,
    snap: &Snapshot,
    dep: &Obj,
    r: &OwnerReference,
) -> Owner {
    let Some(kind) = snap.kinds.find(&r.api_version, &r.kind) else {
        return Owner::Solid;
    };
    let namespace = if kind.namespaced {
        if dep.namespace.is_empty() {
            return Owner::Solid;
        }
        dep.namespace.clone()
    } else {
        String::new()
    };
    let state = |o: &Obj| {
        if o.waits_for_dependents() {
            Owner::Waiting
        } else {
            Owner::Solid
        }
    };
    match snap.owner(kind, &namespace, r) {
        Some(Some(o)) => return state(o),
        Some(None) => return Owner::Solid,
        None => {}
    }
    match api(client, kind, &namespace)
        .get_metadata_opt(&r.name)
        .await
    {
        Ok(Some(m)) if m.metadata.uid.as_deref() == Some(r.uid.as_str()) => {
            state(&Obj::new(kind.clone(), m.metadata))
        }
        Ok(_) => Owner::Dangling,
        Err(e) => {
            debug!(error = %e, "garbage collector: reading an owner failed");
            Owner::Solid
        }
    }
}

/// attemptToDeleteItem for one dependent that is not being deleted.
pub(super) async fn collect(client: &Client, snap: &Snapshot, dep: &Obj) -> Done {
    let mut solid = false;
    let mut gone: HashSet<&str> = HashSet::new();
    let mut waiting = false;
    for r in &dep.owners {
        match classify(client, snap, dep, r).await {
            Owner::Solid => solid = true,
            Owner::Dangling => {
                gone.insert(r.uid.as_str());
            }
            Owner::Waiting => {
                waiting = true;
                gone.insert(r.uid.as_str());
            }
        }
    }
    if solid {
        return gone.is_empty() || remove_owner_refs(client, dep, &gone).await;
    }
    let has_dependents = snap.dependents.get(&dep.uid).is_some_and(|d| !d.is_empty());
    let policy = if waiting && has_dependents {
        PropagationPolicy::Foreground
    } else if dep.has(ORPHAN) {
        PropagationPolicy::Orphan
    } else if dep.has(FOREGROUND) {
        PropagationPolicy::Foreground
    } else {
        PropagationPolicy::Background
    };
    delete(client, dep, policy).await
}

/// attemptToOrphan: drop `owner` from its dependents' ownerReferences, then its finalizer.
pub(super) async fn orphan(client: &Client, snap: &Snapshot, owner: &Obj) -> Done {
    let uid = HashSet::from([owner.uid.as_str()]);
    let mut done = true;
    for (dep, _) in snap.dependents_of(owner) {
        done &= remove_owner_refs(client, dep, &uid).await;
    }
    done && remove_finalizer(client, owner, ORPHAN).await
}

/// processDeletingDependentsItem: the finalizer goes once no blocking dependent is left (the
/// dependents themselves are deleted by [`collect`], which sees this owner as waiting).
pub(super) async fn finish_foreground(client: &Client, snap: &Snapshot, owner: &Obj) -> Done {
    let blocked = snap
        .dependents_of(owner)
        .iter()
        .any(|(_, r)| r.block_owner_deletion == Some(true));
    blocked || remove_finalizer(client, owner, FOREGROUND).await
}

/// One pass over everything (see [`snapshot`] for `collector`); Ok(false) when something must
/// be retried.
pub(super) async fn pass(
    client: &Client,
    collector: &Client,
    kinds: Arc<Kinds>,
) -> Result<(Snapshot, Done), Error> {
    let snap = snapshot(client, collector, kinds).await?;
    let mut done = true;
    for o in snap.objects.iter().filter(|o| o.deleting) {
        if o.has(ORPHAN) {
            done &= orphan(client, &snap, o).await;
        } else if o.has(FOREGROUND) {
            done &= finish_foreground(client, &snap, o).await;
        }
    }
    for d in snap
        .objects
        .iter()
        .filter(|o| !o.deleting && !o.owners.is_empty())
    {
        done &= collect(client, &snap, d).await;
    }
    Ok((snap, done))
}
