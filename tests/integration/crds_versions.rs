//! CRDs with several versions (conversion None rewrites apiVersion, deprecated versions warn,
//! storedVersions kept) and two replicas on one etcd serving the same CRDs.

use crate::crds::*;
use crate::crud::wait_default;
use crate::support::{within, TestServer};
use std::sync::Arc;
use std::time::Duration;

const TWO_VERSIONS: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.example.org}
spec:
  group: example.org
  scope: Namespaced
  names: {plural: gadgets, kind: Gadget}
  versions:
  - name: v1beta1
    served: true
    storage: false
    deprecated: true
    schema: {openAPIV3Schema: {type: object, properties: {spec: {type: object, properties: {size: {type: integer}}}}}}
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, properties: {spec: {type: object, properties: {size: {type: integer, default: 1}}}}}}
"#;

#[tokio::test]
async fn versions_convert_by_apiversion_and_deprecated_ones_warn() {
    let server = TestServer::start().await;
    wait_default(&server).await;
    apply_crd(&server, "gadgets.yaml", TWO_VERSIONS, "gadgets.example.org").await;

    // Discovery prefers v1 over v1beta1.
    let group = ok(&server, &["get", "--raw", "/apis/example.org"]).await;
    let group: serde_json::Value = serde_json::from_str(&group).unwrap();
    assert_eq!(group["preferredVersion"]["version"], "v1");

    // Written at the deprecated version: a Warning, stored as v1, served at each version.
    let f = write(
        &server,
        "g.yaml",
        "apiVersion: example.org/v1beta1\nkind: Gadget\nmetadata: {name: g}\nspec: {size: 2}\n",
    );
    let o = server.kubectl(&["apply", "-f", &f]).await;
    assert!(o.status.success(), "{}", out(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains(
            "Warning: example.org/v1beta1 Gadget is deprecated; use example.org/v1 Gadget"
        ),
        "{}",
        out(&o)
    );
    let v1 = ok(
        &server,
        &[
            "get",
            "gadgets.v1.example.org",
            "g",
            "-o",
            "jsonpath={.apiVersion} {.spec.size}",
        ],
    )
    .await;
    assert_eq!(v1, "example.org/v1 2");
    let beta = ok(
        &server,
        &[
            "get",
            "gadgets.v1beta1.example.org",
            "g",
            "-o",
            "jsonpath={.apiVersion}",
        ],
    )
    .await;
    assert_eq!(beta, "example.org/v1beta1");

    // A new storage version is added to status.storedVersions.
    let swapped = TWO_VERSIONS
        .replace("storage: false", "storage: STORED")
        .replace("storage: true", "storage: false")
        .replace("storage: STORED", "storage: true");
    let f = write(&server, "gadgets2.yaml", &swapped);
    ok(&server, &["apply", "-f", &f]).await;
    let stored = ok(
        &server,
        &[
            "get",
            "crd",
            "gadgets.example.org",
            "-o",
            "jsonpath={.status.storedVersions}",
        ],
    )
    .await;
    assert_eq!(stored, r#"["v1","v1beta1"]"#);
}

/// Two replicas on one etcd: a CRD created through one is served by the other within a
/// second, objects written through either are read through both, and a replica started
/// later serves the stored CRD before its /readyz passes.
#[tokio::test]
async fn replicas_on_etcd_serve_the_same_crds() {
    let etcd = crate::support::etcd::start_etcd().await;
    let pki = Arc::new(tempfile::tempdir().unwrap());
    let (replicas, _) = crate::ha::start_replicas(&etcd.url, pki.path(), &["crd-0", "crd-1"]).await;
    let (a, b) = (&replicas[0], &replicas[1]);
    install_crontabs(a).await;
    let url = |s: &TestServer, path: &str| s.url(&format!("/apis/stable.example.com/v1{path}"));
    let started = std::time::Instant::now();
    within(
        Duration::from_secs(1),
        "the CRD served by the other replica",
        async {
            loop {
                let (code, _) =
                    crate::support::get_text(&b.admin_http(), &url(b, "/crontabs")).await;
                if code == 200 {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        },
    )
    .await;
    eprintln!("served by the second replica after {:?}", started.elapsed());
    let f = write(b, "a.yaml", &crontab("a", "{cronSpec: '* * * * *'}"));
    ok(b, &["apply", "-f", &f]).await;
    let got = ok(a, &["get", "ct", "a", "-o", "jsonpath={.spec.replicas}"]).await;
    assert_eq!(got, "1");

    let late =
        TestServer::start_with(crate::ha::replica_options(&etcd.url, pki.path(), "crd-2")).await;
    let (code, body) = crate::support::get_text(
        &late.admin_http(),
        &url(&late, "/namespaces/default/crontabs/a"),
    )
    .await;
    assert_eq!(code, 200, "{body}");
}
