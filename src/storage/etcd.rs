//! The etcd v3 backend (the etcd3 store of k8s.io/apiserver) through the etcd-client crate.
//! A key's mod_revision is its resourceVersion; creates, updates and deletes are transactions
//! comparing the mod_revision the caller read (0 = absent), so a lost race is retried with
//! fresh state; watches are native etcd watches with prev_kv and progress notifications; keys
//! with a time-to-live are attached to an etcd lease. etcd's "required revision has been
//! compacted" becomes [`Error::Compacted`].
//!
//! An etcd that cannot be reached is not fatal: connections are made lazily (gRPC reconnects
//! with backoff on its own), every call fails with [`Error::Unavailable`] meanwhile, and a
//! monitor task logs when etcd goes away and comes back. The same monitor keeps members that
//! do not answer out of the client's balance (`etcd_endpoints.rs`), so one dead or stopped
//! member of a cluster costs nothing but its share of in-flight calls.

use super::remembered::Remembered;
use super::{
    update_round, DeleteCheck, Error, KeyValue, ListOptions, ListResult, ListRevision, Result,
    Revision, Round, Storage, UpdateFn, WatchEvent, WatchStream,
};
use bytes::Bytes;
use etcd_client::{
    Client, Compare, CompareOp, ConnectOptions, EventType, GetOptions, PutOptions, TxnOp,
    WatchOptions,
};
use futures::StreamExt;
use std::time::Duration;
use tokio_util::sync::{CancellationToken, DropGuard};

/// Time limit of one unary call (watches are not limited).
const CALL_TIMEOUT: Duration = Duration::from_secs(30);
/// How often a watch asks etcd for a progress notification (etcd's own periodic one comes
/// only every 10 minutes by default).
const PROGRESS_REQUEST_EVERY: Duration = Duration::from_secs(1);

/// TLS files of the etcd connection.
#[derive(Debug, Clone, Default)]
pub struct EtcdTls {
    /// CA bundle for etcd's serving certificate.
    pub ca_file: Option<std::path::PathBuf>,
    /// Client certificate.
    pub cert_file: Option<std::path::PathBuf>,
    /// Client key.
    pub key_file: Option<std::path::PathBuf>,
}

/// The etcd store.
pub struct EtcdStore {
    client: Client,
    health_timeout: Duration,
    /// Whether etcd answers progress requests in order with events (known once asked).
    progress_ok: tokio::sync::OnceCell<bool>,
    /// The value each recently updated key had after its last update (a guess, checked by
    /// the next update's transaction).
    known: Remembered,
    /// The first endpoint, whose database size the metrics report.
    endpoint: String,
    _monitor: DropGuard,
}

impl EtcdStore {
    /// Builds a client for `servers`. Fails only on bad settings (URLs, TLS files), never
    /// because etcd is down.
    pub async fn connect(
        servers: &[String],
        tls: &EtcdTls,
        health_timeout: Duration,
    ) -> Result<EtcdStore> {
        let mut opts = ConnectOptions::new()
            .with_connect_timeout(health_timeout.max(Duration::from_secs(1)))
            .with_keep_alive(Duration::from_secs(10), Duration::from_secs(5))
            .with_keep_alive_while_idle(true);
        if tls.ca_file.is_some() || tls.cert_file.is_some() {
            opts = opts.with_tls(tls_options(tls)?);
        }
        // The monitor adds and removes endpoints by URL, as the client spelt them.
        let scheme = if tls.ca_file.is_some() || tls.cert_file.is_some() {
            "https://"
        } else {
            "http://"
        };
        let urls: Vec<String> = servers
            .iter()
            .map(|s| {
                if s.contains("://") {
                    s.clone()
                } else {
                    format!("{scheme}{s}")
                }
            })
            .collect();
        let client = Client::connect(&urls, Some(opts.clone()))
            .await
            .map_err(|e| {
                Error::unavailable(format!("--etcd-servers {}", servers.join(","))).caused_by(e)
            })?;
        let token = CancellationToken::new();
        let endpoint = urls.first().cloned().unwrap_or_default();
        // Detached: it returns once the store's DropGuard cancels `token`, has no result, and
        // logs what it finds.
        tokio::spawn(super::etcd_endpoints::monitor(
            client.clone(),
            urls,
            opts,
            health_timeout,
            token.clone(),
        ));
        Ok(EtcdStore {
            client,
            health_timeout,
            progress_ok: Default::default(),
            known: Default::default(),
            endpoint,
            _monitor: token.drop_guard(),
        })
    }

