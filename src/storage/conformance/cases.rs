//! The conformance cases; each takes a fresh [`Fixture`] and panics on a violation.

use super::Fixture;
use crate::storage::{
    Error, KeyValue, ListOptions, ListRevision, Revision, Storage, Update, WatchEvent, WatchStream,
};
use bytes::Bytes;
use futures::StreamExt;
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

fn b(s: &str) -> Bytes {
    Bytes::from(s.to_string())
}

fn set(v: &str) -> impl Fn(Option<&KeyValue>) -> crate::storage::Result<Update> + Send + Sync + '_ {
    move |_| Ok(Update::Set(b(v)))
}

/// The next event that is not a progress notification (10 s limit).
async fn next_event(w: &mut WatchStream) -> crate::storage::Result<WatchEvent> {
    loop {
        let item = tokio::time::timeout(Duration::from_secs(10), w.next())
            .await
            .expect("no watch event within 10s")
            .expect("watch ended");
        match item {
            Ok(WatchEvent::Progress(_)) => continue,
            other => return other,
        }
    }
}

/// A watch from too old a revision fails, either at once or as the stream's first item.
async fn expect_compacted_watch(s: &dyn Storage, prefix: &str, after: Revision) {
    match s.watch(prefix, Some(after)).await {
        Err(Error::Compacted { .. }) => {}
        Err(e) => panic!("watch from compacted revision {after}: expected Compacted, got {e:?}"),
        Ok(mut w) => match next_event(&mut w).await {
            Err(Error::Compacted { .. }) => {}
            other => {
                panic!("watch from compacted revision {after}: expected Compacted, got {other:?}")
            }
        },
    }
}

pub(crate) async fn crud(f: &Fixture) {
    let s = &f.store;
    let k = "/registry/configmaps/default/a";
    let created = s.create(k, b("1"), None).await.unwrap();
    assert_eq!(created.create_revision, created.mod_revision);
    assert_eq!(created.value, b("1"));
    assert_eq!(s.get(k).await.unwrap(), created);
    assert!(matches!(
        s.create(k, b("x"), None).await,
        Err(Error::AlreadyExists { .. })
    ));
    let updated = s.guaranteed_update(k, false, &set("2")).await.unwrap();
    assert_eq!(updated.create_revision, created.mod_revision);
    assert!(updated.mod_revision > created.mod_revision);
    assert_eq!(s.get(k).await.unwrap(), updated);
    let deleted = s.delete(k, &|_| Ok(())).await.unwrap();
    assert_eq!(deleted, updated);
    assert!(matches!(s.get(k).await, Err(Error::NotFound { .. })));
    assert!(matches!(
        s.delete(k, &|_| Ok(())).await,
        Err(Error::NotFound { .. })
    ));
    assert!(s.current_revision().await.unwrap() > updated.mod_revision);
    s.check_health().await.unwrap();
}

