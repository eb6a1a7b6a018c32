use super::*;
use crate::storage::{Cacher, EmbeddedStore};
use bytes::Bytes;

async fn next(w: &mut WatchStream) -> Result<WatchEvent> {
    loop {
        let item = tokio::time::timeout(Duration::from_secs(10), w.next())
            .await
            .expect("no watch event within 10s")
            .expect("watch ended");
        if !matches!(item, Ok(WatchEvent::Progress(_))) {
            return item;
        }
    }
}

/// A watch cache with `opts` over an embedded store in a temp dir, its cache of
/// `prefix`'s resource started (before any write).
async fn started(prefix: &str, opts: CacherOptions) -> (tempfile::TempDir, Cacher) {
    let dir = tempfile::tempdir().unwrap();
    let backend: Arc<dyn Storage> =
        Arc::new(EmbeddedStore::open(dir.path(), Duration::ZERO).unwrap());
    let cache = Cacher::new(backend, "/registry", opts);
    let any = ListOptions {
        revision: ListRevision::Any,
        ..ListOptions::default()
    };
    cache.list(prefix, any).await.unwrap();
    (dir, cache)
}

#[tokio::test]
async fn custom_resources_get_a_cache_each_and_lose_it_when_forgotten() {
    let (_dir, cache) = started("/registry/example.org/widgets/", CacherOptions::default()).await;
    let any = ListOptions {
        revision: ListRevision::Any,
        ..ListOptions::default()
    };
    cache
        .list("/registry/example.org/gadgets/ns/", any)
        .await
        .unwrap();
    let names = |c: &Cacher| {
        let mut v: Vec<String> = c.resources.lock().unwrap().keys().cloned().collect();
        v.sort();
        v
    };
    assert_eq!(
        names(&cache),
        [
            "/registry/example.org/gadgets/",
            "/registry/example.org/widgets/"
        ]
    );
    cache.forget_cached("/registry/example.org/widgets/");
    assert_eq!(names(&cache), ["/registry/example.org/gadgets/"]);
}

#[tokio::test]
async fn replays_from_the_ring_then_goes_live_and_refuses_older_revisions() {
    let p = "/registry/configmaps/";
    let opts = CacherOptions {
        history: 8,
        ..CacherOptions::default()
    };
    let (_dir, cache) = started(p, opts).await;
    let mut revs = Vec::new();
    for i in 0..20 {
        let key = format!("{p}ns/cm-{i:02}");
        revs.push(
            cache
                .create(&key, Bytes::from("x"), None)
                .await
                .unwrap()
                .mod_revision,
        );
    }
    // Wait until the cache has applied every write.
    let mut w = cache.watch(p, Some(revs[18])).await.unwrap();
    assert_eq!(next(&mut w).await.unwrap().revision(), revs[19]);
    // Only the last 8 events are kept: from before them is "too old".
    match cache.watch(p, Some(revs[5])).await {
        Err(Error::Compacted { requested, oldest }) => {
            assert_eq!((requested, oldest), (revs[5], revs[12]));
        }
        Ok(_) => panic!("a watch from before the ring was accepted"),
        Err(e) => panic!("unexpected {e:?}"),
    }
    // From the ring's start: all 8 in order, then a live one.
    let mut w = cache.watch(p, Some(revs[11])).await.unwrap();
    for want in &revs[12..] {
        assert_eq!(next(&mut w).await.unwrap().revision(), *want);
    }
    let live = cache
        .create(&format!("{p}ns/live"), Bytes::from("y"), None)
        .await
        .unwrap();
    assert_eq!(next(&mut w).await.unwrap().revision(), live.mod_revision);
}

#[tokio::test]
async fn the_ring_keeps_within_its_byte_budget() {
    let p = "/registry/configmaps/";
    let key = |i: usize| format!("{p}ns/cm-{i:02}");
    // Room for three creates of a 100-byte value.
    let opts = CacherOptions {
        history_bytes: 3 * (key(0).len() + 100),
        ..CacherOptions::default()
    };
    let (_dir, cache) = started(p, opts).await;
    let mut revs = Vec::new();
    for i in 0..10 {
        let value = Bytes::from(vec![b'x'; 100]);
        revs.push(
            cache
                .create(&key(i), value, None)
                .await
                .unwrap()
                .mod_revision,
        );
    }
    let mut w = cache.watch(p, Some(revs[8])).await.unwrap();
    assert_eq!(next(&mut w).await.unwrap().revision(), revs[9]);
    assert!(cache.watch(p, Some(revs[6])).await.is_ok());
    assert!(matches!(
        cache.watch(p, Some(revs[5])).await,
        Err(Error::Compacted { .. })
    ));
}

