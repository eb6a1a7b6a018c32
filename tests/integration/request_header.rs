//! Front-proxy (request-header) authentication against a real `kapi serve`: the generated
//! front-proxy client certificate names users in X-Remote-* headers, a user's certificate
//! cannot, a front proxy without a user name is not anyone, `--requestheader-allowed-names`
//! refuses other names, an operator's CA replaces the generated one, the TLS handshake asks
//! for certificates of both CAs, and the auth-trust ConfigMap publishes the settings.

use crate::controllers::{eventually, pem_certs};
use crate::support::{within, Options, TestServer};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use rustls::client::ResolvesClientCert;
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::sign::CertifiedKey;
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const REVIEWS: &str = "/apis/authentication.k8s.io/v1/selfsubjectreviews";

/// The generated front-proxy client certificate and key (PEM) of a server.
fn front_proxy_identity(server: &TestServer) -> String {
    let pki = server.dir.path().join("pki");
    let read = |f: &str| std::fs::read_to_string(pki.join(f)).unwrap();
    format!(
        "{}{}",
        read("front-proxy-client.crt"),
        read("front-proxy-client.key")
    )
}

/// POSTs a SelfSubjectReview presenting `identity` with extra `headers`: (status, body).
async fn review(server: &TestServer, identity: &str, headers: &[(&str, &str)]) -> (u16, Value) {
    let mut req = server
        .http_with(Some(identity))
        .post(server.url(REVIEWS))
        .json(&json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}));
    for (name, value) in headers {
        req = req.header(*name, *value);
    }
    let resp = within(Duration::from_secs(30), REVIEWS, req.send())
        .await
        .unwrap();
    let code = resp.status().as_u16();
    let body = within(Duration::from_secs(30), REVIEWS, resp.json::<Value>())
        .await
        .unwrap();
    (code, body)
}

const ALICE: &[(&str, &str)] = &[
    ("X-Remote-User", "alice"),
    ("X-Remote-Uid", "uid-7"),
    ("X-Remote-Group", "devs"),
    ("X-Remote-Extra-Scopes", "view"),
    ("X-Remote-Extra-Scopes", "edit"),
    ("X-Remote-Extra-Acme.com%2fTeam", "blue"),
];

#[tokio::test]
async fn front_proxy_names_the_user_and_nobody_else_can() {
    let server = TestServer::start().await;
    let proxy = front_proxy_identity(&server);

    let (code, body) = review(&server, &proxy, ALICE).await;
    assert_eq!(code, 201, "{body}");
    assert_eq!(
        body["status"]["userInfo"],
        json!({
            "username": "alice",
            "uid": "uid-7",
            "groups": ["devs", "system:authenticated"],
            "extra": {"acme.com/team": ["blue"], "scopes": ["view", "edit"]},
        })
    );

    // A user's own certificate (the admin's, from the client CA) cannot name anyone else.
    let (code, body) = review(&server, &server.admin_pem, ALICE).await;
    assert_eq!(code, 201, "{body}");
    assert_eq!(body["status"]["userInfo"]["username"], "kapi-admin");

    // Without a user name the front proxy's certificate is nobody: it is not from the client
    // CA, so the request is refused, never anonymous (as kube-apiserver's union authenticator).
    let (code, body) = review(&server, &proxy, &[("X-Remote-Group", "devs")]).await;
    assert_eq!((code, &body["reason"]), (401, &json!("Unauthorized")));
}

#[tokio::test]
async fn names_outside_allowed_names_are_refused() {
    let server =
        TestServer::start_with(Options::default().args(["--requestheader-allowed-names", "other"]))
            .await;
    let (code, body) = review(&server, &front_proxy_identity(&server), ALICE).await;
    assert_eq!((code, &body["reason"]), (401, &json!("Unauthorized")));
}

