//! Admission (k8s.io/apiserver/pkg/admission): what may change or refuse a write after it is
//! authorized and before it is stored, in kube-apiserver's plugin order ([`dispatch`]):
//!
//! 1. mutating admission: the MutatingAdmissionPolicies ([`mutating`], binding name order),
//!    then the mutating webhooks (configuration name order); when something changed, the
//!    policies and webhooks with `reinvocationPolicy: IfNeeded` that saw a later change run
//!    once more;
//! 2. the resource's own defaulting and validation;
//! 3. validating admission: the ValidatingAdmissionPolicies ([`policies`]), then the
//!    validating webhooks, in parallel.
//!
//! NamespaceLifecycle stays the store's own check. The webhook configurations, policies and
//! bindings are followed from storage ([`Chain::follow`]; the MutatingAdmissionPolicy ones
//! only when that API is served), so a new one applies to the next request on every replica.
//! A write's [`Request`] travels in its [`super::Context`]; the store calls
//! [`Request::mutate`] and [`Request::validate`] at upstream's points (before and after
//! `BeforeCreate`/`BeforeUpdate`). Both kinds of policy share their matching ([`matching`])
//! and their CEL environment ([`activation`]).
//! What admission learns for the audit log (webhooks' `auditAnnotations`, each mutating call,
//! webhooks that failed open) is gathered in the [`Request`] and attached to the response for
//! the audit filter.
//! May use: registry (store, follow, webhook client, cel), api.

mod activation;
mod authz;
mod chain;
mod dispatch;
mod leaves;
mod matching;
mod mutating;
mod patch;
mod policies;
mod projection;
mod review;
pub(crate) mod typecheck;
mod webhooks;

use crate::api::UserInfo;
use crate::registry::strategy::CustomSchema;
pub(crate) use chain::{Chain, Kind as WebhookKind};
pub(crate) use patch::Merge;
use serde_json::Value;
use std::sync::{Arc, Mutex};

/// What makes a mutated object canonical again (the store decodes it as a request body).
pub(crate) type Redecode<'a> = dyn Fn(Value) -> Result<Value, crate::registry::Error> + Sync + 'a;

/// What a write does (admission.Operation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Operation {
    /// Create (POST, or a PUT or apply that creates).
    Create,
    /// Update (PUT, PATCH, apply).
    Update,
    /// Delete.
    Delete,
}

impl Operation {
    /// The name in rules and AdmissionReviews.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
        }
    }

    /// The kind of the request's options object.
    fn options_kind(self) -> &'static str {
        match self {
            Operation::Create => "CreateOptions",
            Operation::Update => "UpdateOptions",
            Operation::Delete => "DeleteOptions",
        }
    }
}

