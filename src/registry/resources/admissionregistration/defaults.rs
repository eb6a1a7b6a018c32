//! The defaults kube-apiserver applies when it decodes these objects
//! (pkg/apis/admissionregistration/v1/defaults.go and v1beta1/defaults.go, through their
//! zz_generated SetObjectDefaults functions), on the canonical JSON. v1 gives no default to a
//! webhook's sideEffects or admissionReviewVersions, nor to a paramRef's
//! parameterNotFoundAction (only v1alpha1 did): validation requires them.
//! May use: nothing beyond serde_json.

use serde_json::{json, Map, Value};

/// Sets `key` to `value` when it is absent or null.
fn default(map: &mut Map<String, Value>, key: &str, value: Value) {
    if map.get(key).is_none_or(Value::is_null) {
        map.insert(key.into(), value);
    }
}

/// The objects of the array at `key` of `obj`.
fn each<'a>(obj: &'a mut Value, key: &str) -> impl Iterator<Item = &'a mut Map<String, Value>> {
    obj.get_mut(key)
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object_mut)
}

/// SetDefaults_Rule: scope `*`.
fn rule(rule: &mut Map<String, Value>) {
    default(rule, "scope", json!("*"));
}

/// SetDefaults_ValidatingWebhook / SetDefaults_MutatingWebhook, with SetDefaults_Rule on its
/// rules and SetDefaults_ServiceReference (port 443) on its service.
fn webhook(hook: &mut Value, mutating: bool) {
    for r in each(hook, "rules") {
        rule(r);
    }
    let Some(h) = hook.as_object_mut() else {
        return;
    };
    default(h, "failurePolicy", json!("Fail"));
    default(h, "matchPolicy", json!("Equivalent"));
    default(h, "namespaceSelector", json!({}));
    default(h, "objectSelector", json!({}));
    default(h, "timeoutSeconds", json!(10));
    if mutating {
        default(h, "reinvocationPolicy", json!("Never"));
    }
    let service = h
        .get_mut("clientConfig")
        .and_then(|c| c.get_mut("service"))
        .and_then(Value::as_object_mut);
    if let Some(service) = service {
        default(service, "port", json!(443));
    }
}

/// SetObjectDefaults_{Mutating,Validating}WebhookConfiguration.
pub(super) fn webhook_configuration(obj: &mut Value, mutating: bool) {
    if let Some(hooks) = obj.get_mut("webhooks").and_then(Value::as_array_mut) {
        for hook in hooks {
            webhook(hook, mutating);
        }
    }
}

/// SetDefaults_MatchResources, with SetDefaults_Rule on its resource and exclude rules.
fn match_resources(mr: &mut Value) {
    for key in ["resourceRules", "excludeResourceRules"] {
        for r in each(mr, key) {
            rule(r);
        }
    }
    if let Some(m) = mr.as_object_mut() {
        default(m, "matchPolicy", json!("Equivalent"));
        default(m, "namespaceSelector", json!({}));
        default(m, "objectSelector", json!({}));
    }
}

/// SetObjectDefaults_ValidatingAdmissionPolicy / _MutatingAdmissionPolicy: failurePolicy
/// Fail (SetDefaults_*AdmissionPolicySpec) and the matchConstraints defaults.
pub(super) fn policy(obj: &mut Value) {
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    default(spec, "failurePolicy", json!("Fail"));
    if let Some(mc) = spec.get_mut("matchConstraints").filter(|v| v.is_object()) {
        match_resources(mc);
    }
}

/// SetObjectDefaults_*AdmissionPolicyBinding: the matchResources defaults.
pub(super) fn binding(obj: &mut Value) {
    if let Some(mr) = obj
        .get_mut("spec")
        .and_then(|s| s.get_mut("matchResources"))
        .filter(|v| v.is_object())
    {
        match_resources(mr);
    }
}
