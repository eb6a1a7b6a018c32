//! The log backend (k8s.io/apiserver plugin/pkg/audit/log) in its three modes
//! (`--audit-log-mode`, pkg/server/options/audit.go):
//!
//! - blocking: the request's task writes the event before it goes on. A failed write is
//!   counted in `apiserver_audit_error_total{plugin="log"}` and the event's summary logged to
//!   stderr, and the request goes on (upstream's ignoreErrorsBackend).
//! - blocking-strict: the same, but the failure is reported, so a request whose
//!   RequestReceived event cannot be written fails with 500.
//! - batch (plugin/pkg/audit/buffered): events go into a bounded queue (10,000 by default)
//!   that one writer thread empties; a full queue drops the event and counts it in
//!   `apiserver_audit_error_total{plugin="buffered"}`.
//!
//! Writes are synchronous appends (a page-cache copy of a few hundred bytes, no fsync), made
//! under a lock so lines never interleave; keeping them synchronous lets the end of a
//! response body, which cannot await, write its event. May use: api, metrics, options.

use super::event::Event;
use super::rotate::{Limits, RotatingFile};
use crate::metrics;
use crate::options::{AuditLogFormat, AuditLogMode, AuditLogPath, AuditOptions};
use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};

/// The plugin names upstream counts errors under.
const LOG_PLUGIN: &str = "log";
const BUFFERED_PLUGIN: &str = "buffered";
/// How long shutdown waits for the batch queue to be written.
const FLUSH_TIMEOUT: Duration = Duration::from_secs(10);