/// Why admission refused a write.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum Error {
    /// A webhook said no (webhookerrors.ToStatusErr): its code (at least 400), reason and
    /// message, prefixed with the webhook's name.
    #[error("{message}")]
    Denied {
        /// HTTP status.
        code: u16,
        /// The webhook's reason (may be empty).
        reason: String,
        /// `admission webhook "<name>" denied the request: <message>`.
        message: String,
    },
    /// Calling a webhook failed and its failurePolicy is Fail: `failed calling webhook
    /// "<name>": <cause>` (an internal error).
    #[error("failed calling webhook {webhook:?}: {cause}")]
    Call {
        /// The webhook.
        webhook: String,
        /// What went wrong.
        cause: String,
    },
    /// A ValidatingAdmissionPolicy denied the write: the code and reason of its validation
    /// (422 Invalid by default) and `ValidatingAdmissionPolicy '<p>' with binding '<b>' denied
    /// request: <message>`.
    #[error("{message}")]
    Policy {
        /// HTTP status.
        code: u16,
        /// Status reason.
        reason: String,
        /// The denial.
        message: String,
        /// Group of the resource written.
        group: String,
        /// The resource written.
        resource: String,
        /// The object's name ("" for a create with generateName).
        name: String,
    },
    /// A MutatingAdmissionPolicy failed and its failurePolicy is Fail (the generic policy
    /// dispatcher's refusal): 403 with the reason (Invalid for a mutation that failed,
    /// Forbidden for a binding whose params could not be read) and `policy '<p>' with binding
    /// '<b>' denied request: <cause>` as the whole message.
    #[error("{message}")]
    MutatingPolicy {
        /// Status reason.
        reason: String,
        /// The refusal.
        message: String,
        /// Group of the resource written.
        group: String,
        /// The resource written.
        resource: String,
        /// The object's name (its generateName, or `Unknown`, when it has none yet).
        name: String,
    },
    /// A webhook's matchConditions could not be evaluated and its failurePolicy is Fail:
    /// `<resource> "<name>" is forbidden: <errors>` (403, as apierrors.NewForbidden).
    #[error("{message}")]
    MatchConditions {
        /// Why, every condition's error.
        message: String,
        /// Group of the resource written.
        group: String,
        /// The resource written.
        resource: String,
        /// The object's name (may be empty).
        name: String,
    },
    /// A dry run reached a webhook with side effects.
    #[error("admission webhook {0:?} does not support dry run")]
    DryRunUnsupported(String),
    /// The object could not be converted to the version a webhook matched by matchPolicy
    /// Equivalent, or back (an internal error, as upstream's VersionedAttribute failure).
    #[error("{0}")]
    Conversion(String),
}

/// The admission side of one write: who writes, to which subresource, with which options,
/// and the warnings webhooks return for the response.
pub(crate) struct Request {
    /// The webhooks in force.
    pub chain: Arc<Chain>,
    /// The writer.
    pub user: Arc<UserInfo>,
    /// The subresource written ("" for the object).
    pub subresource: String,
    /// `fieldManager` of the request, for the options object.
    pub field_manager: Option<String>,
    /// Warnings for the client (Warning headers).
    pub warnings: Mutex<Vec<String>>,
    /// Annotations for the audit event (key, value), first value of a key kept.
    pub audit_annotations: Mutex<Vec<(String, String)>>,
}

impl std::fmt::Debug for Request {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Request")
            .field("user", &self.user.name)
            .field("subresource", &self.subresource)
            .finish_non_exhaustive()
    }
}

impl Request {
    /// The webhooks' warnings so far.
    pub(crate) fn take_warnings(&self) -> Vec<String> {
        self.warnings
            .lock()
            .map(|mut w| std::mem::take(&mut *w))
            .unwrap_or_default()
    }

    /// A request of `user` with no webhook configured, for tests.
    #[cfg(test)]
    pub(crate) fn for_tests(user: UserInfo, field_manager: Option<&str>) -> Request {
        Request {
            chain: Arc::new(Chain::default()),
            user: Arc::new(user),
            subresource: String::new(),
            field_manager: field_manager.map(str::to_string),
            warnings: Mutex::default(),
            audit_annotations: Mutex::default(),
        }
    }

    /// The audit annotations so far.
    pub(crate) fn take_audit_annotations(&self) -> Vec<(String, String)> {
        self.audit_annotations
            .lock()
            .map(|mut a| std::mem::take(&mut *a))
            .unwrap_or_default()
    }

    /// Adds an audit annotation (attributes.AddAnnotation in k8s): a key that is not a
    /// qualified name, or that is already set to another value, is refused with a log line,
    /// as upstream's dispatchers only log it.
    fn annotate(&self, key: String, value: String) {
        if !crate::api::selectors::qualified_name_errors(&key).is_empty() {
            tracing::warn!(%key, "audit annotation refused: the key is not a qualified name");
            return;
        }
        if let Ok(mut all) = self.audit_annotations.lock() {
            match all.iter().find(|(k, _)| *k == key) {
                Some((_, v)) if *v != value => {
                    tracing::warn!(%key, "audit annotation refused: the key is already set to another value");
                }
                Some(_) => {}
                None => all.push((key, value)),
            }
        }
    }

    fn warn(&self, more: Vec<String>) {
        if more.is_empty() {
            return;
        }
        if let Ok(mut w) = self.warnings.lock() {
            w.extend(more);
        }
    }

