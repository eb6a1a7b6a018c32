//! Unit tests of the embedded store specific to it: durability across reopen, refusal of
//! foreign files, TTL reaping. The shared behaviour is covered by the conformance suite.

use super::*;
use crate::storage::Update;
use futures::StreamExt;
use redb::Database;
use std::sync::atomic::{AtomicBool, Ordering};

fn open(dir: &Path) -> EmbeddedStore {
    EmbeddedStore::open(dir, Duration::ZERO).unwrap()
}

/// Opens the store again once the writer thread of a dropped one has released the file lock.
fn reopen(dir: &Path) -> EmbeddedStore {
    loop {
        match EmbeddedStore::open(dir, Duration::ZERO) {
            Ok(s) => return s,
            Err(Error::Unavailable { .. }) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => panic!("{e}"),
        }
    }
}

async fn within<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(10), f)
        .await
        .expect("timed out")
}

#[tokio::test]
async fn crud_survives_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let (rev_a, rev_b);
    {
        let s = open(dir.path());
        let a = within(s.create("/r/a", Bytes::from_static(b"1"), None))
            .await
            .unwrap();
        rev_a = a.mod_revision;
        assert_eq!(rev_a, 2);
        let b = within(s.guaranteed_update("/r/a", false, &|_| {
            Ok(Update::Set(Bytes::from_static(b"2")))
        }))
        .await
        .unwrap();
        rev_b = b.mod_revision;
        assert_eq!(b.create_revision, rev_a);
        assert!(matches!(
            within(s.create("/r/a", Bytes::new(), None)).await,
            Err(Error::AlreadyExists { .. })
        ));
        within(s.create("/r/c", Bytes::from_static(b"3"), None))
            .await
            .unwrap();
        within(s.delete("/r/c", &|_| Ok(()))).await.unwrap();
    }
    let s = reopen(dir.path());
    let a = within(s.get("/r/a")).await.unwrap();
    assert_eq!(a.value, Bytes::from_static(b"2"));
    assert_eq!(a.mod_revision, rev_b);
    assert!(matches!(
        within(s.get("/r/c")).await,
        Err(Error::NotFound { .. })
    ));
    assert_eq!(within(s.current_revision()).await.unwrap(), rev_b + 2);
    let next = within(s.create("/r/d", Bytes::new(), None)).await.unwrap();
    assert_eq!(next.mod_revision, rev_b + 3);
    within(s.check_health()).await.unwrap();
}

#[tokio::test]
async fn refuses_foreign_file_and_leaves_it_alone() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join(tables::FILE_NAME);
    std::fs::write(&file, b"SQLite format 3\0 not ours").unwrap();
    let err = EmbeddedStore::open(dir.path(), Duration::ZERO)
        .err()
        .expect("must refuse");
    assert!(matches!(err, Error::Corrupt { .. }), "{err:?}");
    assert!(err.to_string().contains(tables::FILE_NAME), "{err}");
    assert!(std::fs::read(&file).unwrap() == b"SQLite format 3\0 not ours");
}

#[tokio::test]
async fn refuses_redb_file_of_another_program() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join(tables::FILE_NAME);
    {
        let db = Database::create(&file).unwrap();
        let t = db.begin_write().unwrap();
        t.open_table(redb::TableDefinition::<&str, u64>::new("other"))
            .unwrap()
            .insert("x", 1)
            .unwrap();
        t.commit().unwrap();
    }
    let before = std::fs::read(&file).unwrap();
    let err = EmbeddedStore::open(dir.path(), Duration::ZERO)
        .err()
        .expect("must refuse");
    assert!(err.to_string().contains("another program"), "{err}");
    assert!(
        std::fs::read(&file).unwrap() == before,
        "the file was modified"
    );
}

