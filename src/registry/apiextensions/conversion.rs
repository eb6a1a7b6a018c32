//! Conversion of custom objects between a CRD's versions (apiextensions-apiserver's
//! crConverter): strategy `None` rewrites apiVersion; strategy `Webhook` sends a
//! ConversionReview to the CRD's webhook and checks its answer as webhook_converter.go does
//! (same uid, Success, one object per object sent, the desired apiVersion, the same kind,
//! name, namespace and uid; of metadata only labels and annotations may change). Every
//! failure is a message naming the webhook's kind, as upstream's.
//! May use: registry's webhook client and validation helpers, api.

use crate::api::trace;
use crate::registry::validation::{validate_annotations, validate_labels};
use crate::registry::webhook::{self, Endpoint};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use opentelemetry::KeyValue;
use serde_json::{json, Map, Value};
use std::time::Duration;

/// How long the API server waits for a conversion webhook's answer.
pub(crate) const WEBHOOK_TIMEOUT: Duration = Duration::from_secs(30);

/// How a CRD's objects change version.
pub(crate) enum Converter {
    /// Strategy None: only apiVersion changes.
    None,
    /// Strategy Webhook.
    Webhook(Box<Webhook>),
    /// Strategy Webhook with a client configuration that cannot be used: every conversion
    /// fails with this.
    Unusable(String),
}

/// A conversion webhook and the ConversionReview version it speaks.
pub(crate) struct Webhook {
    endpoint: Endpoint,
    /// The CRD's name, for the call's span.
    crd: String,
    /// `apiextensions.k8s.io/v1` or `/v1beta1`: the first of them in conversionReviewVersions.
    review_api_version: &'static str,
}

impl Converter {
    /// The converter of a CRD's spec.conversion.
    pub(crate) fn of(crd: &CustomResourceDefinition) -> Converter {
        let Some(conversion) = crd.spec.conversion.as_ref() else {
            return Converter::None;
        };
        if conversion.strategy != "Webhook" {
            return Converter::None;
        }
        let Some(hook) = conversion.webhook.as_ref() else {
            return Converter::Unusable("no webhook configured".into());
        };
        let review_api_version =
            hook.conversion_review_versions
                .iter()
                .find_map(|v| match v.as_str() {
                    "v1" => Some("apiextensions.k8s.io/v1"),
                    "v1beta1" => Some("apiextensions.k8s.io/v1beta1"),
                    _ => None,
                });
        let Some(review_api_version) = review_api_version else {
            return Converter::Unusable("no supported conversion review versions".into());
        };
        let Some(config) = hook.client_config.as_ref() else {
            return Converter::Unusable(
                "webhook configuration must have either service or URL".into(),
            );
        };
        match Endpoint::new(config) {
            Ok(endpoint) => Converter::Webhook(Box::new(Webhook {
                endpoint,
                crd: crd.metadata.name.clone().unwrap_or_default(),
                review_api_version,
            })),
            Err(e) => Converter::Unusable(e.to_string()),
        }
    }

    /// The converter, its webhook's connections run on `runtime` ([`Endpoint::on`]).
    pub(crate) fn on(self, runtime: Option<&tokio::runtime::Handle>) -> Converter {
        match self {
            Converter::Webhook(mut w) => {
                w.endpoint = w.endpoint.on(runtime);
                Converter::Webhook(w)
            }
            other => other,
        }
    }

    /// `obj` at apiVersion `to` (`<group>/<version>`); an object already there is returned as
    /// it is.
    ///
    /// # Errors
    ///
    /// The webhook failed or answered something upstream would not accept; the message says
    /// what, as upstream's does.
    pub(crate) fn convert(&self, mut obj: Value, to: &str) -> Result<Value, String> {
        let from = str_of(&obj, "apiVersion");
        if from == to {
            return Ok(obj);
        }
        let webhook = match self {
            Converter::Webhook(w) if !is_empty_object(&obj) => w,
            Converter::Unusable(why) if !is_empty_object(&obj) => {
                return Err(format!(
                    "conversion webhook for {} failed: {why}",
                    gvk(&obj)
                ))
            }
            _ => {
                if let Some(m) = obj.as_object_mut() {
                    m.insert("apiVersion".into(), Value::from(to));
                }
                return Ok(obj);
            }
        };
        webhook.convert(obj, to)
    }
}

