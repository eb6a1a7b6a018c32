//! Audit logging against the real server: a policy with every level, checked against the
//! events real kubectl requests leave in the log (stages, objects, annotations, field order);
//! Audit-ID response headers equal the events' auditIDs; a bad policy or an unwritable log
//! stops the start with one line; batch mode writes (and flushes at shutdown); a log that
//! cannot be written fails requests only in blocking-strict mode.

use crate::crud::wait_default;
use crate::metrics::{parse, sample};
use crate::support::{within, Options, TestServer};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;

const HEAD: &str = "apiVersion: audit.k8s.io/v1\nkind: Policy\n";

/// Rules that keep the log to what a test does: the in-process controllers (the loopback
/// user) and the health probes of the harness are not audited.
const QUIET: &str = r#"- level: None
  users: ["system:apiserver"]
- level: None
  nonResourceURLs: ["/readyz*", "/livez*", "/healthz*"]
"#;

/// Every level: None for service accounts, RequestResponse (without managed fields) for
/// namespaces, Request for config maps, Metadata for everything else (secrets included).
const EVERY_LEVEL: &str = r#"- level: None
  resources: [{group: "", resources: ["serviceaccounts"]}]
- level: RequestResponse
  resources: [{group: "", resources: ["namespaces"]}]
  omitManagedFields: true
- level: Request
  resources: [{group: "", resources: ["configmaps"]}]
- level: Metadata
"#;

/// upstream's field order of an Event (audit/v1/types.go).
const FIELD_ORDER: [&str; 18] = [
    "kind",
    "apiVersion",
    "level",
    "auditID",
    "stage",
    "requestURI",
    "verb",
    "user",
    "impersonatedUser",
    "sourceIPs",
    "userAgent",
    "objectRef",
    "responseStatus",
    "requestObject",
    "responseObject",
    "requestReceivedTimestamp",
    "stageTimestamp",
    "annotations",
];

/// A directory with the policy file, and where the log goes.
struct AuditFiles {
    dir: tempfile::TempDir,
    policy: PathBuf,
    log: PathBuf,
}

fn audit_files(rules: &str) -> AuditFiles {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.yaml");
    std::fs::write(&policy, format!("{HEAD}rules:\n{rules}")).unwrap();
    let log = dir.path().join("logs/audit.log");
    AuditFiles { dir, policy, log }
}

fn audit_args(files: &AuditFiles, log: &Path, mode: &str) -> Vec<String> {
    vec![
        "--audit-policy-file".into(),
        files.policy.display().to_string(),
        "--audit-log-path".into(),
        log.display().to_string(),
        "--audit-log-mode".into(),
        mode.into(),
    ]
}

async fn start(files: &AuditFiles, mode: &str) -> TestServer {
    let server =
        TestServer::start_with(Options::default().args(audit_args(files, &files.log, mode))).await;
    wait_default(&server).await;
    server
}

