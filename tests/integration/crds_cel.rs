//! CEL x-kubernetes-validations with kubectl: rules on objects, scalars and maps, a
//! messageExpression, reason and fieldPath, Kubernetes' CEL library (quantity, url),
//! transition rules that make fields immutable (a map list of sets compared without order),
//! a tightened rule ratcheted with a warning, a finalizer name warned about, and a CRD whose
//! rule does not parse.

use crate::crds::{apply_crd, fails, ok, write};
use crate::crud::wait_default;
use crate::support::TestServer;

const CRD: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: backups.cel.example.com
spec:
  group: cel.example.com
  scope: Namespaced
  names: {plural: backups, singular: backup, kind: Backup}
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
            x-kubernetes-validations:
            - rule: self.minReplicas <= self.replicas
              message: replicas must be at least minReplicas
            - rule: "!has(self.target) || isURL(self.target)"
              fieldPath: .target
              reason: FieldValueForbidden
              message: must be a URL
            properties:
              replicas: {type: integer}
              minReplicas: {type: integer, default: 1}
              target: {type: string}
              memory:
                type: string
                x-kubernetes-validations:
                - rule: quantity(self).isLessThan(quantity('2Gi'))
                  messageExpression: "'memory ' + self + ' is over 2Gi'"
              bucket:
                type: string
                x-kubernetes-validations:
                - {rule: self == oldSelf, message: Value is immutable}
              targets:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [name]
                items:
                  type: object
                  required: [name]
                  properties:
                    name: {type: string}
                    zones: {type: array, x-kubernetes-list-type: set, items: {type: string}}
                x-kubernetes-validations:
                - {rule: self == oldSelf, message: targets are immutable}
"#;

/// kubectl's arguments of a merge patch of backup `name`.
fn merge_patch<'a>(name: &'a str, body: &'a str) -> [&'a str; 6] {
    ["patch", "backup", name, "--type=merge", "-p", body]
}

fn backup(name: &str, spec: &str) -> String {
    format!(
        "apiVersion: cel.example.com/v1\nkind: Backup\nmetadata: {{name: {name}}}\nspec: {spec}\n"
    )
}