impl Webhook {
    fn convert(&self, obj: Value, to: &str) -> Result<Value, String> {
        let gvk = gvk(&obj);
        let uid = crate::api::new_uuid().to_string();
        let review = json!({
            "apiVersion": self.review_api_version,
            "kind": "ConversionReview",
            "request": {"uid": uid, "desiredAPIVersion": to, "objects": [&obj]},
        });
        let failed = |e: String| format!("conversion webhook for {gvk} failed: {e}");
        let body = serde_json::to_vec(&review).map_err(|e| failed(e.to_string()))?;
        // upstream's span of the call (webhook_converter.go); one object per call here.
        let attributes = || {
            vec![
                KeyValue::new("custom-resource-definition", self.crd.clone()),
                KeyValue::new("desired-api-version", to.to_string()),
                KeyValue::new("object-count", 1),
                KeyValue::new("UID", uid.clone()),
            ]
        };
        let call = self.endpoint.post_json(body, WEBHOOK_TIMEOUT);
        let answer = webhook::wait(trace::in_span("Call conversion webhook", attributes, call))
            .map_err(|e| failed(e.to_string()))?;
        let answer: Value = serde_json::from_slice(&answer).map_err(|e| failed(e.to_string()))?;
        let mut converted = self.converted_objects(&uid, answer).map_err(failed)?;
        if converted.len() != 1 {
            return Err(format!(
                "conversion webhook for {gvk} returned {} objects, expected 1",
                converted.len()
            ));
        }
        let mut out = converted.remove(0);
        let invalid = |what: String| {
            format!("conversion webhook for {gvk} returned invalid object at index 0: {what}")
        };
        if !out.is_object() || str_of(&out, "kind").is_empty() {
            return Err(invalid(format!("Object 'Kind' is missing in '{out}'")));
        }
        let got = str_of(&out, "apiVersion");
        if got != to {
            return Err(invalid(format!(
                "invalid groupVersion (expected {to}, received {got})"
            )));
        }
        let (kind, got) = (str_of(&obj, "kind"), str_of(&out, "kind"));
        if kind != got {
            return Err(invalid(format!(
                "invalid kind (expected {kind}, received {got})"
            )));
        }
        if let Err(e) = same_identity(&obj, &out) {
            return Err(format!(
                "conversion webhook for {gvk} returned invalid object: {e}"
            ));
        }
        if let Err(e) = restore_object_meta(&obj, &mut out) {
            return Err(format!(
                "conversion webhook for {gvk} returned invalid metadata: {e}"
            ));
        }
        Ok(out)
    }

    /// response.convertedObjects of a ConversionReview answer (getConvertedObjectsFromResponse).
    fn converted_objects(&self, uid: &str, mut answer: Value) -> Result<Vec<Value>, String> {
        if self.review_api_version.ends_with("/v1") {
            let (v, k) = (str_of(&answer, "apiVersion"), str_of(&answer, "kind"));
            if v != self.review_api_version || k != "ConversionReview" {
                return Err(format!(
                    "expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, got {v}, Kind={k}"
                ));
            }
        }
        let Some(response) = answer.get_mut("response").filter(|r| r.is_object()) else {
            return Err("no response provided".into());
        };
        if self.review_api_version.ends_with("/v1") {
            let got = str_of(response, "uid");
            if got != uid {
                return Err(format!("expected response.uid={uid:?}, got {got:?}"));
            }
        }
        let result = response.get("result");
        let status = result.and_then(|r| r.get("status")).and_then(Value::as_str);
        if status != Some("Success") {
            let message = result
                .and_then(|r| r.get("message"))
                .and_then(Value::as_str)
                .unwrap_or("");
            if !message.is_empty() {
                return Err(message.to_string());
            }
            return Err(format!(
                "response.result.status was '{}', not 'Success'",
                status.unwrap_or("")
            ));
        }
        Ok(
            match response.get_mut("convertedObjects").map(Value::take) {
                Some(Value::Array(objects)) => objects,
                _ => Vec::new(),
            },
        )
    }
}

