//! Roles and ClusterRoles (pkg/registry/rbac/role, clusterrole): policy rule validation, a
//! ClusterRole's aggregationRule selectors, and the default Name/Created At table (upstream
//! has no printer for either). May use: registry (strategy, error), api.

use super::validation::{
    validate_cluster_role, validate_cluster_role_update, validate_role, validate_role_update,
};
use super::GROUP;
use crate::api::protobuf::{message, metadata, Obj, ProtobufError};
use crate::registry::error::Error;
use crate::registry::error::FieldError;
use crate::registry::rbac::escalation::check_role;
use crate::registry::strategy::{
    schema_of, text, typed_roundtrip, Column, Input, KindSchema, Names, ResourceInfo, Strategy,
    AGE_COLUMN, NAME_COLUMN, STORED_VERBS,
};
use crate::registry::Context;
use k8s_openapi::api::rbac::v1 as api;
use k8s_pb::api::rbac::v1 as pb;
use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
use serde_json::{Map, Value};

/// What discovery reports for roles (no short names, no categories).
pub(crate) static ROLES: ResourceInfo = ResourceInfo {
    group: text(GROUP),
    version: text("v1"),
    resource: text("roles"),
    singular: text("role"),
    kind: text("Role"),
    namespaced: true,
    short_names: Names::Static(&[]),
    categories: Names::Static(&[]),
    verbs: STORED_VERBS,
    subresources: &[],
    schema: KindSchema::Typed(schema_of::<api::Role>),
    protobuf: Some(role_from_protobuf),
};

/// What discovery reports for clusterroles.
pub(crate) static CLUSTER_ROLES: ResourceInfo = ResourceInfo {
    group: text(GROUP),
    version: text("v1"),
    resource: text("clusterroles"),
    singular: text("clusterrole"),
    kind: text("ClusterRole"),
    namespaced: false,
    short_names: Names::Static(&[]),
    categories: Names::Static(&[]),
    verbs: STORED_VERBS,
    subresources: &[],
    schema: KindSchema::Typed(schema_of::<api::ClusterRole>),
    protobuf: Some(cluster_role_from_protobuf),
};

/// The table of rest.NewDefaultTableConvertor, which both role kinds use: the name and the
/// creation time as RFC 3339 (the default cells of [`Strategy::cells`]).
fn default_columns() -> Vec<Column> {
    vec![
        NAME_COLUMN,
        Column {
            name: text("Created At"),
            type_: text("date"),
            ..AGE_COLUMN
        },
    ]
}

/// The strategy of Roles and of ClusterRoles (role.Strategy, clusterrole.Strategy): they
/// differ in scope and in the ClusterRole's aggregationRule.
pub(crate) struct Roles {
    cluster: bool,
}

impl Roles {
    /// Roles.
    pub(crate) const NAMESPACED: Roles = Roles { cluster: false };
    /// ClusterRoles.
    pub(crate) const CLUSTER: Roles = Roles { cluster: true };
}

impl Strategy for Roles {
    fn info(&self) -> &ResourceInfo {
        if self.cluster {
            &CLUSTER_ROLES
        } else {
            &ROLES
        }
    }
    fn canonicalize(&self, obj: Input<'_>) -> Result<(Value, Vec<String>), String> {
        if self.cluster {
            typed_roundtrip::<api::ClusterRole>(obj)
        } else {
            typed_roundtrip::<api::Role>(obj)
        }
    }
    fn validates_object_meta(&self) -> bool {
        true
    }
    fn allow_create_on_update(&self) -> bool {
        true
    }
    fn validate(&self, obj: &Value) -> Vec<FieldError> {
        if self.cluster {
            validate_cluster_role(obj, false)
        } else {
            validate_role(obj)
        }
    }
    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        if self.cluster {
            validate_cluster_role_update(new, old)
        } else {
            validate_role_update(new, old)
        }
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
                check_role(access, resource, &ctx.namespace, new, old)
            }
            None => Ok(()),
        }
    }
    fn columns(&self) -> Vec<Column> {
        default_columns()
    }
}

/// Decodes the protobuf form of a Role (client-go's typed clients send it).
pub(crate) fn role_from_protobuf(raw: &[u8]) -> Result<Map<String, Value>, ProtobufError> {
    let r = message::<pb::Role>(raw, "Role")?;
    Ok(metadata(&r.metadata)
        .list("rules", &r.rules, policy_rule)
        .into_map())
}

/// Decodes the protobuf form of a ClusterRole.
pub(crate) fn cluster_role_from_protobuf(raw: &[u8]) -> Result<Map<String, Value>, ProtobufError> {
    let r = message::<pb::ClusterRole>(raw, "ClusterRole")?;
    let aggregation = r.aggregation_rule.as_ref().map(|a| {
        Obj::default().list(
            "clusterRoleSelectors",
            &a.cluster_role_selectors,
            label_selector,
        )
    });
    Ok(metadata(&r.metadata)
        .list("rules", &r.rules, policy_rule)
        .obj("aggregationRule", aggregation)
        .into_map())
}

/// A PolicyRule: `verbs` has no omitempty.
fn policy_rule(r: &pb::PolicyRule) -> Obj {
    let verbs = r.verbs.iter().cloned().map(Value::String).collect();
    Obj::default()
        .put("verbs", Value::Array(verbs))
        .strs("apiGroups", &r.api_groups)
        .strs("resources", &r.resources)
        .strs("resourceNames", &r.resource_names)
        .strs("nonResourceURLs", &r.non_resource_ur_ls)
}

/// A metav1.LabelSelector: a requirement's key and operator have no omitempty.
fn label_selector(s: &meta::LabelSelector) -> Obj {
    Obj::default().str_map("matchLabels", &s.match_labels).list(
        "matchExpressions",
        &s.match_expressions,
        |q| {
            Obj::default()
                .put("key", Value::from(q.key.clone().unwrap_or_default()))
                .put(
                    "operator",
                    Value::from(q.operator.clone().unwrap_or_default()),
                )
                .strs("values", &q.values)
        },
    )
}
