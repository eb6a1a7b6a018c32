//! Admission metrics under kube-apiserver's names, labels and buckets
//! (k8s.io/apiserver pkg/admission/metrics and
//! pkg/admission/plugin/policy/validating/metrics): each step (admit, validate), each webhook
//! call, and each ValidatingAdmissionPolicy check.

use super::{Histograms, PlainCounter};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use std::time::Duration;

/// apiserver_admission_step_admission_duration_seconds's labels.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StepLabels {
    r#type: &'static str,
    operation: &'static str,
    rejected: bool,
}

/// The webhook duration's and request count's labels (the count adds the code).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct WebhookLabels {
    name: String,
    r#type: &'static str,
    operation: &'static str,
    rejected: bool,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct WebhookCodeLabels {
    name: String,
    r#type: &'static str,
    operation: &'static str,
    code: u16,
    rejected: bool,
}

/// apiserver_admission_webhook_rejection_count's labels.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RejectionLabels {
    name: String,
    r#type: &'static str,
    operation: &'static str,
    error_type: &'static str,
    rejection_code: u16,
}

/// The ValidatingAdmissionPolicy check metrics' labels.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PolicyLabels {
    policy: String,
    policy_binding: String,
    error_type: &'static str,
    enforcement_action: &'static str,
}

/// The MutatingAdmissionPolicy check metrics' labels.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct MutationLabels {
    policy: String,
    policy_binding: String,
    error_type: &'static str,
}

/// How a webhook call ended, for the metrics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WebhookOutcome {
    /// It answered allowed.
    Allowed,
    /// It answered not allowed, with this code (0 when it gave none).
    Rejected(u16),
    /// It could not be called or its answer was not valid; `fail_closed`: its failurePolicy
    /// is Fail, so the request was refused.
    CallFailed {
        /// The request was refused for it.
        fail_closed: bool,
    },
}

/// How a policy's validation ended, for the metrics, as upstream's dispatcher observes it:
/// the action taken (`enforcement_action`) and the error type of the decision.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PolicyOutcome {
    /// `allow` (an evaluation error under failurePolicy Ignore), `deny`, `warn` or `audit`.
    pub action: &'static str,
    /// `invalid_error` (a failed validation too, as upstream's ErrorType says) or
    /// `compile_error`.
    pub error_type: &'static str,
}

fn step_histogram() -> Histogram {
    Histogram::new([0.005, 0.025, 0.1, 0.5, 1.0, 2.5])
}

fn webhook_histogram() -> Histogram {
    Histogram::new([0.005, 0.025, 0.1, 0.5, 1.0, 2.5, 10.0, 25.0])
}

fn policy_histogram() -> Histogram {
    Histogram::new([0.0000005, 0.001, 0.01, 0.1, 1.0])
}

/// The admission metrics.
pub(crate) struct AdmissionMetrics {
    steps: Histograms<StepLabels>,
    webhooks: Histograms<WebhookLabels>,
    webhook_requests: Family<WebhookCodeLabels, Counter>,
    rejections: Family<RejectionLabels, PlainCounter>,
    policy_checks: Family<PolicyLabels, Counter>,
    policy_durations: Histograms<PolicyLabels>,
    mutation_checks: Family<MutationLabels, Counter>,
    mutation_durations: Histograms<MutationLabels>,
}

