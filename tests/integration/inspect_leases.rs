//! `kapi leases` and `kapi candidates` against a real `kapi serve` whose controllers publish its
//! identity lease: every output format checked field by field against the API objects.

use std::process::Stdio;
use std::time::Duration;

use chrono::{DateTime, Utc};
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{Api, ListParams, PostParams};
use serde_json::Value;
use tokio::io::AsyncBufReadExt;

use crate::support::{get_text, within, Options, TestServer};

async fn kapi(server: &TestServer, args: &[&str]) -> (i32, String, String) {
    let run = crate::inspect::kapi_with(server.kubeconfig(), args).await;
    (run.code, run.stdout, run.stderr)
}

/// Waits for the server's identity lease and returns it.
async fn identity_lease(server: &TestServer) -> Lease {
    let api: Api<Lease> = Api::namespaced(server.client().await, "kube-system");
    within(Duration::from_secs(30), "identity lease", async {
        loop {
            let list = api
                .list(&ListParams::default().labels("apiserver.kubernetes.io/identity"))
                .await;
            if let Some(l) = list.ok().and_then(|l| l.items.into_iter().next()) {
                break l;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await
}

fn renew_time(lease: &Lease) -> DateTime<Utc> {
    let ts = &lease.spec.as_ref().unwrap().renew_time.as_ref().unwrap().0;
    DateTime::from_timestamp(ts.as_second(), ts.subsec_nanosecond() as u32).unwrap()
}

fn is_age(s: &str) -> bool {
    let re_ok = !s.is_empty()
        && s.chars().all(|c| c.is_ascii_digit() || "smhdy".contains(c))
        && s.chars().next().is_some_and(|c| c.is_ascii_digit());
    re_ok
}

#[tokio::test]
async fn leases_outputs_match_the_identity_lease() {
    let server =
        TestServer::start_with(Options::default().args(["--hostname-override", "node-1"])).await;
    let lease = identity_lease(&server).await;
    let name = lease.metadata.name.clone().unwrap();
    assert_eq!(
        name, "apiserver-lgabes5ywnaqeagh5dny4zlzs4",
        "ID derived from hostname node-1"
    );
    let spec = lease.spec.clone().unwrap();
    let holder = spec.holder_identity.clone().unwrap();

    let (code, out, err) = kapi(&server, &["leases"]).await;
    assert_eq!(code, 0, "{err}");
    let rows: Vec<Vec<&str>> = out
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        rows[0],
        [
            "NAME",
            "COMPONENT",
            "HOLDER",
            "HOSTNAME",
            "RENEWED",
            "EXPIRES",
            "STATE"
        ]
    );
    assert_eq!(rows.len(), 2, "{out}");
    let r = &rows[1];
    assert_eq!(
        r[..4],
        [name.as_str(), "kube-apiserver", holder.as_str(), "node-1"]
    );
    assert!(is_age(r[4]), "RENEWED {:?}", r[4]);
    assert_eq!(r[5], "in");
    assert!(is_age(r[6]), "EXPIRES {:?}", r[6]);
    assert_eq!(r[7], "Live");

    let (code, out, _) = kapi(&server, &["leases", "-o", "wide", "--no-headers"]).await;
    assert_eq!(code, 0);
    let r: Vec<&str> = out.lines().next().unwrap().split_whitespace().collect();
    // The peer address: UnknownVersionInteroperabilityProxy is on by default.
    let address = server.url("");
    let address = address.trim_start_matches("https://").trim_end_matches('/');
    assert_eq!(r[7..], ["Live", address, "60m", "0"]);

    let (code, out, _) = kapi(&server, &["leases", "-o", "json"]).await;
    assert_eq!(code, 0);
    let json: Value = serde_json::from_str(&out).unwrap();
    let l = &json["leases"][0];
    assert_eq!(l["namespace"], "kube-system");
    assert_eq!(l["name"], name.as_str());
    assert_eq!(l["type"], "identity");
    assert_eq!(l["component"], "kube-apiserver");
    assert_eq!(l["holder"], holder.as_str());
    assert_eq!(l["hostname"], "node-1");
    assert_eq!(l["peerAddress"], address);
    assert_eq!(l["leaseDurationSeconds"], 3600);
    assert_eq!(l["state"], "Live");
    let renewed: DateTime<Utc> = l["renewTime"].as_str().unwrap().parse().unwrap();
    let expires: DateTime<Utc> = l["expireTime"].as_str().unwrap().parse().unwrap();
    assert!(renewed >= renew_time(&lease), "renewTime goes forward");
    assert_eq!(expires - renewed, chrono::TimeDelta::seconds(3600));

    let (_, out, _) = kapi(&server, &["leases", "-o", "yaml"]).await;
    let yaml: Value = serde_yaml::from_str(&out).unwrap();
    assert_eq!(yaml["leases"][0]["name"], json["leases"][0]["name"]);
    assert_eq!(yaml["leases"][0]["holder"], json["leases"][0]["holder"]);
    assert_eq!(yaml["leases"][0]["state"], "Live");

    let (_, out, _) = kapi(&server, &["leases", "-o", "name"]).await;
    assert_eq!(out, format!("lease.coordination.k8s.io/{name}\n"));

    let (code, out, err) = kapi(&server, &["leases", "--component", "nope"]).await;
    assert_eq!(
        (code, out.as_str()),
        (
            0,
            "NAME   COMPONENT   HOLDER   HOSTNAME   RENEWED   EXPIRES   STATE\n"
        )
    );
    assert_eq!(err, "No leases found in kube-system.\n");
    let (_, out, _) = kapi(
        &server,
        &[
            "leases",
            "-l",
            "kubernetes.io/hostname=node-1",
            "-o",
            "name",
        ],
    )
    .await;
    assert_eq!(out, format!("lease.coordination.k8s.io/{name}\n"));
}

#[tokio::test]
async fn leases_all_shows_locks_and_fail_on_expired() {
    let server = TestServer::start().await;
    identity_lease(&server).await;
    let api: Api<Lease> = Api::namespaced(server.client().await, "kube-system");
    let lock: Lease = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "kube-scheduler", "namespace": "kube-system"},
        "spec": {"holderIdentity": "node-2_1234", "leaseDurationSeconds": 15,
                 "renewTime": "2020-01-01T00:00:00.000000Z", "leaseTransitions": 3,
                 "strategy": "OldestEmulationVersion", "preferredHolder": "node-1_99"}
    }))
    .unwrap();
    within(
        Duration::from_secs(10),
        "create lock",
        api.create(&PostParams::default(), &lock),
    )
    .await
    .unwrap();

    let (code, out, err) = kapi(&server, &["leases", "--all", "-o", "wide"]).await;
    assert_eq!(code, 0, "{err}");
    let header: Vec<&str> = out.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(
        header,
        [
            "NAME",
            "TYPE",
            "COMPONENT",
            "HOLDER",
            "HOSTNAME",
            "RENEWED",
            "EXPIRES",
            "STATE",
            "STRATEGY",
            "PREFERRED-HOLDER",
            "PEER-ADDRESS",
            "DURATION",
            "TRANSITIONS"
        ]
    );
    let row: Vec<&str> = out
        .lines()
        .find(|l| l.starts_with("kube-scheduler "))
        .unwrap()
        .split_whitespace()
        .collect();
    assert_eq!(
        row[..5],
        [
            "kube-scheduler",
            "leader-election",
            "<none>",
            "node-2_1234",
            "<none>"
        ]
    );
    assert_eq!(
        row[7..],
        [
            "ago",
            "Expired",
            "OldestEmulationVersion",
            "node-1_99",
            "<none>",
            "15s",
            "3"
        ]
    );

    let (code, _, _) = kapi(&server, &["leases", "--fail-on-expired"]).await;
    assert_eq!(code, 0, "identity leases are live");
    let (code, _, err) = kapi(&server, &["leases", "--all", "--fail-on-expired"]).await;
    assert_eq!(code, 1);
    assert_eq!(err, "kapi: 1 expired lease(s)\n");
}

