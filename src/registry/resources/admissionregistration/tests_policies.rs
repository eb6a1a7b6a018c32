//! Tests of the policies and their bindings: upstream's validation messages and field paths,
//! the v1/v1beta1 defaults, the status strategy, the tables and the protobuf decoders.

use super::bindings::Bindings;
use super::policies::Policies;
use super::tests::{canonical, texts};
use super::GROUP;
use crate::registry::resources::protobuf_decoder;
use crate::registry::strategy::Strategy;
use k8s_pb::api::admissionregistration::{v1 as pb, v1beta1 as pb1beta1};
use prost::Message;
use serde_json::{json, Value};

/// A valid spec's match constraints.
fn constraints() -> Value {
    json!({"resourceRules": [{"operations": ["CREATE"], "apiGroups": ["apps"],
        "apiVersions": ["v1"], "resources": ["deployments"]}]})
}

fn vap(spec: Value) -> Value {
    canonical(
        &Policies::VALIDATING,
        json!({"metadata": {"name": "p"}, "spec": spec}),
    )
}

fn vap_errors(spec: Value) -> Vec<String> {
    texts(&Policies::VALIDATING.validate(&vap(spec)))
}

#[test]
fn policies_get_the_defaults() {
    let p = vap(json!({"matchConstraints": constraints(),
        "validations": [{"expression": "true"}]}));
    assert_eq!(p["spec"]["failurePolicy"], "Fail");
    let mc = &p["spec"]["matchConstraints"];
    assert_eq!(mc["matchPolicy"], "Equivalent");
    assert_eq!(mc["namespaceSelector"], json!({}));
    assert_eq!(mc["objectSelector"], json!({}));
    assert_eq!(mc["resourceRules"][0]["scope"], "*");
    assert!(Policies::VALIDATING.validate(&p).is_empty());
    // A binding's paramRef gets no parameterNotFoundAction in v1 (v1alpha1 defaulted Deny).
    let b = canonical(
        &Bindings::VALIDATING,
        json!({"metadata": {"name": "b"}, "spec": {"policyName": "p",
            "paramRef": {"name": "x"}, "matchResources": {}, "validationActions": ["Deny"]}}),
    );
    assert_eq!(b["spec"]["matchResources"]["matchPolicy"], "Equivalent");
    assert_eq!(
        texts(&Bindings::VALIDATING.validate(&b)),
        ["spec.paramRef.parameterNotFoundAction: Required value"]
    );
}

#[test]
fn validating_policy_spec_matches_upstream() {
    assert_eq!(
        vap_errors(json!({"failurePolicy": "Never"})),
        [
            "spec.failurePolicy: Unsupported value: \"Never\": supported values: \"Fail\", \"Ignore\"",
            "spec.matchConstraints: Required value",
            "spec.validations: Required value: validations or auditAnnotations must contain at least one item",
            "spec.auditAnnotations: Required value: validations or auditAnnotations must contain at least one item",
        ]
    );
    let errs = vap_errors(json!({
        "paramKind": {"apiVersion": "a/b/c", "kind": "Bad_Kind"},
        "matchConstraints": {"matchPolicy": "Exact"},
        "variables": [{"name": "in", "expression": " "}, {"name": "ok", "expression": "1 +"}],
        "validations": [
            {"expression": " ", "messageExpression": " ", "message": "two\nlines",
                "reason": "Teapot"},
            {"expression": "object.x ==", "message": " "},
        ],
        "auditAnnotations": [
            {"key": "k", "valueExpression": "'v'"},
            {"key": "k", "valueExpression": " "},
        ],
    }));
    let want = [
        "spec.paramKind.apiVersion: Invalid value: \"a/b/c\": unexpected GroupVersion string: a/b/c",
        "spec.paramKind.kind: Invalid value: \"Bad_Kind\": may have mixed case, but should otherwise match: a DNS-1035 label",
        "spec.matchConstraints.resourceRules: Required value",
        "spec.variables[0].name: Invalid value: \"in\": name is not a valid CEL identifier",
        "spec.variables[0].expression: Required value: expression is not specified",
        "spec.variables[1].expression: Invalid value: \"1 +\": compilation failed: ERROR: <input>:",
        "spec.validations[0].expression: Required value: expression is not specified",
        "spec.validations[0].messageExpression: Invalid value: \" \": must be non-empty if specified",
        "spec.validations[0].message: Invalid value: \"two\\nlines\": message must not contain line breaks",
        "spec.validations[0].reason: Unsupported value: \"Teapot\": supported values: \"Forbidden\", \"Invalid\", \"RequestEntityTooLarge\"",
        "spec.validations[1].expression: Invalid value: \"object.x ==\": compilation failed: ERROR: <input>:",
        "spec.validations[1].message: Invalid value: \" \": message must be non-empty if specified",
        "spec.auditAnnotations[1].valueExpression: Required value: valueExpression is not specified",
        "spec.auditAnnotations[1].key: Duplicate value: \"k\"",
    ];
    assert_eq!(errs.len(), want.len(), "{errs:#?}");
    for (got, want) in errs.iter().zip(want) {
        assert!(
            got.starts_with(want),
            "{got}\n  does not start with\n{want}"
        );
    }
}

