//! Authentication: admin certificate, static tokens, anonymous, and bad credentials → 401.

use crate::support::{get_text, Options, TestServer};
use rcgen::{CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair};
use std::time::Duration;

const UNAUTHORIZED: &str = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}"#;

#[tokio::test]
async fn anonymous_api_is_forbidden_and_disabled_anonymous_is_401() {
    let server = TestServer::start().await;
    let resp = server
        .anonymous_http()
        .get(server.url("/api"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 403);
    assert_eq!(resp.headers()["content-type"], "application/json");
    // The admin certificate gets past authentication and authorization.
    let (code, _) = get_text(&server.admin_http(), &server.url("/api")).await;
    assert_eq!(code, 200);
    drop(server);
    let server = TestServer::start_with(
        Options::default()
            .args(["--anonymous-auth=false"])
            .probe_as_admin(),
    )
    .await;
    let resp = server
        .anonymous_http()
        .get(server.url("/livez"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 401);
    assert_eq!(resp.text().await.unwrap(), UNAUTHORIZED);
}

#[tokio::test]
async fn token_file_tokens_authenticate_unknown_ones_do_not() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens.csv");
    std::fs::write(&tokens, "s3cr3t,alice,uid-1,\"dev,ops\"\n").unwrap();
    let server = TestServer::start_with(Options::default().args([
        "--token-auth-file".to_string(),
        tokens.display().to_string(),
    ]))
    .await;
    let anon = server.anonymous_http();
    let resp = anon
        .get(server.url("/api"))
        .bearer_auth("s3cr3t")
        .send()
        .await
        .unwrap();
    assert_ne!(resp.status(), 401);
    for path in ["/api", "/livez"] {
        let resp = anon
            .get(server.url(path))
            .bearer_auth("wrong")
            .send()
            .await
            .unwrap();
        assert_eq!(
            resp.status(),
            401,
            "{path}: an unknown token never falls back to anonymous"
        );
        assert_eq!(resp.text().await.unwrap(), UNAUTHORIZED);
    }
}

fn ca(cn: &str) -> (KeyPair, CertificateParams) {
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.distinguished_name.push(DnType::CommonName, cn);
    params.is_ca = IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    (key, params)
}

fn client_cert(issuer: &Issuer<'_, KeyPair>, cn: &str, expired: bool) -> String {
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.distinguished_name.push(DnType::CommonName, cn);
    params
        .distinguished_name
        .push(DnType::OrganizationName, "system:masters");
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    if expired {
        params.not_before = rcgen::date_time_ymd(2020, 1, 1);
        params.not_after = rcgen::date_time_ymd(2021, 1, 1);
    }
    let cert = params.signed_by(&key, issuer).unwrap();
    format!("{}{}", cert.pem(), key.serialize_pem())
}

#[tokio::test]
async fn foreign_and_expired_client_certs_are_401() {
    let server = TestServer::start().await;
    let (foreign_key, foreign_params) = ca("someone-else");
    let foreign = Issuer::new(foreign_params, foreign_key);
    let pem = client_cert(&foreign, "mallory", false);
    for path in ["/api", "/livez"] {
        let (code, body) = get_text(&server.http_with(Some(&pem)), &server.url(path)).await;
        assert_eq!((code, body.as_str()), (401, UNAUTHORIZED), "{path}");
    }

    let pki = server.dir.path().join("pki");
    let ca_pem = std::fs::read_to_string(pki.join("client-ca.crt")).unwrap();
    let ca_key =
        KeyPair::from_pem(&std::fs::read_to_string(pki.join("client-ca.key")).unwrap()).unwrap();
    let ours = Issuer::from_ca_cert_pem(&ca_pem, ca_key).unwrap();
    let expired = client_cert(&ours, "old-admin", true);
    let (code, _) = get_text(&server.http_with(Some(&expired)), &server.url("/api")).await;
    assert_eq!(code, 401);
    let fresh = client_cert(&ours, "new-admin", false);
    let (code, _) = get_text(&server.http_with(Some(&fresh)), &server.url("/api")).await;
    assert_ne!(code, 401);
}

#[tokio::test]
async fn operator_serving_cert_and_loopback_client() {
    let dir = tempfile::tempdir().unwrap();
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(vec!["127.0.0.1".to_string()]).unwrap();
    params
        .distinguished_name
        .push(DnType::CommonName, "operator-cert");
    let cert = params.self_signed(&key).unwrap();
    let (crt, keyf) = (dir.path().join("tls.crt"), dir.path().join("tls.key"));
    std::fs::write(&crt, cert.pem()).unwrap();
    std::fs::write(&keyf, key.serialize_pem()).unwrap();
    // The probe hook succeeds only once the loopback client (SNI apiserver-loopback-client,
    // in-memory certificate) can read /version, so /readyz 200 proves the loopback path.
    let server = TestServer::start_with(Options::default().args([
        "--tls-cert-file".to_string(),
        crt.display().to_string(),
        "--tls-private-key-file".to_string(),
        keyf.display().to_string(),
        "--debug-failing-hook".to_string(),
        "loopback-probe=0".to_string(),
    ]))
    .await;
    assert_eq!(server.ca_pem, cert.pem());
    let out = server
        .kubectl(&["get", "--raw", "/readyz/poststarthook/loopback-probe"])
        .await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.stdout, b"ok");

    // Rotated in place: a bad pair is refused (the old one kept), a good one is served to new
    // connections within moments, without a restart.
    let trusting = |pem: &str| {
        reqwest::Client::builder()
            .use_rustls_tls()
            .tls_built_in_root_certs(false)
            .add_root_certificate(reqwest::Certificate::from_pem(pem.as_bytes()).unwrap())
            .pool_max_idle_per_host(0)
            .timeout(Duration::from_secs(5))
            .build()
            .unwrap()
    };
    let healthz = server.url("/healthz");
    let next_key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(vec!["127.0.0.1".to_string()]).unwrap();
    params
        .distinguished_name
        .push(DnType::CommonName, "rotated-cert");
    let next = params.self_signed(&next_key).unwrap();
    // The new certificate with the old key first: it does not match, nothing changes.
    std::fs::write(&crt, next.pem()).unwrap();
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let old = trusting(&cert.pem()).get(&healthz).send().await.unwrap();
    assert_eq!(old.status(), 200);
    std::fs::write(&keyf, next_key.serialize_pem()).unwrap();
    crate::support::within(Duration::from_secs(10), "the rotated certificate", async {
        while trusting(&next.pem()).get(&healthz).send().await.is_err() {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    })
    .await;
    assert!(trusting(&cert.pem()).get(&healthz).send().await.is_err());
}
