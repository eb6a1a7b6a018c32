//! Tests of the audit policy: parsing, validation messages and first-match evaluation.

use super::*;
use http::Method;

fn policy(yaml: &str) -> Policy {
    match Policy::parse(yaml.as_bytes()) {
        Ok(p) => p,
        Err(ParseError::Decode(e)) => panic!("decode: {e}"),
        Err(ParseError::Invalid(p)) => panic!("invalid: {p:?}"),
    }
}

fn problems(yaml: &str) -> Vec<String> {
    match Policy::parse(yaml.as_bytes()) {
        Err(ParseError::Invalid(p)) => p,
        Err(ParseError::Decode(e)) => vec![format!("decode: {e}")],
        Ok(_) => vec![],
    }
}

use crate::api::test_user as user;

fn req(method: Method, path: &str) -> RequestInfo {
    RequestInfo::parse(&method, path, None)
}

const HEAD: &str = "apiVersion: audit.k8s.io/v1\nkind: Policy\n";

/// The example policy of the Kubernetes audit documentation, cut down.
fn example() -> Policy {
    policy(&format!(
        r#"{HEAD}omitStages: ["RequestReceived"]
rules:
  - level: None
    users: ["system:kube-proxy"]
    verbs: ["watch"]
    resources:
    - group: ""
      resources: ["endpoints", "services"]
  - level: None
    userGroups: ["system:authenticated"]
    nonResourceURLs: ["/api*", "/version"]
  - level: Request
    resources:
    - group: ""
      resources: ["configmaps"]
    namespaces: ["kube-system"]
  - level: Metadata
    resources:
    - group: ""
      resources: ["secrets", "configmaps"]
  - level: Request
    resources:
    - group: ""
    - group: "extensions"
  - level: RequestResponse
    resources:
    - group: "coordination.k8s.io"
      resources: ["leases/status", "*/scale", "deployments/*"]
      resourceNames: ["a", "b"]
    omitStages: ["Panic"]
    omitManagedFields: true
  - level: Metadata
    omitStages: ["RequestReceived"]
"#
    ))
}

#[test]
fn first_matching_rule_decides() {
    let p = example();
    let proxy = user("system:kube-proxy", &[]);
    let bob = user("bob", &["system:authenticated"]);
    let level = |u: &UserInfo, m: Method, path: &str| p.evaluate(Some(u), &req(m, path)).level;
    let watch = "/api/v1/watch/namespaces/default/endpoints";
    assert_eq!(level(&proxy, Method::GET, watch), Level::None);
    // Same request by another user: the core-group Request rule.
    assert_eq!(level(&bob, Method::GET, watch), Level::Request);
    assert_eq!(
        level(&proxy, Method::GET, "/api/v1/namespaces/default/endpoints"),
        Level::Request
    );
    assert_eq!(level(&bob, Method::GET, "/apis"), Level::None);
    assert_eq!(level(&bob, Method::GET, "/version"), Level::None);
    assert_eq!(level(&bob, Method::GET, "/healthz"), Level::Metadata);
    assert_eq!(
        level(&proxy, Method::GET, "/api"),
        Level::Metadata,
        "not in the group"
    );
    let cm = "/api/v1/namespaces/kube-system/configmaps/x";
    assert_eq!(level(&bob, Method::PUT, cm), Level::Request);
    let cm = "/api/v1/namespaces/default/configmaps/x";
    assert_eq!(level(&bob, Method::PUT, cm), Level::Metadata);
    assert_eq!(level(&bob, Method::GET, "/api/v1/secrets"), Level::Metadata);
}

#[test]
fn subresources_wildcards_and_names() {
    let p = example();
    let bob = user("bob", &[]);
    let level = |path: &str| p.evaluate(Some(&bob), &req(Method::PUT, path)).level;
    let base = "/apis/coordination.k8s.io/v1/namespaces/n";
    assert_eq!(
        level(&format!("{base}/leases/a/status")),
        Level::RequestResponse
    );
    assert_eq!(
        level(&format!("{base}/leases/c/status")),
        Level::Metadata,
        "name not listed"
    );
    assert_eq!(
        level(&format!("{base}/leases/a")),
        Level::Metadata,
        "no subresource"
    );
    assert_eq!(
        level(&format!("{base}/foos/b/scale")),
        Level::RequestResponse,
        "*/scale"
    );
    assert_eq!(
        level(&format!("{base}/deployments/b/x")),
        Level::RequestResponse,
        "deployments/*"
    );
    // As upstream's checker: "resource/*" also matches the resource itself.
    assert_eq!(
        level(&format!("{base}/deployments/b")),
        Level::RequestResponse
    );
    assert_eq!(level(&format!("{base}/replicasets/b")), Level::Metadata);
    let wild = policy(&format!(
        "{HEAD}rules:\n- level: Request\n  resources: [{{group: apps, resources: ['*']}}]\n"
    ));
    let r = req(
        Method::GET,
        "/apis/apps/v1/namespaces/n/deployments/d/scale",
    );
    assert_eq!(wild.evaluate(Some(&bob), &r).level, Level::Request);
    let r = req(Method::GET, "/api/v1/namespaces/n/pods");
    assert_eq!(
        wild.evaluate(Some(&bob), &r).level,
        Level::None,
        "no rule: None"
    );
}