/// Why the log backend could not start.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Error {
    /// The log file (or its directory) cannot be created or opened for appending.
    #[error("cannot open --audit-log-path {0} for writing")]
    Open(PathBuf, #[source] io::Error),
    /// The batch writer thread could not be started.
    #[error("cannot start the audit log writer thread")]
    StartWriter(#[source] io::Error),
}

/// Where lines go.
enum Output {
    Stdout(io::Stdout),
    File(RotatingFile),
}

impl Output {
    fn write_line(&mut self, line: &[u8]) -> io::Result<()> {
        match self {
            Output::Stdout(out) => {
                let mut out = out.lock();
                out.write_all(line)?;
                out.flush()
            }
            Output::File(file) => file.write_line(line),
        }
    }
}

enum Message {
    Event(Box<Event>),
    /// Write what is queued, answer, and stop.
    Stop(oneshot::Sender<()>),
}

enum Mode {
    /// blocking (`strict` false) or blocking-strict.
    Blocking { out: Mutex<Output>, strict: bool },
    Batch {
        queue: mpsc::Sender<Message>,
        writer: Mutex<Option<std::thread::JoinHandle<()>>>,
    },
}

/// The audit log: formats events and writes them in the configured mode.
pub(crate) struct Backend {
    format: AuditLogFormat,
    mode: Mode,
}

fn encode(format: AuditLogFormat, event: &Event) -> Vec<u8> {
    match format {
        AuditLogFormat::Json => event.to_json_line(),
        AuditLogFormat::Legacy => {
            let mut line = event.summary().into_bytes();
            line.push(b'\n');
            line
        }
    }
}

/// HandlePluginError in k8s: count the lost events and log what they were.
fn plugin_error(plugin: &'static str, error: &dyn std::fmt::Display, event: &Event) {
    metrics::global().audit_error(plugin, 1);
    tracing::error!(
        plugin,
        error = %error,
        event = %event.summary(),
        "error in audit plugin affecting 1 audit event"
    );
}

impl Backend {
    /// Opens the output of `opts` (which must name a log path) and, in batch mode, starts the
    /// writer thread.
    pub(crate) fn open(opts: &AuditOptions) -> Result<Backend, Error> {
        let output = match &opts.log_path {
            Some(AuditLogPath::File(path)) => {
                let limits = Limits {
                    max_size_mb: opts.max_size_mb,
                    max_backups: opts.max_backups,
                    max_age_days: opts.max_age_days,
                };
                let file =
                    RotatingFile::open(path, limits).map_err(|e| Error::Open(path.clone(), e))?;
                Output::File(file)
            }
            Some(AuditLogPath::Stdout) | None => Output::Stdout(io::stdout()),
        };
        let mode = match opts.mode {
            AuditLogMode::Blocking | AuditLogMode::BlockingStrict => Mode::Blocking {
                out: Mutex::new(output),
                strict: opts.mode == AuditLogMode::BlockingStrict,
            },
            AuditLogMode::Batch => {
                let (queue, rx) = mpsc::channel(opts.batch_buffer_size.max(1));
                let format = opts.format;
                let writer = std::thread::Builder::new()
                    .name("audit-log".into())
                    .spawn(move || write_queued(rx, output, format))
                    .map_err(Error::StartWriter)?;
                Mode::Batch {
                    queue,
                    writer: Mutex::new(Some(writer)),
                }
            }
        };
        Ok(Backend {
            format: opts.format,
            mode,
        })
    }

    /// Writes (or queues) one event. False only in blocking-strict mode when the write
    /// failed (ProcessEvents in k8s).
    pub(crate) fn process(&self, event: &Event) -> bool {
        match &self.mode {
            Mode::Blocking { out, strict } => {
                let line = encode(self.format, event);
                let written = out
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .write_line(&line);
                match written {
                    Ok(()) => true,
                    Err(err) => {
                        plugin_error(LOG_PLUGIN, &err, event);
                        !strict
                    }
                }
            }
            Mode::Batch { queue, .. } => {
                if let Err(err) = queue.try_send(Message::Event(Box::new(event.clone()))) {
                    let why = match err {
                        mpsc::error::TrySendError::Full(_) => "audit buffer queue blocked",
                        mpsc::error::TrySendError::Closed(_) => "audit backend shut down",
                    };
                    plugin_error(BUFFERED_PLUGIN, &why, event);
                }
                true
            }
        }
    }

    /// Writes what the batch queue holds and stops its writer; flushes standard output.
    ///
    /// # Cancellation
    /// Dropping the future leaves the writer running; it ends when the backend is dropped.
    pub(crate) async fn shutdown(&self) {
        match &self.mode {
            Mode::Blocking { out, .. } => {
                if let Output::Stdout(s) = &mut *out.lock().unwrap_or_else(PoisonError::into_inner)
                {
                    let _ = s.flush();
                }
            }
            Mode::Batch { queue, writer } => {
                let (ack, done) = oneshot::channel();
                if queue.send(Message::Stop(ack)).await.is_ok()
                    && tokio::time::timeout(FLUSH_TIMEOUT, done).await.is_err()
                {
                    tracing::warn!(timeout = ?FLUSH_TIMEOUT, "audit log: queued events not written in time");
                    return;
                }
                let handle = writer.lock().unwrap_or_else(PoisonError::into_inner).take();
                if let Some(handle) = handle {
                    if tokio::task::spawn_blocking(move || handle.join())
                        .await
                        .is_err()
                    {
                        tracing::error!("audit log writer thread panicked");
                    }
                }
            }
        }
    }
}

/// The batch writer thread: writes each queued event; a failed write is counted and logged.
fn write_queued(mut rx: mpsc::Receiver<Message>, mut out: Output, format: AuditLogFormat) {
    let mut write = |event: &Event| {
        if let Err(err) = out.write_line(&encode(format, event)) {
            plugin_error(LOG_PLUGIN, &err, event);
        }
    };
    while let Some(message) = rx.blocking_recv() {
        match message {
            Message::Event(event) => write(&event),
            Message::Stop(ack) => {
                while let Ok(Message::Event(event)) = rx.try_recv() {
                    write(&event);
                }
                let _ = ack.send(());
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::policy::Level;

    fn options(path: PathBuf, mode: AuditLogMode) -> AuditOptions {
        AuditOptions {
            policy_file: Some("p".into()),
            log_path: Some(AuditLogPath::File(path)),
            mode,
            batch_buffer_size: 2,
            ..AuditOptions::default()
        }
    }

    fn event(id: &str) -> Event {
        Event::new(Level::Metadata, id.into(), chrono::Utc::now())
    }

    fn ids(path: &std::path::Path) -> Vec<String> {
        std::fs::read_to_string(path)
            .unwrap()
            .lines()
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).unwrap();
                v["auditID"].as_str().unwrap().to_string()
            })
            .collect()
    }

    #[tokio::test]
    async fn blocking_writes_before_returning() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a/audit.log");
        let b = Backend::open(&options(path.clone(), AuditLogMode::Blocking)).unwrap();
        assert!(b.process(&event("1")));
        assert!(b.process(&event("2")));
        assert_eq!(ids(&path), ["1", "2"]);
        b.shutdown().await;
    }

    #[tokio::test]
    async fn a_failed_write_fails_only_in_strict_mode() {
        // Writes to /dev/full fail with ENOSPC, as on a full disk.
        let full = PathBuf::from("/dev/full");
        let b = Backend::open(&options(full.clone(), AuditLogMode::Blocking)).unwrap();
        assert!(b.process(&event("1")));
        let b = Backend::open(&options(full, AuditLogMode::BlockingStrict)).unwrap();
        assert!(!b.process(&event("1")));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn batch_is_bounded_and_flushed_at_shutdown() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        let b = Backend::open(&options(path.clone(), AuditLogMode::Batch)).unwrap();
        let before = metrics::global().audit_errors(BUFFERED_PLUGIN);
        // The queue holds 2: queuing is far faster than writing, so most events are dropped,
        // and every event is either written or counted.
        let n = 10_000;
        for i in 0..n {
            assert!(b.process(&event(&i.to_string())));
        }
        b.shutdown().await;
        let written = ids(&path);
        assert_eq!(written[0], "0");
        let dropped = metrics::global().audit_errors(BUFFERED_PLUGIN) - before;
        assert!(dropped > 0);
        assert_eq!(written.len() as u64 + dropped, n);
    }
}
