//! Versioned key-value storage with watch: the narrow, optimistic interface of
//! k8s.io/apiserver pkg/storage, over bytes only. One global, strictly increasing revision per
//! store is the resourceVersion clients see. Backends: an embedded durable store (default) and a
//! real etcd v3; a watch cache sits in front of either.
//! May use: metrics (a leaf: its figures are recorded where the work happens), api (trace
//! spans).

mod cacher;
#[cfg(test)]
pub(crate) mod conformance;
mod embedded;
mod error;
mod etcd;
mod etcd_endpoints;
mod remembered;
mod traced;
mod watch;

pub use cacher::{Cacher, CacherOptions};
pub use embedded::EmbeddedStore;
pub use error::{Chain, Error, Result, Source};
pub use etcd::{EtcdStore, EtcdTls};

use bytes::Bytes;
use futures::stream::BoxStream;
use std::time::Duration;

/// A store revision (etcd's revision; the resourceVersion of the API).
pub type Revision = i64;

/// One stored key and its value at a revision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyValue {
    /// Full key, e.g. `/registry/leases/kube-system/x`.
    pub key: String,
    /// Opaque value (the API layer stores JSON).
    pub value: Bytes,
    /// Revision that created the key.
    pub create_revision: Revision,
    /// Revision of the last change (the object's resourceVersion).
    pub mod_revision: Revision,
}

/// Which revision a list must be served at (resourceVersion + resourceVersionMatch).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ListRevision {
    /// The latest state, read consistently from the backend (resourceVersion unset).
    #[default]
    Latest,
    /// Any state, may be served from the watch cache (resourceVersion="0").
    Any,
    /// A state at least this new (resourceVersionMatch=NotOlderThan).
    NotOlderThan(Revision),
    /// Exactly this revision (resourceVersionMatch=Exact, or a continue token).
    Exact(Revision),
}

/// Options of [`Storage::list`].
#[derive(Debug, Clone, Default)]
pub struct ListOptions {
    /// Which revision to read.
    pub revision: ListRevision,
    /// At most this many items; 0 = no limit.
    pub limit: usize,
    /// Start at this key (inclusive), from a previous page's `next_key`.
    pub start_key: Option<String>,
}

/// One page of a list.
#[derive(Debug, Clone, Default)]
pub struct ListResult {
    /// Items in key order.
    pub items: Vec<KeyValue>,
    /// The revision the list was read at.
    pub revision: Revision,
    /// When the page was limited and more keys follow: the first key of the next page.
    pub next_key: Option<String>,
    /// How many keys follow this page (when known).
    pub remaining: Option<i64>,
}

/// What an update function decides for a key.
#[derive(Debug, Clone)]
pub enum Update {
    /// Write this value.
    Set(Bytes),
    /// Write this value with a time-to-live.
    SetWithTtl(Bytes, Duration),
    /// Write this value, a change that only refreshes a heartbeat (a lease renewal): its
    /// event is marked ([`WatchEvent::Updated`]'s `heartbeat`), and watches that leave
    /// heartbeats out ([`Storage::watch_without_heartbeats`]) may not be sent it.
    Heartbeat(Bytes),
    /// Leave the key as it is (the result is the current value).
    Unchanged,
}

/// The write a round of `guaranteed_update` decided on.
#[derive(Debug)]
pub(crate) struct Write {
    pub value: Bytes,
    pub ttl: Option<Duration>,
    /// [`Update::Heartbeat`]: the backend marks the event if it can (the embedded store does;
    /// etcd's events carry no such mark).
    pub heartbeat: bool,
}

impl Write {
    fn new(value: Bytes, ttl: Option<Duration>) -> Write {
        Write {
            value,
            ttl,
            heartbeat: false,
        }
    }
}

/// What a backend's `guaranteed_update` does after one round (see [`update_round`]).
#[derive(Debug)]
pub(crate) enum Round {
    /// Compare-and-write against the state the round saw.
    Write(Write),
    /// The update is finished: nothing to change (the current value), or the function's error.
    Done(Result<KeyValue>),
    /// The round ran on a remembered guess and did not write: read the key and run again.
    Reread,
}

