//! Discovery against the real server: legacy documents and aggregated v2 chosen by Accept.

use crate::crud::call;
use crate::support::{within, TestServer};
use serde_json::Value;
use std::time::Duration;

#[tokio::test]
async fn legacy_and_aggregated_discovery() {
    let server = TestServer::start().await;
    let c = server.admin_http();
    let (code, api, _) = call(&c, reqwest::Method::GET, &server.url("/api"), None).await;
    assert_eq!((code, api["kind"].as_str()), (200, Some("APIVersions")));
    let (_, v1, _) = call(&c, reqwest::Method::GET, &server.url("/api/v1"), None).await;
    let names: Vec<&str> = v1["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    for n in [
        "configmaps",
        "namespaces",
        "namespaces/status",
        "namespaces/finalize",
        "secrets",
        "serviceaccounts",
        "services",
        "services/status",
        "events",
    ] {
        assert!(names.contains(&n), "{n} in {names:?}");
    }
    let cm = v1["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "configmaps")
        .unwrap();
    assert_eq!(cm["shortNames"], serde_json::json!(["cm"]));
    assert_eq!(cm["singularName"], "configmap");
    let svc = v1["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "services")
        .unwrap();
    assert_eq!(
        (&svc["shortNames"], &svc["categories"]),
        (&serde_json::json!(["svc"]), &serde_json::json!(["all"]))
    );
    let (_, groups, _) = call(&c, reqwest::Method::GET, &server.url("/apis"), None).await;
    // apiregistration.k8s.io has the highest group priority: the aggregator lists it first.
    let names: Vec<&str> = groups["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["name"].as_str().unwrap())
        .collect();
    assert_eq!(names.first(), Some(&"apiregistration.k8s.io"), "{names:?}");
    assert!(names.contains(&"discovery.k8s.io"), "{names:?}");
    let coord = groups["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["name"] == "coordination.k8s.io")
        .unwrap();
    assert_eq!(coord["preferredVersion"]["version"], "v1");
    let (_, coord_v1, _) = call(
        &c,
        reqwest::Method::GET,
        &server.url("/apis/coordination.k8s.io/v1"),
        None,
    )
    .await;
    let lease = &coord_v1["resources"][0];
    assert_eq!(
        (lease["name"].as_str(), lease.get("shortNames")),
        (Some("leases"), None)
    );
    let (code, _, _) = call(
        &c,
        reqwest::Method::GET,
        &server.url("/apis/coordination.k8s.io"),
        None,
    )
    .await;
    assert_eq!(code, 200);

    let accept = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";
    for (path, want_core) in [("/api", true), ("/apis", false)] {
        let resp = within(
            Duration::from_secs(30),
            path,
            c.get(server.url(path)).header("accept", accept).send(),
        )
        .await
        .unwrap();
        assert_eq!(
            resp.headers()["content-type"],
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
        );
        let doc: Value = resp.json().await.unwrap();
        assert_eq!(doc["kind"], "APIGroupDiscoveryList");
        let items = doc["items"].as_array().unwrap();
        assert_eq!(items.iter().any(|i| i["metadata"]["name"] == ""), want_core);
        if !want_core {
            let coord = items
                .iter()
                .find(|i| i["metadata"]["name"] == "coordination.k8s.io")
                .unwrap();
            let versions: Vec<&str> = coord["versions"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v["version"].as_str().unwrap())
                .collect();
            assert_eq!(versions, vec!["v1", "v1beta1"]);
        } else {
            let ns = items[0]["versions"][0]["resources"]
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r["resource"] == "namespaces")
                .unwrap();
            assert_eq!(ns["scope"], "Cluster");
            assert_eq!(ns["shortNames"], serde_json::json!(["ns"]));
        }
    }
    let (code, st, _) = call(
        &c,
        reqwest::Method::GET,
        &server.url("/apis/nope.example.com/v1/things"),
        None,
    )
    .await;
    assert_eq!(code, 404, "{st}");
}
