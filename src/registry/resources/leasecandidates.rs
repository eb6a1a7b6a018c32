//! coordination.k8s.io/v1beta1 LeaseCandidates (pkg/registry/coordination/leasecandidate):
//! required leaseName/binaryVersion/strategy, semantic versions, immutable leaseName, and the
//! Name/LeaseName/BinaryVersion/EmulationVersion/Age table. May use: registry (strategy), api.

use super::leases::{validate_strategy, OLDEST_EMULATION_VERSION};
use crate::api::protobuf::{message, metadata, Obj, ProtobufError};
use crate::registry::error::FieldError;
use crate::registry::strategy::{
    age_of, col, name_of, str_at, typed_roundtrip, Column, Input, ResourceInfo, Strategy,
    AGE_COLUMN, NAME_COLUMN, STORED_VERBS,
};
use crate::registry::strategy::{schema_of, text, KindSchema, Names};
use k8s_pb::api::coordination;
use serde_json::{Map, Value};

/// What discovery reports for leasecandidates.
pub(crate) static INFO: ResourceInfo = ResourceInfo {
    group: text("coordination.k8s.io"),
    version: text("v1beta1"),
    resource: text("leasecandidates"),
    singular: text("leasecandidate"),
    kind: text("LeaseCandidate"),
    namespaced: true,
    short_names: Names::Static(&[]),
    categories: Names::Static(&[]),
    verbs: STORED_VERBS,
    subresources: &[],
    schema: KindSchema::Typed(schema_of::<k8s_openapi::api::coordination::v1beta1::LeaseCandidate>),
    protobuf: Some(from_protobuf),
};

/// semver.ParseTolerant: optional `v`, 1–3 numeric parts, optional `-pre` / `+build`.
fn parse_version(s: &str) -> Result<(u64, u64, u64), String> {
    let t = s.trim().trim_start_matches('v');
    let core = t.split(['-', '+']).next().unwrap_or("");
    let parts: Vec<&str> = core.split('.').collect();
    if parts.is_empty() || parts.len() > 3 || parts.iter().any(|p| p.is_empty()) {
        return Err("No Major.Minor.Patch elements found".into());
    }
    let mut nums = [0u64; 3];
    for (i, p) in parts.iter().enumerate() {
        nums[i] = p
            .parse()
            .map_err(|_| format!("Invalid character(s) found in version {p:?}"))?;
    }
    Ok((nums[0], nums[1], nums[2]))
}

/// The lease candidate strategy.
pub(crate) struct LeaseCandidates;

impl Strategy for LeaseCandidates {
    fn info(&self) -> &ResourceInfo {
        &INFO
    }
    fn canonicalize(&self, obj: Input<'_>) -> Result<(Value, Vec<String>), String> {
        typed_roundtrip::<k8s_openapi::api::coordination::v1beta1::LeaseCandidate>(obj)
    }
    fn validate(&self, obj: &Value) -> Vec<FieldError> {
        let mut errs = Vec::new();
        let lease = str_at(obj, "/spec/leaseName");
        if lease.is_empty() {
            errs.push(FieldError::required("spec.leaseName", ""));
        }
        let ev = str_at(obj, "/spec/emulationVersion");
        let evp = if ev.is_empty() {
            None
        } else {
            match parse_version(ev) {
                Ok(v) => Some(v),
                Err(e) => {
                    errs.push(FieldError::invalid("spec.emulationVersion", ev, e));
                    None
                }
            }
        };
        let bv = str_at(obj, "/spec/binaryVersion");
        if bv.is_empty() {
            errs.push(FieldError::required("spec.binaryVersion", ""));
        } else {
            match parse_version(bv) {
                Ok(b) => {
                    if evp.is_some_and(|e| b < e) {
                        errs.push(FieldError::invalid(
                            "spec.binaryVersion",
                            bv,
                            "must be greater than or equal to `emulationVersion`",
                        ));
                    }
                }
                Err(e) => errs.push(FieldError::invalid("spec.binaryVersion", bv, e)),
            }
        }
        let strategy = str_at(obj, "/spec/strategy");
        if strategy.is_empty() {
            errs.push(FieldError::required("spec.strategy", ""));
        } else {
            errs.extend(validate_strategy("spec.strategy", strategy));
            if strategy == OLDEST_EMULATION_VERSION && ev.is_empty() {
                errs.push(FieldError::required(
                    "spec.emulationVersion",
                    "must be specified when `strategy` is 'OldestEmulationVersion'",
                ));
            }
        }
        errs
    }
    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        let mut errs = self.validate(new);
        let (n, o) = (
            str_at(new, "/spec/leaseName"),
            str_at(old, "/spec/leaseName"),
        );
        if n != o {
            errs.push(FieldError::invalid(
                "spec.leaseName",
                n,
                "field is immutable",
            ));
        }
        errs
    }
    fn columns(&self) -> Vec<Column> {
        vec![
            NAME_COLUMN,
            col("LeaseName", "string", "LeaseName is the name of the lease for which this candidate is contending. The limits on this field are the same as on Lease.name. Multiple lease candidates may reference the same Lease.name. This field is immutable."),
            col("BinaryVersion", "string", ""),
            col("EmulationVersion", "string", ""),
            AGE_COLUMN,
        ]
    }
    fn cells(&self, obj: &Value) -> Vec<Value> {
        vec![
            name_of(obj).into(),
            str_at(obj, "/spec/leaseName").into(),
            str_at(obj, "/spec/binaryVersion").into(),
            str_at(obj, "/spec/emulationVersion").into(),
            age_of(obj),
        ]
    }
}

/// Decodes the protobuf form of the object (client-go's typed clients send it).
pub(crate) fn from_protobuf(raw: &[u8]) -> Result<Map<String, Value>, ProtobufError> {
    Ok(
        lease_candidate(message::<coordination::v1beta1::LeaseCandidate>(
            raw,
            "LeaseCandidate",
        )?)
        .into_map(),
    )
}

fn lease_candidate(l: coordination::v1beta1::LeaseCandidate) -> Obj {
    let spec = l.spec.as_ref().map(|s| {
        Obj::default()
            .str("leaseName", &s.lease_name)
            .micro_time("pingTime", &s.ping_time)
            .micro_time("renewTime", &s.renew_time)
            .str("binaryVersion", &s.binary_version)
            .str("emulationVersion", &s.emulation_version)
            .str("strategy", &s.strategy)
    });
    metadata(&l.metadata).obj("spec", spec)
}
