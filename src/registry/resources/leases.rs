//! coordination.k8s.io/v1 Leases (pkg/registry/coordination/lease): spec validation
//! (leaseDurationSeconds > 0, leaseTransitions >= 0, strategy/preferredHolder) and the
//! Name/Holder/Age table. May use: registry (strategy), api.

use crate::api::At;
use crate::registry::error::FieldError;
use crate::registry::strategy::{
    age_of, col, name_of, str_at, typed_roundtrip, Column, Input, ResourceInfo, Strategy,
    AGE_COLUMN, NAME_COLUMN, STORED_VERBS,
};
use serde_json::Value;

/// What discovery reports for leases (no short names).
pub(crate) static INFO: ResourceInfo = ResourceInfo {
    group: "coordination.k8s.io",
    version: "v1",
    resource: "leases",
    singular: "lease",
    kind: "Lease",
    namespaced: true,
    short_names: &[],
    categories: &[],
    verbs: STORED_VERBS,
    subresources: &[],
};

/// The one strategy name kube knows (CoordinatedLeaseStrategy).
pub(crate) const OLDEST_EMULATION_VERSION: &str = "OldestEmulationVersion";

/// ValidateCoordinatedLeaseStrategy.
pub(crate) fn validate_strategy(field: &str, s: &str) -> Vec<FieldError> {
    if s == OLDEST_EMULATION_VERSION {
        return vec![];
    }
    let parts: Vec<&str> = s.split('/').collect();
    if parts.len() == 2 && !parts[0].is_empty() && !parts[1].is_empty() {
        return vec![];
    }
    vec![FieldError::not_supported(
        field,
        s,
        &[OLDEST_EMULATION_VERSION],
    )]
}

/// The lease strategy.
pub(crate) struct Leases;

impl Strategy for Leases {
    fn info(&self) -> &'static ResourceInfo {
        &INFO
    }
    fn canonicalize(&self, obj: Input<'_>) -> Result<(Value, Vec<String>), String> {
        typed_roundtrip::<k8s_openapi::api::coordination::v1::Lease>(obj)
    }
    fn validate(&self, obj: &Value) -> Vec<FieldError> {
        let mut errs = Vec::new();
        if let Some(d) = obj.at("/spec/leaseDurationSeconds").and_then(Value::as_i64) {
            if d <= 0 {
                errs.push(FieldError::invalid_raw(
                    "spec.leaseDurationSeconds",
                    d,
                    "must be greater than 0",
                ));
            }
        }
        if let Some(t) = obj.at("/spec/leaseTransitions").and_then(Value::as_i64) {
            if t < 0 {
                errs.push(FieldError::invalid_raw(
                    "spec.leaseTransitions",
                    t,
                    "must be greater than or equal to 0",
                ));
            }
        }
        let strategy = str_at(obj, "/spec/strategy");
        if !strategy.is_empty() {
            errs.extend(validate_strategy("spec.strategy", strategy));
        }
        if !str_at(obj, "/spec/preferredHolder").is_empty() && strategy.is_empty() {
            errs.push(FieldError::forbidden(
                "spec.preferredHolder",
                "may only be specified if `strategy` is defined",
            ));
        }
        errs
    }
    fn columns(&self) -> Vec<Column> {
        vec![
            NAME_COLUMN,
            col("Holder", "string", "holderIdentity contains the identity of the holder of a current lease. If Coordinated Leader Election is used, the holder identity must be equal to the elected LeaseCandidate.metadata.name field."),
            AGE_COLUMN,
        ]
    }
    fn cells(&self, obj: &Value) -> Vec<Value> {
        vec![
            name_of(obj).into(),
            str_at(obj, "/spec/holderIdentity").into(),
            age_of(obj),
        ]
    }
}