    /// Whether watches may ask etcd for progress notifications: etcd before 3.5.13 can send
    /// one ahead of pending events (etcd-io/etcd#17264, the reason k8s gates
    /// ConsistentListFromCache on 3.5.13), so with it watches rely on etcd's periodic
    /// notifications (`--experimental-watch-progress-notify-interval`) only.
    async fn progress_requests_safe(&self) -> bool {
        let ask = async {
            let mut m = self.client.maintenance_client();
            match call(m.status()).await {
                Ok(status) => {
                    let ok = version_at_least(status.version(), (3, 5, 13));
                    if !ok {
                        tracing::info!(
                            version = status.version(),
                            "etcd before 3.5.13: watch progress comes only from etcd's periodic notifications"
                        );
                    }
                    Ok(ok)
                }
                Err(e) => Err(e),
            }
        };
        match self.progress_ok.get_or_try_init(|| ask).await {
            Ok(ok) => *ok,
            Err(_) => false,
        }
    }

    async fn get_kv(&self, key: &str) -> Result<Option<KeyValue>> {
        let mut kv = self.client.kv_client();
        let resp = call(kv.get(key, None)).await?;
        resp.kvs().first().map(convert).transpose()
    }

    /// Writes `value` if the key's mod revision is still `expected` (0 = absent); otherwise
    /// `Err` with the key's current value, read in the same transaction when `read_on_conflict`
    /// (a create has no use for it: kube-apiserver's create sends no read either).
    async fn put_if(
        &self,
        key: &str,
        value: Bytes,
        expected: Revision,
        ttl: Option<Duration>,
        read_on_conflict: bool,
    ) -> Result<std::result::Result<KeyValue, Option<KeyValue>>> {
        let mut put_opts = PutOptions::new();
        if let Some(ttl) = ttl {
            let secs = ttl.as_secs_f64().ceil().max(1.0) as i64;
            let mut lease = self.client.lease_client();
            let granted = call(lease.grant(secs, None)).await?;
            put_opts = put_opts.with_lease(granted.id());
        }
        let mut txn = etcd_client::Txn::new()
            .when([Compare::mod_revision(key, CompareOp::Equal, expected)])
            .and_then([TxnOp::put(key, value.to_vec(), Some(put_opts))]);
        if read_on_conflict {
            txn = txn.or_else([TxnOp::get(key, None)]);
        }
        let mut kv = self.client.kv_client();
        let resp = call(kv.txn(txn)).await?;
        if !resp.succeeded() {
            let current = resp.op_responses().into_iter().find_map(|r| match r {
                etcd_client::TxnOpResponse::Get(g) => g.kvs().first().map(convert),
                _ => None,
            });
            return Ok(Err(current.transpose()?));
        }
        let rev = resp.header().map(|h| h.revision()).unwrap_or_default();
        Ok(Ok(KeyValue {
            key: key.to_string(),
            value,
            create_revision: 0,
            mod_revision: rev,
        }))
    }
}

fn tls_options(tls: &EtcdTls) -> Result<etcd_client::TlsOptions> {
    let read = |p: &std::path::Path| {
        std::fs::read(p)
            .map_err(|e| Error::unavailable(format!("cannot read {}", p.display())).caused_by(e))
    };
    let mut t = etcd_client::TlsOptions::new();
    if let Some(ca) = &tls.ca_file {
        t = t.ca_certificate(etcd_client::Certificate::from_pem(read(ca)?));
    }
    match (&tls.cert_file, &tls.key_file) {
        (Some(c), Some(k)) => t = t.identity(etcd_client::Identity::from_pem(read(c)?, read(k)?)),
        (None, None) => {}
        _ => {
            return Err(Error::unavailable(
                "--etcd-certfile and --etcd-keyfile must be given together",
            ))
        }
    }
    Ok(t)
}