#[tokio::test]
async fn ttl_key_expires_and_watchers_see_a_delete() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    let mut w = within(s.watch("/t/", None)).await.unwrap();
    within(s.create(
        "/t/k",
        Bytes::from_static(b"v"),
        Some(Duration::from_millis(300)),
    ))
    .await
    .unwrap();
    assert!(within(s.get("/t/k")).await.is_ok());
    let created = within(w.next()).await.unwrap().unwrap();
    assert!(matches!(created, WatchEvent::Created(_)));
    let deleted = within(async {
        loop {
            match w.next().await.unwrap().unwrap() {
                WatchEvent::Progress(_) => continue,
                ev => break ev,
            }
        }
    })
    .await;
    assert!(
        matches!(deleted, WatchEvent::Deleted { ref prev, .. } if prev.key == "/t/k"),
        "{deleted:?}"
    );
    assert!(matches!(
        within(s.get("/t/k")).await,
        Err(Error::NotFound { .. })
    ));
}

use super::super::WatchEvent;

#[tokio::test]
async fn list_pages_old_revisions_watch_replay_and_compaction() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    for i in 0..5 {
        within(s.create(&format!("/p/k{i}"), Bytes::from(format!("v{i}")), None))
            .await
            .unwrap();
    }
    within(s.create("/q/other", Bytes::new(), None))
        .await
        .unwrap();
    let at = within(s.current_revision()).await.unwrap();
    within(s.guaranteed_update("/p/k1", false, &|_| {
        Ok(Update::Set(Bytes::from_static(b"new")))
    }))
    .await
    .unwrap();
    within(s.delete("/p/k2", &|_| Ok(()))).await.unwrap();
    within(s.create("/p/k9", Bytes::new(), None)).await.unwrap();

    let page = |rev, start: Option<&str>| ListOptions {
        revision: rev,
        limit: 2,
        start_key: start.map(String::from),
    };
    let first = within(s.list("/p/", page(ListRevision::Exact(at), None)))
        .await
        .unwrap();
    assert_eq!(first.revision, at);
    assert_eq!(
        first
            .items
            .iter()
            .map(|i| i.key.as_str())
            .collect::<Vec<_>>(),
        ["/p/k0", "/p/k1"]
    );
    assert_eq!(first.items[1].value, Bytes::from_static(b"v1"));
    assert_eq!(first.next_key.as_deref(), Some("/p/k2"));
    assert_eq!(first.remaining, Some(3));
    let second = within(s.list(
        "/p/",
        page(ListRevision::Exact(at), first.next_key.as_deref()),
    ))
    .await
    .unwrap();
    assert_eq!(
        second
            .items
            .iter()
            .map(|i| i.key.as_str())
            .collect::<Vec<_>>(),
        ["/p/k2", "/p/k3"]
    );
    // A key deleted since: its value then, with its revisions then.
    assert_eq!(second.items[0].value, Bytes::from_static(b"v2"));
    assert_eq!(
        second.items[0].mod_revision,
        second.items[0].create_revision
    );
    assert!(second.items[0].mod_revision < at);
    assert_eq!(second.next_key.as_deref(), Some("/p/k4"));
    assert_eq!(second.remaining, Some(1), "k9 did not exist then");
    let latest = within(s.list("/p/", ListOptions::default())).await.unwrap();
    assert_eq!(
        latest
            .items
            .iter()
            .map(|i| i.key.as_str())
            .collect::<Vec<_>>(),
        ["/p/k0", "/p/k1", "/p/k3", "/p/k4", "/p/k9"]
    );

    let mut w = within(s.watch("/p/", Some(at))).await.unwrap();
    let revs: Vec<_> = within(
        (&mut w)
            .take(3)
            .map(|e| e.unwrap().revision())
            .collect::<Vec<_>>(),
    )
    .await;
    assert_eq!(revs, vec![at + 1, at + 2, at + 3]);

    within(s.compact(at + 1)).await.unwrap();
    assert!(matches!(
        within(s.list("/p/", page(ListRevision::Exact(at), None))).await,
        Err(Error::Compacted { .. })
    ));
    assert!(matches!(
        within(s.watch("/p/", Some(at - 1))).await.err(),
        Some(Error::Compacted { .. })
    ));
    // As in etcd, a watch may start at the compacted revision itself.
    let mut w = within(s.watch("/p/", Some(at))).await.unwrap();
    assert_eq!(within(w.next()).await.unwrap().unwrap().revision(), at + 1);
}

