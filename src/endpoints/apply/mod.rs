//! Server-side apply and field ownership (k8s.io/apiserver pkg/endpoints/handlers/fieldmanager
//! over sigs.k8s.io/structured-merge-diff): merging an applied configuration into the live
//! object, tracking who owns which field in `metadata.managedFields` (FieldsV1), detecting
//! conflicts with other managers, and removing fields an applier stopped applying when no one
//! else owns them. Updates (create, update, patch) record ownership of what they changed.
//! The same merge serves MutatingAdmissionPolicy's apply configurations ([`PolicyMerge`]).
//! May use: api, registry's admission interface.

mod cap;
mod fieldpath;
mod last_applied;
mod policy;
mod start;
mod typed;

use crate::api::At;
use crate::api::GroupVersionKind;
use fieldpath::Set;
use last_applied::{allowed_by_last_applied, KUBECTL_SERVER_SIDE};
pub(crate) use policy::PolicyMerge;
use serde_json::{json, Map, Value};
use typed::Types;

/// The manager kube assigns to fields of objects applied for the first time without
/// managedFields (fieldmanager's BeforeFirstApplyManager).
const BEFORE_FIRST_APPLY: &str = "before-first-apply";

/// Why an apply failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum ApplyError {
    /// Fields the applier changes are owned by other managers and `force` was not set: 409
    /// Conflict. Each cause is (field path like `.data.x`, manager as kube prints it, e.g.
    /// `"kubectl-client-side-apply" using v1`); each StatusCause is `{type:
    /// FieldManagerConflict, message: "conflict with <manager>", field: <path>}` and the
    /// Status message is [`ApplyError::conflict_message`].
    #[error("{}", conflict_message(causes))]
    Conflict {
        /// (field, manager) pairs, sorted by manager then field.
        causes: Vec<(String, String)>,
    },
    /// The applied configuration is malformed (not an object, a keyed list item without its
    /// key, managedFields set): BadRequest with this message.
    #[error("{0}")]
    BadRequest(String),
    /// The applied configuration cannot be merged: Invalid.
    #[error("{0}")]
    Invalid(String),
}

impl ApplyError {
    #[cfg(test)]
    /// The Status message kube-apiserver answers a conflict with (getConflictMessage).
    pub(crate) fn conflict_message(&self) -> Option<String> {
        match self {
            ApplyError::Conflict { causes } => Some(conflict_message(causes)),
            _ => None,
        }
    }
}

fn conflict_message(causes: &[(String, String)]) -> String {
    if let [(field, manager)] = causes {
        return format!("Apply failed with 1 conflict: conflict with {manager}: {field}");
    }
    let mut lines = Vec::new();
    let mut last: Option<&str> = None;
    for (field, manager) in causes {
        if last != Some(manager.as_str()) {
            lines.push(format!("conflicts with {manager}:"));
            last = Some(manager);
        }
        lines.push(format!("- {field}"));
    }
    format!(
        "Apply failed with {} conflicts: {}",
        causes.len(),
        lines.join("\n")
    )
}

/// One managedFields entry, decoded. Its field set is decoded on first use ([`Self::set_mut`]):
/// an update asks most entries only whether they own a few paths ([`Self::owns`]), which the
/// stored FieldsV1 object answers as it is.
#[derive(Debug, Clone)]
struct Manager<'a> {
    manager: String,
    operation: String,
    api_version: String,
    subresource: String,
    time: Option<String>,
    /// The entry's FieldsV1 while `set` is not decoded from it yet.
    fields: Option<&'a Value>,
    /// The field set; meaningful once `fields` is None.
    set: Set,
}

/// Who wrote a managedFields entry, as BuildManagerIdentifier compares writers.
#[derive(Debug, Clone, Copy)]
struct Identity<'a> {
    manager: &'a str,
    operation: &'a str,
    api_version: &'a str,
    subresource: &'a str,
}

