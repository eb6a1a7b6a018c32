//! Tests of the RBAC resources: upstream's validation messages and field paths
//! (pkg/apis/rbac/validation), the v1 defaults, the tables, the protobuf decoders and
//! discovery. Writes through the generic store are in `tests_store.rs`.

use super::bindings::{
    cluster_role_binding_from_protobuf, role_binding_from_protobuf, Bindings,
    CLUSTER_ROLE_BINDINGS, ROLE_BINDINGS,
};
use super::roles::{cluster_role_from_protobuf, role_from_protobuf, Roles, CLUSTER_ROLES, ROLES};
use super::validation::{
    path_segment_errors, validate_binding, validate_binding_update, validate_cluster_role,
    validate_cluster_role_update, validate_role,
};
use crate::registry::error::FieldError;
use crate::registry::resources::{built_in, protobuf_decoder, BuiltIn};
use crate::registry::strategy::{Strategy, STORED_VERBS};
use k8s_pb::api::rbac::v1 as pb;
use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
use prost::Message;
use serde_json::{json, Value};

use super::GROUP;

pub(super) fn texts(errs: &[FieldError]) -> Vec<String> {
    errs.iter().map(ToString::to_string).collect()
}

fn role(rules: Value) -> Value {
    json!({"metadata": {"name": "r", "namespace": "ns"}, "rules": rules})
}

fn cluster_role(name: &str, rest: Value) -> Value {
    let mut obj = json!({"metadata": {"name": name}});
    obj.as_object_mut()
        .unwrap()
        .extend(rest.as_object().unwrap().clone());
    obj
}

fn binding(ns: Option<&str>, kind: &str, name: &str, subjects: Value) -> Value {
    let mut meta = json!({"name": "b"});
    if let Some(ns) = ns {
        meta["namespace"] = json!(ns);
    }
    json!({"metadata": meta, "subjects": subjects,
        "roleRef": {"apiGroup": GROUP, "kind": kind, "name": name}})
}

#[test]
fn names_need_only_be_a_path_segment() {
    assert_eq!(path_segment_errors("."), ["may not be '.'"]);
    assert_eq!(path_segment_errors(".."), ["may not be '..'"]);
    assert_eq!(
        path_segment_errors("a/b%c"),
        ["may not contain '/'", "may not contain '%'"]
    );
    assert!(path_segment_errors("system:controller:Job_Controller").is_empty());
    let ok = cluster_role("system:aggregate-to-view", json!({}));
    assert!(validate_cluster_role(&ok, false).is_empty());
    let bad = cluster_role(
        "a/b",
        json!({"metadata": {"name": "a/b", "labels": {"x": "a b"}}}),
    );
    let errs = texts(&validate_cluster_role(&bad, false));
    assert_eq!(
        errs[0],
        "metadata.name: Invalid value: \"a/b\": may not contain '/'"
    );
    assert!(
        errs[1].starts_with("metadata.labels: Invalid value: \"a b\""),
        "{errs:?}"
    );
    let mut unnamed = role(json!([]));
    unnamed["metadata"] = json!({"namespace": "ns"});
    assert_eq!(
        texts(&validate_role(&unnamed)),
        ["metadata.name: Required value: name or generateName is required"]
    );
    let mut cluster_scoped = role(json!([]));
    cluster_scoped["metadata"]["namespace"] = json!("");
    assert_eq!(
        texts(&validate_role(&cluster_scoped)),
        ["metadata.namespace: Required value"]
    );
    let namespaced = cluster_role("c", json!({"metadata": {"name": "c", "namespace": "ns"}}));
    assert_eq!(
        texts(&validate_cluster_role(&namespaced, false)),
        ["metadata.namespace: Forbidden: not allowed on this type"]
    );
}

