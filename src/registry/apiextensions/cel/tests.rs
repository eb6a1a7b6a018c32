//! CEL rules on custom objects and in CRDs, with upstream's messages and paths.

use super::*;
use serde_json::json;

fn schema() -> Value {
    json!({"type": "object", "properties": {
        "spec": {
            "type": "object",
            "x-kubernetes-validations": [
                {"rule": "self.minReplicas <= self.replicas", "message": "replicas must be at least minReplicas"},
                {"rule": "!has(self.endpoint) || isURL(self.endpoint)", "fieldPath": ".endpoint", "reason": "FieldValueForbidden", "message": "must be a URL"}
            ],
            "properties": {
                "replicas": {"type": "integer", "x-kubernetes-validations": [{"rule": "self >= 0"}]},
                "minReplicas": {"type": "integer"},
                "endpoint": {"type": "string"},
                "memory": {"type": "string", "x-kubernetes-validations": [
                    {"rule": "quantity(self).isLessThan(quantity('2Gi'))", "messageExpression": "'memory ' + self + ' is too much'"}
                ]},
                "name": {"type": "string", "x-kubernetes-validations": [
                    {"rule": "self == oldSelf", "message": "Value is immutable"}
                ]},
                "labels": {"type": "object", "additionalProperties": {"type": "string", "x-kubernetes-validations": [{"rule": "self.size() < 4"}]}}
            }
        }
    }})
}

fn rules() -> Rules {
    Rules::compile(&schema()).expect("has rules")
}

fn errors(new: Value, old: Option<Value>) -> Vec<String> {
    rules()
        .validate(&new, old.as_ref())
        .errors
        .iter()
        .map(ToString::to_string)
        .collect()
}

#[test]
fn a_schema_without_rules_compiles_to_nothing() {
    let plain = json!({"type": "object", "properties": {"spec": {"type": "object"}}});
    assert!(Rules::compile(&plain).is_none());
}

#[test]
fn failing_rules_read_as_upstream_writes_them() {
    let obj = json!({"spec": {"replicas": -1, "minReplicas": 2, "endpoint": "not a url", "memory": "3Gi", "labels": {"team": "toolong"}}});
    let mut got = errors(obj, None);
    got.sort();
    assert_eq!(
        got,
        [
            "spec.endpoint: Forbidden: must be a URL",
            "spec.labels[team]: Invalid value: \"toolong\": failed rule: self.size() < 4",
            "spec.memory: Invalid value: \"3Gi\": memory 3Gi is too much",
            "spec.replicas: Invalid value: -1: failed rule: self >= 0",
            "spec: Invalid value: replicas must be at least minReplicas",
        ]
    );
}

#[test]
fn valid_objects_pass() {
    let obj = json!({"spec": {"replicas": 3, "minReplicas": 2, "endpoint": "https://example.com/x", "memory": "1Gi", "labels": {"a": "b"}}});
    assert_eq!(errors(obj, None), Vec::<String>::new());
}

#[test]
fn transition_rules_need_an_old_value() {
    let new = json!({"spec": {"replicas": 1, "minReplicas": 1, "name": "b"}});
    assert_eq!(
        errors(new.clone(), None),
        Vec::<String>::new(),
        "create: no oldSelf"
    );
    let old = json!({"spec": {"replicas": 1, "minReplicas": 1, "name": "a"}});
    assert_eq!(
        errors(new, Some(old)),
        ["spec.name: Invalid value: \"b\": Value is immutable"]
    );
}

#[test]
fn unchanged_values_are_ratcheted_on_update() {
    // replicas was already negative and did not change: its rule is not held against the
    // update; spec changed, so the rule on spec is checked.
    let old = json!({"spec": {"replicas": -1, "minReplicas": 0}});
    let new = json!({"spec": {"replicas": -1, "minReplicas": 0, "endpoint": "https://a.example"}});
    assert_eq!(
        errors(new, Some(old)),
        ["spec: Invalid value: replicas must be at least minReplicas"]
    );
}

