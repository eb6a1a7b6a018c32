//! `--all-apiservers`: two `kapi serve` replicas on one real etcd (from PATH) with one shared PKI
//! publish their peer addresses in their identity leases; `kapi hooks` and `kapi health` reach
//! both through them, and name the replica that is gone once it is killed.

use std::time::Duration;

use serde_json::Value;

use crate::support::etcd::start_etcd;
use crate::support::{within, Options, TestServer};

async fn kapi(server: &TestServer, args: &[&str]) -> (i32, String, String) {
    let run = crate::inspect::kapi_with(server.kubeconfig(), args).await;
    (run.code, run.stdout, run.stderr)
}

#[tokio::test]
async fn all_apiservers_reaches_every_replica_and_names_the_lost_one() {
    let etcd = start_etcd().await;
    let certs = tempfile::tempdir().unwrap();
    let a = TestServer::start_with(Options::peer_replica(&etcd.url, certs.path(), "node-a")).await;
    let mut b =
        TestServer::start_with(Options::peer_replica(&etcd.url, certs.path(), "node-b")).await;

    // Both identity leases carry a peer address.
    let peers = within(Duration::from_secs(30), "two peer addresses", async {
        loop {
            let (_, out, _) = kapi(&a, &["leases", "-o", "json"]).await;
            let json: Value = serde_json::from_str(&out).unwrap_or_default();
            let mut peers: Vec<String> = json["leases"]
                .as_array()
                .map(|l| {
                    l.iter()
                        .filter_map(|l| l["peerAddress"].as_str().map(String::from))
                        .collect()
                })
                .unwrap_or_default();
            peers.sort();
            if peers.len() == 2 {
                break peers;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    })
    .await;
    let mut want = vec![
        format!("127.0.0.1:{}", a.port),
        format!("127.0.0.1:{}", b.port),
    ];
    want.sort();
    assert_eq!(peers, want);

    let (code, out, err) = kapi(&a, &["hooks", "--all-apiservers", "-o", "json"]).await;
    assert_eq!(code, 0, "{out}{err}");
    let json: Value = serde_json::from_str(&out).unwrap();
    let mut servers: Vec<String> = json["apiservers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["apiserver"].as_str().unwrap().to_string())
        .collect();
    servers.sort();
    let mut urls = vec![a.url.clone(), b.url.clone()];
    urls.sort();
    assert_eq!(servers, urls);
    assert_eq!(json["unreachable"], serde_json::json!([]));
    for s in json["apiservers"].as_array().unwrap() {
        assert!(s["identity"].as_str().unwrap().starts_with("apiserver-"));
        assert!(!s["hooks"].as_array().unwrap().is_empty());
    }

    let (code, out, err) = kapi(&a, &["health", "--all-apiservers"]).await;
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(
        out.lines()
            .next()
            .unwrap()
            .split_whitespace()
            .collect::<Vec<_>>(),
        ["APISERVER", "CHECK", "STATUS"]
    );
    for url in &urls {
        assert!(
            out.lines().any(|l| l.starts_with(&format!("{url} "))),
            "{out}"
        );
    }

    // Replica b goes away; its identity lease stays (GC waits for expiry).
    b.signal(9);
    b.wait_exit(Duration::from_secs(10)).await;
    let (code, out, err) = kapi(&a, &["hooks", "--all-apiservers"]).await;
    assert_eq!(code, 1, "{out}{err}");
    let lost = out
        .lines()
        .find(|l| l.starts_with(&b.url))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(lost.contains(" unreachable "), "{lost}");
    assert!(err.contains(&format!("{} unreachable: ", b.url)), "{err}");
    let (code, _, err) = kapi(&a, &["health", "--all-apiservers", "-o", "json"]).await;
    assert_eq!(code, 1, "{err}");
}