#[test]
fn policy_rules_match_upstream() {
    let errs = validate_role(&role(json!([
        {"verbs": [], "apiGroups": [""], "resources": ["pods"]},
        {"verbs": ["get"]},
        {"verbs": ["get"], "nonResourceURLs": ["/healthz", "/metrics"]},
        {"verbs": ["get"], "nonResourceURLs": ["/x"], "resourceNames": ["n"]},
        {"verbs": ["get"], "apiGroups": [""], "resources": ["pods", "secrets"],
            "resourceNames": ["n"]},
    ])));
    assert_eq!(
        texts(&errs),
        [
            "rules[0].verbs: Required value: verbs must contain at least one value",
            "rules[1].apiGroups: Required value: resource rules must supply at least one api group",
            "rules[1].resources: Required value: resource rules must supply at least one resource",
            "rules[2].nonResourceURLs: Invalid value: []string{\"/healthz\", \"/metrics\"}: namespaced rules cannot apply to non-resource URLs",
            "rules[3].nonResourceURLs: Invalid value: []string{\"/x\"}: namespaced rules cannot apply to non-resource URLs",
            "rules[3].nonResourceURLs: Invalid value: []string{\"/x\"}: rules cannot apply to both regular resources and non-resource URLs",
        ]
    );
    assert_eq!(errs[0].kind.reason(), "FieldValueRequired");
    // Cluster roles may name non-resource URLs, but not together with resources.
    let rules = json!({"rules": [
        {"verbs": ["get"], "nonResourceURLs": ["/healthz"]},
        {"verbs": ["get"], "nonResourceURLs": ["/x"], "apiGroups": [""]},
    ]});
    assert_eq!(
        texts(&validate_cluster_role(&cluster_role("c", rules), false)),
        ["rules[1].nonResourceURLs: Invalid value: []string{\"/x\"}: rules cannot apply to both regular resources and non-resource URLs"]
    );
}

#[test]
fn aggregation_rule_selectors_are_label_selectors() {
    let empty = cluster_role("c", json!({"aggregationRule": {}}));
    assert_eq!(
        texts(&validate_cluster_role(&empty, false)),
        ["aggregationRule.clusterRoleSelectors: Required value: at least one clusterRoleSelector required if aggregationRule is non-nil"]
    );
    let good = cluster_role(
        "c",
        json!({"aggregationRule": {"clusterRoleSelectors": [
            {"matchLabels": {"rbac.example.com/aggregate-to-view": "true"}},
            {"matchExpressions": [{"key": "a", "operator": "Exists"}]},
        ]}}),
    );
    assert!(validate_cluster_role(&good, false).is_empty());
    let bad = cluster_role(
        "c",
        json!({"aggregationRule": {"clusterRoleSelectors": [
            {},
            {"matchExpressions": [
                {"key": "a", "operator": "Near", "values": ["x"]},
                {"key": "b", "operator": "In"},
                {"key": "c", "operator": "Exists", "values": ["x"]},
            ]},
        ]}}),
    );
    assert_eq!(
        texts(&validate_cluster_role(&bad, false)),
        [
            "aggregationRule.clusterRoleSelectors[1].matchExpressions[0].operator: Invalid value: \"Near\": not a valid selector operator",
            "aggregationRule.clusterRoleSelectors[1].matchExpressions[1].values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
            "aggregationRule.clusterRoleSelectors[1].matchExpressions[2].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
            "aggregationRule.clusterRoleSelectors[1]: Invalid value: \"null\": invalid label selector.",
        ]
    );
    // An invalid value already stored may stay (AllowInvalidLabelValueInSelector); the
    // selector is still reported as one that does not parse.
    let invalid_value = cluster_role(
        "c",
        json!({"aggregationRule": {"clusterRoleSelectors": [
            {"matchExpressions": [{"key": "a", "operator": "In", "values": ["a b"]}]},
        ]}}),
    );
    let on_create = texts(&validate_cluster_role(&invalid_value, false));
    assert!(
        on_create[0].starts_with("aggregationRule.clusterRoleSelectors[0].matchExpressions[0].values[0]: Invalid value: \"a b\": a valid label must be"),
        "{on_create:?}"
    );
    assert_eq!(
        texts(&validate_cluster_role_update(&invalid_value, &invalid_value)),
        ["aggregationRule.clusterRoleSelectors[0]: Invalid value: \"null\": invalid label selector."]
    );
    assert_eq!(validate_cluster_role_update(&invalid_value, &good).len(), 2);
}

#[test]
fn role_refs_match_upstream() {
    let mut b = binding(Some("ns"), "Secret", "a/b", json!([]));
    b["roleRef"]["apiGroup"] = json!("example.com");
    assert_eq!(
        texts(&validate_binding(&b, false)),
        [
            "roleRef.apiGroup: Unsupported value: \"example.com\": supported values: \"rbac.authorization.k8s.io\"",
            "roleRef.kind: Unsupported value: \"Secret\": supported values: \"Role\", \"ClusterRole\"",
            "roleRef.name: Invalid value: \"a/b\": may not contain '/'",
        ]
    );
    assert_eq!(
        texts(&validate_binding(
            &binding(None, "Role", "", json!([])),
            true
        )),
        [
            "roleRef.kind: Unsupported value: \"Role\": supported values: \"ClusterRole\"",
            "roleRef.name: Required value",
        ]
    );
    assert!(
        validate_binding(&binding(Some("ns"), "Role", "system:r", json!([])), false).is_empty()
    );
    assert!(validate_binding(&binding(None, "ClusterRole", "view", json!([])), true).is_empty());
}