#[test]
fn rules_that_do_not_parse_reject_the_crd() {
    let rules: Vec<ValidationRule> = serde_json::from_value(json!([
        {"rule": "self.replicas >"},
        {"rule": "self.ok", "messageExpression": "'x' +"},
        {"rule": "self.fine"}
    ]))
    .unwrap();
    let mut errs = Vec::new();
    compile_errors(
        &rules,
        None,
        |i, f| format!("schema.x-kubernetes-validations[{i}].{f}"),
        &mut errs,
    );
    assert_eq!(errs.len(), 2, "{errs:?}");
    let first = errs[0].to_string();
    assert!(
        first.starts_with("schema.x-kubernetes-validations[0].rule: Invalid value: apiextensions.ValidationRule{Rule:\"self.replicas >\", Message:\"\", MessageExpression:\"\", Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:\"\", OptionalOldSelf:(*bool)(nil)}: compilation failed: ERROR: <input>:1:16: Syntax error: mismatched input '<EOF>' expecting "),
        "{first}"
    );
    assert!(errs[1]
        .to_string()
        .starts_with("schema.x-kubernetes-validations[1].messageExpression: Invalid value: apiextensions.ValidationRule{Rule:\"self.ok\""));
}

/// The compile errors of `rules` on the root of a resource whose schema is `schema`.
fn checked(schema: serde_json::Value, rules: serde_json::Value) -> Vec<String> {
    let rules: Vec<ValidationRule> = serde_json::from_value(rules).unwrap();
    let node = crate::registry::cel::decl::decl(&schema, true).unwrap();
    let mut errs = Vec::new();
    compile_errors(&rules, Some(&node), |i, f| format!("r[{i}].{f}"), &mut errs);
    errs.iter().map(ToString::to_string).collect()
}

#[test]
fn rules_are_checked_against_the_schema() {
    let schema = json!({"type": "object", "properties": {"spec": {"type": "object",
    "properties": {
        "replicas": {"type": "integer"},
        "image": {"type": "string"},
        "x-y": {"type": "string"},
        "ports": {"type": "array", "items": {"type": "object",
            "properties": {"port": {"type": "integer"}}}},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
    }}}});
    // What the schema declares, and what every resource root has.
    let fine = json!([
        {"rule": "self.spec.replicas > 0 && self.spec.image != ''"},
        {"rule": "self.spec.x__dash__y == '' && has(self.spec.labels)"},
        {"rule": "self.spec.ports.all(p, p.port > 0) && self.spec.labels.team == 'a'"},
        {"rule": "self.metadata.name.startsWith('a') && self.kind == 'K'"},
        {"rule": "self.spec.replicas == oldSelf.spec.replicas", "messageExpression": "'was ' + string(oldSelf.spec.replicas)"},
        {"rule": "[1, 2].exists(x, x == self.spec.replicas)"},
    ]);
    assert_eq!(checked(schema.clone(), fine), Vec::<String>::new());
    let errs = checked(
        schema,
        json!([
            {"rule": "self.spec.replica > 0"},
            {"rule": "self.spec.ports.all(p, p.prot > 0)"},
            {"rule": "self.metadata.labels.team == 'a'"},
            {"rule": "self.spec.free.anything == 1"},
            {"rule": "replicas > 0"},
            {"rule": "self.spec.image"},
            {"rule": "true", "messageExpression": "self.spec.replicas"},
        ]),
    );
    let with = |i: usize, text: &str| {
        errs.iter()
            .any(|e| e.starts_with(&format!("r[{i}].")) && e.ends_with(text))
    };
    assert!(with(0, "compilation failed: ERROR: <input>:1:10: undefined field 'replica'\n | self.spec.replica > 0\n | .........^"), "{errs:#?}");
    assert!(with(1, "compilation failed: ERROR: <input>:1:25: undefined field 'prot'\n | self.spec.ports.all(p, p.prot > 0)\n | ........................^"), "{errs:#?}");
    // metadata is name and generateName only, as upstream declares it for rules.
    assert!(
        with(
            2,
            "undefined field 'labels'\n | self.metadata.labels.team == 'a'\n | .............^"
        ),
        "{errs:#?}"
    );
    // Fields kept unknown have no declared type for rules to read.
    assert!(
        with(
            3,
            "undefined field 'anything'\n | self.spec.free.anything == 1\n | ..............^"
        ),
        "{errs:#?}"
    );
    assert!(with(4, "compilation failed: ERROR: <input>:1:1: undeclared reference to 'replicas' (in container '')\n | replicas > 0\n | ^"), "{errs:#?}");
    assert!(
        with(5, ": cel expression must evaluate to a bool"),
        "{errs:#?}"
    );
    assert!(
        errs.iter()
            .any(|e| e.starts_with("r[6].messageExpression: ")
                && e.ends_with("messageExpression must evaluate to a string")),
        "{errs:#?}"
    );
    assert_eq!(errs.len(), 7, "{errs:#?}");
}

