//! ValidatingAdmissionPolicies (v1) and MutatingAdmissionPolicies (v1beta1)
//! (pkg/registry/admissionregistration/{validating,mutating}admissionpolicy): defaults,
//! validation (see [`super::validation_policies`]), metadata.generation moved on a change of
//! the spec, and the Name/Validations|Mutations/ParamKind/Age table. A ValidatingAdmissionPolicy
//! has a status that only its `status` subresource writes (the type-checking controller's), and
//! whose writes keep the spec: the two strategies of upstream's storage.
//! May use: registry (strategy, error), api.

use super::validation::child;
use super::validation_policies::{
    same_match_conditions, validate_mutating_policy, validate_validating_policy,
    validate_validating_policy_status,
};
use super::{defaults, protobuf, GROUP};
use crate::registry::error::FieldError;
use crate::registry::strategy::{
    age_of, col, len_at, name_of, schema_of, status_update, str_at, text, typed_roundtrip, Column,
    Input, KindSchema, Names, ResourceInfo, Strategy, AGE_COLUMN, NAME_COLUMN, STORED_VERBS,
};
use k8s_openapi::api::admissionregistration::{v1, v1beta1};
use serde_json::{json, Value};

/// What discovery reports for validatingadmissionpolicies.
pub(crate) static VALIDATING: ResourceInfo = ResourceInfo {
    group: text(GROUP),
    version: text("v1"),
    resource: text("validatingadmissionpolicies"),
    singular: text("validatingadmissionpolicy"),
    kind: text("ValidatingAdmissionPolicy"),
    namespaced: false,
    short_names: Names::Static(&[]),
    categories: Names::Static(&["api-extensions"]),
    verbs: STORED_VERBS,
    subresources: &[("status", &["get", "patch", "update"])],
    schema: KindSchema::Typed(schema_of::<v1::ValidatingAdmissionPolicy>),
    protobuf: Some(protobuf::validating_admission_policy),
};

/// What discovery reports for mutatingadmissionpolicies.
pub(crate) static MUTATING: ResourceInfo = ResourceInfo {
    group: text(GROUP),
    version: text("v1beta1"),
    resource: text("mutatingadmissionpolicies"),
    singular: text("mutatingadmissionpolicy"),
    kind: text("MutatingAdmissionPolicy"),
    namespaced: false,
    short_names: Names::Static(&[]),
    categories: Names::Static(&["api-extensions"]),
    verbs: STORED_VERBS,
    subresources: &[],
    schema: KindSchema::Typed(schema_of::<v1beta1::MutatingAdmissionPolicy>),
    protobuf: Some(protobuf::mutating_admission_policy),
};

/// The strategy of both policy kinds (validatingAdmissionPolicyStrategy and its status
/// strategy; mutatingAdmissionPolicyStrategy).
pub(crate) struct Policies {
    mutating: bool,
}

impl Policies {
    /// MutatingAdmissionPolicies.
    pub(crate) const MUTATING: Policies = Policies { mutating: true };
    /// ValidatingAdmissionPolicies.
    pub(crate) const VALIDATING: Policies = Policies { mutating: false };

    fn validate_spec(&self, obj: &Value, ignore_match_conditions: bool) -> Vec<FieldError> {
        if self.mutating {
            validate_mutating_policy(obj, ignore_match_conditions)
        } else {
            validate_validating_policy(obj, ignore_match_conditions)
        }
    }
}

/// The ParamKind cell: `apiVersion/kind`, or `<unset>`.
pub(super) fn param_kind_cell(obj: &Value) -> Value {
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    match child(spec, "paramKind") {
        Some(k) => format!("{}/{}", str_at(k, "/apiVersion"), str_at(k, "/kind")).into(),
        None => "<unset>".into(),
    }
}

impl Strategy for Policies {
    fn info(&self) -> &ResourceInfo {
        if self.mutating {
            &MUTATING
        } else {
            &VALIDATING
        }
    }

    fn canonicalize(&self, obj: Input<'_>) -> Result<(Value, Vec<String>), String> {
        let (mut out, unknown) = if self.mutating {
            typed_roundtrip::<v1beta1::MutatingAdmissionPolicy>(obj)?
        } else {
            typed_roundtrip::<v1::ValidatingAdmissionPolicy>(obj)?
        };
        defaults::policy(&mut out);
        Ok((out, unknown))
    }

    /// PrepareForCreate: a new policy starts with an empty status.
    fn prepare_for_create(&self, obj: &mut Value) {
        if let Some(m) = obj.as_object_mut() {
            if self.mutating {
                m.remove("status");
            } else {
                m.insert("status".into(), json!({}));
            }
        }
    }

    /// PrepareForUpdate: the main resource does not write the status.
    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        if let Some(m) = new.as_object_mut() {
            match old.get("status") {
                Some(s) => m.insert("status".into(), s.clone()),
                None => m.remove("status"),
            };
        }
    }

    /// The status strategy's PrepareForUpdate: everything but the status comes from `old`.
    fn prepare_for_subresource_update(&self, sub: &str, new: &mut Value, old: &Value) -> bool {
        if self.mutating || sub != "status" {
            return false;
        }
        status_update(new, old);
        true
    }

    fn validate(&self, obj: &Value) -> Vec<FieldError> {
        self.validate_spec(obj, false)
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        self.validate_spec(new, same_match_conditions(new, old))
    }

    fn validate_subresource_update(
        &self,
        _sub: &str,
        new: &Value,
        _old: &Value,
    ) -> Vec<FieldError> {
        validate_validating_policy_status(new)
    }

    fn uses_generation(&self) -> bool {
        true
    }

    /// printValidatingAdmissionPolicy / printMutatingAdmissionPolicy.
    fn columns(&self) -> Vec<Column> {
        let count = if self.mutating {
            col(
                "Mutations",
                "integer",
                "Mutation indicates the number of mutations rules defined in this configuration",
            )
        } else {
            col(
                "Validations",
                "integer",
                "Validations indicates the number of validation rules defined in this configuration",
            )
        };
        vec![
            NAME_COLUMN,
            count,
            col(
                "ParamKind",
                "string",
                "ParamKind specifies the kind of resources used to parameterize this policy",
            ),
            AGE_COLUMN,
        ]
    }

    fn cells(&self, obj: &Value) -> Vec<Value> {
        let list = if self.mutating {
            "/spec/mutations"
        } else {
            "/spec/validations"
        };
        vec![
            Value::from(name_of(obj)),
            Value::from(len_at(obj, list)),
            param_kind_cell(obj),
            age_of(obj),
        ]
    }
}