#[test]
fn subjects_match_upstream() {
    let subjects = json!([
        {"kind": "ServiceAccount", "name": "default", "namespace": "ns"},
        {"kind": "ServiceAccount", "name": "Bad_Name", "apiGroup": GROUP},
        {"kind": "ServiceAccount", "name": ""},
        {"kind": "User", "name": "alice", "apiGroup": GROUP},
        {"kind": "User", "name": "bob"},
        {"kind": "Group", "name": "devs", "apiGroup": "example.com"},
        {"kind": "Robot", "name": "r2"},
    ]);
    let errs = texts(&validate_binding(
        &binding(None, "ClusterRole", "view", subjects.clone()),
        true,
    ));
    assert!(
        errs[0].starts_with(
            "subjects[1].name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain"
        ),
        "{errs:?}"
    );
    assert_eq!(
        errs[1..],
        [
            "subjects[1].apiGroup: Unsupported value: \"rbac.authorization.k8s.io\": supported values: \"\"",
            "subjects[1].namespace: Required value",
            "subjects[2].name: Required value",
            "subjects[2].namespace: Required value",
            "subjects[4].apiGroup: Unsupported value: \"\": supported values: \"rbac.authorization.k8s.io\"",
            "subjects[5].apiGroup: Unsupported value: \"example.com\": supported values: \"rbac.authorization.k8s.io\"",
            "subjects[6].kind: Unsupported value: \"Robot\": supported values: \"ServiceAccount\", \"User\", \"Group\"",
        ]
    );
    // A RoleBinding's service accounts default to its own namespace: none required.
    let errs = texts(&validate_binding(
        &binding(Some("ns"), "Role", "r", subjects),
        false,
    ));
    assert!(!errs.iter().any(|e| e.contains("namespace")), "{errs:?}");
}

#[test]
fn role_ref_is_immutable() {
    let old = binding(Some("ns"), "Role", "reader", json!([]));
    let mut subjects_changed = old.clone();
    subjects_changed["subjects"] = json!([{"kind": "Group", "name": "g", "apiGroup": GROUP}]);
    assert!(validate_binding_update(&subjects_changed, &old, false).is_empty());
    let mut new = old.clone();
    new["roleRef"]["kind"] = json!("ClusterRole");
    let errs = validate_binding_update(&new, &old, false);
    assert_eq!(
        texts(&errs),
        ["roleRef: Invalid value: rbac.RoleRef{APIGroup:\"rbac.authorization.k8s.io\", Kind:\"ClusterRole\", Name:\"reader\"}: cannot change roleRef"]
    );
    assert_eq!(errs[0].kind.reason(), "FieldValueInvalid");
}

#[test]
fn bindings_get_the_v1_defaults() {
    for strategy in [&Bindings::NAMESPACED as &dyn Strategy, &Bindings::CLUSTER] {
        let mut obj = json!({"metadata": {"name": "b"},
        "roleRef": {"apiGroup": "", "kind": "ClusterRole", "name": "view"},
        "subjects": [
            {"kind": "User", "name": "u"}, {"kind": "Group", "name": "g", "apiGroup": ""},
            {"kind": "ServiceAccount", "name": "sa", "namespace": "ns"},
            {"kind": "Group", "name": "h", "apiGroup": "example.com"},
        ]});
        strategy.prepare_for_create(&mut obj);
        assert_eq!(obj["roleRef"]["apiGroup"], GROUP);
        let groups: Vec<&Value> = obj["subjects"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| &s["apiGroup"])
            .collect();
        assert_eq!(
            groups,
            [
                &json!(GROUP),
                &json!(GROUP),
                &Value::Null,
                &json!("example.com")
            ]
        );
        let mut missing = json!({"metadata": {"name": "b"}});
        strategy.prepare_for_update(&mut missing, &obj);
        assert_eq!(missing["roleRef"], json!({"apiGroup": GROUP}));
    }
}