/// Runs a unary call with a time limit, mapping its error.
async fn call<T>(f: impl std::future::Future<Output = Result<T, etcd_client::Error>>) -> Result<T> {
    match tokio::time::timeout(CALL_TIMEOUT, f).await {
        Ok(r) => r.map_err(map_err),
        Err(_) => Err(Error::unavailable("etcd did not answer in time")),
    }
}

/// Maps an etcd-client error onto the storage errors. etcd tells compaction and a future
/// revision apart only in its gRPC status message.
fn map_err(e: etcd_client::Error) -> Error {
    let msg = e.to_string();
    if msg.contains("required revision has been compacted") {
        return Error::Compacted {
            requested: 0,
            oldest: 0,
        };
    }
    if msg.contains("required revision is a future revision") {
        return Error::TooLargeRevision {
            requested: 0,
            current: 0,
        };
    }
    Error::unavailable("etcd request failed").caused_by(e)
}

fn convert(kv: &etcd_client::KeyValue) -> Result<KeyValue> {
    let key = kv.key_str().map_err(|e| {
        Error::corrupt(format!(
            "etcd key {:?} is not UTF-8",
            String::from_utf8_lossy(kv.key())
        ))
        .caused_by(e)
    })?;
    Ok(KeyValue {
        key: key.to_string(),
        value: Bytes::copy_from_slice(kv.value()),
        create_revision: kv.create_revision(),
        mod_revision: kv.mod_revision(),
    })
}

/// The first key after every key starting with `prefix` (etcd's range end).
fn prefix_end(prefix: &str) -> Vec<u8> {
    let mut end = prefix.as_bytes().to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    vec![0]
}

/// Whether a dotted version string is at least `min`.
fn version_at_least(version: &str, min: (u64, u64, u64)) -> bool {
    let mut parts = version
        .split(|c: char| !c.is_ascii_digit())
        .filter(|p| !p.is_empty())
        .map(|p| p.parse::<u64>().unwrap_or(0));
    let v = (
        parts.next().unwrap_or(0),
        parts.next().unwrap_or(0),
        parts.next().unwrap_or(0),
    );
    v >= min
}

/// One health probe: a read of the key `health`, as kube-apiserver's etcd check does.
async fn probe(client: &Client, timeout: Duration) -> Result<()> {
    let mut kv = client.kv_client();
    match tokio::time::timeout(
        timeout,
        kv.get(
            "health",
            Some(GetOptions::new().with_serializable().with_count_only()),
        ),
    )
    .await
    {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) => Err(Error::unavailable("etcd health probe failed").caused_by(e)),
        Err(_) => Err(Error::unavailable(format!(
            "etcd did not answer within {timeout:?}"
        ))),
    }
}

#[async_trait::async_trait]
impl Storage for EtcdStore {
    async fn get(&self, key: &str) -> Result<KeyValue> {
        self.get_kv(key).await?.ok_or_else(|| Error::NotFound {
            key: key.to_string(),
        })
    }

    fn remembered(&self, key: &str) -> Option<KeyValue> {
        self.known.get(key)
    }

    async fn list(&self, prefix: &str, opts: ListOptions) -> Result<ListResult> {
        let start = match &opts.start_key {
            Some(s) if s.as_str() > prefix => s.clone(),
            _ => prefix.to_string(),
        };
        let mut get = GetOptions::new().with_range(prefix_end(prefix));
        if opts.limit > 0 {
            get = get.with_limit(opts.limit as i64);
        }
        let (requested, min) = match opts.revision {
            ListRevision::Exact(r) => (Some(r), None),
            ListRevision::NotOlderThan(r) => (None, Some(r)),
            ListRevision::Latest | ListRevision::Any => (None, None),
        };
        if let Some(r) = requested {
            get = get.with_revision(r);
        }
        let mut kv = self.client.kv_client();
        let resp = call(kv.get(start, Some(get))).await.map_err(|e| match e {
            Error::Compacted { .. } => Error::Compacted {
                requested: requested.unwrap_or(0),
                oldest: 0,
            },
            Error::TooLargeRevision { .. } => Error::TooLargeRevision {
                requested: requested.unwrap_or(0),
                current: 0,
            },
            e => e,
        })?;
        let current = resp.header().map(|h| h.revision()).unwrap_or_default();
        if let Some(min) = min {
            if current < min {
                return Err(Error::TooLargeRevision {
                    requested: min,
                    current,
                });
            }
        }
        let items = resp.kvs().iter().map(convert).collect::<Result<Vec<_>>>()?;
        let (next_key, remaining) = match (resp.more(), items.last()) {
            (true, Some(last)) => (
                Some(format!("{}\0", last.key)),
                Some(resp.count() - items.len() as i64),
            ),
            _ => (None, None),
        };
        Ok(ListResult {
            items,
            revision: requested.unwrap_or(current),
            next_key,
            remaining,
        })
    }

