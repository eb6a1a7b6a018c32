//! admissionregistration.k8s.io (pkg/registry/admissionregistration): the objects that configure
//! admission, served from the generic store with upstream's v1 (and v1beta1) defaults, validation
//! (pkg/apis/admissionregistration/validation), generation and tables. This is the API surface
//! only; nothing here calls a webhook or evaluates a policy.
//!
//! - [`webhooks`]: MutatingWebhookConfigurations and ValidatingWebhookConfigurations (v1).
//! - [`policies`]: ValidatingAdmissionPolicies (v1, with the `status` subresource) and
//!   MutatingAdmissionPolicies (v1beta1, served only with the MutatingAdmissionPolicy feature
//!   gate, as kube-apiserver serves that beta API only when asked).
//! - [`bindings`]: their bindings.
//!
//! Where this differs from upstream: CEL expressions are parsed, not type-checked against the
//! admission environment (no `undeclared reference` or `must evaluate to a bool` errors, no
//! cost estimate); the writer's access to a policy's paramKind (the authorization check of
//! upstream's policy and binding strategies) is not checked; a status warning's fieldRef is
//! not parsed as JSONPath.
//!
//! May use: registry (strategy, error, validation, apiextensions' CEL and webhook URL checks), api.

pub(crate) mod bindings;
mod defaults;
pub(crate) mod policies;
mod protobuf;
mod validation;
mod validation_policies;
mod validation_webhooks;
pub(crate) mod webhooks;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_policies;
#[cfg(test)]
mod tests_store;

/// The API group (admissionregistration.GroupName).
pub(crate) const GROUP: &str = "admissionregistration.k8s.io";

/// The feature gate behind the v1beta1 MutatingAdmissionPolicy resources (beta, off by default
/// in kube 1.35).
pub(crate) const MUTATING_POLICY_GATE: &str = "MutatingAdmissionPolicy";

/// Every resource of the group, as (version, resource): the discovery order's slice of it.
#[cfg(test)]
pub(crate) const RESOURCES: [(&str, &str); 6] = [
    ("v1", "mutatingwebhookconfigurations"),
    ("v1", "validatingadmissionpolicies"),
    ("v1", "validatingadmissionpolicybindings"),
    ("v1", "validatingwebhookconfigurations"),
    ("v1beta1", "mutatingadmissionpolicies"),
    ("v1beta1", "mutatingadmissionpolicybindings"),
];
