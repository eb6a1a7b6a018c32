//! v1 ServiceAccounts (pkg/registry/core/serviceaccount): the Name/Secrets/Age table, and
//! the `token` subresource (a TokenRequest, answered by [`crate::registry::tokens`]). May use: registry (strategy), api.

use crate::api::protobuf::{message, metadata, object_reference, Obj, ProtobufError};
use crate::registry::strategy::{
    age_of, col, len_at, name_of, typed_roundtrip, Column, Input, ResourceInfo, Strategy,
    AGE_COLUMN, NAME_COLUMN, STORED_VERBS,
};
use crate::registry::strategy::{schema_of, text, KindSchema, Names};
use k8s_pb::api::core;
use serde_json::{Map, Value};

/// What discovery reports for serviceaccounts.
pub(crate) static INFO: ResourceInfo = ResourceInfo {
    group: text(""),
    version: text("v1"),
    resource: text("serviceaccounts"),
    singular: text("serviceaccount"),
    kind: text("ServiceAccount"),
    namespaced: true,
    short_names: Names::Static(&["sa"]),
    categories: Names::Static(&[]),
    verbs: STORED_VERBS,
    subresources: &[("token", &["create"])],
    schema: KindSchema::Typed(schema_of::<k8s_openapi::api::core::v1::ServiceAccount>),
    protobuf: Some(from_protobuf),
};

/// The serviceaccount strategy.
pub(crate) struct ServiceAccounts;

impl Strategy for ServiceAccounts {
    fn info(&self) -> &ResourceInfo {
        &INFO
    }
    fn canonicalize(&self, obj: Input<'_>) -> Result<(Value, Vec<String>), String> {
        typed_roundtrip::<k8s_openapi::api::core::v1::ServiceAccount>(obj)
    }
    fn columns(&self) -> Vec<Column> {
        vec![
            NAME_COLUMN,
            col("Secrets", "string", "Secrets is a list of the secrets in the same namespace that pods running using this ServiceAccount are allowed to use."),
            AGE_COLUMN,
        ]
    }
    fn cells(&self, obj: &Value) -> Vec<Value> {
        vec![
            name_of(obj).into(),
            Value::from(len_at(obj, "/secrets") as i64),
            age_of(obj),
        ]
    }
}

/// Decodes the protobuf form of the object (client-go's typed clients send it).
pub(crate) fn from_protobuf(raw: &[u8]) -> Result<Map<String, Value>, ProtobufError> {
    Ok(service_account(message::<core::v1::ServiceAccount>(raw, "ServiceAccount")?).into_map())
}

fn service_account(s: core::v1::ServiceAccount) -> Obj {
    metadata(&s.metadata)
        .list("secrets", &s.secrets, object_reference)
        .list("imagePullSecrets", &s.image_pull_secrets, |r| {
            Obj::default().str("name", &r.name)
        })
        .opt_bool(
            "automountServiceAccountToken",
            s.automount_service_account_token,
        )
}