/// Every event in the log, in order.
fn events(log: &Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// Polls the log until `wanted` holds for the events that `select` picks (the last stage of
/// a request is written when its body is done, which may be just after the client has it).
async fn until(
    log: &Path,
    select: impl Fn(&Value) -> bool,
    wanted: impl Fn(&[Value]) -> bool,
) -> Vec<Value> {
    within(Duration::from_secs(20), "audit events", async {
        loop {
            let picked: Vec<Value> = events(log).into_iter().filter(|e| select(e)).collect();
            if wanted(&picked) {
                return picked;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
}

fn stages(events: &[Value]) -> Vec<&str> {
    events
        .iter()
        .map(|e| e["stage"].as_str().unwrap())
        .collect()
}

fn about(
    resource: &'static str,
    verb: &'static str,
    name: &'static str,
) -> impl Fn(&Value) -> bool {
    move |e: &Value| {
        e["verb"] == verb
            && e["objectRef"]["resource"] == resource
            && e["objectRef"]["name"] == name
    }
}

/// The events of the request whose ResponseComplete `select` picks (a create's name is
/// known only once its body is read, so its RequestReceived event has none).
async fn request_events(log: &Path, select: impl Fn(&Value) -> bool) -> Vec<Value> {
    let done = until(
        log,
        |e| e["stage"] == "ResponseComplete" && select(e),
        |picked| !picked.is_empty(),
    )
    .await;
    let id = done[0]["auditID"].clone();
    events(log)
        .into_iter()
        .filter(|e| e["auditID"] == id)
        .collect()
}

fn completed(events: &[Value]) -> bool {
    events
        .last()
        .is_some_and(|e| e["stage"] == "ResponseComplete")
}

/// The keys of an event line, in the order written.
fn keys(event: &Value) -> Vec<&str> {
    event
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect()
}

#[tokio::test]
async fn every_level_records_what_it_should() {
    let files = audit_files(&format!("{QUIET}{EVERY_LEVEL}"));
    let server = start(&files, "blocking").await;

    // Request: the request object, no response object.
    server
        .kubectl_ok(&["create", "configmap", "audit-cm", "--from-literal=a=b"])
        .await;
    let cm = request_events(&files.log, about("configmaps", "create", "audit-cm")).await;
    assert_eq!(stages(&cm), ["RequestReceived", "ResponseComplete"]);
    let (received, done) = (&cm[0], &cm[1]);
    assert_eq!(received["auditID"], done["auditID"]);
    assert_eq!(
        received["stageTimestamp"],
        received["requestReceivedTimestamp"]
    );
    assert!(received.get("responseStatus").is_none());
    assert!(
        received.get("annotations").is_none(),
        "authorization runs later"
    );
    assert_eq!(done["level"], "Request");
    assert_eq!(done["user"]["username"], "kapi-admin");
    assert_eq!(done["sourceIPs"], serde_json::json!(["127.0.0.1"]));
    assert!(done["userAgent"].as_str().unwrap().starts_with("kubectl"));
    assert_eq!(
        done["objectRef"],
        serde_json::json!({"resource": "configmaps", "namespace": "default", "name": "audit-cm", "apiVersion": "v1"})
    );
    assert_eq!(
        done["responseStatus"],
        serde_json::json!({"metadata": {}, "code": 201})
    );
    assert_eq!(done["requestObject"]["kind"], "ConfigMap");
    assert_eq!(done["requestObject"]["data"]["a"], "b");
    assert!(done.get("responseObject").is_none());
    assert_eq!(
        done["annotations"]["authorization.k8s.io/decision"],
        "allow"
    );
    assert!(done["annotations"]["authorization.k8s.io/reason"].is_string());
    let order: Vec<&str> = FIELD_ORDER
        .iter()
        .copied()
        .filter(|k| done.get(*k).is_some())
        .collect();
    assert_eq!(keys(done), order);
    // A read at Request level records no object.
    server.kubectl_ok(&["get", "configmap", "audit-cm"]).await;
    let get = until(
        &files.log,
        about("configmaps", "get", "audit-cm"),
        completed,
    )
    .await;
    assert!(get.iter().all(|e| e.get("requestObject").is_none()));

    // RequestResponse: the response object too, without managed fields (omitManagedFields).
    server
        .kubectl_ok(&["create", "namespace", "audit-ns"])
        .await;
    let stored = server
        .kubectl_ok(&[
            "get",
            "namespace",
            "audit-ns",
            "-o",
            "json",
            "--show-managed-fields",
        ])
        .await;
    let stored: Value = serde_json::from_str(&stored).unwrap();
    assert!(
        stored["metadata"]["managedFields"].is_array(),
        "kubectl create records managed fields"
    );
    let ns = request_events(&files.log, about("namespaces", "create", "audit-ns")).await;
    let done = ns.last().unwrap();
    assert_eq!(done["level"], "RequestResponse");
    assert_eq!(done["responseObject"]["metadata"]["name"], "audit-ns");
    assert_eq!(
        done["responseObject"]["metadata"]["uid"],
        stored["metadata"]["uid"]
    );
    assert!(done["responseObject"]["metadata"]
        .get("managedFields")
        .is_none());
    assert_eq!(done["requestObject"]["metadata"]["name"], "audit-ns");

    // Metadata: no objects, so no secret data in the log.
    server
        .kubectl_ok(&[
            "create",
            "secret",
            "generic",
            "audit-secret",
            "--from-literal=k=s3cr3t-value",
        ])
        .await;
    let secret = request_events(&files.log, about("secrets", "create", "audit-secret")).await;
    assert_eq!(stages(&secret), ["RequestReceived", "ResponseComplete"]);
    assert!(secret.iter().all(|e| e["level"] == "Metadata"
        && e.get("requestObject").is_none()
        && e.get("responseObject").is_none()));

    // None: nothing at all.
    server
        .kubectl_ok(&["create", "serviceaccount", "audit-sa"])
        .await;
    server
        .kubectl_ok(&["get", "serviceaccount", "audit-sa"])
        .await;
    let text = std::fs::read_to_string(&files.log).unwrap();
    assert!(
        !text.contains("s3cr3t") && !text.contains("czNjcjN0"),
        "secret data logged"
    );
    assert!(events(&files.log)
        .iter()
        .all(|e| e["objectRef"]["resource"] != "serviceaccounts"));

    // Every event written so far, and the scrape's own RequestReceived, are counted.
    let written = events(&files.log).len() as f64;
    let resp = server
        .admin_http()
        .get(server.url("/metrics"))
        .send()
        .await
        .unwrap();
    let samples = parse(&resp.text().await.unwrap());
    let counted = sample(&samples, "apiserver_audit_event_total", &[]).unwrap();
    assert!(counted > written, "{counted} <= {written}");
    for level in ["None", "Metadata", "Request", "RequestResponse"] {
        let n = sample(&samples, "apiserver_audit_level_total", &[("level", level)]);
        assert!(n.is_some_and(|n| n >= 1.0), "{level}: {n:?}");
    }
}

#[tokio::test]
async fn audit_ids_stages_and_decisions() {
    let files = audit_files(&format!("{QUIET}{EVERY_LEVEL}"));
    let server = start(&files, "blocking").await;
    server
        .kubectl_ok(&["create", "configmap", "ids", "--from-literal=a=b"])
        .await;

    // The Audit-ID response header is the events' auditID.
    let admin = server.admin_http();
    let url = server.url("/api/v1/namespaces/default/configmaps/ids");
    let resp = admin.get(&url).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    let id = resp.headers()["audit-id"].to_str().unwrap().to_string();
    let by_id = |id: String| move |e: &Value| e["auditID"] == id.as_str();
    let got = until(&files.log, by_id(id.clone()), completed).await;
    assert_eq!(stages(&got), ["RequestReceived", "ResponseComplete"]);
    assert_eq!(got[1]["verb"], "get");
    assert_eq!(
        got[1]["requestURI"],
        "/api/v1/namespaces/default/configmaps/ids"
    );
    // A sent Audit-ID is kept.
    let resp = admin
        .get(&url)
        .header("Audit-ID", "client-chosen-id")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.headers()["audit-id"], "client-chosen-id");
    until(&files.log, by_id("client-chosen-id".into()), completed).await;

    // A watch: ResponseStarted when the stream starts, ResponseComplete when it ends.
    server
        .kubectl_ok(&[
            "get",
            "--raw",
            "/api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=1",
        ])
        .await;
    let watch = until(&files.log, |e| e["verb"] == "watch", completed).await;
    assert_eq!(
        stages(&watch),
        ["RequestReceived", "ResponseStarted", "ResponseComplete"]
    );
    assert_eq!(watch[1]["responseStatus"]["code"], 200);

    // Forbidden: the decision and the Status.
    let anonymous = server.anonymous_http();
    let resp = anonymous
        .get(server.url("/api/v1/namespaces/default/configmaps"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 403);
    let id = resp.headers()["audit-id"].to_str().unwrap().to_string();
    let denied = until(&files.log, by_id(id), completed).await;
    let done = denied.last().unwrap();
    assert_eq!(done["user"]["username"], "system:anonymous");
    assert_eq!(
        done["annotations"]["authorization.k8s.io/decision"],
        "forbid"
    );
    assert_eq!(done["responseStatus"]["code"], 403);
    assert_eq!(done["responseStatus"]["reason"], "Forbidden");
    assert_eq!(done["responseStatus"]["status"], "Failure");

    // Impersonation: the user who asked, and the one it acted as.
    let out = server
        .kubectl(&[
            "get",
            "configmaps",
            "--as=audit-bob",
            "--as-group=audit-team",
        ])
        .await;
    assert!(!out.status.success(), "audit-bob may not list config maps");
    let acted = until(
        &files.log,
        |e| e["impersonatedUser"]["username"] == "audit-bob",
        completed,
    )
    .await;
    let done = acted.last().unwrap();
    assert_eq!(done["user"]["username"], "kapi-admin");
    assert_eq!(
        done["impersonatedUser"]["groups"],
        serde_json::json!(["audit-team", "system:authenticated"])
    );
    assert_eq!(
        done["annotations"]["authorization.k8s.io/decision"],
        "forbid"
    );

    // Failed authentication: one ResponseStarted event naming the method, not the token.
    let resp = anonymous
        .get(server.url("/api/v1/namespaces"))
        .bearer_auth("not-a-valid-token-1234")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 401);
    let id = resp.headers()["audit-id"].to_str().unwrap().to_string();
    let failed = until(&files.log, by_id(id), |e| !e.is_empty()).await;
    assert_eq!(stages(&failed), ["ResponseStarted"]);
    assert_eq!(
        failed[0]["responseStatus"],
        serde_json::json!({"metadata": {}, "message": "Authentication failed, attempted: bearer", "code": 401})
    );
    assert_eq!(failed[0]["user"], serde_json::json!({}));
    assert!(!std::fs::read_to_string(&files.log)
        .unwrap()
        .contains("not-a-valid-token"));
}

#[tokio::test]
async fn audit_id_header_without_auditing() {
    let server = TestServer::start().await;
    let resp = server
        .anonymous_http()
        .get(server.url("/healthz"))
        .send()
        .await
        .unwrap();
    let id = resp.headers()["audit-id"].to_str().unwrap();
    assert_eq!(id.len(), 36, "a UUID: {id}");
    let resp = server
        .anonymous_http()
        .get(server.url("/api/v1/namespaces"))
        .header("Audit-ID", "mine")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 403);
    assert_eq!(resp.headers()["audit-id"], "mine");
}

/// `kapi serve` with `args` that must stop it before it serves: (exit code, stderr).
async fn refused(args: &[String]) -> (Option<i32>, String, tempfile::TempDir) {
    let data = tempfile::tempdir().unwrap();
    let out = within(
        Duration::from_secs(30),
        "kapi serve",
        tokio::process::Command::new(env!("CARGO_BIN_EXE_kapi"))
            .args(["serve", "--secure-port", "0", "--data-dir"])
            .arg(data.path())
            .args(args)
            .kill_on_drop(true)
            .output(),
    )
    .await
    .unwrap();
    (
        out.status.code(),
        String::from_utf8(out.stderr).unwrap(),
        data,
    )
}

#[tokio::test]
async fn a_bad_policy_is_a_usage_error_in_one_line() {
    let cases = [
        (
            "- level: Verbose\n",
            "rules[0].level: Unsupported value: \"Verbose\"",
        ),
        (
            "- level: None\n  omitStages: [Later]\n",
            "rules[0].omitStages[0]: Invalid value: \"Later\"",
        ),
        (
            "- level: [not, a, level]\n",
            "cannot decode --audit-policy-file",
        ),
    ];
    for (rules, want) in cases {
        let files = audit_files(rules);
        let (code, stderr, data) = refused(&audit_args(&files, &files.log, "blocking")).await;
        assert_eq!(code, Some(2), "{stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.starts_with("kapi: error: "), "{stderr}");
        assert!(
            stderr.contains(&files.policy.display().to_string()),
            "{stderr}"
        );
        assert!(stderr.contains(want), "{stderr}");
        assert!(!data.path().join("admin.kubeconfig").exists());
        assert!(!files.log.exists());
    }
    let files = audit_files("- level: None\n");
    std::fs::remove_file(&files.policy).unwrap();
    let (code, stderr, _) = refused(&audit_args(&files, &files.log, "blocking")).await;
    assert_eq!((code, stderr.lines().count()), (Some(2), 1), "{stderr}");
    assert!(
        stderr.contains("cannot read --audit-policy-file"),
        "{stderr}"
    );
}

#[tokio::test]
async fn an_unwritable_log_path_refuses_to_start() {
    let files = audit_files("- level: Metadata\n");
    let plain = files.dir.path().join("plain-file");
    std::fs::write(&plain, "").unwrap();
    let log = plain.join("audit.log");
    let (code, stderr, data) = refused(&audit_args(&files, &log, "blocking")).await;
    assert_eq!(code, Some(1), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with(&format!(
            "kapi: error: cannot open --audit-log-path {} for writing: ",
            log.display()
        )),
        "{stderr}"
    );
    assert!(!data.path().join("admin.kubeconfig").exists());
}

#[tokio::test]
async fn batch_mode_writes_in_the_background_and_flushes_at_shutdown() {
    let files = audit_files(&format!("{QUIET}- level: Metadata\n"));
    let mut server = start(&files, "batch").await;
    server
        .kubectl_ok(&["create", "configmap", "batched", "--from-literal=a=b"])
        .await;
    let cm = request_events(&files.log, about("configmaps", "create", "batched")).await;
    assert_eq!(stages(&cm), ["RequestReceived", "ResponseComplete"]);
    // What is queued at SIGTERM is written before the process exits.
    for i in 0..20 {
        server
            .kubectl_ok(&[
                "label",
                "configmap",
                "batched",
                &format!("n={i}"),
                "--overwrite",
            ])
            .await;
    }
    server.signal(libc::SIGTERM);
    let status = server.wait_exit(Duration::from_secs(60)).await;
    assert!(status.success(), "{status}");
    let patches = events(&files.log)
        .into_iter()
        .filter(|e| e["verb"] == "patch" && e["stage"] == "ResponseComplete")
        .count();
    assert_eq!(patches, 20);
}

#[tokio::test]
async fn a_full_disk_fails_requests_only_in_blocking_strict_mode() {
    // Writes to /dev/full fail with ENOSPC, as on a full disk.
    let full = Path::new("/dev/full");
    let files = audit_files(&format!("{QUIET}- level: Metadata\n"));
    let strict = TestServer::start_with(Options::default().args(audit_args(
        &files,
        full,
        "blocking-strict",
    )))
    .await;
    let resp = strict
        .admin_http()
        .get(strict.url("/api/v1/namespaces/default/configmaps"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 500);
    assert!(resp.headers().contains_key("audit-id"));
    let body: Value = resp.json().await.unwrap();
    assert_eq!(
        body["message"],
        "Internal error occurred: failed to store audit event"
    );
    let resp = strict
        .admin_http()
        .get(strict.url("/metrics"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 500, "/metrics is audited too");
    drop(strict);

    let blocking =
        TestServer::start_with(Options::default().args(audit_args(&files, full, "blocking"))).await;
    let resp = blocking
        .admin_http()
        .get(blocking.url("/api/v1/namespaces/default/configmaps"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let resp = blocking
        .admin_http()
        .get(blocking.url("/metrics"))
        .send()
        .await
        .unwrap();
    let samples = parse(&resp.text().await.unwrap());
    let errors = sample(
        &samples,
        "apiserver_audit_error_total",
        &[("plugin", "log")],
    );
    assert!(errors.is_some_and(|n| n >= 2.0), "{errors:?}");
    assert!(
        blocking.stderr().contains("error in audit plugin"),
        "{}",
        blocking.stderr()
    );
}