/// One round of a backend's `guaranteed_update` on the state `cur`; a missing key without
/// `ignore_not_found` is NotFound. `guessed`: `cur` is a value the backend remembered rather
/// than read (see `remembered.rs`); a write is checked by the backend's compare, but any other
/// outcome was decided on possibly stale state and is decided again on a fresh read, as the
/// apiserver's etcd3 store does when its cached state is not current. The backends differ only
/// in how they read and compare-and-write.
pub(crate) fn update_round(
    key: &str,
    cur: Option<&KeyValue>,
    guessed: bool,
    ignore_not_found: bool,
    update: UpdateFn<'_>,
) -> Round {
    let not_found = || Error::NotFound {
        key: key.to_string(),
    };
    let outcome = match cur {
        None if !ignore_not_found => Err(not_found()),
        _ => update(cur),
    };
    match outcome {
        Ok(Update::Set(value)) => Round::Write(Write::new(value, None)),
        Ok(Update::SetWithTtl(value, ttl)) => Round::Write(Write::new(value, Some(ttl))),
        Ok(Update::Heartbeat(value)) => Round::Write(Write {
            heartbeat: true,
            ..Write::new(value, None)
        }),
        _ if guessed => Round::Reread,
        Ok(Update::Unchanged) => Round::Done(cur.cloned().ok_or_else(not_found)),
        Err(e) => Round::Done(Err(e)),
    }
}

/// The function given to [`Storage::guaranteed_update`]; re-run on conflict with fresh state.
/// It receives the current value (None when absent and `ignore_not_found` was set) and may
/// return an error (e.g. a precondition failure) that aborts the update; the caller's own error
/// travels in [`Error::Aborted`] and comes back to it unchanged.
pub type UpdateFn<'a> = &'a (dyn Fn(Option<&KeyValue>) -> Result<Update> + Send + Sync);

/// The check given to [`Storage::delete`], re-run on conflict; an error aborts the delete.
pub type DeleteCheck<'a> = &'a (dyn Fn(&KeyValue) -> Result<()> + Send + Sync);

/// One watch event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WatchEvent {
    /// A key was created.
    Created(KeyValue),
    /// A key was changed; `prev` is its value before.
    Updated {
        /// The new value.
        kv: KeyValue,
        /// The value before.
        prev: KeyValue,
        /// Written as an [`Update::Heartbeat`] (known only to the process that wrote it, and
        /// only to the embedded store: false in etcd's events and in replays from history).
        heartbeat: bool,
    },
    /// A key was deleted (or its TTL expired); `prev` is its last value.
    Deleted {
        /// The last value of the key.
        prev: KeyValue,
        /// The revision of the deletion.
        revision: Revision,
    },
    /// No change under the prefix up to this revision (a bookmark / progress notification).
    Progress(Revision),
}

impl WatchEvent {
    /// The revision this event happened at.
    pub fn revision(&self) -> Revision {
        match self {
            WatchEvent::Created(kv) | WatchEvent::Updated { kv, .. } => kv.mod_revision,
            WatchEvent::Deleted { revision, .. } | WatchEvent::Progress(revision) => *revision,
        }
    }

    /// Whether the event is an update marked as a heartbeat.
    pub fn is_heartbeat(&self) -> bool {
        matches!(
            self,
            WatchEvent::Updated {
                heartbeat: true,
                ..
            }
        )
    }

    /// The key the event is about (empty for progress notifications).
    pub fn key(&self) -> &str {
        match self {
            WatchEvent::Created(kv) | WatchEvent::Updated { kv, .. } => &kv.key,
            WatchEvent::Deleted { prev, .. } => &prev.key,
            WatchEvent::Progress(_) => "",
        }
    }
}

/// A stream of watch events in revision order, without gaps or duplicates. It ends with
/// `Err(Error::Compacted)` when the watcher fell behind or asked for a revision too old.
pub type WatchStream = BoxStream<'static, Result<WatchEvent>>;

