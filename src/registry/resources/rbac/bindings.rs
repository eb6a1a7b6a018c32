//! RoleBindings and ClusterRoleBindings (pkg/registry/rbac/rolebinding, clusterrolebinding):
//! the v1 defaults (roleRef and User/Group subject apiGroup), roleRef and subject validation,
//! the immutable roleRef, and the Name/Role/Age/Users/Groups/ServiceAccounts table.
//! May use: registry (strategy, error), api.

use super::validation::{validate_binding, validate_binding_update};
use super::GROUP;
use crate::api::protobuf::{message, metadata, Obj, ProtobufError};
use crate::registry::error::Error;
use crate::registry::error::FieldError;
use crate::registry::rbac::escalation::check_binding;
use crate::registry::strategy::{
    age_of, col, name_of, schema_of, str_at, text, typed_roundtrip, Column, Input, KindSchema,
    Names, ResourceInfo, Strategy, AGE_COLUMN, NAME_COLUMN, STORED_VERBS,
};
use crate::registry::Context;
use k8s_openapi::api::rbac::v1 as api;
use k8s_pb::api::rbac::v1 as pb;
use serde_json::{Map, Value};

/// What discovery reports for rolebindings (no short names, no categories).
pub(crate) static ROLE_BINDINGS: ResourceInfo = ResourceInfo {
    group: text(GROUP),
    version: text("v1"),
    resource: text("rolebindings"),
    singular: text("rolebinding"),
    kind: text("RoleBinding"),
    namespaced: true,
    short_names: Names::Static(&[]),
    categories: Names::Static(&[]),
    verbs: STORED_VERBS,
    subresources: &[],
    schema: KindSchema::Typed(schema_of::<api::RoleBinding>),
    protobuf: Some(role_binding_from_protobuf),
};

/// What discovery reports for clusterrolebindings.
pub(crate) static CLUSTER_ROLE_BINDINGS: ResourceInfo = ResourceInfo {
    group: text(GROUP),
    version: text("v1"),
    resource: text("clusterrolebindings"),
    singular: text("clusterrolebinding"),
    kind: text("ClusterRoleBinding"),
    namespaced: false,
    short_names: Names::Static(&[]),
    categories: Names::Static(&[]),
    verbs: STORED_VERBS,
    subresources: &[],
    schema: KindSchema::Typed(schema_of::<api::ClusterRoleBinding>),
    protobuf: Some(cluster_role_binding_from_protobuf),
};

/// SetDefaults_RoleBinding / SetDefaults_ClusterRoleBinding and SetDefaults_Subject of
/// pkg/apis/rbac/v1, which kube-apiserver applies when it decodes a request: an empty
/// roleRef apiGroup is the RBAC group, and so is that of User and Group subjects.
fn set_defaults(obj: &mut Value) {
    let Some(map) = obj.as_object_mut() else {
        return;
    };
    let role_ref = map
        .entry("roleRef")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Some(r) = role_ref.as_object_mut() {
        if r.get("apiGroup")
            .and_then(Value::as_str)
            .unwrap_or("")
            .is_empty()
        {
            r.insert("apiGroup".into(), Value::from(GROUP));
        }
    }
    let Some(subjects) = map.get_mut("subjects").and_then(Value::as_array_mut) else {
        return;
    };
    for s in subjects.iter_mut().filter_map(Value::as_object_mut) {
        let kind = s.get("kind").and_then(Value::as_str).unwrap_or("");
        let empty = s
            .get("apiGroup")
            .and_then(Value::as_str)
            .unwrap_or("")
            .is_empty();
        if empty && matches!(kind, "User" | "Group") {
            s.insert("apiGroup".into(), Value::from(GROUP));
        }
    }
}

/// Table columns of printRoleBinding / printClusterRoleBinding (always wide on the server):
/// `what` is `roleBinding` or `clusterRoleBinding`, `role_ref` the swagger doc of roleRef.
fn binding_columns(what: &str, role_ref: &'static str) -> Vec<Column> {
    let wide = |name: &'static str| Column {
        priority: 1,
        description: format!("{name} in the {what}").into(),
        ..col(name, "string", "")
    };
    vec![
        NAME_COLUMN,
        col("Role", "string", role_ref),
        AGE_COLUMN,
        wide("Users"),
        wide("Groups"),
        wide("ServiceAccounts"),
    ]
}

