//! The control-plane controllers against a real `kapi serve` on the embedded store: identity
//! lease shape and renewal, identity lease GC, coordinated leader election driven by
//! scripted candidates, namespace finalization, system namespaces, the auth-trust and
//! token-tracking ConfigMaps, and the identity lease on clean vs. kill -9 shutdown.

use crate::support::{get_text, within, Options, TestServer};
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::coordination::v1beta1::{LeaseCandidate, LeaseCandidateSpec};
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kube::api::PostParams;
use kube::{Api, Client};
use std::collections::BTreeMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// `apiserver_id("node-1")` from the reference's test vectors.
const NODE1_ID: &str = "apiserver-lgabes5ywnaqeagh5dny4zlzs4";

/// Polls `f` every 200ms until it returns Some, failing after `limit`.
pub(crate) async fn eventually<T, F, Fut>(limit: Duration, what: &str, mut f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    within(limit, what, async {
        loop {
            if let Some(v) = f().await {
                return v;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    })
    .await
}

pub(crate) fn now() -> MicroTime {
    MicroTime(Timestamp::from_microsecond(Timestamp::now().as_microsecond()).unwrap())
}

async fn get_lease(client: &Client, ns: &str, name: &str) -> Option<Lease> {
    let api: Api<Lease> = Api::namespaced(client.clone(), ns);
    within(Duration::from_secs(10), "GET lease", api.get_opt(name))
        .await
        .ok()
        .flatten()
}

fn spec(l: &Lease) -> LeaseSpec {
    l.spec.clone().unwrap_or_default()
}

#[tokio::test]
async fn identity_lease_shape_and_renewal() {
    let server = TestServer::start_with(Options::default().args([
        "--hostname-override",
        "node-1",
        "--identity-lease-renew-interval",
        "1s",
    ]))
    .await;
    let client = server.client().await;
    let lease = eventually(Duration::from_secs(20), "identity lease", || {
        get_lease(&client, "kube-system", NODE1_ID)
    })
    .await;
    let labels = lease.metadata.labels.clone().unwrap_or_default();
    assert_eq!(labels["apiserver.kubernetes.io/identity"], "kube-apiserver");
    assert_eq!(labels["kubernetes.io/hostname"], "node-1");
    let s = spec(&lease);
    let holder = s.holder_identity.clone().unwrap();
    let uuid = holder
        .strip_prefix(&format!("{NODE1_ID}_"))
        .expect("holder is <id>_<uuid>");
    assert!(uuid::Uuid::parse_str(uuid).is_ok(), "{holder}");
    assert_eq!(s.lease_duration_seconds, Some(3600));
    assert!(s.acquire_time.is_none() && s.lease_transitions.is_none());

    let path = format!("/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/{NODE1_ID}");
    let (code, body) = get_text(&server.admin_http(), &server.url(&path)).await;
    assert_eq!(code, 200, "{body}");
    let raw: serde_json::Value = serde_json::from_str(&body).unwrap();
    let renew = raw["spec"]["renewTime"].as_str().unwrap().to_string();
    assert_eq!(
        renew.len(),
        "2025-01-02T03:04:05.123456Z".len(),
        "6 fractional digits: {renew}"
    );

    let first = s.renew_time.unwrap();
    let renewed = eventually(Duration::from_secs(10), "renewTime to advance", || async {
        let l = get_lease(&client, "kube-system", NODE1_ID).await?;
        spec(&l).renew_time.filter(|t| *t > first).map(|_| l)
    })
    .await;
    assert_eq!(
        spec(&renewed).holder_identity.as_deref(),
        Some(holder.as_str()),
        "holder is stable"
    );
}

pub(crate) fn lease_obj(name: &str, labelled: bool, renew: MicroTime, secs: i32) -> Lease {
    let labels = labelled.then(|| {
        BTreeMap::from([(
            "apiserver.kubernetes.io/identity".to_string(),
            "kube-apiserver".to_string(),
        )])
    });
    Lease {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels,
            ..ObjectMeta::default()
        },
        spec: Some(LeaseSpec {
            holder_identity: Some(format!("{name}_x")),
            renew_time: Some(renew),
            lease_duration_seconds: Some(secs),
            ..LeaseSpec::default()
        }),
    }
}

#[tokio::test]
async fn identity_lease_gc_removes_only_expired_labelled_leases() {
    let server =
        TestServer::start_with(Options::default().args(["--identity-lease-gc-period", "1s"])).await;
    let client = server.client().await;
    let api: Api<Lease> = Api::namespaced(client.clone(), "kube-system");
    let old = MicroTime("2020-01-01T00:00:00.000000Z".parse().unwrap());
    let create = |l: Lease| {
        let api = api.clone();
        async move {
            eventually(Duration::from_secs(20), "create lease", || {
                let (api, l) = (api.clone(), l.clone());
                async move { api.create(&PostParams::default(), &l).await.ok() }
            })
            .await
        }
    };
    create(lease_obj("apiserver-expired", true, old.clone(), 10)).await;
    create(lease_obj("unlabelled-expired", false, old, 10)).await;
    create(lease_obj("apiserver-live", true, now(), 3600)).await;
    eventually(
        Duration::from_secs(15),
        "expired identity lease to be collected",
        || async {
            get_lease(&client, "kube-system", "apiserver-expired")
                .await
                .is_none()
                .then_some(())
        },
    )
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(get_lease(&client, "kube-system", "unlabelled-expired")
        .await
        .is_some());
    assert!(get_lease(&client, "kube-system", "apiserver-live")
        .await
        .is_some());
}

/// A scripted LeaseCandidate client: acks pings and renews its candidate every ~2s while
/// `ack` is on, renews the Lease while it is the holder and `hold` is on, and releases it
/// (client-go `release`: empty holder, 1 s duration) when another `preferredHolder` is named
/// and `yield_` is on.
pub(crate) struct Candidate {
    /// Acks pings / renews the candidate.
    pub ack: Arc<AtomicBool>,
    /// Renews the Lease when named holder.
    pub hold: Arc<AtomicBool>,
    /// Gives the Lease up when another preferred holder is named.
    pub yield_: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Candidate {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Candidate {
    /// Starts the candidate `name` for `lease` in `ns`.
    pub(crate) fn start(
        client: Client,
        ns: &str,
        lease: &str,
        name: &str,
        emu: &str,
        bin: &str,
    ) -> Self {
        let ack = Arc::new(AtomicBool::new(true));
        let hold = Arc::new(AtomicBool::new(true));
        let yield_ = Arc::new(AtomicBool::new(true));
        let (a, h, y) = (ack.clone(), hold.clone(), yield_.clone());
        let cands: Api<LeaseCandidate> = Api::namespaced(client.clone(), ns);
        let leases: Api<Lease> = Api::namespaced(client, ns);
        let (lease, name, emu, bin) = (
            lease.to_string(),
            name.to_string(),
            emu.to_string(),
            bin.to_string(),
        );
        let task = tokio::spawn(async move {
            loop {
                let _ = tokio::time::timeout(Duration::from_secs(5), async {
                    let ack_on = a.load(Ordering::SeqCst);
                    match cands.get_opt(&name).await {
                        Ok(None) => {
                            let c = LeaseCandidate {
                                metadata: ObjectMeta {
                                    name: Some(name.clone()),
                                    ..ObjectMeta::default()
                                },
                                spec: Some(LeaseCandidateSpec {
                                    lease_name: lease.clone(),
                                    binary_version: bin.clone(),
                                    emulation_version: Some(emu.clone()),
                                    strategy: "OldestEmulationVersion".into(),
                                    renew_time: Some(now()),
                                    ping_time: None,
                                }),
                            };
                            let _ = cands.create(&PostParams::default(), &c).await;
                        }
                        Ok(Some(mut c)) if ack_on => {
                            let s = c.spec.get_or_insert_with(Default::default);
                            let pinged = match (&s.ping_time, &s.renew_time) {
                                (Some(p), Some(r)) => p.0 > r.0,
                                (Some(_), None) => true,
                                _ => false,
                            };
                            let stale = s.renew_time.as_ref().is_none_or(|r| {
                                Timestamp::now().duration_since(r.0)
                                    > k8s_openapi::jiff::SignedDuration::from_secs(2)
                            });
                            if pinged || stale {
                                s.renew_time = Some(now());
                                let _ = cands.replace(&name, &PostParams::default(), &c).await;
                            }
                        }
                        _ => {}
                    }
                    if h.load(Ordering::SeqCst) {
                        if let Ok(Some(mut l)) = leases.get_opt(&lease).await {
                            let s = l.spec.get_or_insert_with(Default::default);
                            if s.holder_identity.as_deref() == Some(name.as_str()) {
                                let preferred = s.preferred_holder.clone();
                                if y.load(Ordering::SeqCst)
                                    && preferred.is_some_and(|p| !p.is_empty() && p != name)
                                {
                                    s.holder_identity = None;
                                    s.preferred_holder = None;
                                    s.lease_duration_seconds = Some(1);
                                    s.acquire_time = Some(now());
                                }
                                s.renew_time = Some(now());
                                let _ = leases.replace(&lease, &PostParams::default(), &l).await;
                            }
                        }
                    }
                })
                .await;
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        });
        Candidate {
            ack,
            hold,
            yield_,
            task,
        }
    }
}

/// Waits until `ns/name` is held by `holder` (and, if given, prefers `preferred`).
pub(crate) async fn wait_holder(
    client: &Client,
    ns: &str,
    name: &str,
    holder: &str,
    preferred: Option<&str>,
    limit: Duration,
) {
    eventually(
        limit,
        &format!("{name} held by {holder}, preferring {preferred:?}"),
        || async {
            let s = spec(&get_lease(client, ns, name).await?);
            (s.holder_identity.as_deref() == Some(holder)
                && (preferred.is_none() || s.preferred_holder.as_deref() == preferred))
                .then_some(())
        },
    )
    .await
}

#[tokio::test]
async fn coordinated_leader_election_with_scripted_candidates() {
    let server = TestServer::start().await;
    let client = server.client().await;
    let ns = "kube-system";
    eventually(Duration::from_secs(20), "kube-system", || async {
        Api::<Namespace>::all(client.clone())
            .get_opt(ns)
            .await
            .ok()
            .flatten()
    })
    .await;
    let lock = "scripted-lock";
    let newer = Candidate::start(client.clone(), ns, lock, "newer", "1.34.0", "1.34.0");
    let older = Candidate::start(client.clone(), ns, lock, "older", "1.33.0", "1.34.0");

    // The older emulation version wins (if "newer" was elected first because it acked
    // first, it is told to yield and hands over).
    wait_holder(&client, ns, lock, "older", None, Duration::from_secs(60)).await;
    let s = spec(&get_lease(&client, ns, lock).await.unwrap());
    assert_eq!(s.strategy.as_deref(), Some("OldestEmulationVersion"));

    // The holder stops acking and renewing: the lease expires and the other one takes over.
    older.ack.store(false, Ordering::SeqCst);
    older.hold.store(false, Ordering::SeqCst);
    wait_holder(&client, ns, lock, "newer", None, Duration::from_secs(60)).await;

    // The better candidate comes back while "newer" holds a live lease and does not yield:
    // only preferredHolder is set, the live lease is never stolen, the holder never flaps.
    newer.yield_.store(false, Ordering::SeqCst);
    older.hold.store(true, Ordering::SeqCst);
    older.ack.store(true, Ordering::SeqCst);
    wait_holder(
        &client,
        ns,
        lock,
        "newer",
        Some("older"),
        Duration::from_secs(60),
    )
    .await;
    for _ in 0..10 {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let s = spec(&get_lease(&client, ns, lock).await.unwrap());
        assert_eq!(
            s.holder_identity.as_deref(),
            Some("newer"),
            "a live lease is never stolen"
        );
    }

    // Once the holder honours preferredHolder and releases, the preferred one is elected.
    newer.yield_.store(true, Ordering::SeqCst);
    wait_holder(&client, ns, lock, "older", None, Duration::from_secs(60)).await;
    drop(newer);
    drop(older);
}

/// The hostname in the server's identity lease (the OS hostname without an override).
pub(crate) async fn server_hostname(server: &TestServer) -> String {
    let leases: Api<Lease> = Api::namespaced(server.client().await, "kube-system");
    eventually(Duration::from_secs(20), "an identity lease", || async {
        let list = leases
            .list(&kube::api::ListParams::default().labels("apiserver.kubernetes.io/identity"))
            .await
            .ok()?;
        let lease = list.items.into_iter().next()?;
        lease
            .metadata
            .labels?
            .get("kubernetes.io/hostname")
            .cloned()
    })
    .await
}

pub(crate) fn pem_certs(pem: &str) -> Vec<Vec<u8>> {
    rustls_pemfile::certs(&mut pem.as_bytes())
        .map(|c| c.unwrap().as_ref().to_vec())
        .collect()
}

#[tokio::test]
async fn hooks_are_reported_with_kube_apiserver_names() {
    let server = TestServer::start().await;
    let (code, body) = get_text(&server.admin_http(), &server.url("/readyz?verbose")).await;
    assert_eq!(code, 200, "{body}");
    for hook in [
        "start-system-namespaces-controller",
        "start-kube-apiserver-coordinated-leader-election-controller",
        "start-cluster-authentication-info-controller",
        "start-kube-apiserver-identity-lease-controller",
        "start-kube-apiserver-identity-lease-garbage-collector",
        "storage-readiness",
        "start-legacy-token-tracking-controller",
    ] {
        assert!(
            body.contains(&format!("[+]poststarthook/{hook} ok")),
            "{hook} missing:\n{body}"
        );
    }
}

#[tokio::test]
async fn clean_shutdown_deletes_the_identity_lease_and_kill_leaves_it() {
    let dir = Arc::new(tempfile::tempdir().unwrap());
    let with = |host: &str| {
        Options::default()
            .data_dir(dir.clone())
            .args(["--hostname-override", host])
    };
    let gone_id = kapi_id("gone-clean");
    let killed_id = kapi_id("gone-killed");

    let mut clean = TestServer::start_with(with("gone-clean")).await;
    let client = clean.client().await;
    eventually(Duration::from_secs(20), "identity lease", || {
        get_lease(&client, "kube-system", &gone_id)
    })
    .await;
    clean.signal(libc::SIGTERM);
    let status = clean.wait_exit(Duration::from_secs(60)).await;
    assert!(status.success(), "{status}:\n{}", clean.stderr());
    drop(clean);

    let mut killed = TestServer::start_with(with("gone-killed")).await;
    let client = killed.client().await;
    eventually(Duration::from_secs(20), "identity lease", || {
        get_lease(&client, "kube-system", &killed_id)
    })
    .await;
    assert!(
        get_lease(&client, "kube-system", &gone_id).await.is_none(),
        "clean shutdown left its lease"
    );
    killed.signal(libc::SIGKILL);
    killed.wait_exit(Duration::from_secs(10)).await;
    drop(killed);

    let observer = TestServer::start_with(with("observer")).await;
    let client = observer.client().await;
    assert!(
        get_lease(&client, "kube-system", &killed_id)
            .await
            .is_some(),
        "kill -9 leaves the lease until GC"
    );
    assert!(get_lease(&client, "kube-system", &gone_id).await.is_none());
}

/// The reference's ID construction, recomputed here so the test checks the server.
pub(crate) fn kapi_id(hostname: &str) -> String {
    kapi::apiserver_id(hostname)
}
