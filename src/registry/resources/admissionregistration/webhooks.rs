//! MutatingWebhookConfigurations and ValidatingWebhookConfigurations
//! (pkg/registry/admissionregistration/{mutating,validating}webhookconfiguration): the v1
//! defaults, validation (see [`super::validation_webhooks`]), metadata.generation moved on a
//! change of the webhooks, and the Name/Webhooks/Age table. May use: registry (strategy,
//! error), api.

use super::validation::items;
use super::validation_webhooks::{validate_configuration, Options};
use super::{defaults, protobuf, GROUP};
use crate::registry::error::FieldError;
use crate::registry::strategy::{
    age_of, col, name_of, schema_of, text, typed_roundtrip, Column, Input, KindSchema, Names,
    ResourceInfo, Strategy, AGE_COLUMN, NAME_COLUMN, STORED_VERBS,
};
use k8s_openapi::api::admissionregistration::v1 as api;
use serde_json::Value;

/// What discovery reports for mutatingwebhookconfigurations.
pub(crate) static MUTATING: ResourceInfo = ResourceInfo {
    group: text(GROUP),
    version: text("v1"),
    resource: text("mutatingwebhookconfigurations"),
    singular: text("mutatingwebhookconfiguration"),
    kind: text("MutatingWebhookConfiguration"),
    namespaced: false,
    short_names: Names::Static(&[]),
    categories: Names::Static(&["api-extensions"]),
    verbs: STORED_VERBS,
    subresources: &[],
    schema: KindSchema::Typed(schema_of::<api::MutatingWebhookConfiguration>),
    protobuf: Some(protobuf::mutating_webhook_configuration),
};

/// What discovery reports for validatingwebhookconfigurations.
pub(crate) static VALIDATING: ResourceInfo = ResourceInfo {
    group: text(GROUP),
    version: text("v1"),
    resource: text("validatingwebhookconfigurations"),
    singular: text("validatingwebhookconfiguration"),
    kind: text("ValidatingWebhookConfiguration"),
    namespaced: false,
    short_names: Names::Static(&[]),
    categories: Names::Static(&["api-extensions"]),
    verbs: STORED_VERBS,
    subresources: &[],
    schema: KindSchema::Typed(schema_of::<api::ValidatingWebhookConfiguration>),
    protobuf: Some(protobuf::validating_webhook_configuration),
};

/// The strategy of both webhook configuration kinds (mutatingWebhookConfigurationStrategy,
/// validatingWebhookConfigurationStrategy): they differ in the mutating webhook's
/// reinvocationPolicy.
pub(crate) struct WebhookConfigurations {
    mutating: bool,
}

impl WebhookConfigurations {
    /// MutatingWebhookConfigurations.
    pub(crate) const MUTATING: WebhookConfigurations = WebhookConfigurations { mutating: true };
    /// ValidatingWebhookConfigurations.
    pub(crate) const VALIDATING: WebhookConfigurations = WebhookConfigurations { mutating: false };
}

/// The indexes of the webhooks that do not set sideEffects: the typed struct has no unset
/// state for it, and upstream tells an unset one (Required) from an empty one (Unsupported).
fn unset_side_effects(obj: &Value) -> Vec<usize> {
    items(obj, "webhooks")
        .iter()
        .enumerate()
        .filter(|(_, h)| h.get("sideEffects").is_none_or(Value::is_null))
        .map(|(i, _)| i)
        .collect()
}

impl Strategy for WebhookConfigurations {
    fn info(&self) -> &ResourceInfo {
        if self.mutating {
            &MUTATING
        } else {
            &VALIDATING
        }
    }

    fn canonicalize(&self, obj: Input<'_>) -> Result<(Value, Vec<String>), String> {
        let raw = match obj {
            Input::Value(v) => v,
            Input::Json(body) => serde_json::from_slice(body).map_err(|e| e.to_string())?,
        };
        let unset = unset_side_effects(&raw);
        let (mut out, unknown) = if self.mutating {
            typed_roundtrip::<api::MutatingWebhookConfiguration>(Input::Value(raw))?
        } else {
            typed_roundtrip::<api::ValidatingWebhookConfiguration>(Input::Value(raw))?
        };
        if let Some(hooks) = out.get_mut("webhooks").and_then(Value::as_array_mut) {
            for i in unset {
                if let Some(h) = hooks.get_mut(i).and_then(Value::as_object_mut) {
                    h.remove("sideEffects");
                }
            }
        }
        defaults::webhook_configuration(&mut out, self.mutating);
        Ok((out, unknown))
    }

    fn validate(&self, obj: &Value) -> Vec<FieldError> {
        validate_configuration(obj, self.mutating, Options::CREATE)
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        validate_configuration(new, self.mutating, Options::update(new, old))
    }

    fn uses_generation(&self) -> bool {
        true
    }

    /// printMutatingWebhook / printValidatingWebhook.
    fn columns(&self) -> Vec<Column> {
        vec![
            NAME_COLUMN,
            col(
                "Webhooks",
                "integer",
                "Webhooks indicates the number of webhooks registered in this configuration",
            ),
            AGE_COLUMN,
        ]
    }

    fn cells(&self, obj: &Value) -> Vec<Value> {
        vec![
            Value::from(name_of(obj)),
            Value::from(items(obj, "webhooks").len()),
            age_of(obj),
        ]
    }
}
