//! The access reviews (pkg/registry/authorization): a SubjectAccessReview family object is
//! validated as upstream validates it, turned into the attributes of a request, and answered
//! by the server's authorizer; a SelfSubjectRulesReview lists the rules the authorizer holds
//! for the requesting user.

use super::{Asker, Review};
use crate::api::{RequestInfo, UserInfo};
use crate::registry::error::{Error, FieldError, Result};
use serde_json::{json, Value};

const GROUP: &str = "authorization.k8s.io";

fn str_field<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

fn present(v: &Value, key: &str) -> bool {
    v.get(key).is_some_and(|a| !a.is_null())
}

/// Go's rendering of a value in a field error (`null` for a nil pointer).
fn go_value(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => "null".into(),
        Some(v) => v.to_string(),
    }
}

/// ValidateSubjectAccessReviewSpec and its Self/Local variants.
fn validate(review: Review, obj: &Value) -> Vec<FieldError> {
    let spec = obj.get("spec").cloned().unwrap_or(Value::Null);
    let (ra, nra) = (
        present(&spec, "resourceAttributes"),
        present(&spec, "nonResourceAttributes"),
    );
    let mut errs = Vec::new();
    if ra && nra {
        errs.push(FieldError::invalid_raw(
            "spec.nonResourceAttributes",
            go_value(spec.get("nonResourceAttributes")),
            "cannot be specified in combination with resourceAttributes",
        ));
    }
    if !ra && !nra {
        errs.push(FieldError::invalid_raw(
            "spec.resourceAttributes",
            "null",
            "exactly one of nonResourceAttributes or resourceAttributes must be specified",
        ));
    }
    if review != Review::Access {
        let groups = spec
            .get("groups")
            .and_then(Value::as_array)
            .is_some_and(|g| !g.is_empty());
        if str_field(&spec, "user").is_empty() && !groups {
            errs.push(FieldError::invalid(
                "spec.user",
                "",
                "at least one of user or group must be specified",
            ));
        }
    }
    if review == Review::LocalAccess && nra {
        errs.push(FieldError::invalid_raw(
            "spec.nonResourceAttributes",
            go_value(spec.get("nonResourceAttributes")),
            "disallowed on this kind of request",
        ));
    }
    // Metadata must be empty (a LocalSubjectAccessReview's namespace aside).
    let mut meta = obj.get("metadata").cloned().unwrap_or_else(|| json!({}));
    if let Some(m) = meta.as_object_mut() {
        m.remove("creationTimestamp");
        m.remove("managedFields");
        if review == Review::LocalAccess {
            m.remove("namespace");
        }
        if !m.is_empty() {
            errs.push(FieldError::invalid_raw(
                "metadata",
                meta.to_string(),
                "must be empty",
            ));
        }
    }
    errs
}

/// AuthorizationAttributesFrom: the request a spec describes.
fn attributes(spec: &Value) -> RequestInfo {
    if let Some(ra) = spec.get("resourceAttributes").filter(|v| !v.is_null()) {
        return RequestInfo {
            is_resource_request: true,
            verb: str_field(ra, "verb").into(),
            api_group: str_field(ra, "group").into(),
            api_version: str_field(ra, "version").into(),
            namespace: str_field(ra, "namespace").into(),
            resource: str_field(ra, "resource").into(),
            subresource: str_field(ra, "subresource").into(),
            name: str_field(ra, "name").into(),
            ..RequestInfo::default()
        };
    }
    let nra = spec.get("nonResourceAttributes").unwrap_or(&Value::Null);
    RequestInfo {
        is_resource_request: false,
        verb: str_field(nra, "verb").into(),
        path: str_field(nra, "path").into(),
        ..RequestInfo::default()
    }
}

/// The user a SubjectAccessReview asks about.
fn subject(spec: &Value) -> UserInfo {
    let strings = |v: Option<&Value>| -> Vec<String> {
        v.and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(String::from)
                    .collect()
            })
            .unwrap_or_default()
    };
    UserInfo {
        name: str_field(spec, "user").into(),
        uid: str_field(spec, "uid").into(),
        groups: strings(spec.get("groups")),
        extra: spec
            .get("extra")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .map(|(k, v)| (k.clone(), strings(Some(v))))
                    .collect()
            })
            .unwrap_or_default(),
    }
}

/// Answers a SubjectAccessReview, LocalSubjectAccessReview or SelfSubjectAccessReview.
pub(super) fn access_review(review: Review, mut obj: Value, asker: &Asker<'_>) -> Result<Value> {
    let kind = &*review.info().kind;
    if review == Review::LocalAccess {
        local_namespace(&mut obj, asker.namespace)?;
    }
    let errs = validate(review, &obj);
    if !errs.is_empty() {
        return Err(Error::invalid(GROUP, kind, "", errs));
    }
    let spec = obj.get("spec").cloned().unwrap_or(Value::Null);
    let attrs = attributes(&spec);
    let decision = if review == Review::Access {
        asker.authorizer.authorize(asker.user, &attrs)
    } else {
        asker.authorizer.authorize(&subject(&spec), &attrs)
    };
    let mut status = json!({ "allowed": decision.allowed() });
    if !decision.reason().is_empty() {
        status["reason"] = Value::from(decision.reason());
    }
    if let Some(m) = obj.as_object_mut() {
        m.insert("status".into(), status);
    }
    Ok(obj)
}

/// A LocalSubjectAccessReview is about the namespace of its path.
fn local_namespace(obj: &mut Value, namespace: &str) -> Result<()> {
    if namespace.is_empty() {
        return Err(Error::BadRequest(
            "namespace is required on this type: ".into(),
        ));
    }
    let meta_ns = obj
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or("");
    if !meta_ns.is_empty() && meta_ns != namespace {
        return Err(Error::BadRequest(
            "the namespace of the provided object does not match the namespace sent on the request"
                .into(),
        ));
    }
    if let Some(m) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        m.insert("namespace".into(), Value::from(namespace));
    }
    let spec_ns = obj
        .pointer("/spec/resourceAttributes/namespace")
        .and_then(Value::as_str);
    if spec_ns.is_some_and(|ns| ns != namespace) {
        return Err(Error::BadRequest(format!(
            "spec.resourceAttributes.namespace must match namespace: {namespace}"
        )));
    }
    Ok(())
}

/// The SelfSubjectRulesReview answer (pkg/registry/authorization/selfsubjectrulesreview): a
/// fresh object with only the rules in its status.
pub(super) fn rules_review(obj: &Value, asker: &Asker<'_>) -> Result<Value> {
    let namespace = obj
        .pointer("/spec/namespace")
        .and_then(Value::as_str)
        .unwrap_or("");
    if namespace.is_empty() {
        return Err(Error::BadRequest("no namespace on request".into()));
    }
    let rules = asker.authorizer.rules_for(asker.user, namespace);
    // PolicyRule serializes as ResourceRule and NonResourceRule do: verbs always, the
    // other lists when not empty.
    let (resource, non_resource) = (json!(rules.resource), json!(rules.non_resource));
    let mut status = json!({
        "resourceRules": resource,
        "nonResourceRules": non_resource,
        "incomplete": rules.incomplete,
    });
    if !rules.evaluation_error.is_empty() {
        status["evaluationError"] = Value::from(rules.evaluation_error);
    }
    Ok(json!({
        "kind": "SelfSubjectRulesReview",
        "apiVersion": "authorization.k8s.io/v1",
        "metadata": { "creationTimestamp": null },
        "spec": {},
        "status": status,
    }))
}