#[test]
fn cluster_scope_is_the_empty_namespace() {
    let p = policy(&format!(
        "{HEAD}rules:\n- level: Metadata\n  namespaces: [\"\"]\n- level: Request\n"
    ));
    let bob = user("bob", &[]);
    let level = |path: &str| p.evaluate(Some(&bob), &req(Method::GET, path)).level;
    assert_eq!(level("/api/v1/namespaces"), Level::Metadata);
    assert_eq!(
        level("/apis/rbac.authorization.k8s.io/v1/clusterroles/x"),
        Level::Metadata
    );
    assert_eq!(level("/api/v1/namespaces/a/configmaps"), Level::Request);
    assert_eq!(
        level("/healthz"),
        Level::Request,
        "namespaces only match resources"
    );
}

#[test]
fn unauthenticated_requests_match_no_user_rule() {
    let p = policy(&format!(
            "{HEAD}rules:\n- level: None\n  users: [\"system:anonymous\"]\n- level: None\n  userGroups: [g]\n- level: Metadata\n"
        ));
    assert_eq!(
        p.evaluate(None, &req(Method::GET, "/api")).level,
        Level::Metadata
    );
    let anon = UserInfo::anonymous();
    assert_eq!(
        p.evaluate(Some(&anon), &req(Method::GET, "/api")).level,
        Level::None
    );
}

#[test]
fn stages_are_united_and_managed_fields_default_from_the_policy() {
    let p = example();
    let bob = user("bob", &[]);
    let r = req(
        Method::PUT,
        "/apis/coordination.k8s.io/v1/namespaces/n/leases/a/status",
    );
    let c = p.evaluate(Some(&bob), &r);
    assert!(c.omit_stages.contains(Stage::Panic));
    assert!(
        c.omit_stages.contains(Stage::RequestReceived),
        "policy-wide"
    );
    assert!(!c.omit_stages.contains(Stage::ResponseComplete));
    assert!(c.omit_managed_fields);
    let c = p.evaluate(Some(&bob), &req(Method::GET, "/healthz"));
    assert!(!c.omit_managed_fields);
    let p = policy(&format!(
            "{HEAD}omitManagedFields: true\nrules:\n- level: Request\n  omitManagedFields: false\n  verbs: [get]\n- level: Request\n"
        ));
    let get = req(Method::GET, "/api/v1/namespaces/a/configmaps/b");
    assert!(!p.evaluate(Some(&bob), &get).omit_managed_fields);
    let put = req(Method::PUT, "/api/v1/namespaces/a/configmaps/b");
    assert!(p.evaluate(Some(&bob), &put).omit_managed_fields);
    assert!(!p
        .evaluate(Some(&bob), &put)
        .omit_stages
        .contains(Stage::RequestReceived));
}

#[test]
fn json_policies_parse_too() {
    let p = policy(
        r#"{"apiVersion":"audit.k8s.io/v1","kind":"Policy","rules":[{"level":"RequestResponse"}]}"#,
    );
    let r = req(Method::GET, "/api");
    assert_eq!(p.evaluate(None, &r).level, Level::RequestResponse);
}

#[test]
fn invalid_policies_name_the_field() {
    assert_eq!(
        problems(&format!("{HEAD}rules:\n- level: Verbose\n")),
        [
            r#"rules[0].level: Unsupported value: "Verbose": supported values: "None", "Metadata", "Request", "RequestResponse""#
        ]
    );
    assert_eq!(
        problems(&format!("{HEAD}rules:\n- level: None\n- users: [a]\n")),
        ["rules[1].level: Required value"]
    );
    assert_eq!(
        problems(&format!(
            "{HEAD}omitStages: [Done]\nrules:\n- level: None\n  omitStages: [Panic, Later]\n"
        )),
        [
            r#"omitStages[0]: Invalid value: "Done": allowed stages are RequestReceived,ResponseStarted,ResponseComplete,Panic"#,
            r#"rules[0].omitStages[1]: Invalid value: "Later": allowed stages are RequestReceived,ResponseStarted,ResponseComplete,Panic"#,
        ]
    );
    assert_eq!(
            problems(&format!("{HEAD}rules:\n- level: None\n  nonResourceURLs: [healthz, '/a*b']\n  namespaces: [x]\n")).len(),
            3
        );
    assert_eq!(
        problems(&format!(
            "{HEAD}rules:\n- level: None\n  resources: [{{group: apps/v1, resourceNames: [x]}}]\n"
        ))
        .len(),
        2
    );
    assert_eq!(
        problems("apiVersion: audit.k8s.io/v2\nkind: Policy\nrules: []\n"),
        [
            r#"apiVersion: Unsupported value: "audit.k8s.io/v2": supported values: "audit.k8s.io/v1""#,
            "rules: Required value: a policy needs at least one rule",
        ]
    );
    let decode = problems(&format!("{HEAD}rules:\n- level: None\n  users: bob\n"));
    assert!(
        decode[0].starts_with("decode: rules[0].users: invalid type"),
        "{decode:?}"
    );
    assert!(!decode[0].contains('\n'));
}

#[test]
fn load_names_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("policy.yaml");
    std::fs::write(&path, format!("{HEAD}rules:\n- level: Loud\n")).unwrap();
    let err = Policy::load(&path).unwrap_err();
    let text = crate::api::error_chain(&err);
    assert!(
        text.starts_with(&format!(
            "invalid --audit-policy-file {}: rules[0].level",
            path.display()
        )),
        "{text}"
    );
    let err = Policy::load(&dir.path().join("missing.yaml")).unwrap_err();
    assert!(matches!(err, Error::Read(..)));
}