#[test]
fn bindings_match_upstream() {
    let b = |spec: Value| {
        let obj = canonical(
            &Bindings::VALIDATING,
            json!({"metadata": {"name": "b"}, "spec": spec}),
        );
        texts(&Bindings::VALIDATING.validate(&obj))
    };
    assert_eq!(
        b(json!({"paramRef": {"parameterNotFoundAction": "Maybe"},
            "validationActions": ["Deny", "Warn", "Deny", "Log"]})),
        [
            "spec.policyName: Required value",
            "spec.paramRef: Required value: one of name or selector must be specified",
            "spec.paramRef.parameterNotFoundAction: Unsupported value: \"Maybe\": supported values: \"Deny\", \"Allow\"",
            "spec.validationActions[2]: Duplicate value: \"Deny\"",
            "spec.validationActions[3]: Unsupported value: \"Log\": supported values: \"Audit\", \"Deny\", \"Warn\"",
            "spec.validationActions: Invalid value: []admissionregistration.ValidationAction{\"Deny\", \"Warn\", \"Deny\", \"Log\"}: must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)",
        ]
    );
    assert_eq!(
        b(
            json!({"policyName": "p", "paramRef": {"name": "a/b", "selector": {},
                "parameterNotFoundAction": "Allow"},
            "matchResources": {"excludeResourceRules": [{"resourceNames": ["x", "x"],
                "operations": ["DELETE"], "apiGroups": [""], "apiVersions": ["v1"],
                "resources": ["pods"]}]}})
        ),
        [
            "spec.paramRef.name: Invalid value: \"a/b\": may not contain '/'",
            "spec.paramRef.name: Forbidden: name and selector are mutually exclusive",
            "spec.paramRef.selector: Forbidden: name and selector are mutually exclusive",
            "spec.matchResouces.excludeResourceRules[0].resourceNames[1]: Duplicate value: \"x\"",
            "spec.validationActions: Required value: at least one validation action is required",
        ]
    );
}

#[test]
fn mutating_policies_match_upstream() {
    let m = |spec: Value| {
        let obj = canonical(
            &Policies::MUTATING,
            json!({"metadata": {"name": "m"}, "spec": spec}),
        );
        texts(&Policies::MUTATING.validate(&obj))
    };
    let mut c = constraints();
    c["resourceRules"][0]["operations"] = json!(["DELETE"]);
    assert_eq!(
        m(json!({"matchConstraints": c, "mutations": [
            {"patchType": "JSONPatch", "applyConfiguration": {"expression": "Object{}"}},
            {"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": " "}},
            {"patchType": "Merge"},
            {},
        ]})),
        [
            "spec.matchConstraints.resourceRules.operations: Unsupported value: \"DELETE\": supported values: \"*\", \"CONNECT\", \"CREATE\", \"UPDATE\"",
            "spec.mutations[0].jsonPatch: Required value: must be specified when patchType is JSONPatch",
            "spec.mutations[0].applyConfiguration: Invalid value: \"{applyConfiguration}\": must not be specified when patchType is JSONPatch",
            "spec.mutations[1].applyConfiguration.expression: Required value",
            "spec.mutations[2].patchType: Unsupported value: \"Merge\": supported values: \"ApplyConfiguration\", \"JSONPatch\"",
            "spec.mutations[3].patchType: Required value",
            "spec.reinvocationPolicy: Required value",
        ]
    );
    assert_eq!(
        m(json!({"matchConstraints": constraints(), "reinvocationPolicy": "Never"})),
        ["spec.mutations: Required value: mutations must contain at least one item"]
    );
    let b = canonical(
        &Bindings::MUTATING,
        json!({"metadata": {"name": "b"}, "spec": {"policyName": "m",
            "matchResources": {"resourceRules": [{"operations": ["*", "DELETE"],
                "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"]}]}}}),
    );
    let errs = texts(&Bindings::MUTATING.validate(&b));
    assert_eq!(
        errs.last().unwrap(),
        "spec.matchResources.resourceRules.operations: Unsupported value: \"DELETE\": supported values: \"*\", \"CONNECT\", \"CREATE\", \"UPDATE\""
    );
}