fn str_of<'a>(obj: &'a Value, field: &str) -> &'a str {
    obj.get(field).and_then(Value::as_str).unwrap_or("")
}

/// A GroupVersionKind as Go prints it: `<group>/<version>, Kind=<kind>`.
fn gvk(obj: &Value) -> String {
    format!(
        "{}, Kind={}",
        str_of(obj, "apiVersion"),
        str_of(obj, "kind")
    )
}

/// An object of only apiVersion and kind (what a delete's options decode into): converted
/// without the webhook, as upstream's isEmptyUnstructuredObject.
fn is_empty_object(obj: &Value) -> bool {
    obj.as_object()
        .is_some_and(|m| m.len() == 2 && m.contains_key("kind") && m.contains_key("apiVersion"))
}

/// validateConvertedObject: name, namespace and uid may not change.
fn same_identity(original: &Value, converted: &Value) -> Result<(), String> {
    for (field, what) in [("name", "name"), ("namespace", "namespace"), ("uid", "UID")] {
        let meta = |o: &Value| {
            o.get("metadata")
                .and_then(|m| m.get(field))
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        let (e, a) = (meta(original), meta(converted));
        if e != a {
            return Err(format!("must have the same {what}: {e} != {a}"));
        }
    }
    Ok(())
}

/// restoreObjectMeta: the converted object keeps the original's metadata, except for the
/// labels and annotations the webhook answered, which must be valid.
fn restore_object_meta(original: &Value, converted: &mut Value) -> Result<(), String> {
    let answered = match converted.get_mut("metadata").map(Value::take) {
        None => return Err("missing metadata in converted object".into()),
        Some(Value::Object(m)) => m,
        Some(other) => {
            return Err(format!(
                "invalid metadata of type {} in converted object",
                go_type(&other)
            ))
        }
    };
    let mut restored = match original.get("metadata") {
        Some(Value::Object(m)) => m.clone(),
        _ => Map::new(),
    };
    for field in ["labels", "annotations"] {
        let value = match answered.get(field) {
            None | Some(Value::Null) => {
                restored.remove(field);
                continue;
            }
            Some(Value::Object(m)) => m,
            Some(other) => {
                return Err(format!(
                    "invalid metadata.{field} of type {} in converted object",
                    go_type(other)
                ))
            }
        };
        if let Some((k, v)) = value.iter().find(|(_, v)| !v.is_string()) {
            return Err(format!(
                "metadata.{field}[{k}] must be a string, but is {} in converted object",
                go_type(v)
            ));
        }
        let changed = restored.get(field).and_then(Value::as_object) != Some(value);
        if changed {
            let v = Value::Object(value.clone());
            let errs = if field == "labels" {
                validate_labels(Some(&v), "metadata.labels")
            } else {
                validate_annotations(Some(&v), "metadata.annotation")
            };
            if !errs.is_empty() {
                return Err(aggregate(&errs));
            }
        }
        restored.insert(field.into(), Value::Object(value.clone()));
    }
    if let Some(m) = converted.as_object_mut() {
        m.insert("metadata".into(), Value::Object(restored));
    }
    Ok(())
}

/// An error list as Go's utilerrors.Aggregate prints it.
fn aggregate(errs: &[crate::registry::error::FieldError]) -> String {
    match errs {
        [one] => one.to_string(),
        many => format!(
            "[{}]",
            many.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// The Go type (`%T`) a JSON value decodes into in an unstructured object.
fn go_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_i64() || n.is_u64() => "int64",
        Value::Number(_) => "float64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

#[cfg(test)]
mod tests;
