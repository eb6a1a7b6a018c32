//! Two etcd stores on one etcd, as two `kapi serve` replicas: an update starts from the value
//! its store last saw, so it must notice when the other replica changed the key meanwhile and
//! decide again on the current value (preconditions, unchanged writes, deletes).

use super::{within, EtcdServer};
use crate::storage::{Error, EtcdStore, EtcdTls, KeyValue, Storage, Update};
use bytes::Bytes;
use std::sync::Mutex;
use std::time::Duration;

async fn replica(server: &EtcdServer) -> EtcdStore {
    EtcdStore::connect(
        std::slice::from_ref(&server.url),
        &EtcdTls::default(),
        Duration::from_secs(2),
    )
    .await
    .unwrap()
}

fn set(v: &'static str) -> impl Fn(Option<&KeyValue>) -> crate::storage::Result<Update> {
    move |_| Ok(Update::Set(Bytes::from_static(v.as_bytes())))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn updates_decide_on_the_current_value_not_the_last_seen() {
    let server = EtcdServer::start().await;
    let (a, b) = (replica(&server).await, replica(&server).await);
    let key = "/registry/leases/ns/x";
    within(10, a.create(key, Bytes::from_static(b"v1"), None))
        .await
        .unwrap();
    within(10, a.guaranteed_update(key, false, &set("v2")))
        .await
        .unwrap();
    within(10, b.guaranteed_update(key, false, &set("v3")))
        .await
        .unwrap();

    // A precondition on the value: true only for the current one (v3), not A's last (v2).
    let seen = Mutex::new(Vec::new());
    let only_on_v3 = |cur: Option<&KeyValue>| {
        let v = cur.map(|c| c.value.clone()).unwrap_or_default();
        seen.lock().unwrap().push(v.clone());
        if v == "v3" {
            Ok(Update::Set(Bytes::from_static(b"v4")))
        } else {
            Err(Error::Aborted("precondition".into()))
        }
    };
    let kv = within(10, a.guaranteed_update(key, false, &only_on_v3))
        .await
        .unwrap();
    assert_eq!(kv.value, "v4");
    assert_eq!(seen.lock().unwrap().last().unwrap(), "v3");

    // Unchanged on A's last value must not hide B's newer one.
    within(10, b.guaranteed_update(key, false, &set("v5")))
        .await
        .unwrap();
    let unchanged = |_: Option<&KeyValue>| Ok(Update::Unchanged);
    let kv = within(10, a.guaranteed_update(key, false, &unchanged))
        .await
        .unwrap();
    assert_eq!(kv.value, "v5");
    assert_eq!(
        kv.mod_revision,
        within(10, b.get(key)).await.unwrap().mod_revision
    );

    // Deleted by B: A's update finds nothing, whatever it saw last.
    within(10, b.delete(key, &|_| Ok(()))).await.unwrap();
    let gone = within(10, a.guaranteed_update(key, false, &set("v6"))).await;
    assert!(matches!(gone, Err(Error::NotFound { .. })), "{gone:?}");
}
