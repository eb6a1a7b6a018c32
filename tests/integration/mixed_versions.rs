//! The mixed-version peer proxy: two replicas on one etcd sharing a PKI, one started with
//! `--runtime-config coordination.k8s.io/v1beta1=false` (it does not serve LeaseCandidates),
//! the other with everything. Requests for LeaseCandidates reach the resource through either;
//! kubectl finds it through either's discovery; a peer that stops answers 503 naming it, and
//! once its identity lease is gone the resource is simply not found.

use crate::controllers::{eventually, kapi_id};
use crate::ha::{lease, replica_options};
use crate::support::etcd::start_etcd;
use crate::support::{output_text, TestServer};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

const CANDIDATES: &str = "/apis/coordination.k8s.io/v1beta1/namespaces/default/leasecandidates";

fn candidate(name: &str) -> Value {
    json!({"apiVersion": "coordination.k8s.io/v1beta1", "kind": "LeaseCandidate",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"leaseName": "mixed", "binaryVersion": "1.35.0", "emulationVersion": "1.35.0",
            "strategy": "OldestEmulationVersion",
            // Renewed now: the lease-candidate GC deletes candidates not renewed for long.
            "renewTime": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true)}})
}

#[tokio::test]
async fn a_replica_forwards_what_only_its_peer_serves() {
    let etcd = start_etcd().await;
    let pki = Arc::new(tempfile::tempdir().unwrap());
    let old = TestServer::start_with(
        replica_options(&etcd.url, pki.path(), "old")
            .args(["--runtime-config", "coordination.k8s.io/v1beta1=false"]),
    )
    .await;
    let mut new = TestServer::start_with(replica_options(&etcd.url, pki.path(), "new")).await;
    let client = old.client().await;
    eventually(Duration::from_secs(30), "both identity leases", || async {
        lease(&client, &kapi_id("old")).await?;
        lease(&client, &kapi_id("new")).await
    })
    .await;
    let admin = old.admin_http();

    // `old` does not serve it itself.
    let local = admin
        .get(old.url(CANDIDATES))
        .header("x-kubernetes-peer-proxied", "true")
        .send()
        .await
        .unwrap();
    assert_eq!(local.status(), 404);

    // Through `old`, a create reaches `new` with the caller's identity (which `new` trusts
    // through the shared front-proxy CA): 201, and the object is there for both.
    eventually(Duration::from_secs(20), "a proxied create", || async {
        let resp = admin
            .post(old.url(CANDIDATES))
            .json(&candidate("via-old"))
            .send()
            .await
            .ok()?;
        (resp.status() == 201).then_some(())
    })
    .await;
    for server in [&old, &new] {
        let resp = server
            .admin_http()
            .get(server.url(&format!("{CANDIDATES}/via-old")))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200, "{}", server.url(""));
    }

    // kubectl finds the resource through `old`'s discovery.
    let out = old
        .kubectl(&["get", "leasecandidates", "-n", "default"])
        .await;
    assert!(out.status.success(), "{}", output_text(&out));
    assert!(
        output_text(&out).contains("via-old"),
        "{}",
        output_text(&out)
    );
    let (_, ready) =
        crate::support::get_text(&old.anonymous_http(), &old.url("/readyz?verbose")).await;
    for hook in [
        "local-discovery-cache-sync",
        "peer-discovery-cache-sync",
        "mixed-version-proxy-handler",
    ] {
        assert!(
            ready.contains(&format!("[+]poststarthook/{hook} ok")),
            "{ready}"
        );
    }

    // `new` stops: `old` still knows it as a peer until its lease expires, and answers 503
    // naming it; once the lease is collected, the resource is not found.
    new.signal(libc::SIGKILL);
    new.wait_exit(Duration::from_secs(10)).await;
    let resp = admin.get(old.url(CANDIDATES)).send().await.unwrap();
    let code = resp.status().as_u16();
    let body = resp.text().await.unwrap();
    assert!(
        code == 503 && body.contains("error while proxying request to peer apiserver"),
        "{code}: {body}"
    );
    eventually(
        Duration::from_secs(30),
        "the peer to be forgotten",
        || async {
            let resp = admin.get(old.url(CANDIDATES)).send().await.ok()?;
            (resp.status() == 404).then_some(())
        },
    )
    .await;
}