#[test]
fn values_read_as_their_schema_declares_them() {
    // Timestamps, maps with unescaped keys, doubles for every number, upstream's escaping of
    // property names (`__underscores__` for a double underscore, `__dash__`, ...), null
    // properties absent.
    let schema = json!({"type": "object", "properties": {"spec": {
        "type": "object",
        "x-kubernetes-validations": [
            {"rule": "self.when < timestamp('2030-01-01T00:00:00Z')", "message": "too late"},
            {"rule": "self.labels['a.b'] == 'x'", "message": "a.b must be x"},
            {"rule": "self.note != 'bad'", "message": "bad note"},
            {"rule": "self.ratio + 0.5 == 2.5", "message": "ratio"},
            {"rule": "self.max_surge == 1 && self.dry__underscores__run && self.pod__dash__name == 'p'", "message": "names"},
            {"rule": "self.day == timestamp('2026-01-02T00:00:00Z') && self.timeout == duration('90s')", "message": "formats"},
            {"rule": "!has(self.gone) && !('extra' in self)", "message": "absent"}
        ],
        "properties": {
            "when": {"type": "string", "format": "date-time"},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "note": {"type": "string", "default": "fine"},
            "ratio": {"type": "number"},
            "max_surge": {"type": "integer"},
            "dry__run": {"type": "boolean"},
            "pod-name": {"type": "string"},
            "day": {"type": "string", "format": "date"},
            "timeout": {"type": "string", "format": "duration"},
            "gone": {"type": "string", "nullable": true}
        }
    }}});
    let rules = Rules::compile(&schema).unwrap();
    let ok = json!({"spec": {"when": "2026-01-01T00:00:00Z", "labels": {"a.b": "x"}, "note": "n",
        "ratio": 2, "max_surge": 1, "dry__run": true, "pod-name": "p", "day": "2026-01-02",
        "timeout": "1m30s", "gone": null, "extra": 1}});
    // `extra` is not declared: the rules do not see it.
    assert_eq!(rules.validate(&ok, None).errors, []);
    let mut bad = ok.clone();
    bad["spec"]["when"] = json!("2031-01-01T00:00:00Z");
    bad["spec"]["labels"]["a.b"] = json!("y");
    bad["spec"]["note"] = json!("bad");
    bad["spec"]["ratio"] = json!(2.5);
    bad["spec"]["day"] = json!("2026-01-03");
    bad["spec"]["gone"] = json!("here");
    let messages: Vec<String> = rules
        .validate(&bad, None)
        .errors
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        messages,
        [
            "spec: Invalid value: too late",
            "spec: Invalid value: a.b must be x",
            "spec: Invalid value: bad note",
            "spec: Invalid value: ratio",
            "spec: Invalid value: formats",
            "spec: Invalid value: absent",
        ]
    );
}