/// Cells of printRoleBinding: the role as `Kind/name`, then the subjects of each kind
/// (rbac.SubjectsStrings: service accounts as `namespace/name`), joined with ", ".
fn binding_cells(obj: &Value) -> Vec<Value> {
    let (mut users, mut groups, mut sas) = (Vec::new(), Vec::new(), Vec::new());
    let subjects = obj.get("subjects").and_then(Value::as_array);
    for s in subjects.into_iter().flatten() {
        let name = str_at(s, "/name");
        match str_at(s, "/kind") {
            "ServiceAccount" => sas.push(format!("{}/{name}", str_at(s, "/namespace"))),
            "User" => users.push(name.to_string()),
            "Group" => groups.push(name.to_string()),
            _ => {}
        }
    }
    vec![
        name_of(obj).into(),
        format!(
            "{}/{}",
            str_at(obj, "/roleRef/kind"),
            str_at(obj, "/roleRef/name")
        )
        .into(),
        age_of(obj),
        users.join(", ").into(),
        groups.join(", ").into(),
        sas.join(", ").into(),
    ]
}

/// The strategy of RoleBindings and of ClusterRoleBindings (rolebinding.Strategy,
/// clusterrolebinding.Strategy): they differ in scope only.
pub(crate) struct Bindings {
    cluster: bool,
}

impl Bindings {
    /// RoleBindings.
    pub(crate) const NAMESPACED: Bindings = Bindings { cluster: false };
    /// ClusterRoleBindings.
    pub(crate) const CLUSTER: Bindings = Bindings { cluster: true };
}

impl Strategy for Bindings {
    fn info(&self) -> &ResourceInfo {
        if self.cluster {
            &CLUSTER_ROLE_BINDINGS
        } else {
            &ROLE_BINDINGS
        }
    }
    fn canonicalize(&self, obj: Input<'_>) -> Result<(Value, Vec<String>), String> {
        if self.cluster {
            typed_roundtrip::<api::ClusterRoleBinding>(obj)
        } else {
            typed_roundtrip::<api::RoleBinding>(obj)
        }
    }
    fn prepare_for_create(&self, obj: &mut Value) {
        set_defaults(obj);
    }
    fn prepare_for_update(&self, new: &mut Value, _old: &Value) {
        set_defaults(new);
    }
    fn validates_object_meta(&self) -> bool {
        true
    }
    fn allow_create_on_update(&self) -> bool {
        true
    }
    fn validate(&self, obj: &Value) -> Vec<FieldError> {
        validate_binding(obj, self.cluster)
    }
    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        validate_binding_update(new, old, self.cluster)
    }
    fn authorize_write(
        &self,
        ctx: &Context,
        new: &Value,
        old: Option<&Value>,
    ) -> Result<(), Error> {
        match &ctx.access {
            Some(access) => {
                let resource = &self.info().resource;
                check_binding(access, resource, &ctx.namespace, new, old)
            }
            None => Ok(()),
        }
    }
    fn columns(&self) -> Vec<Column> {
        if self.cluster {
            binding_columns(
                "clusterRoleBinding",
                "RoleRef can only reference a ClusterRole in the global namespace. If the RoleRef cannot be resolved, the Authorizer must return an error.",
            )
        } else {
            binding_columns(
                "roleBinding",
                "RoleRef can reference a Role in the current namespace or a ClusterRole in the global namespace. If the RoleRef cannot be resolved, the Authorizer must return an error.",
            )
        }
    }
    fn cells(&self, obj: &Value) -> Vec<Value> {
        binding_cells(obj)
    }
}

/// Decodes the protobuf form of a RoleBinding (client-go's typed clients send it).
pub(crate) fn role_binding_from_protobuf(raw: &[u8]) -> Result<Map<String, Value>, ProtobufError> {
    let b = message::<pb::RoleBinding>(raw, "RoleBinding")?;
    Ok(binding(&b.metadata, &b.subjects, &b.role_ref))
}

/// Decodes the protobuf form of a ClusterRoleBinding.
pub(crate) fn cluster_role_binding_from_protobuf(
    raw: &[u8],
) -> Result<Map<String, Value>, ProtobufError> {
    let b = message::<pb::ClusterRoleBinding>(raw, "ClusterRoleBinding")?;
    Ok(binding(&b.metadata, &b.subjects, &b.role_ref))
}

/// A string field without omitempty: present even when empty or unset.
fn always(o: Obj, key: &str, v: &Option<String>) -> Obj {
    o.put(key, Value::from(v.clone().unwrap_or_default()))
}

fn binding(
    meta: &Option<k8s_pb::apimachinery::pkg::apis::meta::v1::ObjectMeta>,
    subjects: &[pb::Subject],
    role_ref: &Option<pb::RoleRef>,
) -> Map<String, Value> {
    let r = role_ref.clone().unwrap_or_default();
    let role_ref = always(
        always(
            always(Obj::default(), "apiGroup", &r.api_group),
            "kind",
            &r.kind,
        ),
        "name",
        &r.name,
    );
    metadata(meta)
        .list("subjects", subjects, |s| {
            let o = always(Obj::default(), "kind", &s.kind).str("apiGroup", &s.api_group);
            always(o, "name", &s.name).str("namespace", &s.namespace)
        })
        .obj("roleRef", Some(role_ref))
        .into_map()
}
