//! CustomResourceDefinitions with real clients: kubectl 1.37 (apply a CRD, wait for
//! Established, create, get with printer columns, patch, server-side apply, the status
//! subresource, explain, delete the CRD and see its objects go), the Python client's
//! ApiextensionsV1Api and CustomObjectsApi, bad input, and a restart that serves the stored
//! CRDs before /readyz passes.

use crate::crud::wait_default;
use crate::support::{within, Options, TestServer};
use std::sync::Arc;
use std::time::Duration;

pub(crate) const CRD: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: crontabs.stable.example.com
spec:
  group: stable.example.com
  scope: Namespaced
  names: {plural: crontabs, singular: crontab, kind: CronTab, shortNames: [ct], categories: [all]}
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
      scale: {specReplicasPath: .spec.replicas, statusReplicasPath: .status.active}
    selectableFields: [{jsonPath: .spec.image}]
    additionalPrinterColumns:
    - {name: Spec, type: string, jsonPath: .spec.cronSpec}
    - {name: Replicas, type: integer, jsonPath: .spec.replicas}
    - {name: Image, type: string, jsonPath: .spec.image, priority: 1}
    - {name: Age, type: date, jsonPath: .metadata.creationTimestamp}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            description: The schedule and what runs.
            required: [cronSpec]
            properties:
              cronSpec: {type: string, pattern: '^(\S+\s+){4}\S+$'}
              image: {type: string}
              replicas: {type: integer, minimum: 1, maximum: 10, default: 1}
          status:
            type: object
            properties:
              active: {type: integer, minimum: 0}
"#;