#[test]
fn tables_match_the_printers() {
    let names = |s: &dyn Strategy| -> Vec<(String, String, i32)> {
        s.columns()
            .iter()
            .map(|c| (c.name.to_string(), c.type_.to_string(), c.priority))
            .collect()
    };
    let default =
        [("Name", "string", 0), ("Created At", "date", 0)].map(|(n, t, p)| (n.into(), t.into(), p));
    assert_eq!(names(&Roles::NAMESPACED), default);
    assert_eq!(names(&Roles::CLUSTER), default);
    let created_at = &Roles::NAMESPACED.columns()[1];
    assert!(created_at
        .description
        .starts_with("CreationTimestamp is a timestamp"));
    assert_eq!(created_at.format, "");
    let role = json!({"metadata": {"name": "r", "creationTimestamp": "2026-01-02T03:04:05Z"}});
    assert_eq!(
        Roles::NAMESPACED.cells(&role),
        [json!("r"), json!("2026-01-02T03:04:05Z")]
    );

    let bindings = [
        ("Name", "string", 0),
        ("Role", "string", 0),
        ("Age", "string", 0),
        ("Users", "string", 1),
        ("Groups", "string", 1),
        ("ServiceAccounts", "string", 1),
    ]
    .map(|(n, t, p)| (n.into(), t.into(), p));
    assert_eq!(names(&Bindings::NAMESPACED), bindings);
    assert_eq!(names(&Bindings::CLUSTER), bindings);
    let rb = Bindings::NAMESPACED.columns();
    assert_eq!(rb[0].format, "name");
    assert!(rb[1]
        .description
        .starts_with("RoleRef can reference a Role in the current namespace"));
    assert_eq!(rb[4].description, "Groups in the roleBinding");
    let crb = Bindings::CLUSTER.columns();
    assert!(crb[1]
        .description
        .starts_with("RoleRef can only reference a ClusterRole"));
    assert_eq!(
        crb[5].description,
        "ServiceAccounts in the clusterRoleBinding"
    );

    let obj = binding(
        None,
        "ClusterRole",
        "view",
        json!([
            {"kind": "User", "name": "alice"}, {"kind": "User", "name": "bob"},
            {"kind": "Group", "name": "devs"},
            {"kind": "ServiceAccount", "name": "sa", "namespace": "kube-system"},
            {"kind": "Robot", "name": "r2"},
        ]),
    );
    let cells = Bindings::CLUSTER.cells(&obj);
    assert_eq!(cells[..2], [json!("b"), json!("ClusterRole/view")]);
    assert_eq!(cells[2], json!("<unknown>"), "no creationTimestamp");
    assert_eq!(
        cells[3..],
        [json!("alice, bob"), json!("devs"), json!("kube-system/sa")]
    );
    let none = Bindings::NAMESPACED.cells(&binding(Some("ns"), "Role", "r", json!([])));
    assert_eq!(none[1], json!("Role/r"));
    assert_eq!(none[3..], [json!(""), json!(""), json!("")]);
}

fn object_meta(name: &str, namespace: &str) -> Option<meta::ObjectMeta> {
    Some(meta::ObjectMeta {
        name: Some(name.into()),
        namespace: Some(namespace.into()),
        ..Default::default()
    })
}

/// The decoded object, checked to survive the k8s-openapi round trip unchanged (with the
/// apiVersion and kind the runtime.Unknown envelope adds).
fn decoded<K>(map: serde_json::Map<String, Value>) -> Value
where
    K: k8s_openapi::Resource + serde::de::DeserializeOwned + serde::Serialize,
{
    let mut v = Value::Object(map);
    v["apiVersion"] = json!(K::API_VERSION);
    v["kind"] = json!(K::KIND);
    let typed: K = serde_json::from_value(v.clone()).expect("decodes as the k8s-openapi type");
    assert_eq!(
        serde_json::to_value(typed).unwrap(),
        v,
        "k8s-openapi changed a field"
    );
    let m = v.as_object_mut().unwrap();
    m.remove("apiVersion");
    m.remove("kind");
    v
}

#[test]
fn protobuf_roles_decode_as_kube_serializes_them() {
    let rule = pb::PolicyRule {
        verbs: vec!["get".into(), "list".into()],
        api_groups: vec![String::new()],
        resources: vec!["pods".into()],
        resource_names: vec!["p".into()],
        non_resource_ur_ls: vec![],
    };
    let r = pb::Role {
        metadata: object_meta("r", "ns"),
        rules: vec![rule, pb::PolicyRule::default()],
    };
    let got = decoded::<k8s_openapi::api::rbac::v1::Role>(
        role_from_protobuf(&r.encode_to_vec()).unwrap(),
    );
    assert_eq!(
        got,
        json!({"metadata": {"name": "r", "namespace": "ns"}, "rules": [
            {"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"],
                "resourceNames": ["p"]},
            {"verbs": []},
        ]})
    );

    let c = pb::ClusterRole {
        metadata: object_meta("c", ""),
        rules: vec![pb::PolicyRule {
            verbs: vec!["get".into()],
            non_resource_ur_ls: vec!["/healthz".into()],
            ..Default::default()
        }],
        aggregation_rule: Some(pb::AggregationRule {
            cluster_role_selectors: vec![meta::LabelSelector {
                match_labels: [("a".to_string(), "true".to_string())].into(),
                match_expressions: vec![meta::LabelSelectorRequirement {
                    key: Some("b".into()),
                    operator: Some("Exists".into()),
                    values: vec![],
                }],
            }],
        }),
    };
    let got = decoded::<k8s_openapi::api::rbac::v1::ClusterRole>(
        cluster_role_from_protobuf(&c.encode_to_vec()).unwrap(),
    );
    assert_eq!(
        got,
        json!({"metadata": {"name": "c"},
            "rules": [{"verbs": ["get"], "nonResourceURLs": ["/healthz"]}],
            "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"a": "true"},
                "matchExpressions": [{"key": "b", "operator": "Exists"}]}]}})
    );
    assert!(role_from_protobuf(b"\xff\xff").is_err());
}

