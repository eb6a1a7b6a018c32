//! The aggregation layer against extension API servers. A small HTTPS server serves the group
//! example.com/v1 (widgets) and records the identity headers it gets: kubectl finds the group
//! through kapi's discovery, reads widgets through the proxy, and the APIService turns
//! unavailable when the backend stops. A second `kapi serve` serves a CRD group through the
//! first: listed as the caller, explained, and validated against the merged OpenAPI v2.

use crate::admission::eventually;
use crate::support::{get_text, output_text, within, TestServer};
use bytes::Bytes;
use http_body_util::Full;
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The name the proxy verifies the backend under (`<service>.<namespace>.svc`).
const SERVICE_DNS: &str = "ext.default.svc";

/// What the backend saw: path and the X-Remote-* and Authorization headers.
type Seen = Arc<Mutex<Vec<(String, Vec<(String, String)>)>>>;

/// A running extension API server.
struct Extension {
    port: u16,
    ca_pem: String,
    seen: Seen,
    server: tokio::task::JoinHandle<()>,
}

fn answer(path: &str, headers: &http::HeaderMap) -> (u16, Value) {
    let user = headers
        .get("x-remote-user")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    match path {
        "/apis/example.com/v1" => (
            200,
            json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "example.com/v1",
                "resources": [{"name": "widgets", "singularName": "widget", "namespaced": true,
                    "kind": "Widget", "verbs": ["get", "list"], "shortNames": ["wd"]}]}),
        ),
        "/apis/example.com/v1/namespaces/default/widgets" => (
            200,
            json!({"kind": "WidgetList", "apiVersion": "example.com/v1", "metadata": {},
                "items": [{"kind": "Widget", "apiVersion": "example.com/v1",
                    "metadata": {"name": format!("seen-by-{}", user.replace(':', "-")),
                        "namespace": "default", "creationTimestamp": "2026-01-01T00:00:00Z"}}]}),
        ),
        _ => (
            404,
            json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 404,
                "reason": "NotFound", "message": "the server could not find the requested resource"}),
        ),
    }
}

impl Extension {
    async fn start() -> Extension {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::new(vec![SERVICE_DNS.to_string()]).unwrap();
        params.is_ca = rcgen::IsCa::NoCa;
        let cert = params.self_signed(&key).unwrap();
        let der = rustls::pki_types::PrivateKeyDer::try_from(key.serialize_der()).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![cert.der().clone()], der)
            .unwrap();
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen: Seen = Arc::default();
        let record = seen.clone();
        let server = tokio::spawn(async move {
            // Dropped with this task: stopping the server closes its connections too.
            let mut connections = tokio::task::JoinSet::new();
            while let Ok((tcp, _)) = listener.accept().await {
                let (acceptor, record) = (acceptor.clone(), record.clone());
                connections.spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let service = hyper::service::service_fn(
                        move |req: http::Request<hyper::body::Incoming>| {
                            let record = record.clone();
                            async move {
                                let headers: Vec<(String, String)> = req
                                    .headers()
                                    .iter()
                                    .filter(|(n, _)| {
                                        n.as_str().starts_with("x-remote-")
                                            || n.as_str() == "authorization"
                                    })
                                    .map(|(n, v)| {
                                        (n.to_string(), v.to_str().unwrap_or("").to_string())
                                    })
                                    .collect();
                                let path = req.uri().path().to_string();
                                record.lock().unwrap().push((path.clone(), headers));
                                let (code, body) = answer(&path, req.headers());
                                Ok::<_, hyper::Error>(
                                    http::Response::builder()
                                        .status(code)
                                        .header("content-type", "application/json")
                                        .body(Full::new(Bytes::from(body.to_string())))
                                        .unwrap(),
                                )
                            }
                        },
                    );
                    let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                        .serve_connection(TokioIo::new(tls), service)
                        .await;
                });
            }
        });
        Extension {
            port,
            ca_pem: cert.pem(),
            seen,
            server,
        }
    }

    /// The identity headers of the requests to `path`.
    fn headers_of(&self, path: &str) -> Vec<Vec<(String, String)>> {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .filter(|(p, _)| p == path)
            .map(|(_, h)| h.clone())
            .collect()
    }
}

/// `kubectl apply -f` of `manifest`.
async fn try_apply(server: &TestServer, manifest: Value) -> std::process::Output {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("m.json");
    std::fs::write(&file, manifest.to_string()).unwrap();
    server
        .kubectl(&["apply", "-f", file.to_str().unwrap()])
        .await
}

