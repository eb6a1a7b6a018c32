//! v1 Namespaces (pkg/registry/core/namespace): cluster-scoped, DNS-label names, phase Active
//! and the `kubernetes` finalizer on create, `status` and `finalize` subresources, DELETE
//! marking the namespace Terminating (the namespace controller empties it and removes the
//! finalizer through `finalize`, which deletes it), immortal system namespaces.
//! May use: registry (strategy), api.

use crate::api::protobuf::{message, metadata, Obj, ProtobufError};
use crate::api::selectors::qualified_name_errors;
use crate::registry::error::FieldError;
use crate::registry::store::{now_rfc3339, IMMORTAL_NAMESPACES};
use crate::registry::strategy::{
    age_of, col, name_of, str_at, typed_roundtrip, Column, Input, ResourceInfo, Strategy,
    AGE_COLUMN, NAME_COLUMN,
};
use crate::registry::strategy::{schema_of, text, KindSchema, Names};
use crate::registry::validation::NameRule;
use k8s_pb::api::core;
use serde_json::{json, Map, Value};

/// What discovery reports for namespaces (no deletecollection, as in kube).
pub(crate) static INFO: ResourceInfo = ResourceInfo {
    group: text(""),
    version: text("v1"),
    resource: text("namespaces"),
    singular: text("namespace"),
    kind: text("Namespace"),
    namespaced: false,
    short_names: Names::Static(&["ns"]),
    categories: Names::Static(&[]),
    verbs: &[
        "create", "delete", "get", "list", "patch", "update", "watch",
    ],
    subresources: &[
        ("finalize", &["update"]),
        ("status", &["get", "patch", "update"]),
    ],
    schema: KindSchema::Typed(schema_of::<k8s_openapi::api::core::v1::Namespace>),
    protobuf: Some(from_protobuf),
};

/// The namespace strategy.
pub(crate) struct Namespaces;

