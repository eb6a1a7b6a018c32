//! The resources behind the aggregation layer through the real server and kubectl:
//! APIServices (apply, table, upstream's validation message, explain), and Services and
//! EndpointSlices as plain data (ExternalName and headless Services served, a NodePort Service
//! refused with the reason, the namespace deleter removing them).

use crate::crud::{call, wait_default};
use crate::support::{output_text, within, TestServer};
use std::time::Duration;

/// Writes `manifest` to a file in a temp dir and returns the dir and the file's path.
fn manifest(text: &str) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.yaml");
    std::fs::write(&path, text).unwrap();
    (dir, path.to_string_lossy().into_owned())
}

/// The whitespace-separated words of the first line.
fn header(table: &str) -> Vec<&str> {
    table
        .lines()
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect()
}

/// The row of `table` whose first word is `name`.
fn row<'a>(table: &'a str, name: &str) -> Vec<&'a str> {
    table
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|w| w.first() == Some(&name))
        .unwrap_or_else(|| panic!("no {name} in:\n{table}"))
}

#[tokio::test]
async fn kubectl_applies_prints_and_explains_apiservices() {
    let server = TestServer::start().await;
    let (_d, path) = manifest(
        r#"apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1alpha1.example.com}
spec:
  group: example.com
  version: v1alpha1
  groupPriorityMinimum: 1000
  versionPriority: 15
  insecureSkipTLSVerify: true
  service: {namespace: default, name: example-api}
"#,
    );
    server.kubectl_ok(&["apply", "-f", &path]).await;
    // Applying again is a no-op, not a conflict with the defaulted port or the status.
    let again = server.kubectl_ok(&["apply", "-f", &path]).await;
    assert!(again.contains("unchanged"), "{again}");
    let out = server.kubectl_ok(&["get", "apiservices"]).await;
    assert_eq!(
        header(&out),
        ["NAME", "SERVICE", "AVAILABLE", "AGE"],
        "{out}"
    );
    // The remote availability check finds no Service behind it.
    let out = crate::admission::eventually("the APIService to be checked", || async {
        let out = server.kubectl_ok(&["get", "apiservices"]).await;
        (row(&out, "v1alpha1.example.com")[..4]
            == [
                "v1alpha1.example.com",
                "default/example-api",
                "False",
                "(ServiceNotFound)",
            ])
        .then_some(out)
    })
    .await;
    assert!(
        out.lines()
            .any(|l| l.starts_with("v1.coordination.k8s.io") && l.contains("Local")),
        "every served group/version has a Local APIService: {out}"
    );
    let port = server
        .kubectl_ok(&[
            "get",
            "apiservice",
            "v1alpha1.example.com",
            "-o",
            "jsonpath={.spec.service.port}",
        ])
        .await;
    assert_eq!(port, "443");

    // The name must be <version>.<group>: upstream's message comes back through kubectl.
    let (_d2, bad) = manifest(
        r#"apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: example}
spec: {group: example.com, version: v1alpha1, groupPriorityMinimum: 1000, versionPriority: 15}
"#,
    );
    let o = server.kubectl(&["apply", "-f", &bad]).await;
    assert!(!o.status.success(), "{}", output_text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(
            r#"metadata.name: Invalid value: "example": must be `spec.version+"."+spec.group`: "v1alpha1.example.com""#
        ),
        "{err}"
    );

    let explained = server.kubectl_ok(&["explain", "apiservice.spec"]).await;
    for want in [
        "GROUP:      apiregistration.k8s.io",
        "KIND:       APIService",
        "groupPriorityMinimum",
        "insecureSkipTLSVerify",
    ] {
        assert!(explained.contains(want), "{want} in:\n{explained}");
    }
}