async fn apply(server: &TestServer, manifest: Value) {
    let out = try_apply(server, manifest).await;
    assert!(out.status.success(), "{}", output_text(&out));
}

/// The Service and the APIService for `ext`, verified with its CA.
async fn register(server: &TestServer, ext: &Extension) {
    use base64::Engine;
    apply(
        server,
        json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "ext", "namespace": "default"},
            "spec": {"type": "ExternalName", "externalName": "127.0.0.1"}}),
    )
    .await;
    apply(
        server,
        json!({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
            "metadata": {"name": "v1.example.com"},
            "spec": {"group": "example.com", "version": "v1", "groupPriorityMinimum": 1000,
                "versionPriority": 15,
                "caBundle": base64::engine::general_purpose::STANDARD.encode(&ext.ca_pem),
                "service": {"namespace": "default", "name": "ext", "port": ext.port}}}),
    )
    .await;
}

async fn available(server: &TestServer) -> (String, String) {
    available_as(server, "v1.example.com").await
}

/// Status and message of the Available condition of the APIService `name`.
async fn available_as(server: &TestServer, name: &str) -> (String, String) {
    let out = server
        .kubectl_ok(&["get", "apiservice", name, "-o", "json"])
        .await;
    let v: Value = serde_json::from_str(&out).unwrap();
    let c = v["status"]["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == "Available").cloned())
        .unwrap_or(Value::Null);
    (
        c["status"].as_str().unwrap_or("").to_string(),
        c["message"].as_str().unwrap_or("").to_string(),
    )
}

#[tokio::test]
async fn kubectl_reads_an_extension_server_through_kapi() {
    let server = TestServer::start().await;
    let ext = Extension::start().await;
    register(&server, &ext).await;
    eventually("the APIService to turn available", || async {
        (available(&server).await.0 == "True").then_some(())
    })
    .await;

    // Discovery lists the group; kubectl finds widgets through it and reads them as admin.
    let apis: Value = server
        .admin_http()
        .get(server.url("/apis"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let groups: Vec<&str> = apis["groups"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|g| g["name"].as_str())
        .collect();
    assert!(groups.contains(&"example.com"), "{groups:?}");
    let out = eventually("kubectl to find widgets", || async {
        let out = server.kubectl(&["get", "widgets", "-n", "default"]).await;
        out.status.success().then(|| output_text(&out))
    })
    .await;
    assert!(out.contains("seen-by-"), "{out}");
    let table = server.kubectl_ok(&["get", "apiservices"]).await;
    let row = table
        .lines()
        .find(|l| l.starts_with("v1.example.com"))
        .unwrap_or_default()
        .to_string();
    assert!(
        row.contains("default/ext") && row.contains("True"),
        "{table}"
    );
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("v1.coordination.k8s.io") && l.contains("Local")),
        "built-in group/versions are registered as Local: {table}"
    );

    // The backend got the caller's identity, never its credentials.
    let sent = ext.headers_of("/apis/example.com/v1/namespaces/default/widgets");
    let first = sent.first().expect("the list reached the backend");
    assert!(first.iter().all(|(n, _)| n != "authorization"), "{first:?}");
    assert!(
        first
            .iter()
            .any(|(n, v)| n == "x-remote-group" && v == "system:masters"),
        "{first:?}"
    );

    // A forged identity header is replaced by the caller's own identity.
    let resp = server
        .admin_http()
        .get(server.url("/apis/example.com/v1/namespaces/default/widgets"))
        .header("X-Remote-User", "mallory")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let list: Value = resp.json().await.unwrap();
    let name = list["items"][0]["metadata"]["name"].as_str().unwrap_or("");
    assert!(!name.contains("mallory"), "{list}");

    // The backend stops: requests answer 503 naming the APIService, and the condition turns
    // False on the next check.
    ext.server.abort();
    let code = eventually("the proxy to fail", || async {
        let resp = server
            .admin_http()
            .get(server.url("/apis/example.com/v1/namespaces/default/widgets"))
            .send()
            .await
            .ok()?;
        let code = resp.status().as_u16();
        (code != 200).then_some(code)
    })
    .await;
    assert_eq!(code, 503);
    let text = server
        .admin_http()
        .get(server.url("/apis/example.com/v1/namespaces/default/widgets"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        text.contains("v1.example.com") || text.contains("service unavailable"),
        "{text}"
    );
}

#[tokio::test]
async fn a_backend_with_the_wrong_certificate_is_unavailable() {
    let server = TestServer::start().await;
    let ext = Extension::start().await;
    let other = Extension::start().await;
    // The APIService trusts `other`'s CA, but `ext` answers.
    let wrong = Extension {
        port: ext.port,
        ca_pem: other.ca_pem.clone(),
        seen: Arc::default(),
        server: tokio::spawn(async {}),
    };
    register(&server, &wrong).await;
    let (_, message) = eventually("the APIService to be checked", || async {
        let (status, message) = available(&server).await;
        (status == "False").then_some((status, message))
    })
    .await;
    assert!(
        message.contains("failing or missing response from"),
        "{message}"
    );
    let resp = server
        .admin_http()
        .get(server.url("/apis/example.com/v1/namespaces/default/widgets"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 503);
    assert_eq!(resp.text().await.unwrap(), "service unavailable\n");
    assert!(ext
        .headers_of("/apis/example.com/v1/namespaces/default/widgets")
        .is_empty());
}

/// A second `kapi serve` as the extension API server: it trusts the first's front-proxy CA
/// (request-header authentication, as any k8s.io/apiserver-based server would through the
/// auth-trust ConfigMap) and serves a CRD group the first does not, example.org/v1 gadgets
/// (one, `g1`), registered in the first as the APIService `v1.example.org`. Returns the
/// first (the front) and the second (the backend).
async fn gadgets_behind_the_front() -> (TestServer, TestServer) {
    use crate::support::Options;
    let front = TestServer::start().await;
    let ca = front.dir.path().join("pki").join("front-proxy-ca.crt");
    let backend = TestServer::start_with(Options::default().args([
        "--requestheader-client-ca-file",
        ca.to_str().unwrap(),
        "--requestheader-allowed-names",
        "front-proxy-client",
    ]))
    .await;
    apply(
        &backend,
        json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "gadgets.example.org"},
            "spec": {"group": "example.org", "scope": "Namespaced",
                "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                        "spec": {"type": "object", "description": "What the gadget does.",
                            "properties": {"size": {"type": "integer"}}}}}}}]}}),
    )
    .await;
    eventually("the backend to serve gadgets", || async {
        let out = backend.kubectl(&["get", "gadgets", "-n", "default"]).await;
        out.status.success().then_some(())
    })
    .await;
    apply(
        &backend,
        json!({"apiVersion": "example.org/v1", "kind": "Gadget",
            "metadata": {"name": "g1", "namespace": "default"}, "spec": {"size": 3}}),
    )
    .await;
    apply(
        &front,
        json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "gadgets", "namespace": "default"},
            "spec": {"type": "ExternalName", "externalName": "127.0.0.1"}}),
    )
    .await;
    apply(
        &front,
        json!({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
            "metadata": {"name": "v1.example.org"},
            "spec": {"group": "example.org", "version": "v1", "groupPriorityMinimum": 1000,
                "versionPriority": 15, "insecureSkipTLSVerify": true,
                "service": {"namespace": "default", "name": "gadgets", "port": backend.port}}}),
    )
    .await;
    (front, backend)
}