impl AdmissionMetrics {
    pub(super) fn register(registry: &mut Registry) -> AdmissionMetrics {
        let m = AdmissionMetrics {
            steps: Family::new_with_constructor(step_histogram as fn() -> Histogram),
            webhooks: Family::new_with_constructor(webhook_histogram as fn() -> Histogram),
            webhook_requests: Family::default(),
            rejections: Family::default(),
            policy_checks: Family::default(),
            policy_durations: Family::new_with_constructor(policy_histogram as fn() -> Histogram),
            mutation_checks: Family::default(),
            mutation_durations: Family::new_with_constructor(policy_histogram as fn() -> Histogram),
        };
        registry.register(
            "apiserver_admission_step_admission_duration_seconds",
            "Admission sub-step latency histogram in seconds, broken out for each operation and API resource and step type (validate or admit).",
            m.steps.clone(),
        );
        registry.register(
            "apiserver_admission_webhook_admission_duration_seconds",
            "Admission webhook latency histogram in seconds, identified by name and broken out for each operation and API resource and type (validate or admit).",
            m.webhooks.clone(),
        );
        registry.register(
            "apiserver_admission_webhook_request",
            "Admission webhook request total, identified by name and broken out for each admission type (validating or admit) and operation. Additional labels specify whether the request was rejected or not and an HTTP status code. Codes greater than 600 are truncated to 600, to keep the metrics cardinality bounded.",
            m.webhook_requests.clone(),
        );
        registry.register(
            "apiserver_admission_webhook_rejection_count",
            "Admission webhook rejection count, identified by name and broken out for each admission type (validating or admit) and operation. Additional labels specify an error type (calling_webhook_error or apiserver_internal_error if an error occurred; no_error otherwise) and optionally a non-zero rejection code if the webhook rejects the request with an HTTP status code (honored by the apiserver when the code is greater or equal to 400). Codes greater than 600 are truncated to 600, to keep the metrics cardinality bounded.",
            m.rejections.clone(),
        );
        registry.register(
            "apiserver_validating_admission_policy_check",
            "Validation admission policy check total, labeled by policy and further identified by binding and enforcement action taken.",
            m.policy_checks.clone(),
        );
        registry.register(
            "apiserver_validating_admission_policy_check_duration_seconds",
            "Validation admission latency for individual validation expressions in seconds, labeled by policy and further including binding and enforcement action taken.",
            m.policy_durations.clone(),
        );
        registry.register(
            "apiserver_mutating_admission_policy_check",
            "Mutation admission policy check total, labeled by policy and further identified by binding.",
            m.mutation_checks.clone(),
        );
        registry.register(
            "apiserver_mutating_admission_policy_check_duration_seconds",
            "Mutation admission latency for individual mutation expressions in seconds, labeled by policy and binding.",
            m.mutation_durations.clone(),
        );
        m
    }

    /// One mutation of a MutatingAdmissionPolicy through one binding: `error_type` is
    /// `no_error`, `compile_error` or `invalid_error`.
    pub(crate) fn mutation_check(
        &self,
        policy: &str,
        binding: &str,
        error_type: &'static str,
        took: Duration,
    ) {
        let labels = MutationLabels {
            policy: policy.to_string(),
            policy_binding: binding.to_string(),
            error_type,
        };
        self.mutation_checks.get_or_create(&labels).inc();
        self.mutation_durations
            .get_or_create(&labels)
            .observe(took.as_secs_f64());
    }

    /// One admission step: `mutating` (admit) or validate, for `operation` (CREATE, ...).
    pub(crate) fn step(
        &self,
        mutating: bool,
        operation: &'static str,
        rejected: bool,
        took: Duration,
    ) {
        self.steps
            .get_or_create(&StepLabels {
                r#type: if mutating { "admit" } else { "validate" },
                operation,
                rejected,
            })
            .observe(took.as_secs_f64());
    }

    /// One call of the webhook `name`.
    pub(crate) fn webhook(
        &self,
        name: &str,
        mutating: bool,
        operation: &'static str,
        outcome: WebhookOutcome,
        took: Duration,
    ) {
        let r#type = if mutating { "admit" } else { "validating" };
        let rejected = match outcome {
            WebhookOutcome::Allowed => false,
            WebhookOutcome::Rejected(_) => true,
            WebhookOutcome::CallFailed { fail_closed } => fail_closed,
        };
        self.webhooks
            .get_or_create(&WebhookLabels {
                name: name.to_string(),
                r#type,
                operation,
                rejected,
            })
            .observe(took.as_secs_f64());
        // The code of the answer: 200 for an allowed one, the rejection's, or 500 when the
        // call failed (webhook_request_total's code).
        let code = match outcome {
            WebhookOutcome::Allowed => 200,
            WebhookOutcome::Rejected(code) => code.min(600),
            WebhookOutcome::CallFailed { .. } => 500,
        };
        self.webhook_requests
            .get_or_create(&WebhookCodeLabels {
                name: name.to_string(),
                r#type,
                operation,
                code,
                rejected,
            })
            .inc();
        let (error_type, rejection_code) = match outcome {
            WebhookOutcome::Rejected(code) => ("no_error", code.min(600)),
            WebhookOutcome::CallFailed { fail_closed: true } => ("calling_webhook_error", 500),
            _ => return,
        };
        self.rejections
            .get_or_create(&RejectionLabels {
                name: name.to_string(),
                r#type,
                operation,
                error_type,
                rejection_code,
            })
            .inc();
    }

    /// One check of a ValidatingAdmissionPolicy through one binding.
    pub(crate) fn policy_check(
        &self,
        policy: &str,
        binding: &str,
        outcome: PolicyOutcome,
        took: Duration,
    ) {
        let (error_type, enforcement_action) = (outcome.error_type, outcome.action);
        let labels = PolicyLabels {
            policy: policy.to_string(),
            policy_binding: binding.to_string(),
            error_type,
            enforcement_action,
        };
        self.policy_checks.get_or_create(&labels).inc();
        self.policy_durations
            .get_or_create(&labels)
            .observe(took.as_secs_f64());
    }
}
