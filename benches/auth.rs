//! Authentication and authorization benchmark of the real `kapi serve`
//! (`cargo bench --bench auth`).
//!
//! 1. **RBAC against AlwaysAllow.** Two servers (embedded store, temp data dirs): one with
//!    the default `--authorization-mode=RBAC`, one with `--authorization-mode=AlwaysAllow`.
//!    Each gets the same 1,000 Roles and 1,000 RoleBindings (spread over 100 namespaces,
//!    each binding a different user), and the user `bench-user` is granted GET on ConfigMaps
//!    of namespace `bench` through a Role and RoleBinding of its own. bench-user presents a
//!    client certificate signed by the server's client CA; it GETs one ConfigMap at
//!    concurrency 64 (8 connections x 8 streams, TLS + HTTP/2). The two servers' cells
//!    alternate within each run; the table shows medians and the per-run ratios.
//! 2. **Bound token against x509.** On the RBAC server, the same GET as a ServiceAccount
//!    authenticating with a token from TokenRequest (bound to the same Role), alternating with
//!    bench-user's certificate; then the same pair with requests encoded as Go's HTTP/2
//!    client (kubectl, client-go) encodes them, which indexes `Authorization` in HPACK where
//!    the `h2` crate sends it whole every time (`common/goh2.rs`).
//!
//! Environment: `KAPI_BENCH_SECS` (seconds per cell, default 5), `KAPI_BENCH_RUNS` (default
//! 5), `KAPI_BENCH_OBJECTS` (Roles and RoleBindings each, default 1000), plus
//! `KAPI_BENCH_SERVE_ARGS` and `KAPI_BENCH_BIN` as the api bench. Without `--bench` (under
//! `cargo test --benches`) it runs a short smoke pass that fails on any failed request.

// Shared with the other benches, which use what this one does not.
#[path = "common/gets.rs"]
mod gets;
#[path = "common/goh2.rs"]
mod goh2;
#[allow(dead_code)]
#[path = "common/harness.rs"]
mod harness;
#[allow(dead_code)]
#[path = "api/loader.rs"]
mod loader;
#[path = "common/machine.rs"]
mod machine;
#[allow(dead_code)]
#[path = "api/server.rs"]
mod server;

use futures::StreamExt;
use gets::{compare, Credential, Proto, NS};
use harness::post;
use hyper::header::HeaderValue;
use serde_json::{json, Value};
use server::Server;
use std::path::Path;
use std::time::Instant;

type Res<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

struct Settings {
    timing: harness::Timing,
    objects: usize,
}

impl Settings {
    fn from_env(smoke: bool) -> Settings {
        Settings {
            timing: harness::Timing::from_env(smoke, 5),
            objects: if smoke {
                20
            } else {
                harness::env_num("KAPI_BENCH_OBJECTS", 1000.0) as usize
            },
        }
    }
}

/// A client certificate for `user`, signed by the server's client CA (in its cert dir).
fn user_cert(cert_dir: &Path, user: &str) -> Res<String> {
    let ca_cert = std::fs::read_to_string(cert_dir.join("client-ca.crt"))?;
    let ca_key =
        rcgen::KeyPair::from_pem(&std::fs::read_to_string(cert_dir.join("client-ca.key"))?)?;
    let issuer = rcgen::Issuer::from_ca_cert_pem(&ca_cert, ca_key)?;
    let key = rcgen::KeyPair::generate()?;
    let mut params = rcgen::CertificateParams::default();
    params.distinguished_name = rcgen::DistinguishedName::new();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, user);
    params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
    let cert = params.signed_by(&key, &issuer)?;
    Ok(format!("{}{}", cert.pem(), key.serialize_pem()))
}

fn role(ns: &str, name: &str, resource: &str) -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
           "metadata": {"name": name, "namespace": ns},
           "rules": [{"apiGroups": [""], "resources": [resource], "verbs": ["get", "list"]}]})
}

fn binding(ns: &str, name: &str, role: &str, subject: Value) -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
           "metadata": {"name": name, "namespace": ns},
           "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role},
           "subjects": [subject]})
}

