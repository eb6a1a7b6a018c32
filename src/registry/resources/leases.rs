//! coordination.k8s.io/v1 Leases (pkg/registry/coordination/lease): spec validation
//! (leaseDurationSeconds > 0, leaseTransitions >= 0, strategy/preferredHolder) and the
//! Name/Holder/Age table. May use: registry (strategy), api.

use crate::api::json::same_except;
use crate::api::protobuf::{message, metadata, Obj, ProtobufError};
use crate::api::At;
use crate::registry::error::FieldError;
use crate::registry::strategy::{
    age_of, col, name_of, str_at, typed_roundtrip, Column, Input, ResourceInfo, Strategy,
    AGE_COLUMN, NAME_COLUMN, STORED_VERBS,
};
use crate::registry::strategy::{schema_of, text, KindSchema, Names};
use k8s_pb::api::coordination;
use serde_json::{Map, Value};

/// What discovery reports for leases (no short names).
pub(crate) static INFO: ResourceInfo = ResourceInfo {
    group: text("coordination.k8s.io"),
    version: text("v1"),
    resource: text("leases"),
    singular: text("lease"),
    kind: text("Lease"),
    namespaced: true,
    short_names: Names::Static(&[]),
    categories: Names::Static(&[]),
    verbs: STORED_VERBS,
    subresources: &[],
    schema: KindSchema::Typed(schema_of::<k8s_openapi::api::coordination::v1::Lease>),
    protobuf: Some(from_protobuf),
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
    fn info(&self) -> &ResourceInfo {
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
    fn has_renewals(&self) -> bool {
        true
    }

    /// A renewal by the holder (client-go's leader election, node heartbeats): a new
    /// `spec.renewTime` and what every write changes (resourceVersion, managedFields); the
    /// holder, durations, transitions and all other metadata as they were.
    fn is_renewal(&self, old: &Value, new: &Value) -> bool {
        // Both without the part, or both with it and equal but for `skip`.
        let part = |key: &str, skip: &[&str]| match (old.get(key), new.get(key)) {
            (None, None) => true,
            (Some(o), Some(n)) => same_except(o, n, skip),
            _ => false,
        };
        same_except(old, new, &["metadata", "spec"])
            && part("metadata", &["resourceVersion", "managedFields"])
            && part("spec", &["renewTime"])
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

/// Decodes the protobuf form of the object (client-go's typed clients send it).
pub(crate) fn from_protobuf(raw: &[u8]) -> Result<Map<String, Value>, ProtobufError> {
    Ok(lease(message::<coordination::v1::Lease>(raw, "Lease")?).into_map())
}

fn lease(l: coordination::v1::Lease) -> Obj {
    let spec = l.spec.as_ref().map(|s| {
        Obj::default()
            .opt_str("holderIdentity", &s.holder_identity)
            .opt_int(
                "leaseDurationSeconds",
                s.lease_duration_seconds.map(i64::from),
            )
            .micro_time("acquireTime", &s.acquire_time)
            .micro_time("renewTime", &s.renew_time)
            .opt_int("leaseTransitions", s.lease_transitions.map(i64::from))
            .opt_str("strategy", &s.strategy)
            .opt_str("preferredHolder", &s.preferred_holder)
    });
    metadata(&l.metadata).obj("spec", spec)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_renewal_changes_the_renew_time_and_nothing_the_holder_set() {
        let old = json!({"kind": "Lease",
            "metadata": {"name": "l", "resourceVersion": "5", "labels": {"a": "1"},
                "managedFields": [{"manager": "m", "time": "2026-12-01T10:00:00Z"}]},
            "spec": {"holderIdentity": "h", "leaseDurationSeconds": 15,
                "renewTime": "2026-12-01T10:00:00.000000Z"}});
        let with = |path: &[&str], v: Value| {
            let mut o = old.clone();
            let (last, parents) = path.split_last().unwrap();
            let at = parents.iter().fold(&mut o, |o, p| &mut o[*p]);
            match v {
                Value::Null => {
                    at.as_object_mut().unwrap().remove(*last);
                }
                v => at[*last] = v,
            }
            o
        };
        let renewal = |new: &Value| Leases.is_renewal(&old, new);
        let t = json!("2026-12-01T10:00:10.000000Z");
        assert!(renewal(&with(&["spec", "renewTime"], t.clone())));
        let renewed = with(&["spec", "renewTime"], t);
        let mut written = renewed.clone();
        written["metadata"]["resourceVersion"] = json!("6");
        written["metadata"]["managedFields"][0]["time"] = json!("2026-12-01T10:00:10Z");
        assert!(
            renewal(&written),
            "resourceVersion and managedFields change with every write"
        );
        assert!(renewal(&with(&["spec", "renewTime"], Value::Null)));
        for changed in [
            with(&["spec", "holderIdentity"], json!("h2")),
            with(&["spec", "leaseDurationSeconds"], Value::Null),
            with(&["spec", "leaseTransitions"], json!(1)),
            with(&["metadata", "labels", "a"], json!("2")),
            with(&["metadata", "finalizers"], json!(["f"])),
            with(&["kind"], Value::Null),
        ] {
            assert!(!renewal(&changed), "{changed}");
        }
    }
}