#[tokio::test]
async fn disk_full_fails_the_write_and_later_writes_work() {
    disk_full(true).await;
}

/// The log takes the batch but redb's commit fails (its file cannot grow): the write fails
/// and the log record is cut off, so it does not come back on replay.
#[tokio::test]
async fn a_failed_commit_after_the_log_append_is_not_replayed() {
    disk_full(false).await;
}

/// Writes fail while the store file (and the write-ahead log, when `wal_too`) cannot be
/// written, then work again; nothing failed shows up, nothing acknowledged is lost.
async fn disk_full(wal_too: bool) {
    let dir = tempfile::tempdir().unwrap();
    let fault = Arc::new(AtomicBool::new(false));
    let opener = tables::Opener {
        fault: Some(fault.clone()),
        wal_fault: wal_too.then(|| fault.clone()),
        ..Default::default()
    };
    let s = EmbeddedStore::open_with(dir.path(), Duration::ZERO, opener).unwrap();
    let a = within(s.create("/d/a", Bytes::from_static(b"1"), None))
        .await
        .unwrap();
    fault.store(true, Ordering::Release);
    let err = within(s.create("/d/b", Bytes::from_static(b"2"), None))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Io { .. }), "{err:?}");
    // The cause stays typed: the log's or redb's error, which names the disk's failure.
    let source = std::error::Error::source(&err).expect("the write failure keeps its source");
    if wal_too {
        assert!(
            source.downcast_ref::<wal::AppendError>().is_some(),
            "{source:?}"
        );
    } else {
        assert!(source.downcast_ref::<redb::Error>().is_some(), "{source:?}");
    }
    if wal_too {
        // The log refused the batch before redb saw it: reads go on meanwhile, from the same
        // open database.
        assert_eq!(within(s.get("/d/a")).await.unwrap(), a);
    }
    let chain = crate::storage::Chain(&err).to_string();
    assert!(
        chain.starts_with("storage write failed: ")
            && chain.ends_with("No space left on device (injected)"),
        "{chain}"
    );
    assert!(within(s.create("/d/b", Bytes::from_static(b"2"), None))
        .await
        .is_err());
    fault.store(false, Ordering::Release);
    let c = within(s.create("/d/c", Bytes::from_static(b"3"), None))
        .await
        .unwrap();
    assert!(c.mod_revision > a.mod_revision);
    assert_eq!(within(s.get("/d/a")).await.unwrap(), a);
    assert!(matches!(
        within(s.get("/d/b")).await,
        Err(Error::NotFound { .. })
    ));
    drop(s);
    let s = open(dir.path());
    assert_eq!(within(s.get("/d/a")).await.unwrap(), a);
    assert_eq!(within(s.get("/d/c")).await.unwrap(), c);
    assert_eq!(within(s.current_revision()).await.unwrap(), c.mod_revision);
}

/// The revisions that have a history entry.
fn history_revisions(s: &EmbeddedStore) -> Vec<u64> {
    use redb::ReadableTable;
    let txn = s.read().unwrap();
    let hist = txn.open_table(tables::HISTORY).unwrap();
    hist.iter().unwrap().map(|e| e.unwrap().0.value()).collect()
}

async fn create(s: &EmbeddedStore, key: &str, value: &'static [u8]) -> KeyValue {
    within(s.create(key, Bytes::from_static(value), None))
        .await
        .unwrap()
}

async fn set(s: &EmbeddedStore, key: &str, value: &'static [u8]) -> KeyValue {
    within(s.guaranteed_update(key, false, &|_| Ok(Update::Set(Bytes::from_static(value)))))
        .await
        .unwrap()
}