#[test]
fn an_unchanged_part_reports_nothing_but_transition_rules_still_run() {
    let bad = json!({"spec": {"replicas": 1, "minReplicas": 2, "name": "a"}});
    // The same spec again: ratcheting keeps the old errors from blocking the update.
    assert!(errors(bad.clone(), Some(bad.clone())).is_empty());
    // Once spec changes, its rules run again, the transition rule on `name` among them.
    let renamed = json!({"spec": {"replicas": 1, "minReplicas": 2, "name": "b"}});
    assert_eq!(
        errors(renamed, Some(bad)),
        [
            "spec: Invalid value: replicas must be at least minReplicas",
            "spec.name: Invalid value: \"b\": Value is immutable",
        ]
    );
}

#[test]
fn optional_old_self_is_an_optional() {
    let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
    "replicas": {"type": "integer", "x-kubernetes-validations": [
        {"rule": "!oldSelf.hasValue() || self >= oldSelf.value()", "optionalOldSelf": true},
        {"rule": "self >= oldSelf.orValue(2)", "optionalOldSelf": true,
         "messageExpression": "'was ' + string(oldSelf.orValue(2))"},
    ]}}}}});
    let rules = Rules::compile(&schema).expect("has rules");
    let errors = |new: Value, old: Option<Value>| -> Vec<String> {
        let mut e: Vec<String> = rules
            .validate(&new, old.as_ref())
            .errors
            .iter()
            .map(ToString::to_string)
            .collect();
        e.sort();
        e
    };
    // On create oldSelf is optional.none(): the first rule passes, the second reads 2.
    assert_eq!(
        errors(json!({"spec": {"replicas": 3}}), None),
        Vec::<String>::new()
    );
    assert_eq!(
        errors(json!({"spec": {"replicas": 1}}), None),
        // As upstream, the messageExpression reads the rule's plain oldSelf, which a create
        // does not have: it fails, and the default message stands.
        ["spec.replicas: Invalid value: 1: failed rule: self >= oldSelf.orValue(2)"]
    );
    // On update it holds the old value; failures read with the rule as written.
    assert_eq!(
        errors(json!({"spec": {"replicas": 4}}), Some(json!({"spec": {"replicas": 5}}))),
        [
            "spec.replicas: Invalid value: 4: failed rule: !oldSelf.hasValue() || self >= oldSelf.value()",
            "spec.replicas: Invalid value: 4: failed rule: self >= oldSelf.orValue(2)",
        ]
    );
    assert_eq!(
        errors(
            json!({"spec": {"replicas": 6}}),
            Some(json!({"spec": {"replicas": 5}}))
        ),
        Vec::<String>::new()
    );
}

#[test]
fn optional_old_self_needs_old_self() {
    let rules: Vec<ValidationRule> = serde_json::from_value(json!([
        {"rule": "self > 0", "optionalOldSelf": true},
        {"rule": "oldSelf.orValue(0) <= self", "optionalOldSelf": true},
    ]))
    .unwrap();
    let node = crate::registry::cel::decl::decl(&json!({"type": "integer"}), false).unwrap();
    let mut errs = Vec::new();
    compile_errors(&rules, Some(&node), |i, f| format!("r[{i}].{f}"), &mut errs);
    let shown: Vec<String> = errs.iter().map(ToString::to_string).collect();
    assert_eq!(
        shown,
        ["r[0].optionalOldSelf: Invalid value: true: may not be set if oldSelf is not used in rule"]
    );
}

