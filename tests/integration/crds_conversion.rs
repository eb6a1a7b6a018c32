//! A CRD whose versions convert by a webhook: the test serves a real ConversionReview webhook
//! over TLS with its own certificate (trusted through the CRD's caBundle) that renames
//! `spec.cronSpec` (v1, stored) to `spec.schedule` (v2). kubectl writes and reads at both
//! versions; a webhook that fails, answers garbage or is down gives 500 naming the webhook,
//! and nothing is stored.

use crate::crds::{apply_crd, fails, ok, write};
use crate::crud::wait_default;
use crate::support::TestServer;
use base64::Engine;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;

/// What the webhook does with the next review.
const CONVERT: u8 = 0;
const FAIL: u8 = 1;
const GARBAGE: u8 = 2;

/// The test's conversion webhook.
struct Webhook {
    port: u16,
    ca: String,
    mode: Arc<AtomicU8>,
    calls: Arc<AtomicUsize>,
    server: tokio::task::JoinHandle<()>,
}

/// `spec` renamed between the versions: v1 has cronSpec, v2 schedule.
fn convert(mut obj: Value, desired: &str) -> Value {
    let spec = obj["spec"].as_object_mut().unwrap();
    let (from, to) = if desired.ends_with("/v2") {
        ("cronSpec", "schedule")
    } else {
        ("schedule", "cronSpec")
    };
    if let Some(v) = spec.remove(from) {
        spec.insert(to.into(), v);
    }
    obj["apiVersion"] = json!(desired);
    obj
}

fn answer(review: &[u8], mode: u8) -> Vec<u8> {
    if mode == GARBAGE {
        return b"this is not a ConversionReview".to_vec();
    }
    let review: Value = serde_json::from_slice(review).unwrap();
    let request = &review["request"];
    let desired = request["desiredAPIVersion"].as_str().unwrap();
    let result = if mode == FAIL {
        json!({"status": "Failure", "message": "custom webhook conversion error"})
    } else {
        json!({"status": "Success"})
    };
    let converted: Vec<Value> = request["objects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| convert(o.clone(), desired))
        .collect();
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "response": {"uid": request["uid"], "convertedObjects": converted, "result": result},
    })
    .to_string()
    .into_bytes()
}

impl Webhook {
    async fn start() -> Webhook {
        let (acceptor, ca) = crate::support::self_signed_tls();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let mode = Arc::new(AtomicU8::new(CONVERT));
        let calls = Arc::new(AtomicUsize::new(0));
        let (m, c) = (Arc::clone(&mode), Arc::clone(&calls));
        // Connections live in the server task's JoinSet: aborting the server closes them
        // too, as a webhook that goes down does.
        let server = tokio::spawn(async move {
            let mut connections = tokio::task::JoinSet::new();
            while let Ok((tcp, _)) = listener.accept().await {
                let (acceptor, m, c) = (acceptor.clone(), Arc::clone(&m), Arc::clone(&c));
                connections.spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let service = hyper::service::service_fn(
                        move |req: http::Request<hyper::body::Incoming>| {
                            let (m, c) = (Arc::clone(&m), Arc::clone(&c));
                            async move {
                                assert_eq!(req.uri().path(), "/convert");
                                let body = req.into_body().collect().await?.to_bytes();
                                c.fetch_add(1, Ordering::SeqCst);
                                let answer = answer(&body, m.load(Ordering::SeqCst));
                                Ok::<_, hyper::Error>(
                                    http::Response::builder()
                                        .header("content-type", "application/json")
                                        .body(Full::new(Bytes::from(answer)))
                                        .unwrap(),
                                )
                            }
                        },
                    );
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(tls), service)
                        .await;
                });
            }
        });
        Webhook {
            port,
            ca,
            mode,
            calls,
            server,
        }
    }

    fn crd(&self) -> String {
        let ca = base64::engine::general_purpose::STANDARD.encode(&self.ca);
        let schema = |field: &str| {
            format!("{{openAPIV3Schema: {{type: object, properties: {{spec: {{type: object, properties: {{{field}: {{type: string}}}}}}}}}}}}")
        };
        format!(
            r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {{name: crontabs.stable.example.com}}
spec:
  group: stable.example.com
  scope: Namespaced
  names: {{plural: crontabs, kind: CronTab}}
  versions:
  - {{name: v1, served: true, storage: true, schema: {v1}}}
  - {{name: v2, served: true, storage: false, schema: {v2}}}
  conversion:
    strategy: Webhook
    webhook:
      conversionReviewVersions: [v1]
      clientConfig:
        url: https://127.0.0.1:{port}/convert
        caBundle: {ca}
"#,
            v1 = schema("cronSpec"),
            v2 = schema("schedule"),
            port = self.port,
        )
    }
}

fn v2(name: &str, schedule: &str) -> String {
    format!("apiVersion: stable.example.com/v2\nkind: CronTab\nmetadata: {{name: {name}}}\nspec: {{schedule: '{schedule}'}}\n")
}

fn v1(name: &str) -> String {
    format!("apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata: {{name: {name}}}\nspec: {{cronSpec: '0 0 * * *'}}\n")
}