#[test]
fn optional_syntax_compiles_in_policies_and_webhook_conditions() {
    let expression = "object.?spec.?replicas.orValue(1) > 0";
    assert_eq!(
        vap_errors(json!({"matchConstraints": constraints(),
            "matchConditions": [{"name": "c", "expression": expression}],
            "validations": [{"expression": expression}]})),
        Vec::<String>::new()
    );
    let s = &super::webhooks::WebhookConfigurations::VALIDATING;
    let hook = |expression: &str| {
        super::tests::hook(json!({"matchConditions": [{"name": "c", "expression": expression}]}))
    };
    assert_eq!(
        super::tests::errors(s, json!([hook(expression)])),
        Vec::<String>::new()
    );
    // A parse error is cel-go's text once, on one line.
    assert_eq!(
        super::tests::errors(s, json!([hook("object.x ==")])),
        ["webhooks[0].matchConditions[0].expression: Invalid value: \"object.x ==\": compilation failed: ERROR: <input>:1:12: Syntax error: mismatched input '<EOF>' expecting {'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}\n | object.x ==\n | ...........^"]
    );
}

#[test]
fn struct_literals_compile_only_in_mutations() {
    // A ValidatingAdmissionPolicy declares no object types: a literal is refused.
    assert_eq!(
        vap_errors(json!({"matchConstraints": constraints(),
            "matchConditions": [{"name": "c", "expression": "Object{} != null"}],
            "validations": [{"expression": "object.spec == Object.spec{}"}]})),
        [
            "spec.matchConditions[0].expression: Invalid value: \"Object{} != null\": compilation failed: ERROR: <input>: undeclared reference to 'Object' (in container '')",
            "spec.validations[0].expression: Invalid value: \"object.spec == Object.spec{}\": compilation failed: ERROR: <input>: undeclared reference to 'Object.spec' (in container '')",
        ]
    );
    // A mutation knows Object and JSONPatch, and nothing else.
    let m = |expression: &str, patch_type: &str, field: &str| {
        let obj = canonical(
            &Policies::MUTATING,
            json!({"metadata": {"name": "m"}, "spec": {"matchConstraints": constraints(),
                "reinvocationPolicy": "Never",
                "mutations": [{"patchType": patch_type, field: {"expression": expression}}]}}),
        );
        texts(&Policies::MUTATING.validate(&obj))
    };
    let none: [&str; 0] = [];
    assert_eq!(
        m(
            "Object{spec: Object.spec{replicas: 1}}",
            "ApplyConfiguration",
            "applyConfiguration"
        ),
        none
    );
    assert_eq!(
        m(
            "[JSONPatch{op: 'add', path: '/a', value: 1}]",
            "JSONPatch",
            "jsonPatch"
        ),
        none
    );
    assert_eq!(
        m("Spec{}", "ApplyConfiguration", "applyConfiguration"),
        ["spec.mutations[0].applyConfiguration.expression: Invalid value: \"Spec{}\": compilation failed: ERROR: <input>: undeclared reference to 'Spec' (in container '')"]
    );
    assert_eq!(
        m("[JSONPatch{op: 'add', to: '/a'}]", "JSONPatch", "jsonPatch"),
        ["spec.mutations[0].jsonPatch.expression: Invalid value: \"[JSONPatch{op: 'add', to: '/a'}]\": compilation failed: ERROR: <input>: undefined field 'to'"]
    );
}

#[test]
fn status_is_written_only_through_its_subresource() {
    let s = &Policies::VALIDATING;
    let mut obj = vap(json!({"matchConstraints": constraints(),
        "validations": [{"expression": "true"}]}));
    obj["status"] = json!({"observedGeneration": 5});
    s.prepare_for_create(&mut obj);
    assert_eq!(obj["status"], json!({}));
    let old = obj.clone();
    let mut new = obj.clone();
    new["status"] = json!({"observedGeneration": 1});
    new["spec"]["failurePolicy"] = json!("Ignore");
    s.prepare_for_update(&mut new, &old);
    assert_eq!(new["status"], json!({}));
    assert_eq!(new["spec"]["failurePolicy"], "Ignore");
    let mut new = obj.clone();
    new["status"] = json!({"observedGeneration": 1, "conditions": [{"type": "Ready",
        "status": "Maybe", "reason": "bad reason"}]});
    new["spec"]["failurePolicy"] = json!("Ignore");
    assert!(s.prepare_for_subresource_update("status", &mut new, &old));
    assert_eq!(new["spec"]["failurePolicy"], "Fail");
    assert_eq!(new["status"]["observedGeneration"], 1);
    let errs = texts(&s.validate_subresource_update("status", &new, &old));
    assert_eq!(errs[0], "status.conditions[0].status: Unsupported value: \"Maybe\": supported values: \"False\", \"True\", \"Unknown\"");
    assert_eq!(
        errs[1],
        "status.conditions[0].lastTransitionTime: Required value: must be set"
    );
    assert!(errs[2].starts_with("status.conditions[0].reason: Invalid value: \"bad reason\": a condition reason must start with alphabetic character"));
    assert!(!Policies::MUTATING.prepare_for_subresource_update("status", &mut new, &old));
}