#[tokio::test]
async fn compaction_keeps_each_keys_newest_value_and_drops_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    let c = |k: &'static str, v: &'static [u8]| s.create(k, Bytes::from_static(v), None);
    let a1 = within(c("/c/a", b"a1")).await.unwrap().mod_revision;
    let b1 = within(c("/c/b", b"b1")).await.unwrap().mod_revision;
    set(&s, "/c/a", b"a2").await;
    let a3 = set(&s, "/c/a", b"a3").await.mod_revision;
    within(c("/c/d", b"d1")).await.unwrap();
    within(s.delete("/c/d", &|_| Ok(()))).await.unwrap();
    let b2 = set(&s, "/c/b", b"b2").await.mod_revision;
    within(s.compact(b2)).await.unwrap();
    // Before b2: /c/a's newest (a3), /c/b's previous value (b1, still needed by the change at
    // b2); a1, a2 and everything of the deleted /c/d are gone.
    assert_eq!(
        history_revisions(&s),
        [b1 as u64, a3 as u64, b2 as u64],
        "a1 was at {a1}"
    );
    let a = within(s.get("/c/a")).await.unwrap();
    assert_eq!((a.value.as_ref(), a.create_revision), (&b"a3"[..], a1));
    let mut w = within(s.watch("/c/", Some(b2 - 1))).await.unwrap();
    match within(w.next()).await.unwrap().unwrap() {
        WatchEvent::Updated { kv, prev, .. } => {
            assert_eq!(
                (kv.value.as_ref(), prev.value.as_ref()),
                (&b"b2"[..], &b"b1"[..])
            );
            assert_eq!((prev.mod_revision, prev.create_revision), (b1, b1));
        }
        other => panic!("{other:?}"),
    }
    // Changes after the compaction still carry their previous values.
    set(&s, "/c/a", b"a4").await;
    within(s.delete("/c/a", &|_| Ok(()))).await.unwrap();
    match within(w.next()).await.unwrap().unwrap() {
        WatchEvent::Updated { prev, .. } => assert_eq!(prev.value.as_ref(), b"a3"),
        other => panic!("{other:?}"),
    }
    match within(w.next()).await.unwrap().unwrap() {
        WatchEvent::Deleted { prev, .. } => assert_eq!(prev.value.as_ref(), b"a4"),
        other => panic!("{other:?}"),
    }
    // A second compaction to the current revision (the delete) leaves /c/b's value, the
    // delete (a watch may still start there) and the value it deleted (its previous value).
    let now = within(s.current_revision()).await.unwrap();
    within(s.compact(now)).await.unwrap();
    assert_eq!(
        history_revisions(&s),
        [b2 as u64, now as u64 - 1, now as u64]
    );
    let all = within(s.list("/c/", ListOptions::default())).await.unwrap();
    assert_eq!(all.items.len(), 1);
    assert_eq!(all.items[0].value.as_ref(), b"b2");
}

/// The periodic compaction goes in steps of [`writer::COMPACT_STEP`] revisions (100 in tests),
/// each its own transaction, up to the revision of one interval ago; writes go on meanwhile.
#[tokio::test]
async fn periodic_compaction_goes_in_steps_to_one_interval_ago() {
    let dir = tempfile::tempdir().unwrap();
    let s = EmbeddedStore::open(dir.path(), Duration::from_millis(200)).unwrap();
    let keys: Vec<String> = (0..1000).map(|i| format!("/s/{i:04}")).collect();
    let writes = keys
        .iter()
        .map(|k| s.create(k, Bytes::from_static(b"v"), None));
    for w in within(futures::future::join_all(writes)).await {
        w.unwrap();
    }
    let last = within(s.current_revision()).await.unwrap();
    let old = ListOptions {
        revision: ListRevision::Exact(last - 1),
        ..ListOptions::default()
    };
    // Two intervals later the goal is at least `last`: ten steps of 100 revisions or more.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        match within(s.list("/s/", old.clone())).await {
            Err(Error::Compacted { oldest, .. }) if oldest >= last => break,
            Ok(_) | Err(Error::Compacted { .. }) => {}
            Err(e) => panic!("{e}"),
        }
        // Writes go on while it compacts.
        within(s.create(
            &format!("/t/{:?}", std::time::Instant::now()),
            Bytes::new(),
            None,
        ))
        .await
        .unwrap();
        assert!(
            std::time::Instant::now() < deadline,
            "compaction never reached {last}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Each key's newest value is kept.
    let all = within(s.list("/s/", ListOptions::default())).await.unwrap();
    assert_eq!(all.items.len(), 1000);
}