#[test]
fn map_list_items_are_compared_with_the_old_item_of_their_key() {
    let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "ports": {"type": "array", "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["name"], "maxItems": 10,
            "items": {"type": "object", "required": ["name"], "properties": {
                "name": {"type": "string"},
                "port": {"type": "integer", "x-kubernetes-validations": [
                    {"rule": "self == oldSelf", "message": "port is immutable"}]},
                "weight": {"type": "integer", "x-kubernetes-validations": [{"rule": "self < 10"}]}}}}}}}});
    let rules = Rules::compile(&schema).expect("has rules");
    let errors = |new: Value, old: Value| -> Vec<String> {
        rules
            .validate(&new, Some(&old))
            .errors
            .iter()
            .map(ToString::to_string)
            .collect()
    };
    let old = json!({"spec": {"ports": [{"name": "a", "port": 1, "weight": 50}, {"name": "b", "port": 2}]}});
    // Reordered, with a new item in front: every old item meets its own old self, and the
    // old item's weight over the bound is ratcheted (it was already there).
    let reordered = json!({"spec": {"ports": [
        {"name": "c", "port": 3}, {"name": "b", "port": 2}, {"name": "a", "port": 1, "weight": 50}]}});
    assert_eq!(errors(reordered.clone(), old.clone()), Vec::<String>::new());
    // Ratcheted, the failure is a warning, as upstream's, in the error's words.
    let ratcheted: Vec<String> = rules
        .validate(&reordered, Some(&old))
        .ratcheted
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        ratcheted,
        ["spec.ports[2].weight: Invalid value: 50: failed rule: self < 10"]
    );
    // A changed port is caught at its place in the new list; a new item's weight is checked.
    let changed = json!({"spec": {"ports": [
        {"name": "c", "port": 3, "weight": 11}, {"name": "a", "port": 9, "weight": 50}]}});
    assert_eq!(
        errors(changed, old),
        [
            "spec.ports[0].weight: Invalid value: 11: failed rule: self < 10",
            "spec.ports[1].port: Invalid value: 9: port is immutable",
        ]
    );
}

#[test]
fn library_namespaces_are_not_undeclared() {
    let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "a": {"type": "array", "maxItems": 5, "items": {"type": "string", "maxLength": 8}},
        "n": {"type": "string", "maxLength": 63}}}}});
    let errs = checked(
        schema,
        json!([
            {"rule": "sets.contains(self.spec.a, ['x']) || math.greatest(1, 2) == 2"},
            {"rule": "!format.dns1123Label().validate(self.spec.n).hasValue()"},
            {"rule": "optional.of(self.spec.n).hasValue() && ip.isCanonical('127.0.0.1')"},
            {"rule": "lists.range(3).size() == 3 && strings.quote(self.spec.n) != ''"},
        ]),
    );
    assert_eq!(errs, Vec::<String>::new());
}

#[test]
fn rules_may_use_optional_syntax() {
    let schema = json!({"type": "object", "properties": {"spec": {"type": "object",
        "x-kubernetes-validations": [
            {"rule": "self.?replicas.orValue(1) <= self.?max.orValue(10)", "message": "too many"},
            {"rule": "self.?labels[?'team'].orValue('a') != 'b'", "messageExpression": "'team ' + self.?labels[?'team'].orValue('')"},
        ],
        "properties": {
            "replicas": {"type": "integer"}, "max": {"type": "integer"},
            "labels": {"type": "object", "maxProperties": 10, "additionalProperties": {"type": "string", "maxLength": 10}}}}}});
    // Accepted when the CRD is written...
    let node = crate::registry::cel::decl::decl(&schema["properties"]["spec"], false).unwrap();
    let rules: Vec<ValidationRule> =
        serde_json::from_value(schema["properties"]["spec"]["x-kubernetes-validations"].clone())
            .unwrap();
    let mut errs = Vec::new();
    compile_errors(&rules, Some(&node), |i, f| format!("r[{i}].{f}"), &mut errs);
    assert!(errs.is_empty(), "{errs:?}");
    // ... a field the schema lacks is still caught behind `.?` ...
    let typo: Vec<ValidationRule> =
        serde_json::from_value(json!([{"rule": "self.?replica.orValue(1) > 0"}])).unwrap();
    compile_errors(&typo, Some(&node), |i, f| format!("r[{i}].{f}"), &mut errs);
    assert!(
        errs[0]
            .to_string()
            .ends_with("undefined field 'replica'\n | self.?replica.orValue(1) > 0\n | ....^"),
        "{errs:?}"
    );
    // ... and enforced on objects, failures read with the rule as written.
    let rules = Rules::compile(&schema).expect("has rules");
    let errors = |v: Value| -> Vec<String> {
        rules
            .validate(&v, None)
            .errors
            .iter()
            .map(ToString::to_string)
            .collect()
    };
    assert_eq!(errors(json!({"spec": {}})), Vec::<String>::new());
    assert_eq!(
        errors(json!({"spec": {"replicas": 11}})),
        ["spec: Invalid value: too many"]
    );
    assert_eq!(
        errors(json!({"spec": {"labels": {"team": "b"}}})),
        ["spec: Invalid value: team b"]
    );
}