#[test]
fn policy_tables_match_the_printers() {
    let names = |s: &dyn Strategy| -> Vec<String> {
        s.columns().iter().map(|c| c.name.to_string()).collect()
    };
    assert_eq!(
        names(&Policies::VALIDATING),
        ["Name", "Validations", "ParamKind", "Age"]
    );
    assert_eq!(
        names(&Policies::MUTATING),
        ["Name", "Mutations", "ParamKind", "Age"]
    );
    for s in [&Bindings::VALIDATING, &Bindings::MUTATING] {
        assert_eq!(names(s), ["Name", "PolicyName", "ParamRef", "Age"]);
    }
    let p = json!({"metadata": {"name": "p"}, "spec": {"validations": [{}, {}],
        "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"}}});
    assert_eq!(
        Policies::VALIDATING.cells(&p)[..3],
        [json!("p"), json!(2), json!("v1/ConfigMap")]
    );
    assert_eq!(
        Policies::MUTATING.cells(&json!({"spec": {}}))[1..3],
        [json!(0), json!("<unset>")]
    );
    let cell = |pr: Value| {
        Bindings::VALIDATING.cells(&json!({"spec": {"policyName": "p", "paramRef": pr}}))[2].clone()
    };
    assert_eq!(cell(json!({"name": "x", "namespace": "ns"})), "ns/x");
    assert_eq!(cell(json!({"name": "x"})), "*/x");
    assert_eq!(
        cell(json!({"selector": {"matchLabels": {"a": "b"},
            "matchExpressions": [{"key": "k", "operator": "In", "values": ["x", "y"]}]}})),
        "&LabelSelector{MatchLabels:map[string]string{a: b,},MatchExpressions:[]LabelSelectorRequirement{LabelSelectorRequirement{Key:k,Operator:In,Values:[x y],},},}"
    );
    assert_eq!(Bindings::MUTATING.cells(&json!({"spec": {}}))[2], "<unset>");
}

#[test]
fn protobuf_policies_decode_as_kube_serializes_them() {
    let gvk = |v: &str, k: &str| crate::api::GroupVersionKind::new(GROUP, v, k);
    let p = pb::ValidatingAdmissionPolicy {
        spec: Some(pb::ValidatingAdmissionPolicySpec {
            validations: vec![pb::Validation {
                expression: Some("true".into()),
                reason: Some("Invalid".into()),
                ..Default::default()
            }],
            param_kind: Some(pb::ParamKind {
                api_version: Some("v1".into()),
                kind: Some("ConfigMap".into()),
            }),
            ..Default::default()
        }),
        ..Default::default()
    };
    let decode = protobuf_decoder(&gvk("v1", "ValidatingAdmissionPolicy")).unwrap();
    let map = Value::Object(decode(&p.encode_to_vec()).unwrap());
    assert_eq!(
        map["spec"],
        json!({"paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
            "validations": [{"expression": "true", "reason": "Invalid"}]})
    );
    let b = pb1beta1::MutatingAdmissionPolicyBinding {
        spec: Some(pb1beta1::MutatingAdmissionPolicyBindingSpec {
            policy_name: Some("m".into()),
            param_ref: Some(pb1beta1::ParamRef {
                name: Some("x".into()),
                parameter_not_found_action: Some("Allow".into()),
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    };
    let decode = protobuf_decoder(&gvk("v1beta1", "MutatingAdmissionPolicyBinding")).unwrap();
    let map = Value::Object(decode(&b.encode_to_vec()).unwrap());
    assert_eq!(
        map["spec"],
        json!({"policyName": "m", "paramRef": {"name": "x", "parameterNotFoundAction": "Allow"}})
    );
    let m = pb1beta1::MutatingAdmissionPolicy {
        spec: Some(pb1beta1::MutatingAdmissionPolicySpec {
            mutations: vec![pb1beta1::Mutation {
                patch_type: Some("JSONPatch".into()),
                json_patch: Some(pb1beta1::JsonPatch {
                    expression: Some("[]".into()),
                }),
                ..Default::default()
            }],
            reinvocation_policy: Some("Never".into()),
            ..Default::default()
        }),
        ..Default::default()
    };
    let decode = protobuf_decoder(&gvk("v1beta1", "MutatingAdmissionPolicy")).unwrap();
    let map = Value::Object(decode(&m.encode_to_vec()).unwrap());
    assert_eq!(
        map["spec"],
        json!({"mutations": [{"patchType": "JSONPatch", "jsonPatch": {"expression": "[]"}}],
            "reinvocationPolicy": "Never"})
    );
}
