//! Sets and map lists in rules, through compiled rules and their findings.

use super::super::Rules;
use serde_json::{json, Value};

/// A spec of a set of tags, an atomic list of steps, a map list of ports and a list of groups
/// each holding a set, with `rules` at the spec.
fn schema(rules: Value) -> Value {
    json!({"type": "object", "properties": {"spec": {
        "type": "object",
        "x-kubernetes-validations": rules,
        "properties": {
            "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
            "steps": {"type": "array", "items": {"type": "string"}},
            "ports": {"type": "array", "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name"],
                "items": {"type": "object", "required": ["name"], "properties": {
                    "name": {"type": "string"},
                    "port": {"type": "integer"},
                    "hosts": {"type": "array", "x-kubernetes-list-type": "set",
                        "items": {"type": "string"}}}}},
            "groups": {"type": "array", "items": {"type": "object", "properties": {
                "members": {"type": "array", "x-kubernetes-list-type": "set",
                    "items": {"type": "string"}}}}}
        }
    }}})
}

fn spec() -> Value {
    json!({"spec": {
        "tags": ["a", "b"],
        "steps": ["one", "two"],
        "ports": [
            {"name": "http", "port": 80, "hosts": ["x", "y"]},
            {"name": "https", "port": 443}
        ],
        "groups": [{"members": ["p", "q"]}]
    }})
}

/// The errors of `rule` (at the spec) on `new`, updated from `old` when given.
fn errors(rule: &str, new: &Value, old: Option<&Value>) -> Vec<String> {
    let rules = Rules::compile(&schema(json!([{"rule": rule}]))).expect("has rules");
    rules
        .validate(new, old)
        .errors
        .iter()
        .map(ToString::to_string)
        .collect()
}

fn holds(rule: &str, new: &Value, old: Option<&Value>) -> bool {
    let found = errors(rule, new, old);
    assert!(
        found.iter().all(|e| e.contains("failed rule")),
        "{rule}: {found:?}"
    );
    found.is_empty()
}

#[test]
fn sets_and_map_lists_compare_without_their_order() {
    let old = spec();
    let reordered = json!({"spec": {
        "tags": ["b", "a"],
        "steps": ["one", "two"],
        "ports": [
            {"name": "https", "port": 443},
            {"name": "http", "port": 80, "hosts": ["y", "x"]}
        ],
        "groups": [{"members": ["q", "p"]}]
    }});
    // The whole spec, each list, and a set inside a map list's item all compare equal.
    for rule in [
        "self == oldSelf",
        "self.tags == oldSelf.tags",
        "self.ports == oldSelf.ports",
        "oldSelf.ports == self.ports",
    ] {
        assert!(holds(rule, &reordered, Some(&old)), "{rule}");
        assert!(
            !holds(&rule.replace("==", "!="), &reordered, Some(&old)),
            "{rule}"
        );
    }
    // An atomic list keeps its order: steps reordered differ.
    let steps_reordered = json!({"spec": {"steps": ["two", "one"]}});
    let steps_old = json!({"spec": {"steps": ["one", "two"]}});
    assert!(!holds(
        "self.steps == oldSelf.steps",
        &steps_reordered,
        Some(&steps_old)
    ));
    assert!(!holds(
        "self == oldSelf",
        &steps_reordered,
        Some(&steps_old)
    ));
    // A changed value, a different size or another key is a difference.
    for changed in [
        json!({"spec": {"tags": ["a", "c"]}}),
        json!({"spec": {"tags": ["a"]}}),
        json!({"spec": {"ports": [{"name": "http", "port": 81, "hosts": ["x", "y"]}, {"name": "https", "port": 443}]}}),
        json!({"spec": {"ports": [{"name": "http", "port": 80, "hosts": ["x"]}, {"name": "https", "port": 443}]}}),
        json!({"spec": {"ports": [{"name": "http", "port": 80, "hosts": ["x", "y"]}, {"name": "ftp", "port": 443}]}}),
    ] {
        let mut new = spec();
        for (k, v) in changed["spec"].as_object().unwrap() {
            new["spec"][k] = v.clone();
        }
        assert!(!holds("self == oldSelf", &new, Some(&old)), "{new}");
    }
}

#[test]
fn the_left_operand_decides_how_lists_compare() {
    let obj = spec();
    assert!(holds("self.tags == ['b', 'a']", &obj, None));
    assert!(!holds("['b', 'a'] == self.tags", &obj, None));
    assert!(holds("self.tags != ['a', 'c']", &obj, None));
    // A comprehension's variable over a list is an item of its schema.
    assert!(holds(
        "self.groups.all(g, g.members == ['q', 'p'])",
        &obj,
        None
    ));
    assert!(holds(
        "self.ports.exists(p, p.hosts == ['y', 'x'])",
        &obj,
        None
    ));
    // An optional oldSelf's value is the node's value too.
    let rules = Rules::compile(&schema(json!([{
        "rule": "!oldSelf.hasValue() || oldSelf.value().tags == self.tags",
        "optionalOldSelf": true
    }])))
    .expect("has rules");
    let reordered = json!({"spec": {"tags": ["b", "a"]}});
    assert!(rules.validate(&reordered, Some(&obj)).errors.is_empty());
}

#[test]
fn sets_unite_and_map_lists_merge_by_key() {
    let obj = spec();
    // Union: the left's elements in place, the right's new ones appended.
    assert!(holds(
        "self.tags + ['c', 'a', 'c'] == ['a', 'b', 'c'] && (self.tags + ['c', 'a']).size() == 3 && (self.tags + ['c'])[2] == 'c'",
        &obj,
        None
    ));
    // Merge: an item with the left's key replaces it in place; new keys are appended.
    assert!(holds(
        "(self.ports + [{'name': 'https', 'port': 8443}, {'name': 'ftp', 'port': 21}]).map(p, p.port) == [80, 8443, 21]",
        &obj,
        None
    ));
    // The result keeps the left's semantics.
    assert!(holds("self.tags + ['c'] == ['c', 'b', 'a']", &obj, None));
    // An atomic list concatenates.
    assert!(holds("(self.steps + ['one']).size() == 3", &obj, None));
}

#[test]
fn a_set_of_objects_fails_as_upstream_words_it() {
    let schema = json!({"type": "object", "properties": {"spec": {
        "type": "object",
        "x-kubernetes-validations": [{"rule": "self.pairs == oldSelf.pairs"}],
        "properties": {"pairs": {"type": "array", "x-kubernetes-list-type": "set",
            "items": {"type": "array", "items": {"type": "string"}}}}}}});
    let rules = Rules::compile(&schema).expect("has rules");
    let obj = json!({"spec": {"pairs": [["a"]]}});
    let found: Vec<String> = rules
        .validate(&obj, Some(&obj))
        .errors
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        found,
        ["spec: Invalid value: \"object\": listSet operations are only supported on lists of scalar values evaluating rule: self.pairs == oldSelf.pairs"]
    );
}