#[tokio::test]
async fn auth_trust_configmap_publishes_the_front_proxy_settings() {
    let server = TestServer::start().await;
    let cms: Api<ConfigMap> = Api::namespaced(server.client().await, "kube-system");
    let data = eventually(
        Duration::from_secs(20),
        "requestheader keys in extension-apiserver-authentication",
        || async {
            let cm = cms
                .get_opt("extension-apiserver-authentication")
                .await
                .ok()??;
            let data = cm.data?;
            data.contains_key("requestheader-client-ca-file")
                .then_some(data)
        },
    )
    .await;
    let lists: Vec<(&str, &str)> = [
        "requestheader-allowed-names",
        "requestheader-extra-headers-prefix",
        "requestheader-group-headers",
        "requestheader-uid-headers",
        "requestheader-username-headers",
    ]
    .into_iter()
    .map(|k| (k, data[k].as_str()))
    .collect();
    assert_eq!(
        lists,
        [
            ("requestheader-allowed-names", r#"["front-proxy-client"]"#),
            (
                "requestheader-extra-headers-prefix",
                r#"["X-Remote-Extra-"]"#
            ),
            ("requestheader-group-headers", r#"["X-Remote-Group"]"#),
            ("requestheader-uid-headers", r#"["X-Remote-Uid"]"#),
            ("requestheader-username-headers", r#"["X-Remote-User"]"#),
        ]
    );
    let ca = std::fs::read_to_string(server.dir.path().join("pki/front-proxy-ca.crt")).unwrap();
    assert_eq!(
        pem_certs(&data["requestheader-client-ca-file"]),
        pem_certs(&ca)
    );
    // The client CA bundle is still only the client CA: a front proxy is no user.
    assert!(!pem_certs(&data["client-ca-file"]).contains(&pem_certs(&ca)[0]));
}

/// A CA (PEM) and a client certificate + key (PEM) it signed for `cn`.
fn operator_pki(cn: &str) -> (String, String) {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.distinguished_name
        .push(rcgen::DnType::CommonName, "operator-proxy-ca");
    ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let ca_pem = ca.self_signed(&ca_key).unwrap().pem();
    let issuer = rcgen::Issuer::new(ca, ca_key);
    let key = rcgen::KeyPair::generate().unwrap();
    let mut leaf = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    leaf.distinguished_name.push(rcgen::DnType::CommonName, cn);
    leaf.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
    let cert = leaf.signed_by(&key, &issuer).unwrap();
    (ca_pem, format!("{}{}", cert.pem(), key.serialize_pem()))
}

#[tokio::test]
async fn operator_ca_and_headers_replace_the_generated_ones() {
    let dir = tempfile::tempdir().unwrap();
    let (ca_pem, proxy) = operator_pki("my-aggregator");
    let ca_file = dir.path().join("proxy-ca.crt");
    std::fs::write(&ca_file, &ca_pem).unwrap();
    let server = TestServer::start_with(Options::default().args([
        "--requestheader-client-ca-file".to_string(),
        ca_file.display().to_string(),
        "--requestheader-username-headers=X-Who,X-Remote-User".to_string(),
        "--requestheader-group-headers=X-Teams".to_string(),
    ]))
    .await;
    assert!(!server.dir.path().join("pki/front-proxy-ca.crt").exists());
    // Any common name the operator's CA signed may assert identities.
    let (code, body) = review(
        &server,
        &proxy,
        &[
            ("X-Who", "bob"),
            ("X-Teams", "ops"),
            ("X-Remote-Group", "devs"),
        ],
    )
    .await;
    assert_eq!(code, 201, "{body}");
    // The first user-name header with a value wins; only the configured group header counts.
    assert_eq!(
        body["status"]["userInfo"],
        json!({"username": "bob", "groups": ["ops", "system:authenticated"]})
    );
}

/// Records the acceptable issuers a server names when it asks for a client certificate, and
/// sends none.
#[derive(Debug, Default)]
struct RecordHints(Mutex<Vec<Vec<u8>>>);

impl ResolvesClientCert for RecordHints {
    fn resolve(
        &self,
        root_hint_subjects: &[&[u8]],
        _sigschemes: &[rustls::SignatureScheme],
    ) -> Option<Arc<CertifiedKey>> {
        *self.0.lock().unwrap() = root_hint_subjects.iter().map(|s| s.to_vec()).collect();
        None
    }

    fn has_certs(&self) -> bool {
        true
    }
}

/// Go clients send a certificate only when its issuer is among the names the server asks for,
/// so the handshake must name the front-proxy CA as well as the client CA.
#[tokio::test]
async fn handshake_asks_for_front_proxy_and_client_certificates() {
    let server = TestServer::start().await;
    let mut roots = rustls::RootCertStore::empty();
    for ca in pem_certs(&server.ca_pem) {
        roots.add(CertificateDer::from(ca)).unwrap();
    }
    let hints = Arc::new(RecordHints::default());
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_client_cert_resolver(hints.clone());
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let tcp = tokio::net::TcpStream::connect(("127.0.0.1", server.port))
        .await
        .unwrap();
    let name = ServerName::try_from("127.0.0.1").unwrap();
    within(
        Duration::from_secs(10),
        "TLS handshake",
        connector.connect(name, tcp),
    )
    .await
    .unwrap();
    let subject = |pem_file: &str| {
        let pem = std::fs::read_to_string(server.dir.path().join("pki").join(pem_file)).unwrap();
        let der = pem_certs(&pem).remove(0);
        let (_, cert) = x509_parser::parse_x509_certificate(&der).unwrap();
        cert.subject().as_raw().to_vec()
    };
    let named = hints.0.lock().unwrap().clone();
    for ca in ["client-ca.crt", "front-proxy-ca.crt"] {
        assert!(named.contains(&subject(ca)), "{ca} not named");
    }
}

/// Misuse stops `kapi serve` before anything is written: usage exit code, one line.
#[tokio::test]
async fn proxy_certificate_without_key_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = within(
        Duration::from_secs(30),
        "kapi serve",
        tokio::process::Command::new(env!("CARGO_BIN_EXE_kapi"))
            .args(["serve", "--secure-port", "0", "--proxy-client-cert-file"])
            .arg(dir.path().join("proxy.crt"))
            .arg("--data-dir")
            .arg(dir.path())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8(out.stderr).unwrap(),
        "kapi: error: --proxy-client-cert-file and --proxy-client-key-file must be given together\n"
    );
    assert!(!dir.path().join("pki").exists());
}