/// The storage interface every backend implements (and the watch cache wraps).
#[async_trait::async_trait]
pub trait Storage: Send + Sync + 'static {
    /// Reads one key at the latest revision. `Err(NotFound)` when absent.
    async fn get(&self, key: &str) -> Result<KeyValue>;

    /// Reads one key from the copy the store keeps in memory (the watch cache), which may be
    /// a moment behind the latest revision; from the backend when that copy does not hold it.
    /// For checks that kube-apiserver answers from an informer's cache, such as
    /// NamespaceLifecycle admission. `Err(NotFound)` when absent.
    async fn get_cached(&self, key: &str) -> Result<KeyValue> {
        self.get(key).await
    }

    /// The value this store last wrote under `key` in an update, when it still remembers it:
    /// what [`Storage::guaranteed_update`] starts from, so an update computed outside it (one
    /// that awaits admission webhooks) can start from it as well, without a read. Only a
    /// guess: a write made on it must compare its mod revision, and a decision taken on it
    /// (an error, nothing to change) be taken again on a read. None when not remembered.
    fn remembered(&self, _key: &str) -> Option<KeyValue> {
        None
    }

    /// Drops what the store keeps in memory for the keys under `prefix` (the watch cache of
    /// a resource that is no longer served, such as a deleted CRD's); watchers already
    /// running keep theirs until they end. Nothing to do for a store without such a copy.
    fn forget_cached(&self, _prefix: &str) {}

    /// Starts the in-memory copy of the keys under `prefix` (the watch cache of a resource)
    /// if there is none, and waits briefly for its first list, so that a watch from any
    /// revision written after this returns is served from it (upstream's cacher starts with
    /// its resource's storage). Nothing to do for a store without such a copy.
    async fn start_cache(&self, _prefix: &str) {}

    /// Lists the keys under `prefix` (which must end with `/`).
    async fn list(&self, prefix: &str, opts: ListOptions) -> Result<ListResult>;

    /// Creates `key` if absent (`Err(AlreadyExists)` otherwise), durably.
    async fn create(&self, key: &str, value: Bytes, ttl: Option<Duration>) -> Result<KeyValue>;

    /// Reads, applies `update`, writes if nothing changed meanwhile, retrying on conflict
    /// (GuaranteedUpdate in k8s). `Err(NotFound)` when absent unless `ignore_not_found`.
    async fn guaranteed_update(
        &self,
        key: &str,
        ignore_not_found: bool,
        update: UpdateFn<'_>,
    ) -> Result<KeyValue>;

    /// Deletes `key` after `check` passes on its current value; returns the deleted value.
    async fn delete(&self, key: &str, check: DeleteCheck<'_>) -> Result<KeyValue>;

    /// Watches `prefix` for events with a revision greater than `after`; `None` = from now.
    /// `Err(Compacted)` (immediately or as the stream's last item) when `after` is too old.
    async fn watch(&self, prefix: &str, after: Option<Revision>) -> Result<WatchStream>;

    /// [`Self::watch`], where the store may leave out the updates marked as heartbeats
    /// ([`Update::Heartbeat`]); the revisions left out still reach the watcher in progress
    /// notifications. The watch cache leaves them out; a backend sends every event.
    async fn watch_without_heartbeats(
        &self,
        prefix: &str,
        after: Option<Revision>,
    ) -> Result<WatchStream> {
        self.watch(prefix, after).await
    }

    /// The store's current revision.
    async fn current_revision(&self) -> Result<Revision>;

    /// Drops history before `revision`: afterwards lists at older revisions and watches
    /// starting before it (`after < revision - 1`) fail with `Compacted`, as in etcd.
    async fn compact(&self, revision: Revision) -> Result<()>;

    /// Whether the backend answers (the `etcd` health check).
    async fn check_health(&self) -> Result<()>;

    /// A clean stop, once nothing more will be written: the embedded store commits what it
    /// has taken, makes redb durable and empties its log, then refuses writes. Blocks until
    /// done. Nothing to do for etcd.
    fn close(&self) {}

    /// How many keys lie under `prefix` (apiserver_storage_objects), from the watch cache
    /// when there is one.
    async fn count(&self, prefix: &str) -> Result<i64> {
        let opts = ListOptions {
            revision: ListRevision::Any,
            ..ListOptions::default()
        };
        Ok(self.list(prefix, opts).await?.items.len() as i64)
    }

    /// The database's size on disk in bytes and where it is (etcd's endpoint, or the file),
    /// when the backend can tell (apiserver_storage_size_bytes).
    async fn db_size(&self) -> Result<Option<(String, i64)>> {
        Ok(None)
    }
}

/// How to open a store (converted from options by the server's config step).
#[derive(Debug, Clone)]
pub struct Config {
    /// Which backend.
    pub backend: BackendConfig,
    /// Key prefix of every object, e.g. `/registry`.
    pub prefix: String,
    /// Compaction period (zero disables).
    pub compaction_interval: Duration,
    /// Put the watch cache in front of the backend.
    pub watch_cache: bool,
    /// Timeout of one health probe.
    pub healthcheck_timeout: Duration,
    /// Make the backend's operations spans of the traced requests (`--tracing-config-file`).
    pub traced: bool,
}