impl Identity<'_> {
    /// The identity of a stored entry (missing fields are empty).
    fn of_entry(e: &Value) -> Identity<'_> {
        let s = |k: &str| e.get(k).and_then(Value::as_str).unwrap_or_default();
        Identity {
            manager: s("manager"),
            operation: s("operation"),
            api_version: s("apiVersion"),
            subresource: s("subresource"),
        }
    }

    /// Same manager and operation: an update takes no fields from its own writer's entries.
    fn same_writer(&self, other: &Identity<'_>) -> bool {
        self.manager == other.manager && self.operation == other.operation
    }

    /// One entry's writer: appliers are one manager across API versions.
    fn same(&self, other: &Identity<'_>) -> bool {
        self.same_writer(other)
            && self.subresource == other.subresource
            && (other.operation == "Apply" || self.api_version == other.api_version)
    }
}

impl<'a> Manager<'a> {
    /// An entry whose field set is `set`.
    fn new(identity: Identity<'_>, time: Option<String>, set: Set) -> Manager<'a> {
        Manager {
            manager: identity.manager.into(),
            operation: identity.operation.into(),
            api_version: identity.api_version.into(),
            subresource: identity.subresource.into(),
            time,
            fields: None,
            set,
        }
    }

    /// Whether the entry owns `path`.
    fn owns(&self, path: &fieldpath::Path) -> bool {
        match self.fields {
            Some(f) => fieldpath::fields_v1_has(f, path),
            None => self.set.contains(path),
        }
    }

    /// The field set, decoded now if it was not yet.
    fn set_mut(&mut self) -> &mut Set {
        if let Some(f) = self.fields.take() {
            self.set = fieldpath::from_fields_v1(f);
        }
        &mut self.set
    }

    /// Whether the entry owns no field (kube drops such entries).
    fn owns_nothing(&self) -> bool {
        match self.fields {
            Some(f) => f.as_object().is_none_or(Map::is_empty),
            None => self.set.is_empty(),
        }
    }

    /// The entry with its field set decoded, no longer borrowing the list.
    fn into_decoded(mut self) -> Manager<'static> {
        self.set_mut(); // decodes `fields` into `set`
        Manager {
            manager: self.manager,
            operation: self.operation,
            api_version: self.api_version,
            subresource: self.subresource,
            time: self.time,
            fields: None,
            set: self.set,
        }
    }

    fn identity(&self) -> Identity<'_> {
        Identity {
            manager: &self.manager,
            operation: &self.operation,
            api_version: &self.api_version,
            subresource: &self.subresource,
        }
    }

    /// printManager in fieldmanager: how conflicts name this manager.
    fn printed(&self) -> String {
        let mut s = format!("{:?}", self.manager);
        if !self.subresource.is_empty() {
            s.push_str(&format!(" with subresource {:?}", self.subresource));
        }
        if self.operation == "Update" {
            s.push_str(&format!(" using {}", self.api_version));
        }
        s
    }

    fn to_entry(&self) -> Value {
        let mut e = Map::new();
        e.insert("manager".into(), self.manager.clone().into());
        e.insert("operation".into(), self.operation.clone().into());
        e.insert("apiVersion".into(), self.api_version.clone().into());
        if let Some(t) = &self.time {
            e.insert("time".into(), t.clone().into());
        }
        e.insert("fieldsType".into(), "FieldsV1".into());
        // An entry whose set was never decoded keeps the FieldsV1 it was stored with.
        let fields = match self.fields {
            Some(f) => f.clone(),
            None => fieldpath::to_fields_v1(&self.set),
        };
        e.insert("fieldsV1".into(), fields);
        if !self.subresource.is_empty() {
            e.insert("subresource".into(), self.subresource.clone().into());
        }
        Value::Object(e)
    }
}

/// The current second as a managedFields time (metav1.Time: RFC 3339, UTC, seconds).
fn now() -> String {
    crate::api::time::now_rfc3339()
}

/// Managers from an object's `managedFields`, field sets decoded (so `set` may be read as is).
fn decode_managers(obj: Option<&Value>) -> Vec<Manager<'static>> {
    decoded(decode_entries(
        obj.and_then(|o| o.get("metadata")?.get("managedFields")),
    ))
}