    /// The options object of an AdmissionReview (CreateOptions, UpdateOptions, ...).
    fn options(&self, op: Operation, dry_run: bool) -> Value {
        let mut o = serde_json::Map::new();
        o.insert("kind".into(), op.options_kind().into());
        o.insert("apiVersion".into(), "meta.k8s.io/v1".into());
        if dry_run {
            o.insert("dryRun".into(), serde_json::json!(["All"]));
        }
        if let (Some(m), false) = (&self.field_manager, op == Operation::Delete) {
            o.insert("fieldManager".into(), m.clone().into());
        }
        Value::Object(o)
    }
}

/// The other versions of a resource that hold the same objects (a CRD's other served
/// versions), and conversion between them: what a webhook's matchPolicy Equivalent matches by
/// (upstream's EquivalentResourceMapper and object convertor).
pub(crate) trait Equivalents: Send + Sync {
    /// The served versions of the resource, the one written included.
    fn versions(&self) -> &[String];
    /// `obj` at `version` of the same group and kind, or why it cannot be converted.
    fn convert(&self, obj: Value, version: &str) -> Result<Value, String>;
}

/// What a write is about: the resource, the object and what it was.
#[derive(Clone, Copy)]
pub(crate) struct Attributes<'a> {
    /// The operation.
    pub operation: Operation,
    /// Group, version, kind of the object (the parent's for a subresource).
    pub group: &'a str,
    /// Version.
    pub version: &'a str,
    /// Kind.
    pub kind: &'a str,
    /// The resource (plural).
    pub resource: &'a str,
    /// Namespace ("" for cluster-scoped).
    pub namespace: &'a str,
    /// Name ("" for a create with generateName).
    pub name: &'a str,
    /// dryRun=All.
    pub dry_run: bool,
    /// The object before the write (updates, deletes).
    pub old_object: Option<&'a Value>,
    /// `old_object`'s JSON when it was made already (the memo's): sent to webhooks as it is.
    pub old_json: Option<&'a [u8]>,
    /// Where the object's stored encoding is kept once a review made it (resources stored as
    /// served; the object the store writes, not a converted view of it): sent to webhooks
    /// with the resourceVersion spliced in, then stored as it is.
    pub object_stored: Option<&'a std::sync::OnceLock<crate::registry::codec::memo::Encoded>>,
    /// A custom resource's structural schema (what an apply configuration merges by).
    pub schema: Option<&'a CustomSchema>,
    /// The version the client wrote, when these attributes are converted to an equivalent
    /// version a webhook or policy matched (a review's requestKind, requestResource); None:
    /// `version` is the one written.
    pub request_version: Option<&'a str>,
    /// The resource's other versions, when it has some.
    pub equivalents: Option<&'a dyn Equivalents>,
}

impl Attributes<'static> {
    /// A write of the ConfigMap `default/cm` with nothing before it, for tests (struct update
    /// syntax changes the rest).
    #[cfg(test)]
    pub(crate) fn for_tests(operation: Operation) -> Self {
        Attributes {
            operation,
            group: "",
            version: "v1",
            kind: "ConfigMap",
            resource: "configmaps",
            namespace: "default",
            name: "cm",
            dry_run: false,
            old_object: None,
            old_json: None,
            object_stored: None,
            schema: None,
            request_version: None,
            equivalents: None,
        }
    }
}

/// Whether admission webhooks may see writes of `group`/`resource`: never the admission
/// configurations themselves, so no webhook can lock itself in
/// (IsExemptAdmissionConfigurationResource).
pub(crate) fn exempt(group: &str, resource: &str) -> bool {
    group == "admissionregistration.k8s.io"
        && matches!(
            resource,
            "mutatingwebhookconfigurations"
                | "validatingwebhookconfigurations"
                | "validatingadmissionpolicies"
                | "validatingadmissionpolicybindings"
                | "mutatingadmissionpolicies"
                | "mutatingadmissionpolicybindings"
        )
}