pub(crate) fn out(o: &std::process::Output) -> String {
    format!(
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Runs kubectl, failing the test on a non-zero exit; returns stdout.
pub(crate) async fn ok(server: &TestServer, args: &[&str]) -> String {
    let o = server.kubectl(args).await;
    assert!(o.status.success(), "kubectl {args:?}: {}", out(&o));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Runs kubectl expecting failure; returns stderr.
pub(crate) async fn fails(server: &TestServer, args: &[&str]) -> String {
    let o = server.kubectl(args).await;
    assert!(
        !o.status.success(),
        "kubectl {args:?} succeeded: {}",
        out(&o)
    );
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub(crate) fn write(server: &TestServer, name: &str, text: &str) -> String {
    let file = server.dir.path().join(name);
    std::fs::write(&file, text).unwrap();
    file.display().to_string()
}

/// Writes `text` (a CRD) to `file`, applies it with kubectl and waits until the CRD `name`
/// is Established; returns what `kubectl apply` printed.
pub(crate) async fn apply_crd(server: &TestServer, file: &str, text: &str, name: &str) -> String {
    let f = write(server, file, text);
    let applied = ok(server, &["apply", "-f", &f]).await;
    let crd = format!("crd/{name}");
    ok(
        server,
        &[
            "wait",
            "--for",
            "condition=Established",
            &crd,
            "--timeout=20s",
        ],
    )
    .await;
    applied
}

/// Applies the CronTab CRD and waits until it is Established.
pub(crate) async fn install_crontabs(server: &TestServer) {
    let applied = apply_crd(server, "crd.yaml", CRD, "crontabs.stable.example.com").await;
    assert!(applied.contains("created"));
}

pub(crate) fn crontab(name: &str, spec: &str) -> String {
    format!("apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata: {{name: {name}}}\nspec: {spec}\n")
}

#[tokio::test]
async fn kubectl_serves_custom_resources_from_a_crd() {
    let server = TestServer::start().await;
    wait_default(&server).await;
    install_crontabs(&server).await;

    let crd = ok(
        &server,
        &["get", "crd", "crontabs.stable.example.com", "-o", "json"],
    )
    .await;
    let crd: serde_json::Value = serde_json::from_str(&crd).unwrap();
    assert_eq!(crd["status"]["acceptedNames"]["kind"], "CronTab");
    assert_eq!(crd["status"]["storedVersions"], serde_json::json!(["v1"]));
    let conditions: Vec<(String, String)> = crd["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["type"].as_str().unwrap().into(),
                c["status"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert!(
        conditions.contains(&("NamesAccepted".into(), "True".into())),
        "{conditions:?}"
    );
    assert!(
        conditions.contains(&("Established".into(), "True".into())),
        "{conditions:?}"
    );

    // Create: defaults filled in, the short name and the category work.
    let f = write(
        &server,
        "a.yaml",
        &crontab("a", "{cronSpec: '* * * * */5', image: busybox}"),
    );
    assert!(ok(&server, &["apply", "-f", &f])
        .await
        .contains("crontab.stable.example.com/a created"));
    let got = ok(
        &server,
        &[
            "get",
            "ct",
            "a",
            "-o",
            "jsonpath={.spec.replicas} {.metadata.generation}",
        ],
    )
    .await;
    assert_eq!(got, "1 1");
    // The category: the only kind in `all` here, so kubectl prints no type prefix.
    let table = ok(&server, &["get", "all", "-o", "name"]).await;
    assert_eq!(table.trim(), "crontab.stable.example.com/a");

    // Field selectors: metadata.name and the CRD's selectableFields; others are refused.
    let f = write(
        &server,
        "a2.yaml",
        &crontab("a2", "{cronSpec: '* * * * *', image: nginx}"),
    );
    ok(&server, &["apply", "-f", &f]).await;
    let by_image = ok(
        &server,
        &[
            "get",
            "ct",
            "--field-selector",
            "spec.image=nginx",
            "-o",
            "name",
        ],
    )
    .await;
    assert_eq!(by_image.trim(), "crontab.stable.example.com/a2");
    let by_name = ok(
        &server,
        &[
            "get",
            "ct",
            "--field-selector",
            "metadata.name=a",
            "-o",
            "name",
        ],
    )
    .await;
    assert_eq!(by_name.trim(), "crontab.stable.example.com/a");
    let err = fails(
        &server,
        &["get", "ct", "--field-selector", "spec.cronSpec=x"],
    )
    .await;
    assert!(
        err.contains("field label not supported: spec.cronSpec"),
        "{err}"
    );
    ok(&server, &["delete", "ct", "a2"]).await;

    // Printer columns: priority > 0 only with -o wide.
    let table = ok(&server, &["get", "crontabs"]).await;
    let header: Vec<&str> = table.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(header, ["NAME", "SPEC", "REPLICAS", "AGE"]);
    assert!(table.lines().nth(1).unwrap().starts_with("a "), "{table}");
    let wide = ok(&server, &["get", "crontabs", "-o", "wide"]).await;
    let header: Vec<&str> = wide.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(header, ["NAME", "SPEC", "REPLICAS", "IMAGE", "AGE"]);
    assert!(wide.contains("busybox"), "{wide}");

    // Unknown fields: Strict (kubectl's default) refuses, Warn reports and drops.
    let f = write(
        &server,
        "b.yaml",
        &crontab("b", "{cronSpec: '* * * * *', colour: blue}"),
    );
    let err = fails(&server, &["apply", "-f", &f]).await;
    assert!(
        err.contains(r#"strict decoding error: unknown field "spec.colour""#),
        "{err}"
    );
    let o = server
        .kubectl(&["apply", "--validate=warn", "-f", &f])
        .await;
    assert!(o.status.success(), "{}", out(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains(r#"unknown field "spec.colour""#),
        "{}",
        out(&o)
    );

    // Schema violations: 422 naming every field.
    let f = write(
        &server,
        "c.yaml",
        &crontab("c", "{cronSpec: 'never', replicas: 11}"),
    );
    let err = fails(&server, &["apply", "-f", &f]).await;
    assert!(err.contains(r#"The CronTab "c" is invalid"#), "{err}");
    assert!(
        err.contains("spec.cronSpec: Invalid value: \"never\": spec.cronSpec in body should match"),
        "{err}"
    );
    assert!(err.contains("spec.replicas: Invalid value: 11: spec.replicas in body should be less than or equal to 10"), "{err}");
    assert!(fails(&server, &["get", "ct", "c"])
        .await
        .contains("NotFound"));

    // Patches: merge moves generation; strategic merge is refused as upstream does.
    ok(
        &server,
        &[
            "patch",
            "ct",
            "a",
            "--type=merge",
            "-p",
            r#"{"spec":{"replicas":3}}"#,
        ],
    )
    .await;
    let got = ok(
        &server,
        &[
            "get",
            "ct",
            "a",
            "-o",
            "jsonpath={.spec.replicas} {.metadata.generation}",
        ],
    )
    .await;
    assert_eq!(got, "3 2");
    let err = fails(
        &server,
        &["patch", "ct", "a", "-p", r#"{"spec":{"replicas":4}}"#],
    )
    .await;
    assert!(
        err.contains("accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"),
        "{err}"
    );

    // Status only through /status: the main resource ignores it, generation stays.
    ok(
        &server,
        &[
            "patch",
            "ct",
            "a",
            "--type=merge",
            "-p",
            r#"{"status":{"active":2}}"#,
        ],
    )
    .await;
    assert_eq!(
        ok(
            &server,
            &["get", "ct", "a", "-o", "jsonpath={.status.active}"]
        )
        .await,
        ""
    );
    ok(
        &server,
        &[
            "patch",
            "ct",
            "a",
            "--subresource=status",
            "--type=merge",
            "-p",
            r#"{"status":{"active":2}}"#,
        ],
    )
    .await;
    let got = ok(
        &server,
        &[
            "get",
            "ct",
            "a",
            "-o",
            "jsonpath={.status.active} {.metadata.generation}",
        ],
    )
    .await;
    assert_eq!(got, "2 2");
    let err = fails(
        &server,
        &[
            "patch",
            "ct",
            "a",
            "--subresource=status",
            "--type=merge",
            "-p",
            r#"{"status":{"active":-1}}"#,
        ],
    )
    .await;
    assert!(err.contains("status.active: Invalid value: -1"), "{err}");

    // Server-side apply, then explain from the published schema.
    let f = write(
        &server,
        "d.yaml",
        &crontab("d", "{cronSpec: '0 0 * * *', replicas: 2}"),
    );
    assert!(ok(&server, &["apply", "--server-side", "-f", &f])
        .await
        .contains("serverside-applied"));
    let managers = ok(
        &server,
        &[
            "get",
            "ct",
            "d",
            "--show-managed-fields",
            "-o",
            "jsonpath={.metadata.managedFields[*].manager}",
        ],
    )
    .await;
    assert_eq!(managers, "kubectl");
    let explain = ok(&server, &["explain", "crd.spec.group"]).await;
    assert!(explain.contains("FIELD: group <string>"), "{explain}");
    let explain = ok(&server, &["explain", "crontab.spec"]).await;
    assert!(explain.contains("The schedule and what runs."), "{explain}");
    assert!(explain.contains("replicas\t<integer>"), "{explain}");

    // The scale subresource: kubectl scale writes spec.replicas through it; the schema
    // still applies.
    ok(&server, &["scale", "ct", "a", "--replicas=5"]).await;
    let got = ok(
        &server,
        &["get", "ct", "a", "-o", "jsonpath={.spec.replicas}"],
    )
    .await;
    assert_eq!(got, "5");
    let scale = ok(
        &server,
        &[
            "get",
            "--raw",
            "/apis/stable.example.com/v1/namespaces/default/crontabs/a/scale",
        ],
    )
    .await;
    let scale: serde_json::Value = serde_json::from_str(&scale).unwrap();
    assert_eq!(scale["kind"], "Scale");
    assert_eq!(scale["apiVersion"], "autoscaling/v1");
    assert_eq!(
        (
            scale["spec"]["replicas"].as_i64(),
            scale["status"]["replicas"].as_i64()
        ),
        (Some(5), Some(2))
    );
    let err = fails(&server, &["scale", "ct", "a", "--replicas=11"]).await;
    assert!(err.contains("spec.replicas: Invalid value: 11"), "{err}");

    // Deleting the CRD deletes its objects, then the CRD; a new CRD of the same name starts
    // empty.
    let f = write(&server, "e.yaml", &crontab("e", "{cronSpec: '* * * * *'}"));
    ok(&server, &["create", "namespace", "team-a"]).await;
    ok(&server, &["-n", "team-a", "apply", "-f", &f]).await;
    ok(
        &server,
        &[
            "delete",
            "crd",
            "crontabs.stable.example.com",
            "--timeout=30s",
        ],
    )
    .await;
    let err = fails(&server, &["get", "crd", "crontabs.stable.example.com"]).await;
    assert!(err.contains("NotFound"), "{err}");
    let (code, _) = crate::support::get_text(
        &server.admin_http(),
        &server.url("/apis/stable.example.com/v1/crontabs"),
    )
    .await;
    assert_eq!(code, 404);
    install_crontabs(&server).await;
    let left = ok(&server, &["get", "crontabs", "-A", "-o", "name"]).await;
    assert_eq!(left, "", "objects survived their CRD");
}

#[tokio::test]
async fn an_invalid_crd_is_refused_with_every_cause() {
    let server = TestServer::start().await;
    wait_default(&server).await;
    let bad = CRD
        .replace(
            "name: crontabs.stable.example.com",
            "name: crontabs.example",
        )
        .replace("storage: true", "storage: false")
        .replace("type: integer, minimum: 1", "type: intger, minimum: 1");
    let f = write(&server, "bad.yaml", &bad);
    let err = fails(&server, &["apply", "-f", &f]).await;
    assert!(
        err.contains(r#"The CustomResourceDefinition "crontabs.example" is invalid"#),
        "{err}"
    );
    assert!(err.contains(r#"metadata.name: Invalid value: "crontabs.example": must be spec.names.plural+"."+spec.group"#), "{err}");
    assert!(err.contains("spec.versions: Invalid value:"), "{err}");
    assert!(
        err.contains("must have exactly one version marked as storage version"),
        "{err}"
    );
    assert!(err.contains("spec.validation.openAPIV3Schema.properties[spec].properties[replicas].type: Unsupported value: \"intger\""), "{err}");
    let list = ok(&server, &["get", "crd", "-o", "name"]).await;
    assert_eq!(list, "");
}

#[tokio::test]
async fn a_restart_serves_stored_crds_before_readyz() {
    let dir = Arc::new(tempfile::tempdir().unwrap());
    {
        let server = TestServer::start_with(Options::default().data_dir(dir.clone())).await;
        wait_default(&server).await;
        install_crontabs(&server).await;
        let f = write(&server, "a.yaml", &crontab("a", "{cronSpec: '* * * * *'}"));
        ok(&server, &["apply", "-f", &f]).await;
    }
    let server =
        TestServer::start_with(Options::default().data_dir(dir.clone()).wait_for("/readyz")).await;
    // No retry: /readyz passed, so the stored CRD must already be served.
    let (code, body) = crate::support::get_text(
        &server.admin_http(),
        &server.url("/apis/stable.example.com/v1/namespaces/default/crontabs/a"),
    )
    .await;
    assert_eq!(code, 200, "{body}");
    let readyz = crate::support::get_text(&server.admin_http(), &server.url("/readyz?verbose"))
        .await
        .1;
    for hook in [
        "poststarthook/start-apiextensions-informers",
        "poststarthook/start-apiextensions-controllers",
        "poststarthook/crd-informer-synced",
    ] {
        assert!(readyz.contains(&format!("[+]{hook} ok")), "{readyz}");
    }
}

const PYTHON: &str = r#"
import sys, time
from kubernetes import client, config
config.load_kube_config(sys.argv[1])
ext = client.ApiextensionsV1Api()
crd = client.V1CustomResourceDefinition(
    metadata=client.V1ObjectMeta(name="widgets.example.org"),
    spec=client.V1CustomResourceDefinitionSpec(
        group="example.org", scope="Namespaced",
        names=client.V1CustomResourceDefinitionNames(plural="widgets", kind="Widget"),
        versions=[client.V1CustomResourceDefinitionVersion(
            name="v1", served=True, storage=True,
            schema=client.V1CustomResourceValidation(open_apiv3_schema=client.V1JSONSchemaProps(
                type="object", properties={"spec": client.V1JSONSchemaProps(
                    type="object", properties={"size": client.V1JSONSchemaProps(type="integer", default=3)})}))
        )]))
ext.create_custom_resource_definition(crd)
for _ in range(200):
    got = ext.read_custom_resource_definition("widgets.example.org")
    if any(c.type == "Established" and c.status == "True" for c in (got.status.conditions or [])):
        break
    time.sleep(0.05)
else:
    raise SystemExit("not established")
co = client.CustomObjectsApi()
body = {"apiVersion": "example.org/v1", "kind": "Widget", "metadata": {"name": "w1"}, "spec": {}}
made = co.create_namespaced_custom_object("example.org", "v1", "default", "widgets", body)
assert made["spec"] == {"size": 3}, made
got = co.get_namespaced_custom_object("example.org", "v1", "default", "widgets", "w1")
assert got["metadata"]["uid"] == made["metadata"]["uid"]
co.patch_namespaced_custom_object("example.org", "v1", "default", "widgets", "w1", {"spec": {"size": 5}})
items = co.list_namespaced_custom_object("example.org", "v1", "default", "widgets")["items"]
assert [i["spec"]["size"] for i in items] == [5], items
co.delete_namespaced_custom_object("example.org", "v1", "default", "widgets", "w1")
ext.delete_custom_resource_definition("widgets.example.org")
print("ok")
"#;

#[tokio::test]
async fn python_client_manages_crds_and_custom_objects() {
    let python = std::env::var("KAPI_TEST_PYTHON").unwrap_or_else(|_| "python3".into());
    let server = TestServer::start().await;
    wait_default(&server).await;
    let o = within(
        Duration::from_secs(90),
        "python client",
        tokio::process::Command::new(&python)
            .args(["-c", PYTHON])
            .arg(server.kubeconfig())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .unwrap();
    assert!(
        o.status.success() && String::from_utf8_lossy(&o.stdout).contains("ok"),
        "{}",
        out(&o)
    );
}
