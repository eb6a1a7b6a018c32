//! Three `kapi serve` replicas on one real etcd (from PATH). They share one PKI by passing the
//! same `--cert-dir`: the first replica generates the CAs, the serving and the admin
//! certificates there, the others load them, so one admin kubeconfig works against all
//! three. Distinct `--hostname-override`, data dirs and ports. Checks: each replica
//! publishes its identity lease; one replica runs the coordinated-leader-election
//! controller; kill -9 of it hands the controller to a survivor within the lease duration
//! and elections go on; the killed replica's identity lease is garbage-collected.

use crate::controllers::{eventually, kapi_id, wait_holder, Candidate};
use crate::support::etcd::start_etcd;
use crate::support::{within, Options, TestServer};
use k8s_openapi::api::coordination::v1::Lease;
use kube::{Api, Client};
use std::sync::Arc;
use std::time::Duration;

pub(crate) fn replica_options(etcd: &str, cert_dir: &std::path::Path, host: &str) -> Options {
    Options::default().args([
        "--etcd-servers",
        etcd,
        "--cert-dir",
        &cert_dir.display().to_string(),
        "--hostname-override",
        host,
        "--identity-lease-duration-seconds",
        "5",
        "--identity-lease-renew-interval",
        "1s",
        "--identity-lease-gc-period",
        "1s",
        "--coordinated-leadership-lease-duration",
        "3s",
        "--coordinated-leadership-renew-deadline",
        "2s",
        "--coordinated-leadership-retry-period",
        "500ms",
    ])
}

pub(crate) async fn lease(client: &Client, name: &str) -> Option<Lease> {
    let api: Api<Lease> = Api::namespaced(client.clone(), "kube-system");
    within(Duration::from_secs(10), "GET lease", api.get_opt(name))
        .await
        .ok()
        .flatten()
}

/// Index of the replica holding the CLE controller's own lease.
pub(crate) async fn cle_leader(client: &Client, hosts: &[&str], exclude: Option<usize>) -> usize {
    eventually(
        Duration::from_secs(30),
        "a CLE controller leader",
        || async {
            let l = lease(client, "leader-election-controller").await?;
            let holder = l.spec?.holder_identity?;
            let i = hosts
                .iter()
                .position(|h| holder.starts_with(&format!("{h}_")))?;
            (Some(i) != exclude).then_some(i)
        },
    )
    .await
}

/// Replicas `node-a` and `node-b` on `etcd`, sharing `cert_dir`, once both are ready.
pub(crate) async fn two_replicas(
    etcd: &str,
    cert_dir: &std::path::Path,
) -> (TestServer, TestServer) {
    let a = TestServer::start_with(replica_options(etcd, cert_dir, "node-a")).await;
    let b = TestServer::start_with(replica_options(etcd, cert_dir, "node-b")).await;
    (a, b)
}

/// One replica per host on `etcd` sharing `cert_dir` (the first creates the PKI, the others
/// reuse it), with a client each, once every replica's identity lease is published.
pub(crate) async fn start_replicas(
    etcd: &str,
    cert_dir: &std::path::Path,
    hosts: &[&str],
) -> (Vec<TestServer>, Vec<Client>) {
    let mut replicas = Vec::new();
    for host in hosts {
        replicas.push(TestServer::start_with(replica_options(etcd, cert_dir, host)).await);
    }
    let mut clients = Vec::new();
    for r in &replicas {
        clients.push(r.client().await);
    }
    for host in hosts {
        let id = kapi_id(host);
        eventually(
            Duration::from_secs(30),
            &format!("identity lease of {host}"),
            || lease(&clients[0], &id),
        )
        .await;
    }
    (replicas, clients)
}