#[test]
fn evaluation_errors_read_as_cel_go_words_them() {
    let schema = json!({"type": "object", "properties": {"spec": {
        "type": "object",
        "x-kubernetes-validations": [{"rule": "self.total / self.parts > 1"}],
        "properties": {
            "total": {"type": "integer"},
            "parts": {"type": "integer"}
        }
    }}});
    let rules = Rules::compile(&schema).unwrap();
    let messages: Vec<String> = rules
        .validate(&json!({"spec": {"total": 4, "parts": 0}}), None)
        .errors
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        messages,
        ["spec: Invalid value: \"object\": division by zero evaluating rule: self.total / self.parts > 1"]
    );
}

#[test]
fn calls_no_overload_takes_refuse_the_crd() {
    let schema = json!({"type": "object", "properties": {"spec": {"type": "object",
    "properties": {
        "replicas": {"type": "integer"},
        "ratio": {"type": "number"},
        "image": {"type": "string"},
        "when": {"type": "string", "format": "date-time"},
        "port": {"x-kubernetes-int-or-string": true},
        "names": {"type": "array", "items": {"type": "string"}},
        "sizes": {"type": "array", "items": {"type": "integer"}},
    }}}});
    let fine = json!([
        {"rule": "self.spec.replicas + 1 > 2 && self.spec.ratio > 1"},
        {"rule": "self.spec.image.size() < 10 && self.spec.image.matches('^a') && size(self.spec.image) > 0"},
        {"rule": "self.spec.when < timestamp('2030-01-01T00:00:00Z') + duration('1h')"},
        {"rule": "self.spec.port == 1 || self.spec.port == 'http'"},
        {"rule": "self.spec.image.substring(1).lowerAscii().indexOf('x', 0) >= 0"},
        {"rule": "isURL(self.spec.image) && self.spec.image.find('a') == 'a' && quantity(self.spec.image).isLessThan(quantity('1'))"},
        {"rule": "int(self.spec.when) > 0 && self.spec.when.getHours('UTC') >= 0 && string(self.spec.ratio) != ''"},
        {"rule": "self.spec.sizes.sum() > 0 && self.spec.names.min() != '' && self.spec.sizes.indexOf(1) >= 0 && self.spec.names.isSorted()"},
        {"rule": "quantity(self.spec.image).add(1).sub(quantity('1')).isLessThan(quantity('1')) && cidr('10.0.0.0/8').containsIP(self.spec.image) && cidr('10.0.0.0/8').containsIP(ip(self.spec.image)) && url(self.spec.image).getHost() != '' && semver('1.0.0').major() == 1"},
    ]);
    assert_eq!(checked(schema.clone(), fine), Vec::<String>::new());
    let errs = checked(
        schema,
        json!([
            {"rule": "self.spec.replicas + 'x' == 'y'"},
            {"rule": "self.spec.image.startsWith(1)"},
            {"rule": "self.spec.ratio + 1 > 2.0"},
            {"rule": "isURL(self.spec.replicas)"},
            {"rule": "duration(self.spec.ratio) > duration('1s')"},
            {"rule": "self.spec.image.getHours() > 1"},
            {"rule": "self.spec.names.sum() != ''"},
            {"rule": "self.spec.sizes.indexOf('a') > 0"},
            {"rule": "self.spec.image.int() > 0"},
            {"rule": "quantity(self.spec.image).isLessThan(1)"},
            {"rule": "cidr('10.0.0.0/8').containsIP(self.spec.replicas)"},
        ]),
    );
    let failures: Vec<&str> = errs
        .iter()
        .map(|e| &e[e.find(": compilation failed: ").expect("compile error") + 2..])
        .collect();
    assert_eq!(
        failures,
        [
            "compilation failed: ERROR: <input>:1:20: found no matching overload for '_+_' applied to '(int, string)'\n | self.spec.replicas + 'x' == 'y'\n | ...................^",
            "compilation failed: ERROR: <input>:1:27: found no matching overload for 'startsWith' applied to 'string.(int)'\n | self.spec.image.startsWith(1)\n | ..........................^",
            "compilation failed: ERROR: <input>:1:17: found no matching overload for '_+_' applied to '(double, int)'\n | self.spec.ratio + 1 > 2.0\n | ................^",
            "compilation failed: ERROR: <input>:1:6: found no matching overload for 'isURL' applied to '(int)'\n | isURL(self.spec.replicas)\n | .....^",
            "compilation failed: ERROR: <input>:1:9: found no matching overload for 'duration' applied to '(double)'\n | duration(self.spec.ratio) > duration('1s')\n | ........^",
            "compilation failed: ERROR: <input>:1:25: found no matching overload for 'getHours' applied to 'string.()'\n | self.spec.image.getHours() > 1\n | ........................^",
            "compilation failed: ERROR: <input>:1:20: found no matching overload for 'sum' applied to 'list(string).()'\n | self.spec.names.sum() != ''\n | ...................^",
            "compilation failed: ERROR: <input>:1:24: found no matching overload for 'indexOf' applied to 'list(int).(string)'\n | self.spec.sizes.indexOf('a') > 0\n | .......................^",
            "compilation failed: ERROR: <input>:1:20: found no matching overload for 'int' applied to 'string.()'\n | self.spec.image.int() > 0\n | ...................^",
            "compilation failed: ERROR: <input>:1:37: found no matching overload for 'isLessThan' applied to 'kubernetes.Quantity.(int)'\n | quantity(self.spec.image).isLessThan(1)\n | ....................................^",
            "compilation failed: ERROR: <input>:1:30: found no matching overload for 'containsIP' applied to 'net.CIDR.(int)'\n | cidr('10.0.0.0/8').containsIP(self.spec.replicas)\n | .............................^",
        ]
    );
}