/// Through the first kapi, kubectl lists the second's objects as the caller (RBAC on the
/// backend decides), finds the group in discovery and explains the kind from the backend's
/// OpenAPI.
#[tokio::test]
async fn a_second_kapi_serves_a_group_through_the_first() {
    let (front, _backend) = gadgets_behind_the_front().await;
    let out = eventually("kubectl to list gadgets through the front", || async {
        let out = front.kubectl(&["get", "gadgets", "-n", "default"]).await;
        out.status.success().then(|| output_text(&out))
    })
    .await;
    assert!(out.contains("g1"), "{out}");
    let explained = eventually("kubectl explain through the front", || async {
        let out = front.kubectl(&["explain", "gadgets.spec"]).await;
        out.status.success().then(|| output_text(&out))
    })
    .await;
    assert!(explained.contains("What the gadget does."), "{explained}");

    // The backend's RBAC sees the caller: a user the front lets through but the backend
    // grants nothing is refused by the backend, by name.
    let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "gadget-reader"},
        "rules": [{"apiGroups": ["example.org"], "resources": ["gadgets"], "verbs": ["list"]}]});
    let binding = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "gadget-reader-bob"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "gadget-reader"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "bob"}]});
    apply(&front, role).await;
    apply(&front, binding).await;
    eventually("the front to let bob list gadgets", || async {
        let out = front
            .kubectl(&[
                "auth",
                "can-i",
                "list",
                "gadgets.example.org",
                "--as",
                "bob",
            ])
            .await;
        output_text(&out).trim().starts_with("yes").then_some(())
    })
    .await;
    let out = front
        .kubectl(&["get", "gadgets", "-n", "default", "--as", "bob"])
        .await;
    let text = output_text(&out);
    assert!(
        !out.status.success() && text.contains("\"bob\"") && text.contains("forbidden"),
        "{text}"
    );
}

