//! The control plane's own work, which kube-apiserver does not export: the post-start hooks
//! (kapi_post_start_hook_completed, kapi_post_start_hook_failures_total) and the renewals of
//! this server's identity lease (kapi_identity_lease_renewals_total), plus the
//! authentication and authorization attempts of k8s.io/apiserver pkg/endpoints/filters
//! (authentication_attempts, authentication_duration_seconds, authorization_attempts_total,
//! authorization_duration_seconds), and the uses of secret-based service-account tokens of
//! pkg/serviceaccount (serviceaccount_legacy_auto_token_uses_total,
//! serviceaccount_legacy_manual_token_uses_total,
//! serviceaccount_invalid_legacy_auto_token_uses_total).

use super::{Histograms, PlainCounter};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;
use std::sync::OnceLock;
use std::time::Duration;

/// A hook's name.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct NameLabel {
    name: String,
}

/// The result of an attempt or a renewal.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResultLabel {
    result: &'static str,
}

fn auth_histogram() -> Histogram {
    // ExponentialBuckets(0.001, 2, 15).
    Histogram::new(exponential_buckets(0.001, 2.0, 15))
}

/// The control-plane metrics.
pub(crate) struct ControlMetrics {
    hooks_completed: Family<NameLabel, Gauge>,
    hook_failures: Family<NameLabel, Counter>,
    renewals: Family<ResultLabel, Counter>,
    authentications: Attempts<PlainCounter>,
    authorizations: Attempts<Counter>,
    legacy_auto_tokens: Counter,
    legacy_manual_tokens: Counter,
    invalid_legacy_tokens: Counter,
}

/// Something counted up by one.
trait Inc {
    fn add_one(&self);
}

impl Inc for Counter {
    fn add_one(&self) {
        self.inc();
    }
}

impl Inc for PlainCounter {
    fn add_one(&self) {
        self.inc();
    }
}

/// Attempts counted and timed by result (authentication's, authorization's); each result's
/// counter and histogram are looked up once, as every request records both.
struct Attempts<C> {
    counts: Family<ResultLabel, C>,
    durations: Histograms<ResultLabel>,
    results: &'static [&'static str],
    by_result: Vec<OnceLock<(C, Histogram)>>,
}

impl<C> Attempts<C>
where
    C: Inc
        + Clone
        + Default
        + prometheus_client::encoding::EncodeMetric
        + prometheus_client::metrics::TypedMetric
        + Send
        + Sync
        + std::fmt::Debug
        + 'static,
{
    /// Registers `<name>` (the counter) and `<duration>` (the histogram) for `results`.
    fn register(
        registry: &mut Registry,
        (name, help): (&str, &str),
        (duration, duration_help): (&str, &str),
        results: &'static [&'static str],
    ) -> Attempts<C> {
        let a = Attempts {
            counts: Family::default(),
            durations: Family::new_with_constructor(auth_histogram as fn() -> Histogram),
            results,
            by_result: results.iter().map(|_| OnceLock::new()).collect(),
        };
        registry.register(name, help, a.counts.clone());
        registry.register(duration, duration_help, a.durations.clone());
        a
    }

    /// One attempt with `result` (one of the registered results) that took `took`.
    fn record(&self, result: &'static str, took: Duration) {
        if !super::recording() {
            return;
        }
        let Some(i) = self.results.iter().position(|r| *r == result) else {
            return;
        };
        let (count, duration) = self.by_result[i].get_or_init(|| {
            let label = ResultLabel { result };
            (
                self.counts.get_or_create(&label).clone(),
                self.durations.get_or_create(&label).clone(),
            )
        });
        count.add_one();
        duration.observe(took.as_secs_f64());
    }
}

impl ControlMetrics {
    pub(super) fn register(registry: &mut Registry) -> ControlMetrics {
        let m = ControlMetrics {
            hooks_completed: Family::default(),
            hook_failures: Family::default(),
            renewals: Family::default(),
            authentications: Attempts::register(
                registry,
                ("authentication_attempts", "Counter of authenticated attempts."),
                (
                    "authentication_duration_seconds",
                    "Authentication duration in seconds broken out by result.",
                ),
                &["success", "failure", "error"],
            ),
            authorizations: Attempts::register(
                registry,
                (
                    "authorization_attempts",
                    "Counter of authorization attempts broken down by result. It can be either 'allowed', 'denied', 'no-opinion' or 'error'.",
                ),
                (
                    "authorization_duration_seconds",
                    "Authorization duration in seconds broken out by result.",
                ),
                &["allowed", "denied", "no-opinion", "error"],
            ),
            legacy_auto_tokens: Counter::default(),
            legacy_manual_tokens: Counter::default(),
            invalid_legacy_tokens: Counter::default(),
        };
        registry.register(
            "serviceaccount_legacy_auto_token_uses",
            "Cumulative auto-generated legacy tokens used",
            m.legacy_auto_tokens.clone(),
        );
        registry.register(
            "serviceaccount_legacy_manual_token_uses",
            "Cumulative manually created legacy tokens used",
            m.legacy_manual_tokens.clone(),
        );
        registry.register(
            "serviceaccount_invalid_legacy_auto_token_uses",
            "Cumulative invalid auto-generated legacy tokens used",
            m.invalid_legacy_tokens.clone(),
        );
        registry.register(
            "kapi_post_start_hook_completed",
            "Whether each post-start hook has completed (1) or not yet (0).",
            m.hooks_completed.clone(),
        );
        registry.register(
            "kapi_post_start_hook_failures",
            "Failed runs of each post-start hook (each is retried with backoff).",
            m.hook_failures.clone(),
        );
        registry.register(
            "kapi_identity_lease_renewals",
            "Renewals of this apiserver's identity lease, by result (success or failure).",
            m.renewals.clone(),
        );
        m
    }

    /// A post-start hook was registered (not completed yet).
    pub(crate) fn hook_registered(&self, name: &str) {
        self.hook(name).set(0);
    }

    /// A post-start hook completed.
    pub(crate) fn hook_completed(&self, name: &str) {
        self.hook(name).set(1);
    }

    /// A run of a post-start hook failed.
    pub(crate) fn hook_failed(&self, name: &str) {
        self.hook_failures
            .get_or_create(&NameLabel { name: name.into() })
            .inc();
    }

    fn hook(&self, name: &str) -> Gauge {
        self.hooks_completed
            .get_or_create(&NameLabel { name: name.into() })
            .clone()
    }

    /// A renewal of the identity lease succeeded or failed.
    pub(crate) fn identity_renewal(&self, ok: bool) {
        let result = if ok { "success" } else { "failure" };
        self.renewals.get_or_create(&ResultLabel { result }).inc();
    }

    /// A request authenticated with a secret-based service-account token, auto-generated (the
    /// account lists its secret) or made by hand.
    pub(crate) fn legacy_token_used(&self, auto_generated: bool) {
        if auto_generated {
            self.legacy_auto_tokens.inc();
        } else {
            self.legacy_manual_tokens.inc();
        }
    }

    /// One use of a secret-based token whose secret is labelled invalid.
    pub(crate) fn invalid_legacy_token_used(&self) {
        self.invalid_legacy_tokens.inc();
    }

    /// One authentication: `result` is `success`, `failure` or `error`.
    pub(crate) fn authentication(&self, result: &'static str, took: Duration) {
        self.authentications.record(result, took);
    }

    /// One authorization: `result` is `allowed`, `denied`, `no-opinion` or `error`.
    pub(crate) fn authorization(&self, result: &'static str, took: Duration) {
        self.authorizations.record(result, took);
    }
}