/// What the metrics poll reads (apiserver_storage_objects, apiserver_storage_size_bytes), through
/// every wrapper of the backend.
pub(crate) async fn counts_and_size(f: &Fixture) {
    let s = &f.store;
    for name in ["a", "b", "c"] {
        let k = format!("/registry/configmaps/default/{name}");
        s.create(&k, b("1"), None).await.unwrap();
    }
    s.create("/registry/secrets/default/a", b("1"), None)
        .await
        .unwrap();
    // The watch cache may count a moment behind the backend.
    let mut counted = 0;
    for _ in 0..100 {
        counted = s.count("/registry/configmaps/").await.unwrap();
        if counted == 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(counted, 3);
    let (_, bytes) = s
        .db_size()
        .await
        .unwrap()
        .expect("every backend knows its size");
    assert!(bytes > 0, "{bytes}");
}

pub(crate) async fn preconditions_and_conflicts(f: &Fixture) {
    let s = &f.store;
    let k = "/registry/secrets/ns/s";
    assert!(matches!(
        s.guaranteed_update(k, false, &set("v")).await,
        Err(Error::NotFound { .. })
    ));
    let created = s.guaranteed_update(k, true, &set("v1")).await.unwrap();
    let reject = |cur: Option<&KeyValue>| -> crate::storage::Result<Update> {
        let cur = cur.expect("present");
        Err(Error::Conflict {
            key: cur.key.clone(),
            message: "uid mismatch".into(),
        })
    };
    match s.guaranteed_update(k, false, &reject).await {
        Err(Error::Conflict { message, .. }) => assert_eq!(message, "uid mismatch"),
        other => panic!("expected the update function's error, got {other:?}"),
    }
    let unchanged = s
        .guaranteed_update(k, false, &|_| Ok(Update::Unchanged))
        .await
        .unwrap();
    assert_eq!(unchanged, created);
    // A precondition on the resourceVersion the caller saw.
    let seen = created.mod_revision;
    s.guaranteed_update(k, false, &set("v2")).await.unwrap();
    let stale = move |cur: Option<&KeyValue>| -> crate::storage::Result<Update> {
        match cur {
            Some(c) if c.mod_revision != seen => Err(Error::Conflict {
                key: c.key.clone(),
                message: "resourceVersion changed".into(),
            }),
            _ => Ok(Update::Set(b("v3"))),
        }
    };
    assert!(matches!(
        s.guaranteed_update(k, false, &stale).await,
        Err(Error::Conflict { .. })
    ));
    assert_eq!(s.get(k).await.unwrap().value, b("v2"));
    let refuse = |_: &KeyValue| Err(Error::Aborted("finalizers pending".into()));
    assert!(matches!(s.delete(k, &refuse).await, Err(Error::Aborted(_))));
    assert!(s.get(k).await.is_ok());
}

pub(crate) async fn concurrent_updates_lose_nothing(f: &Fixture) {
    let s = f.store.clone();
    let k = "/registry/counters/c";
    s.create(k, b("0"), None).await.unwrap();
    let mut tasks = Vec::new();
    for _ in 0..32 {
        let s = s.clone();
        tasks.push(tokio::spawn(async move {
            for _ in 0..5 {
                let inc = |cur: Option<&KeyValue>| -> crate::storage::Result<Update> {
                    let n: u64 = std::str::from_utf8(&cur.expect("present").value)
                        .unwrap()
                        .parse()
                        .unwrap();
                    Ok(Update::Set(Bytes::from((n + 1).to_string())))
                };
                s.guaranteed_update(k, false, &inc).await.unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(s.get(k).await.unwrap().value, b("160"));
}

fn keys(items: &[KeyValue]) -> Vec<String> {
    items.iter().map(|i| i.key.clone()).collect()
}

pub(crate) async fn list_paging_at_fixed_revision(f: &Fixture) {
    let s = &f.store;
    let p = "/registry/pods/ns/";
    for i in 0..10 {
        s.create(&format!("{p}p{i:02}"), b(&i.to_string()), None)
            .await
            .unwrap();
    }
    s.create("/registry/pods/nt/other", b("x"), None)
        .await
        .unwrap();
    s.create("/registry/podsx/ns/other", b("x"), None)
        .await
        .unwrap();
    let all: Vec<String> = (0..10).map(|i| format!("{p}p{i:02}")).collect();
    for first_rev in [ListRevision::Latest, ListRevision::Any] {
        let first = s
            .list(
                p,
                ListOptions {
                    revision: first_rev,
                    limit: 3,
                    start_key: None,
                },
            )
            .await
            .unwrap();
        assert_eq!(keys(&first.items), all[..3].to_vec(), "{first_rev:?}");
        assert_eq!(first.remaining, Some(7));
        let rev = first.revision;
        // Changes after the first page must not show in the following pages.
        s.delete(&format!("{p}p05"), &|_| Ok(())).await.unwrap();
        s.create(&format!("{p}p05b"), b("new"), None).await.unwrap();
        let mut got = keys(&first.items);
        let mut next = first.next_key.clone();
        while let Some(start) = next {
            let page = s
                .list(
                    p,
                    ListOptions {
                        revision: ListRevision::Exact(rev),
                        limit: 3,
                        start_key: Some(start),
                    },
                )
                .await
                .unwrap();
            assert_eq!(page.revision, rev);
            assert!(page.items.len() <= 3);
            got.extend(keys(&page.items));
            next = page.next_key;
        }
        assert_eq!(got, all, "{first_rev:?}");
        // Restore for the second round.
        s.delete(&format!("{p}p05b"), &|_| Ok(())).await.unwrap();
        s.create(&format!("{p}p05"), b("5"), None).await.unwrap();
    }
    let whole = s.list(p, ListOptions::default()).await.unwrap();
    assert_eq!(keys(&whole.items), all);
    assert_eq!(whole.next_key, None);
}

pub(crate) async fn watch_order_32_writers(f: &Fixture) {
    let s = f.store.clone();
    let p = "/registry/leases/";
    let start = s.current_revision().await.unwrap();
    let mut w = s.watch(p, Some(start)).await.unwrap();
    let mut tasks = Vec::new();
    for t in 0..32 {
        let s = s.clone();
        tasks.push(tokio::spawn(async move {
            let mut revs = Vec::new();
            for i in 0..5 {
                let k = format!("{p}ns{}/l{t}-{i}", t % 4);
                revs.push(s.create(&k, b("a"), None).await.unwrap().mod_revision);
                revs.push(
                    s.guaranteed_update(&k, false, &set("b"))
                        .await
                        .unwrap()
                        .mod_revision,
                );
            }
            revs
        }));
    }
    let mut acked = BTreeSet::new();
    for t in tasks {
        acked.extend(t.await.unwrap());
    }
    assert_eq!(acked.len(), 320);
    let mut last = start;
    let mut seen = BTreeSet::new();
    while seen.len() < acked.len() {
        let ev = next_event(&mut w).await.unwrap();
        let rev = ev.revision();
        assert!(
            rev > last,
            "watch revisions must strictly increase: {rev} after {last}"
        );
        last = rev;
        assert!(
            acked.contains(&rev),
            "event at revision {rev} was never written"
        );
        if let WatchEvent::Updated { kv, prev, .. } = &ev {
            assert_eq!(
                (kv.value.as_ref(), prev.value.as_ref()),
                (b"b".as_ref(), b"a".as_ref())
            );
        }
        seen.insert(rev);
    }
    assert_eq!(seen, acked);
}

pub(crate) async fn watch_from_old_revision(f: &Fixture) {
    let s = &f.store;
    let k = "/registry/services/ns/svc";
    // A watch cache serves watches from the revision it started at (older ones are
    // Compacted, as upstream's): start it before the writes.
    let any = ListOptions {
        revision: ListRevision::Any,
        ..Default::default()
    };
    s.list("/registry/services/", any).await.unwrap();
    let a = s.create(k, b("1"), None).await.unwrap();
    let bb = s.guaranteed_update(k, false, &set("2")).await.unwrap();
    let gone = s.delete(k, &|_| Ok(())).await.unwrap();
    let mut w = s
        .watch("/registry/services/", Some(a.mod_revision))
        .await
        .unwrap();
    match next_event(&mut w).await.unwrap() {
        WatchEvent::Updated { kv, prev, .. } => {
            assert_eq!(kv, bb);
            assert_eq!(prev, a);
        }
        other => panic!("expected the update, got {other:?}"),
    }
    match next_event(&mut w).await.unwrap() {
        WatchEvent::Deleted { prev, revision } => {
            assert_eq!(prev, gone);
            assert!(revision > bb.mod_revision);
        }
        other => panic!("expected the delete, got {other:?}"),
    }
    // From before the create: all three.
    let mut w = s
        .watch("/registry/services/", Some(a.mod_revision - 1))
        .await
        .unwrap();
    assert!(matches!(next_event(&mut w).await.unwrap(), WatchEvent::Created(kv) if kv == a));
}

pub(crate) async fn compaction_gives_compacted(f: &Fixture) {
    let s = &f.store;
    let k = "/registry/events/ns/e";
    let a = s.create(k, b("1"), None).await.unwrap();
    let bb = s.guaranteed_update(k, false, &set("2")).await.unwrap();
    let c = s.guaranteed_update(k, false, &set("3")).await.unwrap();
    s.compact(bb.mod_revision).await.unwrap();
    let at = |r| ListOptions {
        revision: ListRevision::Exact(r),
        ..Default::default()
    };
    assert!(matches!(
        s.list("/registry/events/", at(a.mod_revision)).await,
        Err(Error::Compacted { .. })
    ));
    let still = s
        .list("/registry/events/", at(bb.mod_revision))
        .await
        .unwrap();
    assert_eq!(still.items[0].value, b("2"));
    // etcd keeps the state at the compacted revision itself: a watch starting there works,
    // one starting before it does not.
    expect_compacted_watch(s.as_ref(), "/registry/events/", a.mod_revision - 1).await;
    if f.cached {
        // The watch cache started after these writes: it serves watches from its own start
        // only (upstream's "too old resource version").
        expect_compacted_watch(s.as_ref(), "/registry/events/", bb.mod_revision).await;
    } else {
        let mut w = s
            .watch("/registry/events/", Some(bb.mod_revision))
            .await
            .unwrap();
        assert!(
            matches!(next_event(&mut w).await.unwrap(), WatchEvent::Updated { kv, .. } if kv == c)
        );
    }
    assert_eq!(s.get(k).await.unwrap(), c);
}

pub(crate) async fn ttl_expiry(f: &Fixture) {
    let s = &f.store;
    let p = "/registry/masterleases/";
    let mut w = s.watch(p, None).await.unwrap();
    let kv = s
        .create(
            &format!("{p}10.0.0.1"),
            b("ip"),
            Some(Duration::from_secs(2)),
        )
        .await
        .unwrap();
    s.create(&format!("{p}10.0.0.2"), b("ip"), None)
        .await
        .unwrap();
    assert!(s.get(&kv.key).await.is_ok());
    assert!(matches!(
        next_event(&mut w).await.unwrap(),
        WatchEvent::Created(_)
    ));
    assert!(matches!(
        next_event(&mut w).await.unwrap(),
        WatchEvent::Created(_)
    ));
    match tokio::time::timeout(Duration::from_secs(20), next_event(&mut w))
        .await
        .expect("no expiry")
    {
        Ok(WatchEvent::Deleted { prev, .. }) => assert_eq!(prev.key, kv.key),
        other => panic!("expected the expiry as a delete, got {other:?}"),
    }
    assert!(matches!(s.get(&kv.key).await, Err(Error::NotFound { .. })));
    let left = s.list(p, ListOptions::default()).await.unwrap();
    assert_eq!(keys(&left.items), vec![format!("{p}10.0.0.2")]);
}

pub(crate) async fn cache_matches_backend(f: &Fixture) {
    let s = f.store.clone();
    let p = "/registry/endpoints/";
    s.list(
        p,
        ListOptions {
            revision: ListRevision::Any,
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let mut tasks = Vec::new();
    for t in 0..8 {
        let s = s.clone();
        tasks.push(tokio::spawn(async move {
            let mut last = 0;
            for i in 0..20 {
                let k = format!("{p}ns/e{}", (t * 7 + i) % 25);
                let r = match i % 3 {
                    0 => s
                        .guaranteed_update(&k, true, &set("x"))
                        .await
                        .map(|kv| kv.mod_revision),
                    1 => s.delete(&k, &|_| Ok(())).await.map(|_| 0),
                    _ => s.create(&k, b("y"), None).await.map(|kv| kv.mod_revision),
                };
                if let Ok(r) = r {
                    last = last.max(r);
                }
            }
            last
        }));
    }
    let mut last: Revision = 0;
    for t in tasks {
        last = last.max(t.await.unwrap());
    }
    let cached = s
        .list(
            p,
            ListOptions {
                revision: ListRevision::NotOlderThan(last),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert!(cached.revision >= last);
    let direct = f
        .backend
        .list(
            p,
            ListOptions {
                revision: ListRevision::Exact(cached.revision),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(
        cached.items, direct.items,
        "cached list differs from the backend at revision {}",
        cached.revision
    );
    if f.cached {
        let future = s.current_revision().await.unwrap() + 1000;
        let r = s
            .list(
                p,
                ListOptions {
                    revision: ListRevision::NotOlderThan(future),
                    ..Default::default()
                },
            )
            .await;
        assert!(matches!(r, Err(Error::TooLargeRevision { .. })), "{r:?}");
    }
}

pub(crate) async fn watch_prefix_isolation(f: &Fixture) {
    let s = &f.store;
    let mut w = s.watch("/registry/pods/ns1/", None).await.unwrap();
    s.create("/registry/pods/ns2/a", b("x"), None)
        .await
        .unwrap();
    s.create("/registry/pods/ns10/a", b("x"), None)
        .await
        .unwrap();
    let mine = s
        .create("/registry/pods/ns1/a", b("y"), None)
        .await
        .unwrap();
    assert!(matches!(next_event(&mut w).await.unwrap(), WatchEvent::Created(kv) if kv == mine));
}

pub(crate) async fn progress_notifications(f: &Fixture) {
    let s = f.store.clone();
    let mut w = s.watch("/registry/nodes/", None).await.unwrap();
    let other = s
        .create("/registry/configmaps/ns/x", b("x"), None)
        .await
        .unwrap();
    let got = tokio::time::timeout(Duration::from_secs(15), async {
        loop {
            match w.next().await {
                Some(Ok(WatchEvent::Progress(r))) if r >= other.mod_revision => return r,
                Some(Ok(WatchEvent::Progress(_))) => continue,
                other => panic!("expected a progress notification, got {other:?}"),
            }
        }
    })
    .await
    .expect("no progress notification within 15s");
    assert!(got >= other.mod_revision);
    let _ = Arc::clone(&s);
}

/// An update after the key was deleted and created again works on the new key, never on a
/// value a backend remembered from before (backends may start an update from the value their
/// last update wrote).
pub(crate) async fn update_after_recreate(f: &Fixture) {
    let s = &f.store;
    let k = "/registry/leases/ns/recreated";
    s.create(k, b("v1"), None).await.unwrap();
    s.guaranteed_update(k, false, &set("v2")).await.unwrap();
    s.delete(k, &|_| Ok(())).await.unwrap();
    let again = s.create(k, b("w1"), None).await.unwrap();
    let unchanged = s
        .guaranteed_update(k, false, &|_| Ok(Update::Unchanged))
        .await
        .unwrap();
    assert_eq!(unchanged, again);
    let seen = again.mod_revision;
    let on_current = move |cur: Option<&KeyValue>| -> crate::storage::Result<Update> {
        match cur {
            Some(c) if c.mod_revision == seen && c.value == b("w1") => Ok(Update::Set(b("w2"))),
            other => Err(Error::Conflict {
                key: "recreated".into(),
                message: format!("decided on {other:?}"),
            }),
        }
    };
    let updated = s.guaranteed_update(k, false, &on_current).await.unwrap();
    assert_eq!(updated.value, b("w2"));
    assert_eq!(updated.create_revision, again.create_revision);
    assert_eq!(s.get(k).await.unwrap().value, b("w2"));
}

/// A heartbeat is a write like any other, and every watch gets it, marked where the backend
/// marks events; a watch without heartbeats skips it where it can tell (through the watch
/// cache, over a backend that marks), live and in a replay, and its revision still reaches
/// that watch in a progress notification.
pub(crate) async fn heartbeats_are_writes_that_quiet_watches_skip(f: &Fixture) {
    let s = &f.store;
    let (p, k) = ("/registry/leases/", "/registry/leases/ns/l");
    let beat = |v| move |_: Option<&KeyValue>| Ok(Update::Heartbeat(b(v)));
    let a = s.create(k, b("1"), None).await.unwrap();
    let mut every = s.watch(p, Some(a.mod_revision)).await.unwrap();
    let live = s
        .watch_without_heartbeats(p, Some(a.mod_revision))
        .await
        .unwrap();
    let hb = s.guaranteed_update(k, false, &beat("2")).await.unwrap();
    assert_eq!(s.get(k).await.unwrap(), hb);
    let c = s.guaranteed_update(k, false, &set("3")).await.unwrap();
    for (want, marked) in [(&hb, f.marks_heartbeats), (&c, false)] {
        match next_event(&mut every).await.unwrap() {
            WatchEvent::Updated { kv, heartbeat, .. } => {
                assert_eq!((&kv, heartbeat), (want, marked));
            }
            other => panic!("expected the update to {want:?}, got {other:?}"),
        }
    }
    let skips = f.cached && f.marks_heartbeats;
    let replay = s
        .watch_without_heartbeats(p, Some(a.mod_revision))
        .await
        .unwrap();
    for mut quiet in [live, replay] {
        let wants = if skips { vec![&c] } else { vec![&hb, &c] };
        for want in wants {
            let ev = next_event(&mut quiet).await.unwrap();
            assert!(
                matches!(&ev, WatchEvent::Updated { kv, .. } if kv == want),
                "{ev:?}"
            );
        }
    }
    // A heartbeat that is the last write: the watch that skips it hears of its revision.
    let mut after_c = s
        .watch_without_heartbeats(p, Some(c.mod_revision))
        .await
        .unwrap();
    let d = s.guaranteed_update(k, false, &beat("4")).await.unwrap();
    loop {
        let item = tokio::time::timeout(Duration::from_secs(10), after_c.next()).await;
        match item
            .expect("no event or progress within 10s")
            .expect("watch ended")
        {
            Ok(WatchEvent::Progress(r)) if skips && r >= d.mod_revision => break,
            Ok(WatchEvent::Progress(_)) => {}
            Ok(WatchEvent::Updated { kv, .. }) if !skips && kv == d => break,
            other => panic!("skips={skips}: unexpected {other:?}"),
        }
    }
}
