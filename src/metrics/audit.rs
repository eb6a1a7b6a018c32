//! The audit counters (k8s.io/apiserver pkg/audit/metrics.go).

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;

/// apiserver_audit_error_total's label.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct PluginLabel {
    pub(super) plugin: &'static str,
}

/// apiserver_audit_level_total's label.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct LevelLabel {
    pub(super) level: &'static str,
}

/// The audit counters (k8s.io/apiserver pkg/audit/metrics.go).
pub(super) struct AuditMetrics {
    pub(super) events: Counter,
    pub(super) errors: Family<PluginLabel, Counter>,
    pub(super) levels: Family<LevelLabel, Counter>,
    pub(super) rejected: Counter,
}

impl AuditMetrics {
    pub(super) fn register(registry: &mut Registry) -> AuditMetrics {
        let m = AuditMetrics {
            events: Counter::default(),
            errors: Family::default(),
            levels: Family::default(),
            rejected: Counter::default(),
        };
        registry.register(
            "apiserver_audit_event",
            "Counter of audit events generated and sent to the audit backend.",
            m.events.clone(),
        );
        registry.register(
            "apiserver_audit_error",
            "Counter of audit events that failed to be audited properly. Plugin identifies the plugin affected by the error.",
            m.errors.clone(),
        );
        registry.register(
            "apiserver_audit_level",
            "Counter of policy levels for audit events (1 per request).",
            m.levels.clone(),
        );
        registry.register(
            "apiserver_audit_requests_rejected",
            "Counter of apiserver requests rejected due to an error in audit logging backend.",
            m.rejected.clone(),
        );
        m
    }
}