/// Managers from a `managedFields` list; field sets are decoded on first use.
fn decode_entries(entries: Option<&Value>) -> Vec<Manager<'_>> {
    static NONE: Value = Value::Null;
    entries
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|e| Manager {
            fields: Some(e.get("fieldsV1").unwrap_or(&NONE)),
            ..Manager::new(
                Identity::of_entry(e),
                e.get("time").and_then(Value::as_str).map(str::to_string),
                Set::new(),
            )
        })
        .collect()
}

/// The managers with every field set decoded (they no longer borrow the list).
fn decoded(managers: Vec<Manager<'_>>) -> Vec<Manager<'static>> {
    managers.into_iter().map(Manager::into_decoded).collect()
}

/// Writes the managers into `obj.metadata.managedFields`, sorted as kube sorts them
/// (operation, time, manager, apiVersion, subresource); empty owners are dropped.
fn encode_managers(obj: &mut Value, mut managers: Vec<Manager<'_>>) {
    managers.retain(|m| !m.owns_nothing());
    managers.sort_by(|p, q| {
        (
            &p.operation,
            &p.time,
            &p.manager,
            &p.api_version,
            &p.subresource,
        )
            .cmp(&(
                &q.operation,
                &q.time,
                &q.manager,
                &q.api_version,
                &q.subresource,
            ))
    });
    let Some(root) = obj.as_object_mut() else {
        return;
    };
    let meta = root.entry("metadata").or_insert_with(|| json!({}));
    let Some(meta) = meta.as_object_mut() else {
        return;
    };
    if managers.is_empty() {
        meta.shift_remove("managedFields");
    } else {
        meta.insert(
            "managedFields".into(),
            managers.iter().map(Manager::to_entry).collect(),
        );
    }
}

fn gvk_of(obj: &Value) -> GroupVersionKind {
    let s = |k: &str| obj.get(k).and_then(Value::as_str).unwrap_or_default();
    GroupVersionKind::from_api_version_kind(s("apiVersion"), s("kind"))
}

/// Compare of two objects: (added or modified, removed) member paths.
fn compare(types: &Types<'_>, old: &Value, new: &Value) -> (Set, Set) {
    types.compare(old, new)
}

/// Server-side apply of `applied` by `manager` onto `current` (None: create). Returns the new
/// object with updated managedFields; the caller still runs its strategy (validation,
/// metadata), storage preconditions and the usual write path.
///
/// # Errors
/// [`ApplyError::Conflict`] when `force` is false and the apply changes fields others own;
/// BadRequest/Invalid for malformed configurations.
#[cfg(test)]
pub(crate) fn server_side_apply(
    current: Option<&Value>,
    applied: &Value,
    manager: &str,
    force: bool,
    gvk: &GroupVersionKind,
) -> Result<Value, ApplyError> {
    server_side_apply_of(current, applied, manager, force, gvk, None)
}

/// [`server_side_apply`] of a custom resource whose structural schema is `schema`.
///
/// # Errors
/// As [`server_side_apply`].
pub(crate) fn server_side_apply_of(
    current: Option<&Value>,
    applied: &Value,
    manager: &str,
    force: bool,
    gvk: &GroupVersionKind,
    schema: Option<&Value>,
) -> Result<Value, ApplyError> {
    let mut merged = apply(current, applied, manager, force, gvk, schema)?;
    if manager == KUBECTL_SERVER_SIDE {
        last_applied::sync(&mut merged, applied);
    }
    Ok(merged)
}

/// [`server_side_apply`] but for the last-applied annotation.
fn apply(
    current: Option<&Value>,
    applied: &Value,
    manager: &str,
    force: bool,
    gvk: &GroupVersionKind,
    schema: Option<&Value>,
) -> Result<Value, ApplyError> {
    if !applied.is_object() {
        return Err(ApplyError::BadRequest(
            "the applied configuration must be an object".into(),
        ));
    }
    if applied
        .at("/metadata/managedFields")
        .is_some_and(|m| !m.is_null())
    {
        return Err(ApplyError::BadRequest(
            "metadata.managedFields must be nil".into(),
        ));
    }
    let types = Types::new(gvk).with_schema(schema);
    let empty = json!({});
    let live = current.unwrap_or(&empty);
    let api_version = gvk.api_version();

    let mut managers = decode_managers(current);
    if current.is_some() && managers.is_empty() {
        let mut set = types.object_set(live);
        typed::strip(&mut set, gvk, "");
        let before = Identity {
            manager: BEFORE_FIRST_APPLY,
            operation: "Update",
            api_version: &api_version,
            subresource: "",
        };
        managers.push(Manager::new(before, Some(now()), set));
    }
    let mut config_set = types.apply_set(applied)?;
    typed::strip(&mut config_set, gvk, "");

    let mut merged = types.merge(live, applied);
    let applier = Identity {
        manager,
        operation: "Apply",
        api_version: &api_version,
        subresource: "",
    };
    let mine = managers.iter().position(|m| m.identity().same(&applier));
    let last_set = mine.map(|i| managers[i].set.clone()).unwrap_or_default();
    // Prune: what this applier stopped applying and nobody else owns goes away.
    for path in last_set.difference(&config_set) {
        let owned_by_others = managers
            .iter()
            .enumerate()
            .any(|(i, m)| Some(i) != mine && fieldpath::owns_within(&m.set, path));
        if !owned_by_others && !fieldpath::owns_within(&config_set, path) {
            fieldpath::remove(&mut merged, path);
        }
    }

    let (mut changed, mut removed) = compare(&types, live, &merged);
    // Stripped from both: no entry owns those fields, so releasing them changes nothing.
    typed::strip(&mut changed, gvk, "");
    typed::strip(&mut removed, gvk, "");
    let object_changed = !changed.is_empty() || !removed.is_empty();
    let mut causes = Vec::new();
    for (i, m) in managers.iter_mut().enumerate() {
        if Some(i) == mine {
            continue;
        }
        let conflicts: Set = m.set.intersection(&changed).cloned().collect();
        if conflicts.is_empty() {
            continue;
        }
        if force {
            m.set.retain(|p| !conflicts.contains(p));
        } else {
            causes.extend(conflicts.into_iter().map(|p| (p, m.printed())));
        }
    }
    if !causes.is_empty() {
        // kube's lastAppliedManager: `kubectl apply --server-side` (manager "kubectl") takes
        // over, without conflicts, the fields an earlier client-side apply recorded in its
        // annotation and that still have the values it recorded there.
        if manager == KUBECTL_SERVER_SIDE {
            if let Some(allowed) = allowed_by_last_applied(&types, live, gvk) {
                causes.retain(|(p, _)| !allowed.contains(p));
                if causes.is_empty() {
                    return apply(current, applied, manager, true, gvk, schema);
                }
            }
        }
        let mut causes: Vec<(String, String)> = causes
            .into_iter()
            .map(|(p, m)| (fieldpath::to_string(&p), m))
            .collect();
        causes.sort_by(|a, b| (&a.1, &a.0).cmp(&(&b.1, &b.0)));
        return Err(ApplyError::Conflict { causes });
    }
    for m in &mut managers {
        m.set.retain(|p| !removed.contains(p));
    }
    let entry = match mine {
        Some(i) => &mut managers[i],
        None => {
            managers.push(Manager::new(applier, None, Set::new()));
            let last = managers.len() - 1;
            &mut managers[last]
        }
    };
    // As kube's managedFieldsUpdater: an apply that changed the object sets the applier's
    // time; one that changed nothing keeps it, even when the applied set differs.
    if object_changed || entry.time.is_none() {
        entry.time = Some(now());
    }
    entry.set = config_set;
    entry.api_version = api_version;
    encode_managers(&mut merged, managers);
    Ok(merged)
}

/// Records field ownership of a non-apply write (create, update, patch): the fields it added
/// or changed become `manager`'s (operation `Update`, the object's apiVersion) and are taken
/// from other managers; removed fields are released. `new` gets its managedFields rewritten.
/// A request that sends `managedFields: []` clears all ownership, as kube does. More than ten
/// update entries are capped (the `cap` module).
#[cfg(test)]
pub(crate) fn update_managed_fields(
    old: Option<&Value>,
    new: &mut Value,
    manager: &str,
    operation: &str,
    subresource: &str,
) {
    update_managed_fields_of(old, new, manager, operation, subresource, None);
}

/// [`update_managed_fields`] for a custom resource whose structural schema is `schema` (its
/// lists and maps merge and are owned as the schema says).
pub(crate) fn update_managed_fields_of(
    old: Option<&Value>,
    new: &mut Value,
    manager: &str,
    operation: &str,
    subresource: &str,
    schema: Option<&Value>,
) {
    let gvk = gvk_of(new);
    let types = Types::new(&gvk).with_schema(schema);
    let api_version = gvk.api_version();
    fn entries(o: &Value) -> Option<&Value> {
        o.get("metadata")?.get("managedFields")
    }
    let sent = entries(new);
    let stored = old.and_then(entries);
    // Compared once: the lists are large and usually equal (the client sent back what it read).
    let sent_stored = match (sent, stored) {
        (Some(a), Some(b)) => crate::api::json::same(a, b),
        (a, b) => a.is_none() && b.is_none(),
    };
    let from = start::start(sent, subresource);
    let mut managers = match from {
        start::Start::Reset => Vec::new(),
        start::Start::Sent(s) if !sent_stored => decoded(decode_entries(Some(s))),
        // The stored list (or the one sent, which is the same): decoded lazily, from the
        // stored object.
        start::Start::Sent(_) | start::Start::Stored => decode_entries(stored),
    };
    if old.is_some() && managers.is_empty() {
        // skipNonAppliedManager: an update of an object with no managedFields (reset, or never
        // tracked) tracks nothing; only an apply starts tracking it again.
        encode_managers(new, Vec::new());
        return;
    }
    // Whether the list `new` carries is the one the managers came from (else it is rewritten).
    let sent_stored = sent_stored && matches!(from, start::Start::Sent(_));
    let empty = json!({});
    let (mut changed, removed) = compare(&types, old.unwrap_or(&empty), new);
    typed::strip(&mut changed, &gvk, subresource);
    let writer = Identity {
        manager,
        operation,
        api_version: &api_version,
        subresource,
    };
    // Removed fields are released; changed ones are taken from other writers. An entry that
    // owns none of them is left as it is (its set is never decoded).
    let mut touched = false;
    for m in &mut managers {
        let other = !m.identity().same_writer(&writer);
        let loses = |p: &fieldpath::Path| removed.contains(p) || (other && changed.contains(p));
        if removed
            .iter()
            .chain(changed.iter().filter(|_| other))
            .any(|p| m.owns(p))
        {
            m.set_mut().retain(|p| !loses(p));
            touched = true;
        }
    }
    let idx = match managers.iter().position(|m| m.identity().same(&writer)) {
        Some(i) => i,
        None => {
            touched = true;
            managers.push(Manager::new(writer, None, Set::new()));
            managers.len() - 1
        }
    };
    let m = &mut managers[idx];
    // As kube's managedFieldsUpdater: a write that modified or added any field (even one its
    // manager already owned, like a lease renewal's renewTime) sets the manager's time.
    let modified = !changed.is_empty();
    if !changed.iter().all(|p| m.owns(p)) {
        m.set_mut().extend(changed);
        touched = true;
    }
    if modified || m.time.is_none() {
        let t = now();
        if m.time.as_deref() != Some(t.as_str()) {
            m.time = Some(t);
            touched = true;
        }
    }
    let capped = cap::cap_update_managers(&mut managers);
    if !touched && !capped && sent_stored {
        // Nobody's fields or times changed (a lease renewal by its holder within the second
        // of its last write, which sent the list back): the list is already its own encoding.
        return;
    }
    encode_managers(new, managers);
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_custom;
#[cfg(test)]
mod tests_upgrade;
