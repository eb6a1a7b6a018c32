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
    // Give the writer thread of the dropped store time to release the file lock.
    let s = loop {
        match EmbeddedStore::open(dir.path(), Duration::ZERO) {
            Ok(s) => break s,
            Err(Error::Unavailable(_)) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => panic!("{e}"),
        }
    };
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
    assert!(matches!(err, Error::Corrupt(_)), "{err:?}");
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
    let dir = tempfile::tempdir().unwrap();
    let fault = Arc::new(AtomicBool::new(false));
    let opener = tables::Opener {
        fault: Some(fault.clone()),
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
    assert!(matches!(err, Error::Io(_)), "{err:?}");
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