/// Backend-specific settings.
#[derive(Debug, Clone)]
pub enum BackendConfig {
    /// The embedded store in this directory.
    Embedded {
        /// Directory of the store files.
        dir: std::path::PathBuf,
    },
    /// A real etcd v3 cluster.
    Etcd {
        /// Endpoints, `http(s)://host:port`.
        servers: Vec<String>,
        /// CA bundle for etcd's serving certificate.
        ca_file: Option<std::path::PathBuf>,
        /// Client certificate.
        cert_file: Option<std::path::PathBuf>,
        /// Client key.
        key_file: Option<std::path::PathBuf>,
    },
}

/// Opens the configured backend (and the watch cache in front of it when asked).
///
/// An embedded store that is corrupt or not ours is an error naming the file. An etcd that
/// cannot be reached is not: the store is returned, its health check fails, and it reconnects
/// with backoff by itself.
pub async fn open(config: Config) -> Result<std::sync::Arc<dyn Storage>> {
    let mut backend = open_backend(&config).await?;
    if config.traced {
        let etcd = matches!(config.backend, BackendConfig::Etcd { .. });
        backend = std::sync::Arc::new(traced::Traced::new(backend, etcd));
    }
    if config.watch_cache {
        return Ok(std::sync::Arc::new(Cacher::new(
            backend,
            &config.prefix,
            CacherOptions::default(),
        )));
    }
    Ok(backend)
}

/// Opens the configured backend alone.
async fn open_backend(config: &Config) -> Result<std::sync::Arc<dyn Storage>> {
    match &config.backend {
        BackendConfig::Embedded { dir } => {
            let dir = dir.clone();
            let interval = config.compaction_interval;
            // Opening may read and repair the file: keep it off the async workers.
            let store = tokio::task::spawn_blocking(move || EmbeddedStore::open(&dir, interval))
                .await
                .map_err(|e| {
                    Error::unavailable("opening the embedded store failed").caused_by(e)
                })??;
            Ok(std::sync::Arc::new(store))
        }
        BackendConfig::Etcd {
            servers,
            ca_file,
            cert_file,
            key_file,
        } => {
            let tls = EtcdTls {
                ca_file: ca_file.clone(),
                cert_file: cert_file.clone(),
                key_file: key_file.clone(),
            };
            let store = EtcdStore::connect(servers, &tls, config.healthcheck_timeout).await?;
            Ok(std::sync::Arc::new(store))
        }
    }
}

#[cfg(test)]
mod round_tests {
    use super::*;

    fn kv(value: &str) -> KeyValue {
        KeyValue {
            key: "/k".into(),
            value: Bytes::from(value.to_string()),
            create_revision: 2,
            mod_revision: 3,
        }
    }

    fn unchanged(_: Option<&KeyValue>) -> Result<Update> {
        Ok(Update::Unchanged)
    }

    fn refuse(_: Option<&KeyValue>) -> Result<Update> {
        Err(Error::Aborted("precondition".into()))
    }

    #[test]
    fn a_write_is_written_whether_guessed_or_read() {
        let set = |_: Option<&KeyValue>| Ok(Update::Set(Bytes::from_static(b"v2")));
        for guessed in [false, true] {
            match update_round("/k", Some(&kv("v1")), guessed, false, &set) {
                Round::Write(w) => {
                    assert_eq!((w.value, w.ttl, w.heartbeat), ("v2".into(), None, false))
                }
                other => panic!("guessed={guessed}: {other:?}"),
            }
        }
    }

    #[test]
    fn on_read_state_unchanged_and_errors_finish_the_update() {
        match update_round("/k", Some(&kv("v1")), false, false, &unchanged) {
            Round::Done(Ok(cur)) => assert_eq!(cur, kv("v1")),
            other => panic!("{other:?}"),
        }
        match update_round("/k", Some(&kv("v1")), false, false, &refuse) {
            Round::Done(Err(Error::Aborted(m))) => assert_eq!(m.to_string(), "precondition"),
            other => panic!("{other:?}"),
        }
        match update_round("/k", None, false, false, &unchanged) {
            Round::Done(Err(Error::NotFound { key })) => assert_eq!(key, "/k"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn on_a_guess_anything_but_a_write_is_decided_again() {
        for f in [unchanged as fn(Option<&KeyValue>) -> Result<Update>, refuse] {
            assert!(matches!(
                update_round("/k", Some(&kv("v1")), true, false, &f),
                Round::Reread
            ));
        }
    }
}
