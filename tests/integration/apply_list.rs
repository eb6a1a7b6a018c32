//! `kubectl apply -f` of a `kind: List`, what `kubectl get -o yaml` writes: kubectl validates a
//! List against /openapi/v2 in protobuf, so these fail if that answer's content type is one
//! Go's mime parser refuses. ConfigMaps (a round trip through `kubectl get -o yaml`), Events
//! and LeaseCandidates.

use crate::crud::wait_default;
use crate::support::TestServer;

fn out(o: &std::process::Output) -> String {
    format!(
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Runs kubectl and returns its stdout lines, failing the test on a non-zero exit.
async fn kubectl_ok(server: &TestServer, args: &[&str]) -> Vec<String> {
    let o = server.kubectl(args).await;
    assert!(o.status.success(), "kubectl {args:?}: {}", out(&o));
    let mut lines: Vec<String> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(str::to_string)
        .collect();
    lines.sort();
    lines
}

/// Writes `yaml` to a file in the server's temp dir and applies it.
async fn apply(server: &TestServer, name: &str, yaml: &str, extra: &[&str]) -> Vec<String> {
    let file = server.dir.path().join(name);
    std::fs::write(&file, yaml).unwrap();
    let f = file.display().to_string();
    let mut args = vec!["apply", "-f", f.as_str()];
    args.extend_from_slice(extra);
    kubectl_ok(server, &args).await
}

#[tokio::test]
async fn kubectl_applies_a_list_of_configmaps_from_get_yaml() {
    let server = TestServer::start().await;
    wait_default(&server).await;
    let list = "apiVersion: v1\nkind: List\nitems:\n\
        - apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: one\n    namespace: default\n    labels: {set: listed}\n  data: {k: a}\n\
        - apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: two\n    namespace: default\n    labels: {set: listed}\n  data: {k: b}\n";
    assert_eq!(
        apply(&server, "cms.yaml", list, &[]).await,
        ["configmap/one created", "configmap/two created"]
    );

    // What `kubectl get -o yaml` writes applies back as it is (its last-applied annotation
    // then records that file, so kubectl reports a change, as against kube-apiserver); then an
    // edited copy of a fresh `get -o yaml` updates both.
    let got = get_yaml(&server).await;
    assert!(got.contains("kind: List"), "{got}");
    assert_eq!(
        apply(&server, "got.yaml", &got, &[]).await,
        ["configmap/one configured", "configmap/two configured"]
    );
    let edited = get_yaml(&server)
        .await
        .replace("k: a", "k: a2")
        .replace("k: b", "k: b2");
    assert_eq!(
        apply(&server, "edited.yaml", &edited, &[]).await,
        ["configmap/one configured", "configmap/two configured"]
    );
    assert_eq!(data_of(&server).await, ["one=a2", "two=b2"]);
    let ssa = list.replace("k: a", "k: a3");
    assert_eq!(
        apply(
            &server,
            "ssa.yaml",
            &ssa,
            &["--server-side", "--force-conflicts"]
        )
        .await,
        [
            "configmap/one serverside-applied",
            "configmap/two serverside-applied"
        ]
    );
    assert_eq!(data_of(&server).await, ["one=a3", "two=b"]);
}

async fn get_yaml(server: &TestServer) -> String {
    let args = [
        "get",
        "configmaps",
        "-n",
        "default",
        "-l",
        "set=listed",
        "-o",
        "yaml",
    ];
    let o = server.kubectl(&args).await;
    assert!(o.status.success(), "{}", out(&o));
    String::from_utf8(o.stdout).unwrap()
}

/// `name=data.k` of the listed ConfigMaps.
async fn data_of(server: &TestServer) -> Vec<String> {
    let jsonpath = "jsonpath={range .items[*]}{.metadata.name}={.data.k}{\"\\n\"}{end}";
    let args = [
        "get",
        "configmaps",
        "-n",
        "default",
        "-l",
        "set=listed",
        "-o",
        jsonpath,
    ];
    kubectl_ok(server, &args).await
}

#[tokio::test]
async fn kubectl_applies_lists_of_events_and_lease_candidates() {
    let server = TestServer::start().await;
    wait_default(&server).await;
    let events = "apiVersion: v1\nkind: List\nitems:\n\
        - apiVersion: v1\n  kind: Event\n  metadata: {name: ev1, namespace: default}\n  involvedObject: {kind: ConfigMap, name: one, namespace: default}\n  reason: Listed\n  message: first\n  type: Normal\n\
        - apiVersion: events.k8s.io/v1\n  kind: Event\n  metadata: {name: ev2, namespace: default}\n  eventTime: \"2026-12-02T10:00:00.000000Z\"\n  reportingController: kapi.test/lists\n  reportingInstance: lists-1\n  action: Apply\n  reason: Listed\n  note: second\n  type: Normal\n  regarding: {kind: ConfigMap, name: two, namespace: default}\n";
    assert_eq!(
        apply(&server, "events.yaml", events, &[]).await,
        ["event.events.k8s.io/ev2 created", "event/ev1 created"]
    );
    let reasons = kubectl_ok(
        &server,
        &[
            "get",
            "events",
            "-n",
            "default",
            "--field-selector",
            "reason=Listed",
            "-o",
            "name",
        ],
    )
    .await;
    assert_eq!(reasons, ["event/ev1", "event/ev2"]);

    let candidates = "apiVersion: v1\nkind: List\nitems:\n\
        - apiVersion: coordination.k8s.io/v1beta1\n  kind: LeaseCandidate\n  metadata: {name: app-a, namespace: default}\n  spec: {leaseName: app, binaryVersion: \"1.35.0\", emulationVersion: \"1.35.0\", strategy: OldestEmulationVersion}\n\
        - apiVersion: coordination.k8s.io/v1beta1\n  kind: LeaseCandidate\n  metadata: {name: app-b, namespace: default}\n  spec: {leaseName: app, binaryVersion: \"1.35.0\", emulationVersion: \"1.35.0\", strategy: OldestEmulationVersion}\n";
    assert_eq!(
        apply(&server, "candidates.yaml", candidates, &[]).await,
        [
            "leasecandidate.coordination.k8s.io/app-a created",
            "leasecandidate.coordination.k8s.io/app-b created"
        ]
    );
    assert_eq!(
        apply(&server, "candidates2.yaml", candidates, &[]).await,
        [
            "leasecandidate.coordination.k8s.io/app-a unchanged",
            "leasecandidate.coordination.k8s.io/app-b unchanged"
        ]
    );
}
