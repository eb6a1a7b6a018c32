//! Admission webhooks against a webhook server inside the test (its own TLS certificate):
//! denial with the webhook's message and warnings, mutation by JSON patch (namespaceSelector,
//! objectSelector), reinvocation, failurePolicy both ways for a webhook that is down, slow
//! or answers garbage, dry runs, and the configurations never reaching webhooks.

use crate::support::{output_text as text, within, TestServer};
use base64::Engine as _;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A webhook server: what it answers depends on the path; it keeps every review it got.
pub(crate) struct Webhook {
    port: u16,
    ca: String,
    reviews: Arc<Mutex<Vec<(String, Value)>>>,
    /// The `traceparent` header of each call that had one.
    traceparents: Arc<Mutex<Vec<String>>>,
    _server: tokio::task::JoinHandle<()>,
}

fn patch_of(ops: Value) -> String {
    base64::engine::general_purpose::STANDARD.encode(ops.to_string())
}

/// The answer for a review sent to `path`.
fn answer(path: &str, review: &Value) -> Vec<u8> {
    let request = &review["request"];
    let uid = request["uid"].clone();
    let object = &request["object"];
    let response = match path {
        "/deny" => json!({"uid": uid, "allowed": false,
            "status": {"code": 403, "reason": "Forbidden", "message": "no bad things"},
            "warnings": ["deny.example.com looked at this"]}),
        "/mutate" => {
            let has_labels = object["metadata"]["labels"].is_object();
            let ops = if has_labels {
                json!([{"op": "add", "path": "/metadata/labels/mutated", "value": "true"}])
            } else {
                json!([{"op": "add", "path": "/metadata/labels", "value": {"mutated": "true"}}])
            };
            json!({"uid": uid, "allowed": true, "patchType": "JSONPatch", "patch": patch_of(ops)})
        }
        // Counts its calls in an annotation (reinvoked when a later webhook changes the object).
        "/count" => {
            let seen = object["metadata"]["annotations"]["count"]
                .as_str()
                .and_then(|c| c.parse::<u32>().ok())
                .unwrap_or(0);
            let ops = if object["metadata"]["annotations"].is_object() {
                json!([{"op": "add", "path": "/metadata/annotations/count", "value": (seen + 1).to_string()}])
            } else {
                json!([{"op": "add", "path": "/metadata/annotations", "value": {"count": "1"}}])
            };
            json!({"uid": uid, "allowed": true, "patchType": "JSONPatch", "patch": patch_of(ops)})
        }
        "/bad-patch" => json!({"uid": uid, "allowed": true, "patchType": "JSONPatch",
            "patch": patch_of(json!([{"op": "remove", "path": "/spec/nothing"}]))}),
        // Allows, with audit annotations (one whose key is not a qualified name).
        "/annotate" => json!({"uid": uid, "allowed": true,
            "auditAnnotations": {"checked-by": "annotate", "not a key!": "dropped"}}),
        "/garbage" => return b"this is not an AdmissionReview".to_vec(),
        _ => json!({"uid": uid, "allowed": true}),
    };
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response})
        .to_string()
        .into_bytes()
}

impl Webhook {
    pub(crate) async fn start() -> Webhook {
        Webhook::start_for(&["127.0.0.1"]).await
    }