/// The messages of `rules` on `obj`.
fn messages(rules: &Rules, obj: &Value) -> Vec<String> {
    rules
        .validate(obj, None)
        .errors
        .iter()
        .map(ToString::to_string)
        .collect()
}

#[test]
fn an_evaluation_past_the_per_call_limit_stops_the_rules() {
    // 1,000 × 1,000 iterations: past PerCallLimit. Upstream stops there; the later rule
    // (failing too) is never run.
    let schema = json!({"type": "object", "properties": {"spec": {"type": "object",
        "x-kubernetes-validations": [
            {"rule": "self.xs.all(x, self.xs.all(y, x == y))"},
            {"rule": "self.xs.size() == 0", "message": "never reported"}
        ],
        "properties": {"xs": {"type": "array", "items": {"type": "integer"}}}}}});
    let rules = Rules::compile(&schema).unwrap();
    let obj = json!({"spec": {"xs": vec![0; 1000]}});
    assert_eq!(
        messages(&rules, &obj),
        ["spec: Invalid value: \"object\": 'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to call cost exceeds limit for rule: self.xs.all(x, self.xs.all(y, x == y))"]
    );
    // Within the limit, both run.
    let small = json!({"spec": {"xs": [0, 0]}});
    assert_eq!(
        messages(&rules, &small),
        ["spec: Invalid value: never reported"]
    );
}