#[tokio::test]
async fn three_replicas_on_etcd_fail_over() {
    let etcd = start_etcd().await;
    let pki = Arc::new(tempfile::tempdir().unwrap());
    let hosts = ["replica-0", "replica-1", "replica-2"];
    let (mut replicas, clients) = start_replicas(&etcd.url, pki.path(), &hosts).await;

    let leader = cle_leader(&clients[0], &hosts, None).await;
    let ns = "kube-system";
    let newer = Candidate::start(
        clients[0].clone(),
        ns,
        "ha-lock",
        "newer",
        "1.34.0",
        "1.34.0",
    );
    let older = Candidate::start(
        clients[1].clone(),
        ns,
        "ha-lock",
        "older",
        "1.33.0",
        "1.34.0",
    );
    wait_holder(
        &clients[2],
        ns,
        "ha-lock",
        "older",
        None,
        Duration::from_secs(40),
    )
    .await;

    // kill -9 the replica running the controller.
    replicas[leader].signal(libc::SIGKILL);
    replicas[leader].wait_exit(Duration::from_secs(10)).await;
    let survivor = (leader + 1) % hosts.len();
    let sc = clients[survivor].clone();
    drop(newer);
    drop(older);
    let newer = Candidate::start(sc.clone(), ns, "ha-lock", "newer", "1.34.0", "1.34.0");
    let older = Candidate::start(sc.clone(), ns, "ha-lock", "older", "1.33.0", "1.34.0");
    let next = cle_leader(&sc, &hosts, Some(leader)).await;
    assert_ne!(next, leader);

    // Elections continue under the new controller: the holder stops, the other takes over.
    older.ack.store(false, std::sync::atomic::Ordering::SeqCst);
    older.hold.store(false, std::sync::atomic::Ordering::SeqCst);
    wait_holder(&sc, ns, "ha-lock", "newer", None, Duration::from_secs(60)).await;

    // The killed replica's identity lease expires (5s) and a survivor collects it.
    let dead = kapi_id(hosts[leader]);
    eventually(
        Duration::from_secs(30),
        "killed replica's identity lease to be collected",
        || async { lease(&sc, &dead).await.is_none().then_some(()) },
    )
    .await;
    for (i, host) in hosts.iter().enumerate().filter(|(i, _)| *i != leader) {
        assert!(
            lease(&sc, &kapi_id(host)).await.is_some(),
            "replica {i} keeps its lease"
        );
    }
    drop(newer);
}

async fn etcdctl(endpoint: &str, args: &[&str]) -> String {
    let out = tokio::process::Command::new("etcdctl")
        .arg(format!("--endpoints={endpoint}"))
        .args(args)
        .kill_on_drop(true)
        .output();
    let out = within(Duration::from_secs(20), "etcdctl", out)
        .await
        .expect("etcdctl on PATH");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[tokio::test]
async fn peer_endpoint_lives_in_etcd_with_a_ttl_and_goes_away_on_shutdown() {
    let etcd = start_etcd().await;
    let pki = tempfile::tempdir().unwrap();
    let opts = replica_options(&etcd.url, pki.path(), "peer-host").args([
        "--feature-gates",
        "UnknownVersionInteroperabilityProxy=true",
        "--peer-advertise-ip",
        "127.0.0.1",
        "--peer-advertise-port",
        "7443",
    ]);
    let mut server = TestServer::start_with(opts).await;
    let client = server.client().await;
    let id = kapi_id("peer-host");
    let key = format!("/registry/peerserverleases/{id}");

    let l = eventually(Duration::from_secs(20), "identity lease", || {
        lease(&client, &id)
    })
    .await;
    let ann = l.metadata.annotations.unwrap_or_default();
    assert_eq!(
        ann["kubernetes.io/peer-advertise-address"],
        "127.0.0.1:7443"
    );

    let value = eventually(Duration::from_secs(30), "peer endpoint in etcd", || async {
        let out = etcdctl(&etcd.url, &["get", &key, "--print-value-only"]).await;
        (!out.trim().is_empty()).then_some(out)
    })
    .await;
    let ep: serde_json::Value = serde_json::from_str(value.trim()).expect("Endpoints JSON");
    assert_eq!(ep["metadata"]["labels"]["apiserverIdentity"], id.as_str());
    assert_eq!(ep["subsets"][0]["addresses"][0]["ip"], "127.0.0.1");
    assert_eq!(ep["subsets"][0]["ports"][0]["port"], 7443);
    let kv = etcdctl(&etcd.url, &["get", &key, "-w", "json"]).await;
    let kv: serde_json::Value = serde_json::from_str(&kv).unwrap();
    let lease_id = kv["kvs"][0]["lease"].as_i64().unwrap_or(0);
    assert_ne!(
        lease_id, 0,
        "the key is attached to an etcd lease (TTL): {kv}"
    );
    let ttl = etcdctl(
        &etcd.url,
        &["lease", "timetolive", &format!("{lease_id:x}")],
    )
    .await;
    assert!(ttl.contains("granted with TTL(15s)"), "{ttl}");

    server.signal(libc::SIGTERM);
    let status = server.wait_exit(Duration::from_secs(60)).await;
    assert!(status.success(), "{status}:\n{}", server.stderr());
    let after = etcdctl(&etcd.url, &["get", &key, "--print-value-only"]).await;
    assert!(
        after.trim().is_empty(),
        "peer endpoint removed on shutdown: {after}"
    );
}