fn spec_finalizers(obj: &Value) -> Vec<Value> {
    obj.pointer("/spec/finalizers")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

fn set(obj: &mut Value, key: &str, value: Value) {
    if let Some(m) = obj.as_object_mut() {
        m.insert(key.into(), value);
    }
}

impl Strategy for Namespaces {
    fn info(&self) -> &ResourceInfo {
        &INFO
    }
    fn canonicalize(&self, obj: Input<'_>) -> Result<(Value, Vec<String>), String> {
        typed_roundtrip::<k8s_openapi::api::core::v1::Namespace>(obj)
    }
    fn name_rule(&self) -> NameRule {
        NameRule::Label
    }
    fn prepare_for_create(&self, obj: &mut Value) {
        let mut finalizers = spec_finalizers(obj);
        if !finalizers.iter().any(|f| f == "kubernetes") {
            finalizers.push(Value::from("kubernetes"));
        }
        set(obj, "spec", json!({ "finalizers": finalizers }));
        set(obj, "status", json!({ "phase": "Active" }));
        // kube labels every namespace with its name (NamespaceDefaultLabelName).
        let name = name_of(obj).to_string();
        let meta = crate::registry::store::metadata_mut(obj);
        let labels = meta.entry("labels").or_insert_with(|| json!({}));
        if let (Some(l), false) = (labels.as_object_mut(), name.is_empty()) {
            l.insert("kubernetes.io/metadata.name".into(), Value::from(name));
        }
    }
    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        set(
            new,
            "spec",
            old.get("spec").cloned().unwrap_or_else(|| json!({})),
        );
        set(
            new,
            "status",
            old.get("status").cloned().unwrap_or_else(|| json!({})),
        );
        let name = name_of(old).to_string();
        let meta = crate::registry::store::metadata_mut(new);
        let labels = meta.entry("labels").or_insert_with(|| json!({}));
        if let Some(l) = labels.as_object_mut() {
            l.insert("kubernetes.io/metadata.name".into(), Value::from(name));
        }
    }
    fn prepare_for_subresource_update(&self, sub: &str, new: &mut Value, old: &Value) -> bool {
        match sub {
            "status" => {
                let status = new.get("status").cloned();
                let meta = new.get("metadata").cloned();
                *new = old.clone();
                set(new, "status", status.unwrap_or_else(|| json!({})));
                if let Some(m) = meta {
                    set(new, "metadata", m);
                }
                true
            }
            "finalize" => {
                let finalizers = spec_finalizers(new);
                let rv = new.pointer("/metadata/resourceVersion").cloned();
                *new = old.clone();
                set(new, "spec", json!({ "finalizers": finalizers }));
                if let (Some(rv), Some(m)) =
                    (rv, new.get_mut("metadata").and_then(Value::as_object_mut))
                {
                    m.insert("resourceVersion".into(), rv);
                }
                true
            }
            _ => false,
        }
    }
    fn validate(&self, obj: &Value) -> Vec<FieldError> {
        let mut errs = Vec::new();
        for (i, f) in spec_finalizers(obj).iter().enumerate() {
            let f = f.as_str().unwrap_or("");
            for e in qualified_name_errors(f) {
                errs.push(FieldError::invalid(format!("spec.finalizers[{i}]"), f, e));
            }
        }
        errs
    }
    fn admit_delete(&self, name: &str) -> Result<(), String> {
        if IMMORTAL_NAMESPACES.contains(&name) {
            return Err("this namespace may not be deleted".into());
        }
        Ok(())
    }
    fn begin_delete(&self, obj: &mut Value) -> bool {
        if obj.pointer("/metadata/deletionTimestamp").is_none() {
            let meta = crate::registry::store::metadata_mut(obj);
            meta.insert("deletionTimestamp".into(), Value::from(now_rfc3339()));
            meta.insert("deletionGracePeriodSeconds".into(), Value::from(0));
            let status = obj
                .as_object_mut()
                .map(|m| m.entry("status").or_insert_with(|| json!({})));
            if let Some(Value::Object(s)) = status {
                s.insert("phase".into(), Value::from("Terminating"));
            }
            return true;
        }
        !spec_finalizers(obj).is_empty()
    }
    fn may_delete(&self, obj: &Value) -> bool {
        spec_finalizers(obj).is_empty()
    }
    /// v1's field label conversion for namespaces allows status.phase (and metadata.name);
    /// the bare `name` that NamespaceToSelectableFields also sets is refused before it.
    fn supports_field(&self, field: &str) -> bool {
        field == "status.phase"
    }
    fn field(&self, obj: &Value, field: &str) -> Option<String> {
        (field == "status.phase").then(|| str_at(obj, "/status/phase").to_string())
    }
    fn columns(&self) -> Vec<Column> {
        vec![
            NAME_COLUMN,
            col("Status", "string", "The status of the namespace"),
            AGE_COLUMN,
        ]
    }
    fn cells(&self, obj: &Value) -> Vec<Value> {
        vec![
            name_of(obj).into(),
            str_at(obj, "/status/phase").into(),
            age_of(obj),
        ]
    }
    fn return_deleted_object(&self) -> bool {
        true
    }
}

/// Decodes the protobuf form of the object (client-go's typed clients send it).
pub(crate) fn from_protobuf(raw: &[u8]) -> Result<Map<String, Value>, ProtobufError> {
    Ok(namespace(message::<core::v1::Namespace>(raw, "Namespace")?).into_map())
}

fn namespace(n: core::v1::Namespace) -> Obj {
    let spec = n
        .spec
        .as_ref()
        .map(|s| Obj::default().strs("finalizers", &s.finalizers));
    let status = n.status.as_ref().map(|s| {
        Obj::default()
            .str("phase", &s.phase)
            .list("conditions", &s.conditions, |c| {
                Obj::default()
                    .str("type", &c.r#type)
                    .str("status", &c.status)
                    .time("lastTransitionTime", &c.last_transition_time)
                    .str("reason", &c.reason)
                    .str("message", &c.message)
            })
    });
    metadata(&n.metadata)
        .obj("spec", spec)
        .obj("status", status)
}