#[tokio::test]
async fn kubectl_sees_cel_rules_enforced() {
    let server = TestServer::start().await;
    wait_default(&server).await;
    apply_crd(&server, "crd.yaml", CRD, "backups.cel.example.com").await;

    // Every rule that fails is listed with its path and message; nothing is stored.
    let bad = write(
        &server,
        "bad.yaml",
        &backup(
            "bad",
            "{replicas: 0, minReplicas: 2, target: 'not a url', memory: 3Gi, bucket: b}",
        ),
    );
    let err = fails(&server, &["apply", "-f", &bad]).await;
    for want in [
        "The Backup \"bad\" is invalid",
        "spec: Invalid value: replicas must be at least minReplicas",
        "spec.target: Forbidden: must be a URL",
        "spec.memory: Invalid value: \"3Gi\": memory 3Gi is over 2Gi",
    ] {
        assert!(err.contains(want), "missing {want:?} in:\n{err}");
    }
    let gone = fails(&server, &["get", "backup", "bad"]).await;
    assert!(
        gone.contains("NotFound") || gone.contains("not found"),
        "{gone}"
    );

    // A valid one is stored (minReplicas defaulted before the rules ran).
    let good = write(
        &server,
        "good.yaml",
        &backup(
            "good",
            "{replicas: 2, target: 'https://backup.example.com/b', memory: 1Gi, bucket: b1, targets: [{name: a, zones: [z1, z2]}, {name: b}]}",
        ),
    );
    ok(&server, &["apply", "-f", &good]).await;
    let stored = ok(
        &server,
        &[
            "get",
            "backup",
            "good",
            "-o",
            "jsonpath={.spec.minReplicas}",
        ],
    )
    .await;
    assert_eq!(stored, "1");

    // The transition rule: bucket may not change; other fields may.
    let err = fails(&server, &merge_patch("good", r#"{"spec":{"bucket":"b2"}}"#)).await;
    assert!(
        err.contains("spec.bucket: Invalid value: \"b2\": Value is immutable"),
        "{err}"
    );
    ok(&server, &merge_patch("good", r#"{"spec":{"replicas":3}}"#)).await;
    // A map list and the sets in its items compare without their order, as upstream's: the
    // same targets reordered are the same, another zone is not.
    ok(
        &server,
        &merge_patch(
            "good",
            r#"{"spec":{"targets":[{"name":"b"},{"name":"a","zones":["z2","z1"]}]}}"#,
        ),
    )
    .await;
    let err = fails(
        &server,
        &merge_patch(
            "good",
            r#"{"spec":{"targets":[{"name":"b"},{"name":"a","zones":["z3","z1"]}]}}"#,
        ),
    )
    .await;
    assert!(
        err.contains("spec.targets: Invalid value: targets are immutable"),
        "{err}"
    );

    // Ratcheting: once the CRD tightens a rule, a stored value that now fails it may stay
    // while other fields change; the failure reaches the client as a warning, as upstream's.
    apply_crd(
        &server,
        "crd.yaml",
        &CRD.replace("2Gi", "512Mi"),
        "backups.cel.example.com",
    )
    .await;
    let want = "Warning: spec.memory: Invalid value: \"1Gi\": memory 1Gi is over 512Mi";
    let mut replicas = 4;
    let warned = loop {
        let patch = format!(r#"{{"spec":{{"replicas":{replicas}}}}}"#);
        let o = server.kubectl(&merge_patch("good", &patch)).await;
        let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
        assert!(o.status.success(), "{stderr}");
        if stderr.contains(want) || replicas == 40 {
            break stderr;
        }
        replicas += 1;
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    assert!(warned.contains(want), "{warned}");
    // Changing the failing value itself is refused.
    let err = fails(
        &server,
        &merge_patch("good", r#"{"spec":{"memory":"1500Mi"}}"#),
    )
    .await;
    assert!(
        err.contains("spec.memory: Invalid value: \"1500Mi\": memory 1500Mi is over 512Mi"),
        "{err}"
    );

    // A finalizer that is not domain-qualified is accepted with upstream's warning.
    let o = server
        .kubectl(&merge_patch(
            "good",
            r#"{"metadata":{"finalizers":["cleanup"]}}"#,
        ))
        .await;
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert!(
        stderr.contains("Warning: metadata.finalizers: \"cleanup\": prefer a domain-qualified finalizer name to avoid accidental conflicts with other finalizer writers"),
        "{stderr}"
    );

    // A CRD whose rule does not parse is refused.
    let broken = CRD
        .replace("backups.cel.example.com", "brokens.cel.example.com")
        .replace(
            "plural: backups, singular: backup, kind: Backup",
            "plural: brokens, singular: broken, kind: Broken",
        )
        .replace(
            "rule: self.minReplicas <= self.replicas",
            "rule: self.minReplicas <=",
        );
    let f = write(&server, "broken.yaml", &broken);
    let err = fails(&server, &["apply", "-f", &f]).await;
    assert!(
        err.contains("spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Invalid value: apiextensions.ValidationRule{Rule:\"self.minReplicas <=\"")
            && err.contains("compilation failed"),
        "{err}"
    );

    // So is one naming a field the schema does not declare, as cel-go's checker words it.
    let typo = broken.replace(
        "rule: self.minReplicas <=",
        "rule: self.minReplica <= self.replicas",
    );
    let f = write(&server, "typo.yaml", &typo);
    let err = fails(&server, &["apply", "-f", &f]).await;
    assert!(
        err.contains("compilation failed: ERROR: <input>:1:5: undefined field 'minReplica'"),
        "{err}"
    );
}

/// A CRD of one list of strings, with a rule comparing every pair of them; `bounded` declares
/// at most 100 strings of at most 64 characters.
fn pairs_crd(bounded: bool) -> String {
    let (items, list) = if bounded {
        (", maxLength: 64", "\n                maxItems: 100")
    } else {
        ("", "")
    };
    format!(
        r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: pairs.cel.example.com
spec:
  group: cel.example.com
  scope: Namespaced
  names: {{plural: pairs, singular: pair, kind: Pair}}
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
            x-kubernetes-validations:
            - rule: self.names.all(x, self.names.exists_one(y, x == y))
              message: names must be unique
            properties:
              names:
                type: array{list}
                items: {{type: string{items}}}
"#
    )
}

#[tokio::test]
async fn kubectl_sees_rules_over_the_cost_budget_refused() {
    let server = TestServer::start().await;
    wait_default(&server).await;
    // Unbounded, the rule could compare about 10^12 pairs of strings of up to 3 MiB.
    let f = write(&server, "pairs.yaml", &pairs_crd(false));
    let err = fails(&server, &["apply", "-f", &f]).await;
    let at = "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule";
    assert!(
        err.contains(&format!("{at}: Forbidden: estimated rule cost exceeds budget by factor of more than 100x (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"))
            && err.contains(&format!("{at}: Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema"))
            && err.contains("spec.validation.openAPIV3Schema: Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of more than 100x"),
        "{err}"
    );
    let listed = fails(&server, &["get", "crd", "pairs.cel.example.com"]).await;
    assert!(listed.contains("NotFound"), "{listed}");
    // With maxItems and maxLength the same rule is within the budget, and enforced.
    apply_crd(
        &server,
        "pairs.yaml",
        &pairs_crd(true),
        "pairs.cel.example.com",
    )
    .await;
    let obj = "apiVersion: cel.example.com/v1\nkind: Pair\nmetadata: {name: p}\nspec: {names: [a, b, a]}\n";
    let f = write(&server, "p.yaml", obj);
    let err = fails(&server, &["apply", "-f", &f]).await;
    assert!(err.contains("names must be unique"), "{err}");
}

const SCALERS: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: scalers.cel.example.com
spec:
  group: cel.example.com
  scope: Namespaced
  names: {plural: scalers, singular: scaler, kind: Scaler}
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
            x-kubernetes-validations:
            - rule: self.?replicas.orValue(1) <= 5
              message: at most 5 replicas
            properties:
              replicas:
                type: integer
                x-kubernetes-validations:
                - rule: "!oldSelf.hasValue() || self >= oldSelf.value()"
                  optionalOldSelf: true
                  message: cannot scale down
"#;

#[tokio::test]
async fn kubectl_sees_optional_syntax_and_optional_old_self() {
    let server = TestServer::start().await;
    wait_default(&server).await;
    apply_crd(&server, "scalers.yaml", SCALERS, "scalers.cel.example.com").await;
    let scaler = |replicas: &str| {
        format!("apiVersion: cel.example.com/v1\nkind: Scaler\nmetadata: {{name: s}}\nspec: {{{replicas}}}\n")
    };
    // No replicas: the optional chain reads 1; a first value has no old self to compare with.
    let f = write(&server, "s.yaml", &scaler(""));
    ok(&server, &["apply", "-f", &f]).await;
    let f = write(&server, "s.yaml", &scaler("replicas: 3"));
    ok(&server, &["apply", "-f", &f]).await;
    let f = write(&server, "s.yaml", &scaler("replicas: 2"));
    let err = fails(&server, &["apply", "-f", &f]).await;
    assert!(
        err.contains("spec.replicas: Invalid value: 2: cannot scale down"),
        "{err}"
    );
    let f = write(&server, "s.yaml", &scaler("replicas: 6"));
    let err = fails(&server, &["apply", "-f", &f]).await;
    assert!(err.contains("at most 5 replicas"), "{err}");
}
