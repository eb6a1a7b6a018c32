//! Server-side apply of custom resources with kubectl: two field managers applying items of
//! a list-map (`spec.ports`, keyed by name) and of a set (`spec.tags`) each own their items,
//! and a manager changing another's item is refused with kubectl's conflict message.

use crate::crds::{apply_crd, fails, ok, write};
use crate::crud::wait_default;
use crate::support::TestServer;

const CRD: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: services.apply.example.com
spec:
  group: apply.example.com
  scope: Namespaced
  names: {plural: services, singular: service, kind: Service}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              ports:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [name]
                items:
                  type: object
                  required: [name]
                  properties:
                    name: {type: string}
                    port: {type: integer}
              tags:
                type: array
                x-kubernetes-list-type: set
                items: {type: string}
"#;

fn service(spec: &str) -> String {
    format!(
        "apiVersion: apply.example.com/v1\nkind: Service\nmetadata: {{name: web}}\nspec: {spec}\n"
    )
}

#[tokio::test]
async fn field_managers_own_their_list_items() {
    let server = TestServer::start().await;
    wait_default(&server).await;
    apply_crd(&server, "crd.yaml", CRD, "services.apply.example.com").await;
    let a = write(
        &server,
        "a.yaml",
        &service("{ports: [{name: http, port: 80}], tags: [a]}"),
    );
    let b = write(
        &server,
        "b.yaml",
        &service("{ports: [{name: metrics, port: 9090}], tags: [b]}"),
    );
    ok(
        &server,
        &["apply", "--server-side", "--field-manager=team-a", "-f", &a],
    )
    .await;
    ok(
        &server,
        &["apply", "--server-side", "--field-manager=team-b", "-f", &b],
    )
    .await;
    let got = ok(
        &server,
        &[
            "get",
            "services.apply.example.com",
            "web",
            "-o",
            "json",
            "--show-managed-fields",
        ],
    )
    .await;
    let got: serde_json::Value = serde_json::from_str(&got).unwrap();
    assert_eq!(
        got["spec"]["ports"],
        serde_json::json!([{"name": "http", "port": 80}, {"name": "metrics", "port": 9090}])
    );
    assert_eq!(got["spec"]["tags"], serde_json::json!(["a", "b"]));
    let fields = |manager: &str| {
        got["metadata"]["managedFields"]
            .as_array()
            .and_then(|a| a.iter().find(|e| e["manager"] == manager))
            .map(|e| e["fieldsV1"]["f:spec"]["f:ports"].clone())
            .unwrap_or_default()
    };
    assert!(
        fields("team-a").get("k:{\"name\":\"http\"}").is_some(),
        "{got}"
    );
    assert!(
        fields("team-b").get("k:{\"name\":\"metrics\"}").is_some(),
        "{got}"
    );

    let steal = write(
        &server,
        "steal.yaml",
        &service("{ports: [{name: http, port: 8080}]}"),
    );
    let err = fails(
        &server,
        &[
            "apply",
            "--server-side",
            "--field-manager=team-b",
            "-f",
            &steal,
        ],
    )
    .await;
    assert!(
        err.contains("Apply failed with 1 conflict: conflict with \"team-a\": .spec.ports[name=\"http\"].port"),
        "{err}"
    );
}
