//! The storage conformance suite (in the spirit of k8s.io/apiserver pkg/storage/testing): the
//! same cases run against the embedded store, the embedded store behind the watch cache and
//! behind the tracing wrapper, a real etcd 3.5, and etcd behind the watch cache.

mod cases;
mod crash;
mod etcd_server;
mod health;
mod replicas;

use super::{Cacher, CacherOptions, EmbeddedStore, EtcdStore, EtcdTls, Storage};
use std::any::Any;
use std::sync::Arc;
use std::time::Duration;

pub(crate) use etcd_server::EtcdServer;

/// A store under test; `backend` is the store without the cache (the same as `store` for
/// uncached variants).
pub(crate) struct Fixture {
    pub store: Arc<dyn Storage>,
    pub backend: Arc<dyn Storage>,
    pub cached: bool,
    /// The backend's events carry the heartbeat mark (the embedded store's do, etcd's not).
    pub marks_heartbeats: bool,
    _guard: Box<dyn Any + Send + Sync>,
}

fn cache_opts() -> CacherOptions {
    CacherOptions {
        bookmark_interval: Duration::from_millis(200),
        ..CacherOptions::default()
    }
}

pub(crate) async fn embedded() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Storage> =
        Arc::new(EmbeddedStore::open(dir.path(), Duration::ZERO).unwrap());
    Fixture {
        store: store.clone(),
        backend: store,
        cached: false,
        marks_heartbeats: true,
        _guard: Box::new(dir),
    }
}

pub(crate) async fn embedded_cached() -> Fixture {
    let f = embedded().await;
    let store: Arc<dyn Storage> =
        Arc::new(Cacher::new(f.backend.clone(), "/registry", cache_opts()));
    Fixture {
        store,
        cached: true,
        ..f
    }
}

/// The embedded store behind the tracing wrapper (put there by `--tracing-config-file`).
pub(crate) async fn embedded_traced() -> Fixture {
    let f = embedded().await;
    let store: Arc<dyn Storage> = Arc::new(super::traced::Traced::new(f.backend, false));
    Fixture {
        store: store.clone(),
        backend: store,
        ..f
    }
}

pub(crate) async fn etcd() -> Fixture {
    let server = EtcdServer::start().await;
    let store: Arc<dyn Storage> = Arc::new(
        EtcdStore::connect(
            std::slice::from_ref(&server.url),
            &EtcdTls::default(),
            Duration::from_secs(2),
        )
        .await
        .unwrap(),
    );
    Fixture {
        store: store.clone(),
        backend: store,
        cached: false,
        marks_heartbeats: false,
        _guard: Box::new(server),
    }
}

pub(crate) async fn etcd_cached() -> Fixture {
    let f = etcd().await;
    let store: Arc<dyn Storage> =
        Arc::new(Cacher::new(f.backend.clone(), "/registry", cache_opts()));
    Fixture {
        store,
        cached: true,
        ..f
    }
}

/// Runs a case under a time limit.
async fn within<T>(secs: u64, f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(secs), f)
        .await
        .expect("conformance case timed out")
}

macro_rules! conformance {
    ($name:ident, $fixture:ident) => {
        mod $name {
            use super::cases;
            macro_rules! case {
                ($case:ident) => {
                    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                    async fn $case() {
                        let f = super::$fixture().await;
                        super::within(60, cases::$case(&f)).await;
                    }
                };
            }
            case!(crud);
            case!(counts_and_size);
            case!(preconditions_and_conflicts);
            case!(concurrent_updates_lose_nothing);
            case!(list_paging_at_fixed_revision);
            case!(watch_order_32_writers);
            case!(watch_from_old_revision);
            case!(compaction_gives_compacted);
            case!(ttl_expiry);
            case!(cache_matches_backend);
            case!(watch_prefix_isolation);
            case!(progress_notifications);
            case!(update_after_recreate);
            case!(heartbeats_are_writes_that_quiet_watches_skip);
        }
    };
}

conformance!(embedded_store, embedded);
conformance!(embedded_with_cache, embedded_cached);
conformance!(embedded_traced_store, embedded_traced);
conformance!(etcd_store, etcd);
conformance!(etcd_with_cache, etcd_cached);