/// The CronTabs as stored (listed at v1, the storage version: no conversion).
async fn stored(server: &TestServer) -> Vec<Value> {
    let path = "/apis/stable.example.com/v1/namespaces/default/crontabs";
    let list = get_json(server, &["get", "--raw", path]).await;
    list["items"].as_array().cloned().unwrap_or_default()
}

fn names(items: &[Value]) -> Vec<&str> {
    items
        .iter()
        .map(|o| o["metadata"]["name"].as_str().unwrap_or(""))
        .collect()
}

async fn get_json(server: &TestServer, args: &[&str]) -> Value {
    let text = ok(server, args).await;
    serde_json::from_str(&text).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conversion_webhook_converts_and_its_failures_store_nothing() {
    let hook = Webhook::start().await;
    let server = TestServer::start().await;
    wait_default(&server).await;
    apply_crd(
        &server,
        "crd.yaml",
        &hook.crd(),
        "crontabs.stable.example.com",
    )
    .await;

    // Written at v2: the webhook converts it to v1 to be stored; read at either version.
    let f = write(&server, "a.yaml", &v2("a", "*/5 * * * *"));
    ok(&server, &["create", "-f", &f]).await;
    let at_v1 = get_json(
        &server,
        &[
            "get",
            "--raw",
            "/apis/stable.example.com/v1/namespaces/default/crontabs/a",
        ],
    )
    .await;
    assert_eq!(at_v1["apiVersion"], "stable.example.com/v1");
    assert_eq!(at_v1["spec"], json!({"cronSpec": "*/5 * * * *"}));
    let at_v2 = get_json(
        &server,
        &["get", "crontabs.v2.stable.example.com", "a", "-o", "json"],
    )
    .await;
    assert_eq!(at_v2["apiVersion"], "stable.example.com/v2");
    assert_eq!(at_v2["spec"], json!({"schedule": "*/5 * * * *"}));
    assert_eq!(at_v2["metadata"]["uid"], at_v1["metadata"]["uid"]);
    let list = get_json(
        &server,
        &[
            "get",
            "--raw",
            "/apis/stable.example.com/v2/namespaces/default/crontabs",
        ],
    )
    .await;
    assert_eq!(list["items"][0]["spec"], json!({"schedule": "*/5 * * * *"}));
    assert!(hook.calls.load(Ordering::SeqCst) >= 2);

    // A webhook that refuses: reads and writes at v2 fail with its message; nothing changes.
    // (Each revision is converted once per version, so the objects read here are new.)
    hook.mode.store(FAIL, Ordering::SeqCst);
    let f = write(&server, "c.yaml", &v1("c"));
    ok(&server, &["create", "-f", &f]).await;
    let want = "conversion webhook for stable.example.com/v1, Kind=CronTab failed: custom webhook conversion error";
    let err = fails(&server, &["get", "crontabs.v2.stable.example.com", "c"]).await;
    assert!(
        err.contains("(InternalError)") && err.contains(want),
        "{err}"
    );
    let f = write(&server, "b.yaml", &v2("b", "0 * * * *"));
    let err = fails(&server, &["create", "-f", &f]).await;
    assert!(
        err.contains("conversion webhook for stable.example.com/v2, Kind=CronTab failed: custom webhook conversion error"),
        "{err}"
    );
    let err = fails(
        &server,
        &[
            "patch",
            "crontabs.v2.stable.example.com",
            "c",
            "--type=merge",
            "-p",
            r#"{"spec":{"schedule":"1 * * * *"}}"#,
        ],
    )
    .await;
    assert!(err.contains(want), "{err}");
    // Reads at the stored version need no conversion; b was not stored, c not patched.
    let items = stored(&server).await;
    assert_eq!(names(&items), ["a", "c"]);
    assert_eq!(items[1]["spec"], json!({"cronSpec": "0 0 * * *"}));

    // Garbage instead of a ConversionReview.
    hook.mode.store(GARBAGE, Ordering::SeqCst);
    let f = write(&server, "d.yaml", &v1("d"));
    ok(&server, &["create", "-f", &f]).await;
    let err = fails(&server, &["get", "crontabs.v2.stable.example.com", "d"]).await;
    assert!(
        err.contains("conversion webhook for stable.example.com/v1, Kind=CronTab failed: "),
        "{err}"
    );

    // A webhook that is down: the error names its URL.
    hook.server.abort();
    let _ = hook.server.await;
    let f = write(&server, "e.yaml", &v1("e"));
    ok(&server, &["create", "-f", &f]).await;
    let err = fails(&server, &["get", "crontabs.v2.stable.example.com", "e"]).await;
    let url = format!("Post \\\"https://127.0.0.1:{}/convert\\\"", hook.port);
    let url_plain = format!("Post \"https://127.0.0.1:{}/convert\"", hook.port);
    assert!(
        (err.contains(&url) || err.contains(&url_plain)) && err.contains("connection refused"),
        "{err}"
    );
    let f = write(&server, "f.yaml", &v2("f", "0 * * * *"));
    let err = fails(&server, &["create", "-f", &f]).await;
    assert!(err.contains("connection refused"), "{err}");
    assert_eq!(names(&stored(&server).await), ["a", "c", "d", "e"]);
}
