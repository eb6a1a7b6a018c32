//! Audit logging as kube-apiserver does it (k8s.io/apiserver pkg/audit and
//! plugin/pkg/audit/log): an audit.k8s.io/v1 [`policy`] picks a level per request; the
//! request's [`context`] builds one [`event`] (reading bodies through [`body`]) and writes it
//! at each stage (RequestReceived,
//! ResponseStarted for long-running requests, ResponseComplete, Panic) through the [`log`]
//! backend, into a size-[`rotate`]d file or standard output. Auditing is on only with both a
//! policy file and a log path, as upstream; the handler chain asks for an [`Auditor`] only
//! then, so a server without one pays nothing but the Audit-ID header.
//! May use: api, metrics, options.

pub(crate) mod body;
pub(crate) mod context;
pub(crate) mod event;
pub(crate) mod log;
pub(crate) mod policy;
pub(crate) mod rotate;

use crate::options::AuditOptions;
use std::sync::Arc;

/// The header that carries a request's audit ID, in the request (reused) and the response.
pub(crate) const AUDIT_ID_HEADER: http::HeaderName = http::HeaderName::from_static("audit-id");

/// Why auditing could not be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum Error {
    /// The policy file cannot be read or is not a valid policy.
    #[error(transparent)]
    Policy(#[from] policy::Error),
    /// The log cannot be opened.
    #[error(transparent)]
    Log(#[from] log::Error),
}

/// The loaded policy and the open log: what the handler chain audits with.
pub(crate) struct Auditor {
    policy: policy::Policy,
    backend: log::Backend,
    protobuf: body::ProtobufDecoder,
}

impl Auditor {
    /// Loads the policy and opens the log, or None when `opts` does not turn auditing on
    /// (a policy without a log path writes nothing, as upstream; a path without a policy
    /// audits nothing). `protobuf` decodes protobuf request bodies for the events.
    pub(crate) fn load(
        opts: &AuditOptions,
        protobuf: body::ProtobufDecoder,
    ) -> Result<Option<Arc<Auditor>>, Error> {
        let Some(path) = opts.policy_file.as_deref() else {
            if opts.log_path.is_some() {
                tracing::info!("no audit policy file given: no audit events are written");
            }
            return Ok(None);
        };
        let policy = policy::Policy::load(path)?;
        if opts.log_path.is_none() {
            tracing::info!("no audit log path given: no audit events are written");
            return Ok(None);
        }
        let backend = log::Backend::open(opts)?;
        Ok(Some(Arc::new(Auditor {
            policy,
            backend,
            protobuf,
        })))
    }

    /// Writes what is still queued (batch mode) before the process exits.
    ///
    /// # Cancellation
    /// Dropping the future may leave queued events unwritten.
    pub(crate) async fn shutdown(&self) {
        self.backend.shutdown().await;
    }
}

/// An auditor with `rules` (policy YAML) writing JSON lines to `dir`/audit.log in blocking
/// mode, for tests of the layers above.
#[cfg(test)]
pub(crate) fn test_auditor(dir: &std::path::Path, rules: &str) -> Arc<Auditor> {
    use crate::options::{AuditLogPath, AuditOptions};
    let policy = dir.join("policy.yaml");
    let text = format!("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n{rules}");
    std::fs::write(&policy, text).expect("a temp dir is writable");
    let opts = AuditOptions {
        policy_file: Some(policy),
        log_path: Some(AuditLogPath::File(dir.join("audit.log"))),
        ..AuditOptions::default()
    };
    Auditor::load(&opts, |_| None)
        .expect("a valid policy and a writable log")
        .expect("auditing is on")
}

/// Request headers from `(name, value)` pairs, for the tests of the audit modules.
#[cfg(test)]
pub(crate) fn test_headers(pairs: &[(&'static str, &str)]) -> http::HeaderMap {
    let mut h = http::HeaderMap::new();
    for (k, v) in pairs {
        h.append(*k, v.parse().unwrap());
    }
    h
}
