//! ValidatingAdmissionPolicyBindings (v1) and MutatingAdmissionPolicyBindings (v1beta1)
//! (pkg/registry/admissionregistration/{validating,mutating}admissionpolicybinding): defaults,
//! validation (see [`super::validation_policies`]), metadata.generation moved on a change of
//! the spec, and the Name/PolicyName/ParamRef/Age table. May use: registry (strategy, error), api.

use super::validation::{child, items, strs};
use super::validation_policies::{validate_mutating_binding, validate_validating_binding};
use super::{defaults, protobuf, GROUP};
use crate::registry::error::FieldError;
use crate::registry::strategy::{
    age_of, col, name_of, schema_of, str_at, text, typed_roundtrip, Column, Input, KindSchema,
    Names, ResourceInfo, Strategy, AGE_COLUMN, NAME_COLUMN, STORED_VERBS,
};
use k8s_openapi::api::admissionregistration::{v1, v1beta1};
use serde_json::Value;

/// What discovery reports for validatingadmissionpolicybindings.
pub(crate) static VALIDATING: ResourceInfo = ResourceInfo {
    group: text(GROUP),
    version: text("v1"),
    resource: text("validatingadmissionpolicybindings"),
    singular: text("validatingadmissionpolicybinding"),
    kind: text("ValidatingAdmissionPolicyBinding"),
    namespaced: false,
    short_names: Names::Static(&[]),
    categories: Names::Static(&["api-extensions"]),
    verbs: STORED_VERBS,
    subresources: &[],
    schema: KindSchema::Typed(schema_of::<v1::ValidatingAdmissionPolicyBinding>),
    protobuf: Some(protobuf::validating_admission_policy_binding),
};

/// What discovery reports for mutatingadmissionpolicybindings.
pub(crate) static MUTATING: ResourceInfo = ResourceInfo {
    group: text(GROUP),
    version: text("v1beta1"),
    resource: text("mutatingadmissionpolicybindings"),
    singular: text("mutatingadmissionpolicybinding"),
    kind: text("MutatingAdmissionPolicyBinding"),
    namespaced: false,
    short_names: Names::Static(&[]),
    categories: Names::Static(&["api-extensions"]),
    verbs: STORED_VERBS,
    subresources: &[],
    schema: KindSchema::Typed(schema_of::<v1beta1::MutatingAdmissionPolicyBinding>),
    protobuf: Some(protobuf::mutating_admission_policy_binding),
};

/// The strategy of both binding kinds (validatingAdmissionPolicyBindingStrategy,
/// mutatingAdmissionPolicyBindingStrategy).
pub(crate) struct Bindings {
    mutating: bool,
}

impl Bindings {
    /// MutatingAdmissionPolicyBindings.
    pub(crate) const MUTATING: Bindings = Bindings { mutating: true };
    /// ValidatingAdmissionPolicyBindings.
    pub(crate) const VALIDATING: Bindings = Bindings { mutating: false };
}

/// gogo protobuf's String() of a metav1.LabelSelector, which the ParamRef cell shows.
fn go_label_selector(sel: &Value) -> String {
    let labels: Vec<String> = sel
        .get("matchLabels")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(k, v)| format!("{k}: {},", v.as_str().unwrap_or("")))
        .collect();
    let exprs: Vec<String> = items(sel, "matchExpressions")
        .iter()
        .map(|e| {
            format!(
                "LabelSelectorRequirement{{Key:{},Operator:{},Values:[{}],}},",
                str_at(e, "/key"),
                str_at(e, "/operator"),
                strs(e, "values").join(" ")
            )
        })
        .collect();
    format!(
        "&LabelSelector{{MatchLabels:map[string]string{{{}}},MatchExpressions:[]LabelSelectorRequirement{{{}}},}}",
        labels.concat(),
        exprs.concat()
    )
}

/// The ParamRef cell: `namespace/name`, `*/name`, the selector, or `<unset>`.
pub(super) fn param_ref_cell(obj: &Value) -> Value {
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let Some(pr) = child(spec, "paramRef") else {
        return "<unset>".into();
    };
    let (name, namespace) = (str_at(pr, "/name"), str_at(pr, "/namespace"));
    match (name, namespace, child(pr, "selector")) {
        ("", _, Some(sel)) => go_label_selector(sel).into(),
        ("", _, None) => "<unset>".into(),
        (name, "", _) => format!("*/{name}").into(),
        (name, ns, _) => format!("{ns}/{name}").into(),
    }
}

impl Strategy for Bindings {
    fn info(&self) -> &ResourceInfo {
        if self.mutating {
            &MUTATING
        } else {
            &VALIDATING
        }
    }

    fn canonicalize(&self, obj: Input<'_>) -> Result<(Value, Vec<String>), String> {
        let (mut out, unknown) = if self.mutating {
            typed_roundtrip::<v1beta1::MutatingAdmissionPolicyBinding>(obj)?
        } else {
            typed_roundtrip::<v1::ValidatingAdmissionPolicyBinding>(obj)?
        };
        defaults::binding(&mut out);
        Ok((out, unknown))
    }

    fn validate(&self, obj: &Value) -> Vec<FieldError> {
        if self.mutating {
            validate_mutating_binding(obj)
        } else {
            validate_validating_binding(obj)
        }
    }

    fn uses_generation(&self) -> bool {
        true
    }

    /// printValidatingAdmissionPolicyBinding / printMutatingAdmissionPolicyBinding.
    fn columns(&self) -> Vec<Column> {
        vec![
            NAME_COLUMN,
            col(
                "PolicyName",
                "string",
                "PolicyName indicates the policy definition which the policy binding binded to",
            ),
            col(
                "ParamRef",
                "string",
                "ParamRef indicates the param resource which sets the configration param",
            ),
            AGE_COLUMN,
        ]
    }

    fn cells(&self, obj: &Value) -> Vec<Value> {
        vec![
            Value::from(name_of(obj)),
            Value::from(str_at(obj, "/spec/policyName")),
            param_ref_cell(obj),
            age_of(obj),
        ]
    }
}