#[tokio::test]
async fn leases_watch_prints_renewals() {
    let server =
        TestServer::start_with(Options::default().args(["--identity-lease-renew-interval", "1s"]))
            .await;
    identity_lease(&server).await;
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_kapi"))
        .args(["leases", "--watch", "-o", "json"])
        .env("KUBECONFIG", server.kubeconfig())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    // The listing first, then one document per renewal: collect renewTimes until two differ
    // from the listing's.
    let mut renew_times = Vec::new();
    within(
        Duration::from_secs(30),
        "two renewals seen by --watch",
        async {
            while renew_times.len() < 3 {
                let line = lines
                    .next_line()
                    .await
                    .unwrap()
                    .expect("kapi leases --watch ended");
                if let Some(t) = line.trim().strip_prefix("\"renewTime\": \"") {
                    renew_times.push(t.trim_end_matches("\",").to_string());
                }
            }
        },
    )
    .await;
    assert!(
        renew_times[0] < renew_times[1] && renew_times[1] < renew_times[2],
        "{renew_times:?}"
    );
    child.kill().await.unwrap();
}

#[tokio::test]
async fn candidates_joined_with_their_lease() {
    let server = TestServer::start().await;
    let client = server.client().await;
    let ar = kube::api::ApiResource::from_gvk_with_plural(
        &kube::core::GroupVersionKind::gvk("coordination.k8s.io", "v1beta1", "LeaseCandidate"),
        "leasecandidates",
    );
    let api: Api<kube::api::DynamicObject> =
        Api::namespaced_with(client.clone(), "kube-system", &ar);
    let now = Utc::now().format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string();
    for (name, emulation) in [("demo-a", "1.32.0"), ("demo-b", "1.33.0")] {
        let obj: kube::api::DynamicObject = serde_json::from_value(serde_json::json!({
            "apiVersion": "coordination.k8s.io/v1beta1", "kind": "LeaseCandidate",
            "metadata": {"name": name, "namespace": "kube-system"},
            "spec": {"leaseName": "demo", "binaryVersion": "1.33.0", "emulationVersion": emulation,
                     "strategy": "OldestEmulationVersion", "renewTime": now}
        }))
        .unwrap();
        within(
            Duration::from_secs(10),
            "create candidate",
            api.create(&PostParams::default(), &obj),
        )
        .await
        .unwrap();
    }

    let (code, out, err) = kapi(&server, &["candidates", "--lease", "demo", "-o", "json"]).await;
    assert_eq!(code, 0, "{err}");
    let json: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(json["apiVersion"], "coordination.k8s.io/v1beta1");
    let c = &json["candidates"][0];
    assert_eq!(c["namespace"], "kube-system");
    assert_eq!(c["name"], "demo-a");
    assert_eq!(c["leaseName"], "demo");
    assert_eq!(c["binaryVersion"], "1.33.0");
    assert_eq!(c["emulationVersion"], "1.32.0");
    assert_eq!(c["strategy"], "OldestEmulationVersion");
    assert_eq!(json["candidates"][1]["name"], "demo-b");

    let (code, out, _) = kapi(
        &server,
        &["candidates", "-n", "kube-system", "--lease", "demo"],
    )
    .await;
    assert_eq!(code, 0);
    let rows: Vec<Vec<&str>> = out
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        rows[0],
        [
            "NAMESPACE",
            "LEASE",
            "CANDIDATE",
            "BINARY",
            "EMULATION",
            "STRATEGY",
            "RENEWED",
            "PINGED",
            "LEADER",
            "PREFERRED"
        ]
    );
    assert_eq!(
        rows[1][..6],
        [
            "kube-system",
            "demo",
            "demo-a",
            "1.33.0",
            "1.32.0",
            "OldestEmulationVersion"
        ]
    );
    assert!(is_age(rows[1][6]), "{out}");

    // The coordinated-leader-election controller elects the oldest emulation version: demo-a.
    let leader = within(Duration::from_secs(60), "demo-a elected", async {
        loop {
            let (_, out, _) = kapi(&server, &["candidates", "--lease", "demo", "-o", "json"]).await;
            let json: Value = serde_json::from_str(&out).unwrap();
            if json["candidates"][0]["leader"] == true {
                break json;
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    })
    .await;
    assert_eq!(leader["leases"][0]["name"], "demo");
    assert_eq!(leader["leases"][0]["holderIdentity"], "demo-a");
    assert_eq!(leader["candidates"][1]["leader"], false);
    let (_, out, _) = kapi(
        &server,
        &[
            "candidates",
            "--lease",
            "demo",
            "--no-headers",
            "-o",
            "wide",
        ],
    )
    .await;
    let a: Vec<&str> = out.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(a.last(), Some(&"demo-a"), "HOLDER column: {out}");
    assert!(a.contains(&"*"), "LEADER mark: {out}");
}

#[tokio::test]
async fn candidates_not_served_gives_exit_3() {
    let server = TestServer::start_with(
        Options::default().args(["--feature-gates", "CoordinatedLeaderElection=false"]),
    )
    .await;
    let (code, out, err) = kapi(&server, &["candidates"]).await;
    assert_eq!(code, 3, "{out}{err}");
    assert!(err.contains("CoordinatedLeaderElection"), "{err}");
    assert_eq!(err.lines().count(), 1);
    // Nor do the OpenAPI documents offer them (kubectl explain, client generators).
    let http = server.admin_http();
    let (code, index) = get_text(&http, &server.url("/openapi/v3")).await;
    assert_eq!(code, 200, "{index}");
    let index: Value = serde_json::from_str(&index).unwrap();
    assert!(
        index["paths"].get("apis/coordination.k8s.io/v1").is_some(),
        "{index}"
    );
    assert!(
        index["paths"]
            .get("apis/coordination.k8s.io/v1beta1")
            .is_none(),
        "{index}"
    );
    let (code, v2) = get_text(&http, &server.url("/openapi/v2")).await;
    assert_eq!(code, 200);
    assert!(!v2.contains("io.k8s.api.coordination.v1beta1.LeaseCandidate"));
    assert!(!v2.contains("/leasecandidates"));
}
