//! Applying what a mutation returned (policy/mutating/patch): an apply configuration is
//! merged into the object with server-side apply's merge (ApplyStructuredMergeDiff), a JSON
//! Patch is applied as evanphx/json-patch applies it (a failed `test` leaves the object as it
//! was).

use super::Attributes;
use crate::api::GroupVersionKind;
use serde_json::Value;

/// Server-side apply's merge (structured-merge-diff's typed Merge), which ApplyConfiguration
/// mutations use; the layer that implements server-side apply provides it
/// ([`super::Chain::set_merge`]).
pub(crate) trait Merge: Send + Sync {
    /// `patch` merged into `object`, an object of `gvk` (`schema`: a custom resource's
    /// structural schema): maps and structs merged, lists of type map merged by their keys,
    /// sets unioned, atomic values replaced.
    ///
    /// # Errors
    ///
    /// The patch sets an atomic list, map or struct (`invalid ApplyConfiguration: may not
    /// mutate atomic arrays, maps or structs: <paths>`), or cannot be merged.
    fn merge(
        &self,
        gvk: &GroupVersionKind,
        schema: Option<&Value>,
        object: &Value,
        patch: &Value,
    ) -> Result<Value, String>;
}

/// `config` (an `Object{...}` the expression returned) merged into `object`.
///
/// # Errors
///
/// Upstream's `error applying patch: ...`.
pub(super) fn apply_configuration(
    merge: Option<&dyn Merge>,
    attrs: &Attributes<'_>,
    object: &Value,
    mut config: Value,
) -> Result<Value, String> {
    // The patch is of the object's kind, whatever the expression said (SetGroupVersionKind).
    if let Some(c) = config.as_object_mut() {
        for key in ["apiVersion", "kind"] {
            match object.get(key) {
                Some(v) => c.insert(key.to_string(), v.clone()),
                None => c.remove(key),
            };
        }
    }
    let merge = merge.ok_or("error applying patch: type converter must not be nil")?;
    let gvk = GroupVersionKind::new(attrs.group, attrs.version, attrs.kind);
    let schema = attrs.schema.map(|s| s.value());
    merge
        .merge(&gvk, schema, object, &config)
        .map_err(|e| format!("error applying patch: {e}"))
}

/// The JSON Patch `ops` applied to `object`.
///
/// # Errors
///
/// An operation is malformed or does not apply (`JSON Patch: ...`).
pub(super) fn json_patch(object: &Value, ops: Value) -> Result<Value, String> {
    let patch: json_patch::Patch =
        serde_json::from_value(ops).map_err(|e| format!("JSON Patch: {e}"))?;
    let mut doc = object.clone();
    match json_patch::patch(&mut doc, &patch) {
        Ok(()) => Ok(doc),
        Err(e) if matches!(e.kind, json_patch::PatchErrorKind::TestFailed) => Ok(object.clone()),
        Err(e) => Err(format!("JSON Patch: {e}")),
    }
}