#[tokio::test]
async fn a_format_1_store_is_upgraded_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join(tables::FILE_NAME);
    // A store as format 1 wrote it: each key's value in `latest` after a 24-byte header
    // (create revision, mod revision, expiry), whole events in `history` (the upgrade drops
    // them unread, so their bytes do not matter here).
    let v1 = |create: i64, m: i64, value: &[u8]| {
        let mut raw = Vec::new();
        raw.extend_from_slice(&create.to_le_bytes());
        raw.extend_from_slice(&m.to_le_bytes());
        raw.extend_from_slice(&0u64.to_le_bytes());
        raw.extend_from_slice(value);
        raw
    };
    {
        let db = Database::create(&file).unwrap();
        let t = db.begin_write().unwrap();
        {
            let mut meta = t.open_table(tables::META).unwrap();
            meta.insert(tables::META_FORMAT, &b"kapi-embedded-store/1"[..])
                .unwrap();
            meta.insert(tables::META_REVISION, &7i64.to_le_bytes()[..])
                .unwrap();
            meta.insert(tables::META_COMPACTED, &0i64.to_le_bytes()[..])
                .unwrap();
            let mut latest = t.open_table(tables::LATEST).unwrap();
            latest.insert("/u/a", v1(2, 5, b"a2").as_slice()).unwrap();
            latest.insert("/u/b", v1(3, 3, b"b").as_slice()).unwrap();
            let mut hist = t.open_table(tables::HISTORY).unwrap();
            for rev in 2..=7u64 {
                hist.insert(rev, &b"format-1 event"[..]).unwrap();
            }
            t.open_table(tables::EXPIRY).unwrap();
        }
        t.commit().unwrap();
    }
    {
        let s = open(dir.path());
        let a = within(s.get("/u/a")).await.unwrap();
        assert_eq!(
            (a.value.as_ref(), a.create_revision, a.mod_revision),
            (&b"a2"[..], 2, 5)
        );
        // The upgrade is one more revision, and history before it is compacted.
        assert_eq!(within(s.current_revision()).await.unwrap(), 8);
        assert!(matches!(
            within(s.watch("/u/", Some(6))).await.err(),
            Some(Error::Compacted { .. })
        ));
        let mut w = within(s.watch("/u/", Some(8))).await.unwrap();
        set(&s, "/u/b", b"b2").await;
        match within(w.next()).await.unwrap().unwrap() {
            WatchEvent::Updated { kv, prev, .. } => {
                assert_eq!((kv.mod_revision, kv.create_revision), (9, 3));
                assert_eq!((prev.value.as_ref(), prev.mod_revision), (&b"b"[..], 3));
            }
            other => panic!("{other:?}"),
        }
    }
    let s = reopen(dir.path());
    let all = within(s.list("/u/", ListOptions::default())).await.unwrap();
    let values: Vec<_> = all.items.iter().map(|i| i.value.as_ref()).collect();
    assert_eq!(values, [&b"a2"[..], &b"b2"[..]]);
    let txn = s.read().unwrap();
    let meta = txn.open_table(tables::META).unwrap();
    assert_eq!(
        meta.get(tables::META_FORMAT).unwrap().unwrap().value(),
        tables::FORMAT
    );
}

mod replay;