#[test]
fn the_rules_of_one_object_share_a_cost_budget() {
    // Each item's rule costs 300 × 300 iterations (well within the per-call limit); forty
    // of them are past RuntimeCELCostBudget (10,000,000), so evaluation stops at an item.
    let schema = json!({"type": "object", "properties": {"spec": {"type": "object",
        "properties": {"groups": {"type": "array", "items": {
            "type": "array", "items": {"type": "integer"},
            "x-kubernetes-validations": [{"rule": "self.all(x, self.all(y, x == y))"}]}}}}}});
    let rules = Rules::compile(&schema).unwrap();
    let obj = json!({"spec": {"groups": vec![vec![0; 300]; 40]}});
    let got = messages(&rules, &obj);
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(
        got[0].ends_with(": Invalid value: \"array\": validation failed due to running out of cost budget, no further validation rules will be run"),
        "{got:?}"
    );
    // Fewer items fit the budget.
    let fewer = json!({"spec": {"groups": vec![vec![0; 300]; 10]}});
    assert_eq!(messages(&rules, &fewer), Vec::<String>::new());
}

#[test]
fn size_counts_code_points_and_optional_syntax_runs_as_written() {
    let schema = json!({"type": "object", "properties": {"spec": {"type": "object",
    "x-kubernetes-validations": [
        {"rule": "self.name.size() == 5", "message": "size"},
        {"rule": "self.?extra.?n.orValue(1) == 1", "message": "optional select"},
        {"rule": "self.labels[?'team'].orValue('none') == 'a'", "message": "optional index"},
        {"rule": "[?self.?extra.?n, ?optional.of(2)] == [2]", "message": "optional element"},
        {"rule": "{?'k': self.?extra.?n}.size() == 0", "message": "optional entry"}
    ],
    "properties": {
        "name": {"type": "string"},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "extra": {"type": "object", "properties": {"n": {"type": "integer"}}}
    }}}});
    // They pass the checks a CRD is written under.
    let spec = &schema["properties"]["spec"];
    assert_eq!(
        checked(spec.clone(), spec["x-kubernetes-validations"].clone()),
        Vec::<String>::new()
    );
    let rules = Rules::compile(&schema).unwrap();
    let ok = json!({"spec": {"name": "héllo", "labels": {"team": "a"}}});
    assert_eq!(messages(&rules, &ok), Vec::<String>::new());
    let bad = json!({"spec": {"name": "hello!", "labels": {}, "extra": {"n": 3}}});
    assert_eq!(
        messages(&rules, &bad),
        [
            "spec: Invalid value: size",
            "spec: Invalid value: optional select",
            "spec: Invalid value: optional index",
            "spec: Invalid value: optional element",
            "spec: Invalid value: optional entry",
        ]
    );
}

#[test]
fn a_call_no_overload_takes_at_runtime_reads_as_upstream() {
    // int-or-string is dynamic, so the type check lets this through; a string fails at
    // runtime with upstream's words.
    let schema = json!({"type": "object", "properties": {"spec": {"type": "object",
        "properties": {"port": {"x-kubernetes-int-or-string": true,
            "x-kubernetes-validations": [{"rule": "self + 1 > 2"}]}}}}});
    let rules = Rules::compile(&schema).unwrap();
    assert_eq!(
        messages(&rules, &json!({"spec": {"port": 5}})),
        Vec::<String>::new()
    );
    assert_eq!(
        messages(&rules, &json!({"spec": {"port": "http"}})),
        ["spec.port: Invalid value: \"\": 'no such overload': call arguments did not match a supported operator, function or macro signature for rule: self + 1 > 2"]
    );
}