    async fn create(&self, key: &str, value: Bytes, ttl: Option<Duration>) -> Result<KeyValue> {
        match self.put_if(key, value, 0, ttl, false).await? {
            Ok(mut kv) => {
                kv.create_revision = kv.mod_revision;
                Ok(kv)
            }
            Err(_) => Err(Error::AlreadyExists {
                key: key.to_string(),
            }),
        }
    }

    async fn guaranteed_update(
        &self,
        key: &str,
        ignore_not_found: bool,
        update: UpdateFn<'_>,
    ) -> Result<KeyValue> {
        // As the apiserver's etcd3 store: start from the value last seen (one round trip when
        // it is still current: the transaction compares it), read it only when unknown.
        let mut cur = self.known.get(key);
        let mut guessed = cur.is_some();
        if !guessed {
            cur = self.get_kv(key).await?;
        }
        loop {
            // etcd's events cannot carry a heartbeat mark: the write is a plain put.
            let (value, ttl) =
                match update_round(key, cur.as_ref(), guessed, ignore_not_found, update) {
                    Round::Write(w) => (w.value, w.ttl),
                    Round::Done(result) => return result,
                    Round::Reread => {
                        cur = self.get_kv(key).await?;
                        self.known.set(key, cur.as_ref());
                        guessed = false;
                        continue;
                    }
                };
            let expected = cur.as_ref().map(|c| c.mod_revision).unwrap_or(0);
            match self.put_if(key, value, expected, ttl, true).await? {
                Ok(mut kv) => {
                    kv.create_revision = cur.map(|c| c.create_revision).unwrap_or(kv.mod_revision);
                    self.known.set(key, Some(&kv));
                    return Ok(kv);
                }
                Err(now) => {
                    self.known.set(key, now.as_ref());
                    cur = now;
                    guessed = false;
                }
            }
        }
    }

    async fn delete(&self, key: &str, check: DeleteCheck<'_>) -> Result<KeyValue> {
        loop {
            let cur = self.get_kv(key).await?.ok_or_else(|| Error::NotFound {
                key: key.to_string(),
            })?;
            check(&cur)?;
            let txn = etcd_client::Txn::new()
                .when([Compare::mod_revision(
                    key,
                    CompareOp::Equal,
                    cur.mod_revision,
                )])
                .and_then([TxnOp::delete(key, None)]);
            let mut kv = self.client.kv_client();
            if call(kv.txn(txn)).await?.succeeded() {
                self.known.set(key, None);
                return Ok(cur);
            }
        }
    }

    async fn watch(&self, prefix: &str, after: Option<Revision>) -> Result<WatchStream> {
        let mut opts = WatchOptions::new()
            .with_range(prefix_end(prefix))
            .with_prev_key()
            .with_progress_notify();
        if let Some(after) = after {
            opts = opts.with_start_revision(after + 1);
        }
        let mut wc = self.client.watch_client();
        let stream = call(wc.watch(prefix, Some(opts))).await?;
        Ok(watch_stream(
            stream,
            after.unwrap_or(0),
            self.progress_requests_safe().await,
        ))
    }

    async fn current_revision(&self) -> Result<Revision> {
        let mut kv = self.client.kv_client();
        let resp = call(kv.get("health", Some(GetOptions::new().with_count_only()))).await?;
        Ok(resp.header().map(|h| h.revision()).unwrap_or_default())
    }

