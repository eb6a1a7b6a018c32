//! Reloads the serving certificate when its files change (k8s.io/apiserver's
//! DynamicCertKeyPairContent and DynamicServingCertificateController): `--tls-cert-file` and
//! `--tls-private-key-file` are checked every second; a changed pair that parses and whose key
//! matches is served to the connections accepted from then on, one that does not is logged and
//! the previous pair kept. Certificate managers that rotate files in place (cert-manager, a
//! Secret volume's symlink swap) need no restart. May use: server's pki and listener.

use super::listener::ServingCert;
use super::pki;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use tokio_util::sync::CancellationToken;

/// How often the files are looked at.
const CHECK_EVERY: Duration = Duration::from_secs(1);

/// What is compared between checks: each file's modification time and length (followed
/// through symlinks).
type Stamp = [Option<(SystemTime, u64)>; 2];

fn stamp(cert: &Path, key: &Path) -> Stamp {
    let one = |p: &Path| {
        std::fs::metadata(p)
            .ok()
            .and_then(|m| Some((m.modified().ok()?, m.len())))
    };
    [one(cert), one(key)]
}

/// Watches `(cert, key)` until `stop` fires, replacing `serving` when they change.
pub(super) async fn watch(
    (cert, key): (PathBuf, PathBuf),
    serving: Arc<ServingCert>,
    stop: CancellationToken,
) {
    let mut seen = stamp(&cert, &key);
    // The stamp of a pair that failed to load: tried again every check (it may have been
    // caught half-written), warned about once.
    let mut failed: Option<Stamp> = None;
    let mut tick = tokio::time::interval(CHECK_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tick.tick() => {}
        }
        let now = stamp(&cert, &key);
        if now == seen {
            continue;
        }
        match pki::read_pair(&cert, &key)
            .map_err(|e| e.to_string())
            .and_then(|pair| serving.replace(&pair).map_err(|e| e.to_string()))
        {
            Ok(()) => {
                seen = now;
                failed = None;
                tracing::info!(cert = %cert.display(), "Loaded a new cert/key pair");
            }
            Err(error) => {
                if failed != Some(now) {
                    tracing::warn!(
                        cert = %cert.display(),
                        %error,
                        "serving certificate not reloaded; still serving the previous one"
                    );
                    failed = Some(now);
                }
            }
        }
    }
}
