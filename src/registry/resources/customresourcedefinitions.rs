//! apiextensions.k8s.io/v1 CustomResourceDefinitions (apiextensions-apiserver's
//! pkg/registry/customresourcedefinition): v1 defaulting, validation with upstream's messages
//! and paths, status kept apart from spec, metadata.generation and status.storedVersions, and
//! the first step of a delete (the cleanup finalizer and the Terminating condition; the
//! finalizing controller deletes the custom objects and then the finalizer).
//! May use: registry (strategy, error, apiextensions), api.

use crate::api::At;
use crate::registry::apiextensions::validation::{
    set_defaults, validate_crd, validate_crd_status_update, validate_crd_update,
};
use crate::registry::error::FieldError;
use crate::registry::strategy::{
    schema_of, text, typed_roundtrip, Input, KindSchema, Names, ResourceInfo, Strategy,
    STORED_VERBS,
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde_json::{json, Value};

/// What discovery reports for customresourcedefinitions.
pub(crate) static INFO: ResourceInfo = ResourceInfo {
    group: text("apiextensions.k8s.io"),
    version: text("v1"),
    resource: text("customresourcedefinitions"),
    singular: text("customresourcedefinition"),
    kind: text("CustomResourceDefinition"),
    namespaced: false,
    short_names: Names::Static(&["crd", "crds"]),
    categories: Names::Static(&["api-extensions"]),
    verbs: STORED_VERBS,
    subresources: &[("status", &["get", "patch", "update"])],
    schema: KindSchema::Typed(schema_of::<CustomResourceDefinition>),
    protobuf: None,
};

/// The finalizer that holds a deleted CRD until its objects are gone
/// (apiextensions.CustomResourceCleanupFinalizer).
pub(crate) const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

/// The customresourcedefinition strategy.
pub(crate) struct CustomResourceDefinitions;

/// The typed form of a CRD (already canonical, so it decodes).
fn typed(obj: &Value) -> Option<CustomResourceDefinition> {
    serde_json::from_value(obj.clone()).ok()
}

/// Errors of a value that does not decode as a CRD (cannot happen after canonicalize).
fn undecodable() -> Vec<FieldError> {
    vec![FieldError::invalid(
        "",
        "",
        "the object is not a CustomResourceDefinition",
    )]
}

impl Strategy for CustomResourceDefinitions {
    fn info(&self) -> &ResourceInfo {
        &INFO
    }

    fn canonicalize(&self, obj: Input<'_>) -> Result<(Value, Vec<String>), String> {
        let (obj, unknown) = typed_roundtrip::<CustomResourceDefinition>(obj)?;
        // The v1 defaults (SetDefaults_CustomResourceDefinition...), as the decoder applies them.
        let mut crd: CustomResourceDefinition =
            serde_json::from_value(obj).map_err(|e| e.to_string())?;
        set_defaults(&mut crd);
        let obj = serde_json::to_value(&crd).map_err(|e| e.to_string())?;
        Ok((obj, unknown))
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        let stored = storage_version(obj);
        if let Some(m) = obj.as_object_mut() {
            m.insert(
                "status".into(),
                json!({"acceptedNames": {"kind": "", "plural": ""}, "storedVersions": stored.into_iter().collect::<Vec<_>>()}),
            );
        }
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        let status = old.get("status").cloned().unwrap_or_else(|| json!({}));
        if let Some(m) = new.as_object_mut() {
            m.insert("status".into(), status);
        }
        if let Some(v) = storage_version(new) {
            add_stored_version(new, &v);
        }
    }

    /// The status strategy of upstream's CRD storage: spec, labels, annotations, owner
    /// references and generation come from `old`; status and finalizers from the request (the
    /// finalizing controller removes its finalizer this way).
    fn prepare_for_subresource_update(&self, sub: &str, new: &mut Value, old: &Value) -> bool {
        if sub != "status" {
            return false;
        }
        crate::registry::strategy::keep_spec_and_meta(
            new,
            old,
            &["labels", "annotations", "ownerReferences", "generation"],
        );
        true
    }

    fn validate(&self, obj: &Value) -> Vec<FieldError> {
        typed(obj).map_or_else(undecodable, |crd| validate_crd(&crd))
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        match (typed(new), typed(old)) {
            (Some(n), Some(o)) => validate_crd_update(&n, &o),
            _ => undecodable(),
        }
    }

    fn validate_subresource_update(&self, _sub: &str, new: &Value, old: &Value) -> Vec<FieldError> {
        match (typed(new), typed(old)) {
            (Some(n), Some(o)) => validate_crd_status_update(&n, &o),
            _ => undecodable(),
        }
    }

    fn validates_object_meta(&self) -> bool {
        true
    }

    fn uses_generation(&self) -> bool {
        true
    }

    /// The REST Delete of upstream's CRD storage: the first DELETE adds the cleanup finalizer
    /// and the Terminating condition and keeps the object; the finalizing controller does
    /// the rest.
    fn begin_delete(&self, obj: &mut Value) -> bool {
        if obj.at("/metadata/deletionTimestamp").is_some() {
            return false;
        }
        if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
            let finalizers = meta.entry("finalizers").or_insert_with(|| json!([]));
            if let Some(list) = finalizers.as_array_mut() {
                if !list.iter().any(|f| f == CLEANUP_FINALIZER) {
                    list.push(Value::from(CLEANUP_FINALIZER));
                }
            }
        }
        set_condition(
            obj,
            "Terminating",
            "True",
            "InstanceDeletionPending",
            "CustomResourceDefinition marked for deletion; instance deletion pending",
        );
        true
    }
}