    async fn compact(&self, revision: Revision) -> Result<()> {
        let mut kv = self.client.kv_client();
        match call(kv.compact(revision, None)).await {
            Ok(_) | Err(Error::Compacted { .. }) => Ok(()),
            Err(e) => Err(e),
        }
    }

    async fn check_health(&self) -> Result<()> {
        probe(&self.client, self.health_timeout).await
    }

    async fn db_size(&self) -> Result<Option<(String, i64)>> {
        let mut maintenance = self.client.maintenance_client();
        let status = tokio::time::timeout(self.health_timeout, maintenance.status())
            .await
            .map_err(|_| Error::unavailable("etcd status did not answer in time"))?
            .map_err(|e| Error::unavailable("etcd status failed").caused_by(e))?;
        Ok(Some((self.endpoint.clone(), status.db_size())))
    }
}

/// Turns etcd watch responses into storage events; the stream ends with `Err(Compacted)` when
/// etcd cancels the watch for compaction, or `Err(Unavailable)` when the connection breaks.
fn watch_stream(
    stream: etcd_client::WatchStream,
    after: Revision,
    request_progress: bool,
) -> WatchStream {
    struct St {
        stream: etcd_client::WatchStream,
        pending: std::collections::VecDeque<Result<WatchEvent>>,
        done: bool,
        after: Revision,
        tick: tokio::time::Interval,
        request_progress: bool,
    }
    let mut tick = tokio::time::interval(PROGRESS_REQUEST_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let st = St {
        stream,
        pending: Default::default(),
        done: false,
        after,
        tick,
        request_progress,
    };
    futures::stream::unfold(st, |mut st| async move {
        loop {
            if let Some(item) = st.pending.pop_front() {
                if item.is_err() {
                    st.done = true;
                    st.pending.clear();
                }
                return Some((item, st));
            }
            if st.done {
                return None;
            }
            let next = tokio::select! {
                next = st.stream.next() => next,
                _ = st.tick.tick(), if st.request_progress => {
                    // Answered only once the watch has caught up, so it never overtakes events.
                    if let Err(e) = st.stream.request_progress().await {
                        st.pending.push_back(Err(map_err(e)));
                    }
                    continue;
                }
            };
            match next {
                None => return None,
                Some(Err(e)) => st.pending.push_back(Err(map_err(e))),
                Some(Ok(resp)) => {
                    if resp.canceled() {
                        let err = if resp.compact_revision() > 0 {
                            Error::Compacted {
                                requested: st.after,
                                oldest: resp.compact_revision(),
                            }
                        } else {
                            Error::unavailable(format!(
                                "etcd cancelled the watch: {}",
                                resp.cancel_reason()
                            ))
                        };
                        st.pending.push_back(Err(err));
                        continue;
                    }
                    if resp.created() {
                        continue;
                    }
                    if resp.events().is_empty() {
                        if let Some(h) = resp.header() {
                            st.pending.push_back(Ok(WatchEvent::Progress(h.revision())));
                        }
                        continue;
                    }
                    for ev in resp.events() {
                        st.pending.push_back(convert_event(ev));
                    }
                }
            }
        }
    })
    .boxed()
}

fn convert_event(ev: &etcd_client::Event) -> Result<WatchEvent> {
    let kv = ev
        .kv()
        .ok_or_else(|| Error::corrupt("etcd watch event without a key"))?;
    let kv = convert(kv)?;
    let prev = ev.prev_kv().map(convert).transpose()?;
    Ok(match ev.event_type() {
        EventType::Put => match prev {
            Some(prev) if kv.create_revision != kv.mod_revision => WatchEvent::Updated {
                kv,
                prev,
                heartbeat: false,
            },
            _ => WatchEvent::Created(kv),
        },
        EventType::Delete => {
            let revision = kv.mod_revision;
            let prev = prev.unwrap_or(KeyValue {
                mod_revision: revision,
                ..kv
            });
            WatchEvent::Deleted { prev, revision }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_end_and_versions() {
        assert_eq!(prefix_end("/registry/pods/"), b"/registry/pods0".to_vec());
        assert!(version_at_least("3.5.13", (3, 5, 13)));
        assert!(version_at_least("3.6.0", (3, 5, 13)));
        assert!(!version_at_least("3.5.1", (3, 5, 13)));
    }
}