#[tokio::test]
async fn services_are_plain_data_and_go_with_their_namespace() {
    let server = TestServer::start().await;
    wait_default(&server).await;
    server.kubectl_ok(&["create", "namespace", "apps"]).await;

    // kapi has nothing to give a NodePort Service: refused, naming the field and why.
    let o = server
        .kubectl(&[
            "create",
            "service",
            "nodeport",
            "web",
            "--tcp=80:8080",
            "-n",
            "apps",
        ])
        .await;
    assert!(!o.status.success(), "{}", output_text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(
            r#"spec.type: Invalid value: "NodePort": kapi has no cluster IPs, pods or proxies"#
        ),
        "{err}"
    );

    let (_d, path) = manifest(
        r#"apiVersion: v1
kind: Service
metadata: {name: alias, namespace: apps}
spec: {type: ExternalName, externalName: db.example.com}
---
apiVersion: v1
kind: Service
metadata: {name: db, namespace: apps}
spec:
  clusterIP: None
  ports: [{name: pg, port: 5432}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: db-1
  namespace: apps
  labels: {kubernetes.io/service-name: db}
addressType: IPv4
ports: [{name: pg, port: 5432}]
endpoints:
- addresses: [10.1.2.3]
  conditions: {ready: true}
"#,
    );
    server.kubectl_ok(&["apply", "-f", &path]).await;
    // Applying again leaves the Services as they are (their ports merge by port, as the
    // OpenAPI patch metadata says); a slice's ports are an atomic list, resent as upstream's are.
    let again = server.kubectl_ok(&["apply", "-f", &path]).await;
    for line in ["service/alias unchanged", "service/db unchanged"] {
        assert!(again.contains(line), "{again}");
    }

    let out = server.kubectl_ok(&["get", "svc", "-n", "apps"]).await;
    assert_eq!(
        header(&out),
        [
            "NAME",
            "TYPE",
            "CLUSTER-IP",
            "EXTERNAL-IP",
            "PORT(S)",
            "AGE"
        ],
        "{out}"
    );
    assert_eq!(
        row(&out, "alias")[..5],
        [
            "alias",
            "ExternalName",
            "<none>",
            "db.example.com",
            "<none>"
        ],
        "{out}"
    );
    assert_eq!(
        row(&out, "db")[..5],
        ["db", "ClusterIP", "None", "<none>", "5432/TCP"],
        "{out}"
    );
    let families = server
        .kubectl_ok(&[
            "get",
            "svc",
            "db",
            "-n",
            "apps",
            "-o",
            "jsonpath={.spec.ipFamilyPolicy} {.spec.ipFamilies}",
        ])
        .await;
    assert_eq!(families, r#"RequireDualStack ["IPv4","IPv6"]"#);

    let out = server
        .kubectl_ok(&["get", "endpointslices", "-n", "apps"])
        .await;
    assert_eq!(
        header(&out),
        ["NAME", "ADDRESSTYPE", "PORTS", "ENDPOINTS", "AGE"],
        "{out}"
    );
    assert_eq!(
        row(&out, "db-1")[..4],
        ["db-1", "IPv4", "5432", "10.1.2.3"],
        "{out}"
    );
    let selected = server
        .kubectl_ok(&[
            "get",
            "endpointslices",
            "-n",
            "apps",
            "-l",
            "kubernetes.io/service-name=db",
            "-o",
            "name",
        ])
        .await;
    assert_eq!(selected, "endpointslice.discovery.k8s.io/db-1");
    // Services are in the `all` category.
    let all = server.kubectl_ok(&["get", "all", "-n", "apps"]).await;
    assert!(
        all.lines()
            .any(|l| l.starts_with("db ") || l.starts_with("service/db ")),
        "{all}"
    );

    // The namespace deleter knows the new kinds: deleting the namespace deletes them.
    server
        .kubectl_ok(&["delete", "namespace", "apps", "--timeout=60s"])
        .await;
    let c = server.admin_http();
    for path in [
        "/api/v1/namespaces/apps/services/db",
        "/api/v1/namespaces/apps/services/alias",
        "/apis/discovery.k8s.io/v1/namespaces/apps/endpointslices/db-1",
    ] {
        let url = server.url(path);
        within(Duration::from_secs(30), path, async {
            while call(&c, reqwest::Method::GET, &url, None).await.0 != 404 {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        })
        .await;
    }
}
