//! v1 ServiceAccounts (pkg/registry/core/serviceaccount): the Name/Secrets/Age table.
//! The token subresource is not served. May use: registry (strategy), api.

use crate::registry::strategy::{
    age_of, col, len_at, name_of, typed_roundtrip, Column, Input, ResourceInfo, Strategy,
    AGE_COLUMN, NAME_COLUMN, STORED_VERBS,
};
use serde_json::Value;

/// What discovery reports for serviceaccounts.
pub(crate) static INFO: ResourceInfo = ResourceInfo {
    group: "",
    version: "v1",
    resource: "serviceaccounts",
    singular: "serviceaccount",
    kind: "ServiceAccount",
    namespaced: true,
    short_names: &["sa"],
    categories: &[],
    verbs: STORED_VERBS,
    subresources: &[],
    schema: crate::registry::strategy::schema_of::<k8s_openapi::api::core::v1::ServiceAccount>,
};

/// The serviceaccount strategy.
pub(crate) struct ServiceAccounts;

impl Strategy for ServiceAccounts {
    fn info(&self) -> &'static ResourceInfo {
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