/// The name of the version with `storage: true`.
fn storage_version(obj: &Value) -> Option<String> {
    obj.at("/spec/versions")
        .and_then(Value::as_array)?
        .iter()
        .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        .and_then(|v| v.get("name").and_then(Value::as_str))
        .map(str::to_string)
}

/// Appends `version` to status.storedVersions unless it is there.
fn add_stored_version(obj: &mut Value, version: &str) {
    let Some(m) = obj.as_object_mut() else {
        return;
    };
    let status = m.entry("status").or_insert_with(|| json!({}));
    let Some(status) = status.as_object_mut() else {
        return;
    };
    let stored = status.entry("storedVersions").or_insert_with(|| json!([]));
    if !stored.is_array() {
        *stored = json!([]);
    }
    if let Some(list) = stored.as_array_mut() {
        if !list.iter().any(|v| v == version) {
            list.push(Value::from(version));
        }
    }
}

/// SetCRDCondition: sets a condition of `status.conditions`, moving lastTransitionTime only
/// when the status changes.
pub(crate) fn set_condition(
    obj: &mut Value,
    type_: &str,
    status: &str,
    reason: &str,
    message: &str,
) {
    let Some(m) = obj.as_object_mut() else {
        return;
    };
    let st = m.entry("status").or_insert_with(|| json!({}));
    let Some(st) = st.as_object_mut() else {
        return;
    };
    let conditions = st.entry("conditions").or_insert_with(|| json!([]));
    if !conditions.is_array() {
        *conditions = json!([]);
    }
    let Some(list) = conditions.as_array_mut() else {
        return;
    };
    let now = crate::api::time::now_rfc3339();
    match list
        .iter_mut()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(type_))
    {
        Some(c) => {
            if c.get("status").and_then(Value::as_str) != Some(status) {
                c["lastTransitionTime"] = Value::from(now);
            }
            c["status"] = Value::from(status);
            c["reason"] = Value::from(reason);
            c["message"] = Value::from(message);
        }
        None => list.push(json!({
            "type": type_,
            "status": status,
            "lastTransitionTime": now,
            "reason": reason,
            "message": message,
        })),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crd() -> Value {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "crontabs.stable.example.com"},
            "spec": {
                "group": "stable.example.com",
                "names": {"plural": "crontabs", "kind": "CronTab"},
                "scope": "Namespaced",
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object"}}}]
            }
        })
    }

    #[test]
    fn canonical_form_has_the_v1_defaults() {
        let (obj, unknown) = CustomResourceDefinitions
            .canonicalize(Input::Value(crd()))
            .unwrap();
        assert!(unknown.is_empty());
        assert_eq!(obj.at("/spec/names/singular"), Some(&json!("crontab")));
        assert_eq!(obj.at("/spec/names/listKind"), Some(&json!("CronTabList")));
        assert_eq!(obj.at("/spec/conversion/strategy"), Some(&json!("None")));
    }

    #[test]
    fn create_resets_status_and_records_the_storage_version() {
        let mut obj = crd();
        obj["status"] = json!({"conditions": [{"type": "Established", "status": "True"}]});
        CustomResourceDefinitions.prepare_for_create(&mut obj);
        assert_eq!(
            obj["status"],
            json!({"acceptedNames": {"kind": "", "plural": ""}, "storedVersions": ["v1"]})
        );
    }

    #[test]
    fn update_keeps_status_and_adds_a_new_storage_version() {
        let mut old = crd();
        CustomResourceDefinitions.prepare_for_create(&mut old);
        let mut new = crd();
        new["spec"]["versions"] = json!([
            {"name": "v1", "served": true, "storage": false, "schema": {"openAPIV3Schema": {"type": "object"}}},
            {"name": "v2", "served": true, "storage": true, "schema": {"openAPIV3Schema": {"type": "object"}}}
        ]);
        new["status"] = json!({"storedVersions": []});
        CustomResourceDefinitions.prepare_for_update(&mut new, &old);
        assert_eq!(new.at("/status/storedVersions"), Some(&json!(["v1", "v2"])));
    }

    #[test]
    fn a_bad_name_is_refused_with_upstreams_message() {
        let mut obj = crd();
        obj["metadata"]["name"] = json!("crontabs");
        let (obj, _) = CustomResourceDefinitions
            .canonicalize(Input::Value(obj))
            .unwrap();
        let errs = CustomResourceDefinitions.validate(&obj);
        assert!(
            errs.iter().any(|e| e.field == "metadata.name"
                && e.detail == "must be spec.names.plural+\".\"+spec.group"),
            "{errs:?}"
        );
    }

    #[test]
    fn first_delete_adds_the_finalizer_and_terminating() {
        let mut obj = crd();
        assert!(CustomResourceDefinitions.begin_delete(&mut obj));
        assert_eq!(
            obj.at("/metadata/finalizers"),
            Some(&json!([CLEANUP_FINALIZER]))
        );
        assert_eq!(
            obj.at("/status/conditions/0/reason"),
            Some(&json!("InstanceDeletionPending"))
        );
        obj["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        assert!(!CustomResourceDefinitions.begin_delete(&mut obj));
    }
}
