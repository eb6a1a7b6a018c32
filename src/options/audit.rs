//! Audit options (AuditOptions and AuditLogOptions in k8s.io/apiserver pkg/server/options):
//! the policy file, where the log goes, how it rotates, its format and its backend mode.
//! Plain data, checked by `validate`; the policy is read and the log opened by the server.
//! May use: nothing internal.

use std::path::PathBuf;

/// upstream's default of `--audit-log-batch-buffer-size` (defaultBatchBufferSize).
pub(crate) const DEFAULT_BATCH_BUFFER_SIZE: usize = 10_000;

/// Where audit events are written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuditLogPath {
    /// `--audit-log-path -`: standard output.
    Stdout,
    /// A file, rotated by size.
    File(PathBuf),
}

/// `--audit-log-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AuditLogFormat {
    /// One audit.k8s.io/v1 Event as JSON per line.
    #[default]
    Json,
    /// upstream's one-line text summary per event.
    Legacy,
}

/// `--audit-log-mode` (upstream's AllowedModes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AuditLogMode {
    /// Each event is written before the request goes on; a failed write is counted and the
    /// event logged to stderr.
    #[default]
    Blocking,
    /// As blocking, but a failed write of the first event (RequestReceived) fails the request.
    BlockingStrict,
    /// Events are queued (bounded) and written by a writer thread; a full queue drops events.
    Batch,
}

/// All audit flags.
#[derive(Debug, Clone, Default)]
pub struct AuditOptions {
    /// `--audit-policy-file`.
    pub policy_file: Option<PathBuf>,
    /// `--audit-log-path`.
    pub log_path: Option<AuditLogPath>,
    /// `--audit-log-maxage`: days to keep rotated files (0 = no limit).
    pub max_age_days: u32,
    /// `--audit-log-maxbackup`: rotated files to keep (0 = all).
    pub max_backups: u32,
    /// `--audit-log-maxsize`: megabytes before the file is rotated (0 = 100).
    pub max_size_mb: u32,
    /// `--audit-log-format`.
    pub format: AuditLogFormat,
    /// `--audit-log-mode`.
    pub mode: AuditLogMode,
    /// `--audit-log-batch-buffer-size`: events the batch queue holds before dropping.
    pub batch_buffer_size: usize,
}

impl AuditOptions {
    /// Whether events are written: upstream audits only with both a policy and a backend.
    pub fn enabled(&self) -> bool {
        self.policy_file.is_some() && self.log_path.is_some()
    }

    pub(super) fn validate(&self, errs: &mut Vec<String>) {
        if self.log_path.is_some()
            && self.mode == AuditLogMode::Batch
            && self.batch_buffer_size == 0
        {
            errs.push(
                "--audit-log-batch-buffer-size: invalid audit batch log buffer size 0, must be a positive number"
                    .into(),
            );
        }
        if matches!(&self.log_path, Some(AuditLogPath::File(p)) if p.as_os_str().is_empty()) {
            errs.push("--audit-log-path must not be empty (use - for standard output)".into());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn audit_is_on_only_with_policy_and_path() {
        let mut o = AuditOptions {
            policy_file: Some("p.yaml".into()),
            ..AuditOptions::default()
        };
        assert!(!o.enabled());
        o.log_path = Some(AuditLogPath::Stdout);
        assert!(o.enabled());
        o.policy_file = None;
        assert!(!o.enabled());
    }

    #[test]
    fn batch_needs_a_buffer() {
        let o = AuditOptions {
            log_path: Some(AuditLogPath::Stdout),
            mode: AuditLogMode::Batch,
            ..AuditOptions::default()
        };
        let mut errs = Vec::new();
        o.validate(&mut errs);
        assert_eq!(errs.len(), 1);
        assert!(errs[0].starts_with("--audit-log-batch-buffer-size"));
    }
}