/// The objects of part 1 (and the service account of part 2), created as the admin.
async fn populate(server: &Server, objects: usize) -> Res<()> {
    let admin = server.client(true)?;
    let url = server.url.clone();
    let namespaces = 100.min(objects.max(1));
    for n in 0..namespaces {
        let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": format!("team-{n}")}});
        post(&admin, &url, "/api/v1/namespaces", &ns).await?;
    }
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}});
    post(&admin, &url, "/api/v1/namespaces", &ns).await?;
    let writes = futures::stream::iter(0..objects).map(|i| {
        let (admin, url) = (admin.clone(), url.clone());
        async move {
            let ns = format!("team-{}", i % namespaces);
            let path = format!("/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}");
            post(&admin, &url, &format!("{path}/roles"), &role(&ns, &format!("role-{i}"), "secrets")).await?;
            let user = json!({"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": format!("user-{i}")});
            post(&admin, &url, &format!("{path}/rolebindings"), &binding(&ns, &format!("binding-{i}"), &format!("role-{i}"), user)).await
        }
    });
    let results: Vec<Res<()>> = writes.buffer_unordered(16).collect().await;
    results.into_iter().collect::<Res<Vec<()>>>()?;
    let path = format!("/apis/rbac.authorization.k8s.io/v1/namespaces/{NS}");
    post(
        &admin,
        &url,
        &format!("{path}/roles"),
        &role(NS, "reader", "configmaps"),
    )
    .await?;
    for subject in [
        json!({"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "bench-user"}),
        json!({"kind": "ServiceAccount", "name": "bench-sa", "namespace": NS}),
    ] {
        let name = format!("reader-{}", subject["name"].as_str().unwrap_or(""));
        post(
            &admin,
            &url,
            &format!("{path}/rolebindings"),
            &binding(NS, &name, "reader", subject),
        )
        .await?;
    }
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "target"}, "data": {"k": "v"}});
    post(
        &admin,
        &url,
        &format!("/api/v1/namespaces/{NS}/configmaps"),
        &cm,
    )
    .await?;
    let sa =
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "bench-sa"}});
    post(
        &admin,
        &url,
        &format!("/api/v1/namespaces/{NS}/serviceaccounts"),
        &sa,
    )
    .await?;
    Ok(())
}

/// A token for bench-sa (TokenRequest).
async fn token(server: &Server) -> Res<HeaderValue> {
    let admin = server.client(true)?;
    let req = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}});
    let resp: Value = admin
        .post(format!(
            "{}/api/v1/namespaces/{NS}/serviceaccounts/bench-sa/token",
            server.url
        ))
        .json(&req)
        .send()
        .await?
        .json()
        .await?;
    let token = resp["status"]["token"]
        .as_str()
        .ok_or("TokenRequest gave no token")?;
    Ok(HeaderValue::from_str(&format!("Bearer {token}"))?)
}

async fn bench(s: Settings, smoke: bool) -> Res<()> {
    println!("{}", machine::conditions());
    let (dir_rbac, dir_allow) = (tempfile::tempdir()?, tempfile::tempdir()?);
    let rbac = Server::start(dir_rbac.path()).await?;
    let allow = Server::start_with(dir_allow.path(), &["--authorization-mode=AlwaysAllow"]).await?;
    let started = Instant::now();
    populate(&rbac, s.objects).await?;
    populate(&allow, s.objects).await?;
    println!(
        "{} Roles and RoleBindings on each server, made in {:.1} s",
        s.objects,
        started.elapsed().as_secs_f64()
    );
    // bench-user's identity, valid on each server (each has its own client CA).
    let rbac_user = Credential::Cert(user_cert(&dir_rbac.path().join("pki"), "bench-user")?);
    let allow_user = Credential::Cert(user_cert(&dir_allow.path().join("pki"), "bench-user")?);
    compare(
        "1. RBAC (1,000 Roles and RoleBindings) ÷ AlwaysAllow",
        ("AlwaysAllow", &allow, &allow_user),
        ("RBAC", &rbac, &rbac_user),
        Proto::H2,
        &s.timing,
        smoke,
    )
    .await?;
    let sa = Credential::Token(token(&rbac).await?);
    compare(
        "2. Bound service-account token ÷ client certificate (RBAC server)",
        ("x509 client certificate", &rbac, &rbac_user),
        ("TokenRequest token", &rbac, &sa),
        Proto::H2,
        &s.timing,
        smoke,
    )
    .await?;
    compare(
        "2b. The same with requests encoded as Go's client (kubectl, client-go) encodes them",
        ("x509 client certificate", &rbac, &rbac_user),
        ("TokenRequest token", &rbac, &sa),
        Proto::GoH2,
        &s.timing,
        smoke,
    )
    .await?;
    compare(
        "3. The same over HTTP/1.1",
        ("x509 client certificate", &rbac, &rbac_user),
        ("TokenRequest token", &rbac, &sa),
        Proto::Http1,
        &s.timing,
        smoke,
    )
    .await?;
    rbac.stop().await?;
    allow.stop().await?;
    Ok(())
}

fn main() {
    // `cargo bench` passes --bench; `cargo test --benches` does not: run a short smoke pass then.
    let smoke = !std::env::args().any(|a| a == "--bench");
    let settings = Settings::from_env(smoke);
    let result = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(Into::into)
        .and_then(|rt| rt.block_on(bench(settings, smoke)));
    if let Err(err) = result {
        eprintln!("bench failed: {err}");
        std::process::exit(1);
    }
}