/// Events of large objects past their age leave the ring even when nothing is written after
/// them, down to the byte floor: a watcher that is up to date keeps watching, one from before
/// what is left is told its revision is too old.
#[tokio::test]
async fn aged_events_of_large_objects_leave_a_quiet_ring() {
    let p = "/registry/apiextensions.k8s.io/customresourcedefinitions/";
    // Long enough for the 40 writes below to stay young on a loaded machine (100 ms was not,
    // with the whole suite running, and 2 s nearly so).
    let opts = CacherOptions {
        history_age: Duration::from_secs(5),
        bookmark_interval: Duration::ZERO,
        ..CacherOptions::default()
    };
    let (_dir, cache) = started(p, opts).await;
    // 40 events of 64 KiB: 2.5 MiB, over the 1 MiB floor but far under 1,024 events.
    let mut revs = Vec::new();
    for i in 0..40 {
        let value = Bytes::from(vec![b'x'; 64 << 10]);
        let kv = cache.create(&format!("{p}crd-{i:02}"), value, None).await;
        revs.push(kv.unwrap().mod_revision);
    }
    let mut w = cache.watch(p, Some(revs[38])).await.unwrap();
    assert_eq!(next(&mut w).await.unwrap().revision(), revs[39]);
    assert!(
        cache.watch(p, Some(revs[0])).await.is_ok(),
        "all kept while young"
    );

    // The writes may span more than the age on a loaded machine, so events leave in more than
    // one upkeep pass: wait until all of them are past their age and trimmed.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let kept = loop {
        let mut kept = 0;
        for r in &revs {
            kept += usize::from(cache.watch(p, Some(*r)).await.is_ok());
        }
        // What is left fits the floor: about 16 of the 64 KiB events.
        if kept <= 17 {
            break kept;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "aged events never left: {kept} kept"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(kept >= 1, "the floor keeps the latest events, {kept} kept");
    // The up-to-date watcher is not disturbed, and a new one from the latest revision works.
    assert!(cache.watch(p, Some(revs[39])).await.is_ok());
    let live = cache
        .create(&format!("{p}live"), Bytes::from("y"), None)
        .await;
    assert_eq!(
        next(&mut w).await.unwrap().revision(),
        live.unwrap().mod_revision
    );
}

/// The value before an update or a deletion is the cache's own copy of that revision, not a
/// second one the ring would keep alive as long as the event.
#[tokio::test]
async fn events_share_the_value_before_with_the_cache() {
    let p = "/registry/configmaps/";
    let (_dir, cache) = started(p, CacherOptions::default()).await;
    let k = format!("{p}ns/a");
    cache
        .create(&k, Bytes::from(vec![b'1'; 4096]), None)
        .await
        .unwrap();
    let to_two =
        |_: Option<&KeyValue>| Ok(crate::storage::Update::Set(Bytes::from(vec![b'2'; 4096])));
    let updated = cache.guaranteed_update(&k, false, &to_two).await.unwrap();
    cache.delete(&k, &|_| Ok(())).await.unwrap();
    // Wait for the cache to apply all three.
    let mut w = cache.watch(p, Some(updated.mod_revision)).await.unwrap();
    assert!(matches!(
        next(&mut w).await.unwrap(),
        WatchEvent::Deleted { .. }
    ));

    let rc = cache.resources.lock().unwrap()[p].clone();
    let st = rc.read();
    let events: Vec<_> = st.ring.iter().map(|(_, e)| e.clone()).collect();
    let [created, updated, deleted] = &events[..] else {
        panic!("{} events in the ring", events.len());
    };
    let (WatchEvent::Created(one), WatchEvent::Updated { kv: two, prev, .. }) =
        (&**created, &**updated)
    else {
        panic!("unexpected events");
    };
    assert_eq!(
        prev.value.as_ptr(),
        one.value.as_ptr(),
        "update's value before"
    );
    let WatchEvent::Deleted { prev: last, .. } = &**deleted else {
        panic!("unexpected event");
    };
    assert_eq!(
        last.value.as_ptr(),
        two.value.as_ptr(),
        "deletion's value before"
    );
}

/// A resource's cache first asked for from another runtime (the controllers' one) still runs
/// on the runtime the cacher was made on: it keeps following writes after that other runtime
/// is gone.
#[test]
fn a_resource_cache_runs_on_the_cachers_runtime() {
    let serving = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cache = serving.block_on(async {
        let backend: Arc<dyn Storage> =
            Arc::new(EmbeddedStore::open(dir.path(), Duration::ZERO).unwrap());
        Arc::new(Cacher::new(backend, "/registry", CacherOptions::default()))
    });
    let p = "/registry/configmaps/";
    let other = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let any = ListOptions {
        revision: ListRevision::Any,
        ..ListOptions::default()
    };
    other.block_on(cache.list(p, any)).unwrap();
    other.shutdown_timeout(Duration::from_secs(1));
    serving.block_on(async {
        let mut w = cache.watch(p, None).await.unwrap();
        let key = format!("{p}ns/a");
        let rev = cache.create(&key, Bytes::from("x"), None).await.unwrap();
        assert_eq!(next(&mut w).await.unwrap().revision(), rev.mod_revision);
    });
}