    /// A webhook whose certificate names `names`.
    pub(crate) async fn start_for(names: &[&str]) -> Webhook {
        let (acceptor, ca) = crate::support::self_signed_tls_for(names);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let reviews = Arc::new(Mutex::new(Vec::new()));
        let traceparents = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&reviews);
        let parents = Arc::clone(&traceparents);
        let server = tokio::spawn(async move {
            let mut connections = tokio::task::JoinSet::new();
            while let Ok((tcp, _)) = listener.accept().await {
                let (acceptor, seen) = (acceptor.clone(), Arc::clone(&seen));
                let parents = Arc::clone(&parents);
                connections.spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let service = hyper::service::service_fn(
                        move |req: http::Request<hyper::body::Incoming>| {
                            let seen = Arc::clone(&seen);
                            if let Some(parent) = req.headers().get("traceparent") {
                                let parent = parent.to_str().unwrap_or_default().to_string();
                                parents.lock().unwrap().push(parent);
                            }
                            async move {
                                let path = req.uri().path().to_string();
                                let query = req.uri().query().unwrap_or("").to_string();
                                let body = req.into_body().collect().await?.to_bytes();
                                let review: Value =
                                    serde_json::from_slice(&body).unwrap_or(Value::Null);
                                if path == "/slow" {
                                    tokio::time::sleep(Duration::from_secs(5)).await;
                                }
                                if path == "/pause" {
                                    tokio::time::sleep(Duration::from_millis(400)).await;
                                }
                                let out = answer(&path, &review);
                                seen.lock()
                                    .unwrap()
                                    .push((format!("{path}?{query}"), review));
                                Ok::<_, hyper::Error>(
                                    http::Response::builder()
                                        .header("content-type", "application/json")
                                        .body(Full::new(Bytes::from(out)))
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
            reviews,
            traceparents,
            _server: server,
        }
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("https://127.0.0.1:{}{path}", self.port)
    }

    pub(crate) fn ca_bundle(&self) -> String {
        base64::engine::general_purpose::STANDARD.encode(&self.ca)
    }

    /// The `traceparent` headers of the calls so far.
    pub(crate) fn traceparents(&self) -> Vec<String> {
        self.traceparents.lock().unwrap().clone()
    }

    /// The reviews sent to `path` so far.
    pub(crate) fn sent_to(&self, path: &str) -> Vec<Value> {
        self.reviews
            .lock()
            .unwrap()
            .iter()
            .filter(|(p, _)| p.split('?').next() == Some(path))
            .map(|(_, r)| r.clone())
            .collect()
    }
}

/// A loopback port nothing listens on (bound, then released).
pub(crate) fn closed_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// A webhook entry calling `url`.
pub(crate) fn webhook(name: &str, url: &str, ca: &str, resources: &str, extra: Value) -> Value {
    let mut w = json!({
        "name": name,
        "clientConfig": {"url": url, "caBundle": ca},
        "rules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": [""], "apiVersions": ["v1"],
                   "resources": [resources]}],
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    });
    if let (Some(w), Some(extra)) = (w.as_object_mut(), extra.as_object()) {
        w.extend(extra.clone());
    }
    w
}

pub(crate) async fn apply(server: &TestServer, kind: &str, name: &str, webhooks: Vec<Value>) {
    let manifest = json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": kind,
        "metadata": {"name": name},
        "webhooks": webhooks,
    });
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.json");
    std::fs::write(&path, manifest.to_string()).unwrap();
    server
        .kubectl_ok(&["apply", "-f", path.to_str().unwrap()])
        .await;
}

/// Retries `f` until it yields a value (configurations take effect within moments).
pub(crate) async fn eventually<T, F, Fut>(what: &str, mut f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    within(Duration::from_secs(20), what, async {
        loop {
            if let Some(v) = f().await {
                return v;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await
}

/// A webhook reached through a Service (ExternalName, as kapi serves Services), its
/// certificate checked for `<service>.<namespace>.svc`.
#[tokio::test]
async fn webhooks_are_reached_through_services() {
    let server = TestServer::start().await;
    let hook = Webhook::start_for(&["hooks.default.svc"]).await;
    let svc = json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "hooks", "namespace": "default"},
        "spec": {"type": "ExternalName", "externalName": "127.0.0.1"}});
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("svc.json");
    std::fs::write(&path, svc.to_string()).unwrap();
    server
        .kubectl_ok(&["apply", "-f", path.to_str().unwrap()])
        .await;
    let mut deny = webhook(
        "deny.example.com",
        "",
        &hook.ca_bundle(),
        "configmaps",
        json!({}),
    );
    deny["clientConfig"] = json!({"caBundle": hook.ca_bundle(),
        "service": {"namespace": "default", "name": "hooks", "port": hook.port, "path": "/deny"}});
    apply(
        &server,
        "ValidatingWebhookConfiguration",
        "via-service",
        vec![deny],
    )
    .await;
    let message = eventually("the webhook to deny", || async {
        let out = server
            .kubectl(&["create", "configmap", "c1", "-n", "default"])
            .await;
        let text = crate::support::output_text(&out);
        text.contains("no bad things").then_some(text)
    })
    .await;
    assert!(message.contains("deny.example.com"), "{message}");
    assert!(!hook.sent_to("/deny").is_empty());
}

#[tokio::test]
async fn webhooks_deny_mutate_and_reinvoke() {
    let server = TestServer::start().await;
    let hook = Webhook::start().await;
    let ca = hook.ca_bundle();
    apply(
        &server,
        "ValidatingWebhookConfiguration",
        "deny",
        vec![webhook(
            "deny.example.com",
            &hook.url("/deny"),
            &ca,
            "configmaps",
            json!({"objectSelector": {"matchLabels": {"deny": "yes"}}}),
        )],
    )
    .await;
    // Denied with the webhook's message and code, its warning shown, nothing stored.
    let denied = eventually("the validating webhook to apply", || async {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cm.json");
        std::fs::write(
            &path,
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": "denied", "labels": {"deny": "yes"}}})
            .to_string(),
        )
        .unwrap();
        let o = server
            .kubectl(&["create", "-f", path.to_str().unwrap()])
            .await;
        (!o.status.success()).then(|| text(&o))
    })
    .await;
    assert!(
        denied
            .contains(r#"admission webhook "deny.example.com" denied the request: no bad things"#),
        "{denied}"
    );
    assert!(
        denied.contains("Warning: deny.example.com looked at this"),
        "{denied}"
    );
    let o = server.kubectl(&["get", "configmap", "denied"]).await;
    assert!(!o.status.success(), "a denied object was stored");
    // The objectSelector keeps the webhook away from other objects.
    let before = hook.sent_to("/deny").len();
    server.kubectl_ok(&["create", "configmap", "fine"]).await;
    assert_eq!(hook.sent_to("/deny").len(), before);
    let review = &hook.sent_to("/deny")[0]["request"];
    assert_eq!(review["operation"], "CREATE");
    assert_eq!(
        review["resource"],
        json!({"group": "", "version": "v1", "resource": "configmaps"})
    );
    assert_eq!(review["userInfo"]["username"], "kapi-admin");
    assert_eq!(review["options"]["kind"], "CreateOptions");
    assert!(hook.reviews.lock().unwrap()[0].0.ends_with("?timeout=10s"));

    // Mutation in namespaces labelled admission=on, with the IfNeeded counter reinvoked
    // once the mutating webhook after it changed the object.
    server.kubectl_ok(&["create", "namespace", "mut"]).await;
    server
        .kubectl_ok(&["label", "namespace", "mut", "admission=on"])
        .await;
    let in_mut = json!({"namespaceSelector": {"matchLabels": {"admission": "on"}}});
    let mut count = webhook(
        "a-count.example.com",
        &hook.url("/count"),
        &ca,
        "configmaps",
        in_mut.clone(),
    );
    count["reinvocationPolicy"] = "IfNeeded".into();
    apply(
        &server,
        "MutatingWebhookConfiguration",
        "mutate",
        vec![
            count,
            webhook(
                "b-mutate.example.com",
                &hook.url("/mutate"),
                &ca,
                "configmaps",
                in_mut,
            ),
        ],
    )
    .await;
    let labels = eventually("the mutating webhooks to apply", || async {
        let _ = server
            .kubectl(&[
                "delete",
                "configmap",
                "m",
                "-n",
                "mut",
                "--ignore-not-found",
            ])
            .await;
        server
            .kubectl_ok(&["create", "configmap", "m", "-n", "mut"])
            .await;
        let out = server
            .kubectl_ok(&["get", "configmap", "m", "-n", "mut", "-o", "json"])
            .await;
        let cm: Value = serde_json::from_str(&out).unwrap();
        cm["metadata"]["labels"]["mutated"]
            .is_string()
            .then_some(cm)
    })
    .await;
    assert_eq!(labels["metadata"]["annotations"]["count"], "2", "{labels}");
    // Not in other namespaces.
    server.kubectl_ok(&["create", "configmap", "plain"]).await;
    let plain = server
        .kubectl_ok(&[
            "get",
            "configmap",
            "plain",
            "-o",
            "jsonpath={.metadata.labels}",
        ])
        .await;
    assert_eq!(plain.trim(), "");

    // Each call and each step is in the metrics, under kube-apiserver's names and labels.
    let (_, samples) = crate::metrics::scrape(&server).await;
    let rejected = [
        ("name", "deny.example.com"),
        ("type", "validating"),
        ("operation", "CREATE"),
        ("error_type", "no_error"),
        ("rejection_code", "403"),
    ];
    let metric = |name: &str, labels: &[(&str, &str)]| {
        crate::metrics::sample(&samples, name, labels).unwrap_or(0.0)
    };
    assert!(metric("apiserver_admission_webhook_rejection_count", &rejected) >= 1.0);
    let call = [
        ("name", "deny.example.com"),
        ("type", "validating"),
        ("operation", "CREATE"),
        ("code", "403"),
        ("rejected", "true"),
    ];
    assert!(metric("apiserver_admission_webhook_request_total", &call) >= 1.0);
    let mutated = [
        ("name", "b-mutate.example.com"),
        ("type", "admit"),
        ("operation", "CREATE"),
        ("rejected", "false"),
    ];
    assert!(
        metric(
            "apiserver_admission_webhook_admission_duration_seconds_count",
            &mutated
        ) >= 1.0
    );
    for (step, rejected) in [
        ("admit", "false"),
        ("validate", "true"),
        ("validate", "false"),
    ] {
        let labels = [
            ("type", step),
            ("operation", "CREATE"),
            ("rejected", rejected),
        ];
        assert!(
            metric(
                "apiserver_admission_step_admission_duration_seconds_count",
                &labels
            ) >= 1.0,
            "{labels:?}"
        );
    }

    // A dry run reaches the webhooks with dryRun=true, shows the mutation and stores nothing.
    let out = server
        .kubectl_ok(&[
            "create",
            "configmap",
            "dry",
            "-n",
            "mut",
            "--dry-run=server",
            "-o",
            "json",
        ])
        .await;
    let dry: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(dry["metadata"]["labels"]["mutated"], "true");
    assert_eq!(
        hook.sent_to("/mutate").last().unwrap()["request"]["dryRun"],
        true
    );
    let o = server
        .kubectl(&["get", "configmap", "dry", "-n", "mut"])
        .await;
    assert!(!o.status.success(), "a dry run was stored");

    // The configurations themselves never reach webhooks.
    let catch_all = webhook("all.example.com", &hook.url("/deny"), &ca, "*", json!({}));
    let mut catch_all = catch_all;
    catch_all["rules"][0]["apiGroups"] = json!(["*"]);
    catch_all["rules"][0]["apiVersions"] = json!(["*"]);
    apply(
        &server,
        "ValidatingWebhookConfiguration",
        "all",
        vec![catch_all],
    )
    .await;
    eventually("the catch-all webhook to apply", || async {
        let o = server.kubectl(&["create", "configmap", "probe-all"]).await;
        (!o.status.success()).then_some(())
    })
    .await;
    server
        .kubectl_ok(&["delete", "validatingwebhookconfiguration", "all"])
        .await;
}

#[tokio::test]
async fn failure_policy_decides_for_broken_webhooks() {
    let server = TestServer::start().await;
    let hook = Webhook::start().await;
    let ca = hook.ca_bundle();
    let closed = closed_port();
    let down = format!("https://127.0.0.1:{closed}/down");
    let fail = json!({"failurePolicy": "Fail", "timeoutSeconds": 1});
    apply(
        &server,
        "ValidatingWebhookConfiguration",
        "broken",
        vec![
            webhook("down.example.com", &down, &ca, "secrets", fail.clone()),
            webhook(
                "slow.example.com",
                &hook.url("/slow"),
                &ca,
                "serviceaccounts",
                fail.clone(),
            ),
            webhook(
                "garbage.example.com",
                &hook.url("/garbage"),
                &ca,
                "configmaps",
                fail.clone(),
            ),
        ],
    )
    .await;
    let refused = eventually("the broken webhooks to apply", || async {
        let o = server.kubectl(&["create", "secret", "generic", "s"]).await;
        (!o.status.success()).then(|| text(&o))
    })
    .await;
    assert!(
        refused.contains(&format!(
            r#"Internal error occurred: failed calling webhook "down.example.com": failed to call webhook: Post "https://127.0.0.1:{closed}/down?timeout=1s""#
        )),
        "{refused}"
    );
    let started = std::time::Instant::now();
    let o = server.kubectl(&["create", "serviceaccount", "sa"]).await;
    assert!(
        text(&o).contains("context deadline exceeded"),
        "{}",
        text(&o)
    );
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "the 1 s timeout was not kept"
    );
    let o = server.kubectl(&["create", "configmap", "c"]).await;
    assert!(
        text(&o).contains(
            r#"failed calling webhook "garbage.example.com": received invalid webhook response"#
        ),
        "{}",
        text(&o)
    );
    for (kind, name) in [
        ("secret", "s"),
        ("serviceaccount", "sa"),
        ("configmap", "c"),
    ] {
        let o = server.kubectl(&["get", kind, name]).await;
        assert!(!o.status.success(), "{kind} {name} was stored");
    }

    // With Ignore, the same failures let the writes through.
    let ignore = json!({"failurePolicy": "Ignore", "timeoutSeconds": 1});
    apply(
        &server,
        "ValidatingWebhookConfiguration",
        "broken",
        vec![
            webhook("down.example.com", &down, &ca, "secrets", ignore.clone()),
            webhook(
                "slow.example.com",
                &hook.url("/slow"),
                &ca,
                "serviceaccounts",
                ignore.clone(),
            ),
            webhook(
                "garbage.example.com",
                &hook.url("/garbage"),
                &ca,
                "configmaps",
                ignore.clone(),
            ),
        ],
    )
    .await;
    eventually("failurePolicy Ignore to apply", || async {
        server
            .kubectl(&["create", "secret", "generic", "s"])
            .await
            .status
            .success()
            .then_some(())
    })
    .await;
    server.kubectl_ok(&["create", "serviceaccount", "sa"]).await;
    server.kubectl_ok(&["create", "configmap", "c"]).await;

    // A mutating webhook whose patch does not apply: refused under Fail, nothing stored.
    apply(
        &server,
        "MutatingWebhookConfiguration",
        "bad-patch",
        vec![webhook(
            "patch.example.com",
            &hook.url("/bad-patch"),
            &ca,
            "configmaps",
            fail,
        )],
    )
    .await;
    let refused = eventually("the bad patch to apply", || async {
        let o = server.kubectl(&["create", "configmap", "p"]).await;
        (!o.status.success()).then(|| text(&o))
    })
    .await;
    assert!(
        refused.contains(r#"failed calling webhook "patch.example.com""#),
        "{refused}"
    );
}

#[tokio::test]
async fn match_conditions_choose_which_writes_reach_a_webhook() {
    let server = TestServer::start().await;
    let hook = Webhook::start().await;
    let ca = hook.ca_bundle();
    // Denies what its condition selects (optional syntax and the authorizer included);
    // the others: a condition that fails, under Fail and under Ignore.
    let selective = webhook(
        "selective.example.com",
        &hook.url("/deny"),
        &ca,
        "configmaps",
        json!({"matchConditions": [
            {"name": "labelled", "expression": "object.?metadata.?labels.?gate.orValue('') == 'on'"},
            {"name": "admin", "expression": "authorizer.group('').resource('secrets').check('list').allowed()"},
        ]}),
    );
    let broken = |name: &str, policy: &str, prefix: &str| {
        let expression =
            format!("object.metadata.name.startsWith('{prefix}') && object.data.missing == 'x'");
        webhook(
            name,
            &hook.url("/deny"),
            &ca,
            "configmaps",
            json!({"failurePolicy": policy, "matchConditions": [
                {"name": "broken", "expression": expression},
            ]}),
        )
    };
    apply(
        &server,
        "ValidatingWebhookConfiguration",
        "conditions",
        vec![
            selective,
            broken("broken-closed.example.com", "Fail", "broken-"),
            broken("broken-open.example.com", "Ignore", "lenient-"),
        ],
    )
    .await;
    let denied = eventually("the conditions to apply", || async {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cm.json");
        std::fs::write(
            &path,
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": "gated", "labels": {"gate": "on"}}})
            .to_string(),
        )
        .unwrap();
        let o = server
            .kubectl(&["create", "-f", path.to_str().unwrap()])
            .await;
        (!o.status.success()).then(|| crate::support::output_text(&o))
    })
    .await;
    assert!(denied.contains("no bad things"), "{denied}");
    // Not labelled: the webhook is not called.
    let before = hook.sent_to("/deny").len();
    server.kubectl_ok(&["create", "configmap", "plain"]).await;
    assert_eq!(hook.sent_to("/deny").len(), before);
    // A condition that fails: 403 naming the error under Fail, nothing stored.
    let o = server
        .kubectl(&["create", "configmap", "broken-1", "--from-literal=a=b"])
        .await;
    let text = crate::support::output_text(&o);
    assert!(
        text.contains(r#"configmaps "broken-1" is forbidden: expression 'object.metadata.name.startsWith('broken-') && object.data.missing == 'x'' resulted in error: "#),
        "{text}"
    );
    let o = server.kubectl(&["get", "configmap", "broken-1"]).await;
    assert!(crate::support::output_text(&o).contains("NotFound"));
    // Under Ignore the webhook is skipped and the write goes through.
    server
        .kubectl_ok(&["create", "configmap", "lenient-1", "--from-literal=a=b"])
        .await;
    assert_eq!(hook.sent_to("/deny").len(), before);
}
