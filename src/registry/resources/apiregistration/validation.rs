//! kube-aggregator's pkg/apis/apiregistration/validation: an APIService's name is
//! `<version>.<group>`, its group and version are DNS names, its priorities are in range, and a
//! local APIService (no service) has no TLS settings. Messages and field paths are upstream's.
//! Works on the canonical JSON of an object. May use: registry (error, validation), api.

use crate::api::At;
use crate::registry::apiextensions::validation::dns1035_label_errors;
use crate::registry::error::{FieldError, FieldErrorKind};
use crate::registry::strategy::str_at;
use crate::registry::validation::{
    name_errors, path_segment_errors, validate_object_meta, validate_object_meta_update, NameRule,
};
use base64::Engine as _;
use serde_json::Value;

/// The condition statuses (ConditionTrue, ConditionFalse, ConditionUnknown).
const CONDITION_STATUSES: [&str; 3] = ["True", "False", "Unknown"];

/// ValidateObjectMeta with the APIService name rule: a path segment that is exactly
/// `spec.version + "." + spec.group`.
fn validate_meta(obj: &Value) -> Vec<FieldError> {
    let mut errs = validate_object_meta(obj, false, NameRule::Subdomain);
    // The store's name rule is not ours: its verdict on a given name is replaced.
    errs.retain(|e| !(e.field == "metadata.name" && e.kind == FieldErrorKind::Invalid));
    let name = str_at(obj, "/metadata/name");
    if name.is_empty() {
        return errs;
    }
    let mut ours = path_segment_errors(name);
    let required = format!(
        "{}.{}",
        str_at(obj, "/spec/version"),
        str_at(obj, "/spec/group")
    );
    if ours.is_empty() && name != required {
        ours.push(format!(
            "must be `spec.version+\".\"+spec.group`: {}",
            crate::registry::error::quote(&required)
        ));
    }
    let ours = ours
        .into_iter()
        .map(|e| FieldError::invalid("metadata.name", name, e));
    errs.splice(0..0, ours);
    errs
}

/// The number of bytes of the base64 `caBundle`.
fn ca_bundle_len(spec: &Value) -> usize {
    let b64 = spec.get("caBundle").and_then(Value::as_str).unwrap_or("");
    base64::engine::general_purpose::STANDARD
        .decode(b64)
        .map_or(b64.len(), |b| b.len())
}

/// ValidateAPIService.
pub(super) fn validate_api_service(obj: &Value) -> Vec<FieldError> {
    let mut errs = validate_meta(obj);
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let group = str_at(spec, "/group");
    let version = str_at(spec, "/version");
    if group.is_empty() && version != "v1" {
        errs.push(FieldError::required(
            "spec.group",
            "only v1 may have an empty group and it better be legacy kube",
        ));
    }
    if !group.is_empty() {
        for e in name_errors(group, NameRule::Subdomain) {
            errs.push(FieldError::invalid("spec.group", group, e));
        }
    }
    for e in dns1035_label_errors(version) {
        errs.push(FieldError::invalid("spec.version", version, e));
    }
    let int = |key: &str| spec.get(key).and_then(Value::as_i64).unwrap_or(0);
    let group_priority = int("groupPriorityMinimum");
    if !(1..=20000).contains(&group_priority) {
        errs.push(FieldError::invalid_raw(
            "spec.groupPriorityMinimum",
            group_priority,
            "must be positive and less than 20000",
        ));
    }
    let version_priority = int("versionPriority");
    if !(1..=1000).contains(&version_priority) {
        errs.push(FieldError::invalid_raw(
            "spec.versionPriority",
            version_priority,
            "must be positive and less than 1000",
        ));
    }
    let insecure = spec.get("insecureSkipTLSVerify").and_then(Value::as_bool) == Some(true);
    let ca_bundle = ca_bundle_len(spec);
    let Some(service) = spec.get("service").filter(|s| !s.is_null()) else {
        if ca_bundle != 0 {
            errs.push(FieldError::invalid(
                "spec.caBundle",
                &format!("{ca_bundle} bytes"),
                "local APIServices may not have a caBundle",
            ));
        }
        if insecure {
            errs.push(FieldError::invalid_raw(
                "spec.insecureSkipTLSVerify",
                true,
                "local APIServices may not have insecureSkipTLSVerify",
            ));
        }
        return errs;
    };
    for key in ["namespace", "name"] {
        if str_at(service, &format!("/{key}")).is_empty() {
            errs.push(FieldError::required(format!("spec.service.{key}"), ""));
        }
    }
    // The v1 default is 443; an explicit 0 (or a value out of range) is refused.
    let port = service.get("port").and_then(Value::as_i64).unwrap_or(0);
    if !(1..=65535).contains(&port) {
        errs.push(FieldError::invalid_raw(
            "spec.service.port",
            port,
            "port is not valid: must be between 1 and 65535, inclusive",
        ));
    }
    if insecure && ca_bundle > 0 {
        errs.push(FieldError::invalid_raw(
            "spec.insecureSkipTLSVerify",
            true,
            "may not be true if caBundle is present",
        ));
    }
    errs
}

/// ValidateAPIServiceUpdate.
pub(super) fn validate_api_service_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let mut errs = validate_object_meta_update(new, old);
    errs.extend(validate_api_service(new));
    errs
}

/// ValidateAPIServiceStatusUpdate: each condition's status is True, False or Unknown.
pub(super) fn validate_api_service_status_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let mut errs = validate_object_meta_update(new, old);
    let conditions = new
        .at("/status/conditions")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    for (i, c) in conditions.iter().enumerate() {
        let status = str_at(c, "/status");
        if !CONDITION_STATUSES.contains(&status) {
            errs.push(FieldError::not_supported(
                format!("status.conditions[{i}].status"),
                status,
                &CONDITION_STATUSES,
            ));
        }
    }
    errs
}
