//! Health of the etcd backend: unreachable at start is not fatal, a stopped etcd fails the
//! check within its timeout, and everything recovers by itself (including the watch cache's
//! watchers) when etcd returns.

use super::{within, EtcdServer};
use crate::storage::{open, BackendConfig, Config, ListOptions, WatchEvent};
use bytes::Bytes;
use futures::StreamExt;
use std::time::{Duration, Instant};

fn config(url: String, cache: bool) -> Config {
    Config {
        backend: BackendConfig::Etcd {
            servers: vec![url],
            ca_file: None,
            cert_file: None,
            key_file: None,
        },
        prefix: "/registry".into(),
        compaction_interval: Duration::ZERO,
        watch_cache: cache,
        healthcheck_timeout: Duration::from_secs(2),
        traced: false,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreachable_etcd_at_start_is_not_fatal() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let store = within(10, open(config(format!("http://127.0.0.1:{port}"), true)))
        .await
        .expect("open must succeed");
    let started = Instant::now();
    assert!(within(10, store.check_health()).await.is_err());
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "health check took {:?}",
        started.elapsed()
    );
    assert!(within(10, store.get("/registry/x/y")).await.is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_outage_fails_health_and_recovers() {
    let mut server = EtcdServer::start().await;
    let store = within(10, open(config(server.url.clone(), true)))
        .await
        .unwrap();
    within(10, store.check_health()).await.unwrap();
    let p = "/registry/leases/";
    let first = within(
        10,
        store.create(&format!("{p}a"), Bytes::from_static(b"1"), None),
    )
    .await
    .unwrap();
    let mut w = within(10, store.watch(p, Some(first.mod_revision)))
        .await
        .unwrap();

    server.kill();
    let started = Instant::now();
    assert!(
        within(10, store.check_health()).await.is_err(),
        "health must fail with etcd stopped"
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "health check took {:?}",
        started.elapsed()
    );

    server.restart().await;
    within(30, async {
        while store.check_health().await.is_err() {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    })
    .await;
    let second = within(30, async {
        loop {
            match store
                .create(&format!("{p}b"), Bytes::from_static(b"2"), None)
                .await
            {
                Ok(kv) => break kv,
                Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
            }
        }
    })
    .await;
    // The watcher from before the outage continues without a gap.
    let ev = within(30, async {
        loop {
            match w.next().await.expect("watch ended").expect("watch failed") {
                WatchEvent::Progress(_) => continue,
                ev => break ev,
            }
        }
    })
    .await;
    assert!(matches!(ev, WatchEvent::Created(kv) if kv == second));
    let all = within(10, store.list(p, ListOptions::default()))
        .await
        .unwrap();
    assert_eq!(all.items.len(), 2);
}
