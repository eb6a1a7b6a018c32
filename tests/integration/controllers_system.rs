//! The controllers that keep the system's own objects: namespace finalization, the system
//! namespaces, the auth-trust and token-tracking ConfigMaps, and a clean start that logs no
//! warning while they wait for kube-system.

use crate::controllers::*;
use crate::support::{within, Options, TestServer};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::jiff::Timestamp;
use kube::api::{DeleteParams, PostParams};
use kube::Api;
use std::time::Duration;

#[tokio::test]
async fn deleted_namespace_is_emptied_and_finalized() {
    let server = TestServer::start().await;
    let client = server.client().await;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let ns = Namespace {
        metadata: ObjectMeta {
            name: Some("doomed".into()),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    };
    within(
        Duration::from_secs(10),
        "create ns",
        namespaces.create(&PostParams::default(), &ns),
    )
    .await
    .unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "doomed");
    for i in 0..3 {
        let cm = ConfigMap {
            metadata: ObjectMeta {
                name: Some(format!("cm-{i}")),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        };
        within(
            Duration::from_secs(10),
            "create cm",
            cms.create(&PostParams::default(), &cm),
        )
        .await
        .unwrap();
    }
    let leases: Api<Lease> = Api::namespaced(client.clone(), "doomed");
    within(
        Duration::from_secs(10),
        "create lease",
        leases.create(&PostParams::default(), &lease_obj("l", false, now(), 10)),
    )
    .await
    .unwrap();
    within(
        Duration::from_secs(10),
        "delete ns",
        namespaces.delete("doomed", &DeleteParams::default()),
    )
    .await
    .unwrap();
    eventually(
        Duration::from_secs(30),
        "namespace to disappear",
        || async { matches!(namespaces.get_opt("doomed").await, Ok(None)).then_some(()) },
    )
    .await;
}

#[tokio::test]
async fn system_namespaces_exist_and_come_back() {
    let server =
        TestServer::start_with(Options::default().args(["--system-namespaces-period", "1s"])).await;
    let client = server.client().await;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    for name in ["default", "kube-system", "kube-public", "kube-node-lease"] {
        eventually(Duration::from_secs(20), name, || async {
            namespaces.get_opt(name).await.ok().flatten()
        })
        .await;
    }
    // kube-node-lease is deletable in kube-apiserver (not one of the immortal namespaces).
    let deleted = within(
        Duration::from_secs(10),
        "delete",
        namespaces.delete("kube-node-lease", &DeleteParams::default()),
    )
    .await;
    match deleted {
        Ok(_) => {
            eventually(
                Duration::from_secs(40),
                "kube-node-lease to be recreated",
                || async {
                    let ns = namespaces.get_opt("kube-node-lease").await.ok().flatten()?;
                    ns.metadata.deletion_timestamp.is_none().then_some(())
                },
            )
            .await;
        }
        Err(kube::Error::Api(s)) if s.code == 403 || s.code == 422 => {
            // The API refuses to delete it: still there, which is what the controller ensures.
            assert!(namespaces
                .get_opt("kube-node-lease")
                .await
                .unwrap()
                .is_some());
        }
        Err(e) => panic!("deleting kube-node-lease: {e}"),
    }
}

#[tokio::test]
async fn auth_trust_and_token_tracking_configmaps() {
    let server = TestServer::start().await;
    let client = server.client().await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "kube-system");
    let auth = eventually(
        Duration::from_secs(20),
        "extension-apiserver-authentication",
        || async {
            cms.get_opt("extension-apiserver-authentication")
                .await
                .ok()
                .flatten()
        },
    )
    .await;
    let data = auth.data.unwrap_or_default();
    // The request-header keys come from the generated front-proxy CA (tests/request_header.rs).
    assert!(data.contains_key("client-ca-file"), "{data:?}");
    let bundle = &data["client-ca-file"];
    assert!(
        bundle.starts_with("-----BEGIN CERTIFICATE-----\n"),
        "{bundle}"
    );
    // The admin certificate is issued by one of the published CAs.
    let admin = pem_certs(&server.admin_pem);
    let (_, admin_cert) = x509_parser::parse_x509_certificate(&admin[0]).unwrap();
    let published = pem_certs(bundle);
    assert!(published.iter().any(|der| {
        let (_, ca) = x509_parser::parse_x509_certificate(der).unwrap();
        ca.subject() == admin_cert.issuer()
    }));

    let tracking = eventually(
        Duration::from_secs(20),
        "token tracking configmap",
        || async {
            cms.get_opt("kube-apiserver-legacy-service-account-token-tracking")
                .await
                .ok()
                .flatten()
        },
    )
    .await;
    let since = tracking.data.unwrap_or_default()["since"].clone();
    let today = Timestamp::now()
        .to_zoned(k8s_openapi::jiff::tz::TimeZone::UTC)
        .date()
        .to_string();
    assert_eq!(since, today);
}

/// On a fresh data dir the controllers that write into kube-system wait for it instead of
/// failing: every object they own appears and nothing is logged at WARN or above.
#[tokio::test]
async fn a_clean_start_logs_no_warning() {
    let server = TestServer::start().await;
    let client = server.client().await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "kube-system");
    let leases: Api<Lease> = Api::namespaced(client, "kube-system");
    for name in [
        "extension-apiserver-authentication",
        "kube-apiserver-legacy-service-account-token-tracking",
    ] {
        eventually(Duration::from_secs(20), name, || async {
            cms.get_opt(name).await.ok().flatten()
        })
        .await;
    }
    let identity = kapi_id(&server_hostname(&server).await);
    for name in [identity.as_str(), "leader-election-controller"] {
        eventually(Duration::from_secs(20), name, || async {
            leases.get_opt(name).await.ok().flatten()
        })
        .await;
    }
    let log = server.stderr();
    let warnings: Vec<&str> = log
        .lines()
        .filter(|l| l.contains(" WARN ") || l.contains(" ERROR "))
        .collect();
    assert!(warnings.is_empty(), "{warnings:#?}");
}