#[test]
fn protobuf_bindings_decode_as_kube_serializes_them() {
    let subject = |kind: &str, api_group: &str, name: &str, ns: Option<&str>| pb::Subject {
        kind: Some(kind.into()),
        api_group: Some(api_group.into()),
        name: Some(name.into()),
        namespace: ns.map(Into::into),
    };
    let rb = pb::RoleBinding {
        metadata: object_meta("b", "ns"),
        subjects: vec![
            subject("User", GROUP, "alice", None),
            subject("ServiceAccount", "", "default", Some("ns")),
        ],
        role_ref: Some(pb::RoleRef {
            api_group: Some(GROUP.into()),
            kind: Some("Role".into()),
            name: Some("reader".into()),
        }),
    };
    let got = decoded::<k8s_openapi::api::rbac::v1::RoleBinding>(
        role_binding_from_protobuf(&rb.encode_to_vec()).unwrap(),
    );
    assert_eq!(
        got,
        json!({"metadata": {"name": "b", "namespace": "ns"},
            "subjects": [
                {"kind": "User", "apiGroup": GROUP, "name": "alice"},
                {"kind": "ServiceAccount", "name": "default", "namespace": "ns"},
            ],
            "roleRef": {"apiGroup": GROUP, "kind": "Role", "name": "reader"}})
    );

    // No subjects and no roleRef: roleRef is still there (it has no omitempty).
    let crb = pb::ClusterRoleBinding {
        metadata: object_meta("c", ""),
        subjects: vec![],
        role_ref: None,
    };
    let got = decoded::<k8s_openapi::api::rbac::v1::ClusterRoleBinding>(
        cluster_role_binding_from_protobuf(&crb.encode_to_vec()).unwrap(),
    );
    assert_eq!(
        got,
        json!({"metadata": {"name": "c"}, "roleRef": {"apiGroup": "", "kind": "", "name": ""}})
    );
}

#[test]
fn discovery_serves_the_four_resources() {
    let want = [
        (
            &CLUSTER_ROLE_BINDINGS,
            "clusterrolebindings",
            "clusterrolebinding",
            "ClusterRoleBinding",
            false,
        ),
        (
            &CLUSTER_ROLES,
            "clusterroles",
            "clusterrole",
            "ClusterRole",
            false,
        ),
        (
            &ROLE_BINDINGS,
            "rolebindings",
            "rolebinding",
            "RoleBinding",
            true,
        ),
        (&ROLES, "roles", "role", "Role", true),
    ];
    let all = built_in();
    let stored: Vec<(&str, &str)> = all
        .iter()
        .filter_map(|b| match b {
            BuiltIn::Stored(s, root) if s.info().group == GROUP => {
                Some((&*s.info().resource, *root))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        stored,
        [
            ("clusterrolebindings", "clusterrolebindings"),
            ("clusterroles", "clusterroles"),
            ("rolebindings", "rolebindings"),
            ("roles", "roles"),
        ]
    );
    for (info, resource, singular, kind, namespaced) in want {
        assert_eq!(
            (
                &*info.group,
                &*info.version,
                &*info.resource,
                &*info.singular,
                &*info.kind
            ),
            (GROUP, "v1", resource, singular, kind)
        );
        assert_eq!(info.namespaced, namespaced);
        assert!(info.short_names.is_empty() && info.categories.is_empty());
        assert_eq!(info.verbs, STORED_VERBS);
        assert!(info.subresources.is_empty());
        let gvk = crate::api::GroupVersionKind::new(GROUP, "v1", kind);
        assert!(protobuf_decoder(&gvk).is_some(), "{kind}");
    }
}