/// The gadgets' collection path in OpenAPI v2.
const GADGETS: &str = "/apis/example.org/v1/namespaces/{namespace}/gadgets";

/// `/openapi/v2` of `server` in JSON, when it answers 200.
async fn openapi_v2(server: &TestServer) -> Option<Value> {
    let (code, text) = get_text(&server.admin_http(), &server.url("/openapi/v2")).await;
    (code == 200).then(|| serde_json::from_str(&text).ok())?
}

/// The backend's OpenAPI v2 document is merged into the front's as kube-aggregator merges
/// it: kubectl validates a List holding a Gadget against it (in protobuf), and the gadgets
/// leave it when the backend stops, the rest of the document still served.
#[tokio::test]
async fn a_second_kapis_openapi_v2_joins_the_firsts() {
    let (front, backend) = gadgets_behind_the_front().await;
    let v2 = eventually("the front's /openapi/v2 to hold the gadgets", || async {
        let doc = openapi_v2(&front).await?;
        doc["paths"].get(GADGETS).is_some().then_some(doc)
    })
    .await;
    let paths = v2["paths"].as_object().unwrap();
    assert!(
        paths.keys().all(|p| !p.starts_with("/apis/example.org/")
            || p.starts_with("/apis/example.org/v1/")),
        "only the APIService's group/version is taken"
    );
    assert!(paths.contains_key("/api/v1/namespaces/{namespace}/configmaps"));
    let renamed: Vec<&String> = v2["definitions"]
        .as_object()
        .unwrap()
        .keys()
        .filter(|k| k.ends_with("_v2"))
        .collect();
    assert!(
        renamed.is_empty(),
        "two kapis share their common definitions: {renamed:?}"
    );
    let gadget = &v2["definitions"]["org.example.v1.Gadget"];
    assert_eq!(
        gadget["x-kubernetes-group-version-kind"][0]["kind"], "Gadget",
        "{gadget}"
    );

    let explained = front
        .kubectl_ok(&["explain", "gadgets.spec", "--output", "plaintext-openapiv2"])
        .await;
    assert!(explained.contains("What the gadget does."), "{explained}");

    apply(
        &front,
        json!({"apiVersion": "v1", "kind": "List", "items": [
            {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "listed", "namespace": "default"}, "data": {"a": "b"}},
            {"apiVersion": "example.org/v1", "kind": "Gadget",
                "metadata": {"name": "g2", "namespace": "default"}, "spec": {"size": 5}}]}),
    )
    .await;
    let size = backend
        .kubectl_ok(&[
            "get",
            "gadget",
            "g2",
            "-n",
            "default",
            "-o",
            "jsonpath={.spec.size}",
        ])
        .await;
    assert_eq!(size, "5");
    // kubectl checks each item against the merged document before sending anything: a Gadget
    // whose size is a string is refused by kubectl itself.
    let out = try_apply(
        &front,
        json!({"apiVersion": "v1", "kind": "List", "items": [
            {"apiVersion": "example.org/v1", "kind": "Gadget",
                "metadata": {"name": "g3", "namespace": "default"}, "spec": {"size": "big"}}]}),
    )
    .await;
    let text = output_text(&out);
    assert!(
        !out.status.success() && text.contains("ValidationError(Gadget.spec.size)"),
        "{text}"
    );

    // The backend stops. Touching the APIService has it checked at once rather than at the
    // next resync; it turns unavailable and its document leaves /openapi/v2.
    drop(backend);
    front
        .kubectl_ok(&[
            "annotate",
            "apiservice",
            "v1.example.org",
            "example.org/touched=1",
        ])
        .await;
    let v2 = eventually("the gadgets to leave the front's /openapi/v2", || async {
        let doc = openapi_v2(&front).await?;
        doc["paths"].get(GADGETS).is_none().then_some(doc)
    })
    .await;
    assert!(v2["definitions"].get("org.example.v1.Gadget").is_none());
    assert!(v2["paths"]
        .get("/api/v1/namespaces/{namespace}/configmaps")
        .is_some());
    let (status, _) = available_as(&front, "v1.example.org").await;
    assert_eq!(status, "False");
    let req = front
        .admin_http()
        .get(front.url("/openapi/v2"))
        .header(
            "accept",
            "application/com.github.proto-openapi.spec.v2.v1.0+protobuf",
        )
        .send();
    let resp = within(Duration::from_secs(30), "/openapi/v2 in protobuf", req)
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
}
