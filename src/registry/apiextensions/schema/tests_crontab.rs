//! A realistic CRD (the CronTab of the Kubernetes docs, with a list-map, an enum, bounds and
//! defaults) through decoding, defaulting and validation, and a check that applying it to a
//! valid object of about 1 KB allocates nothing.
//!
//! How the walk stays lean: the schema is compiled once (properties sorted for binary search,
//! regexes built, formats resolved, defaults pruned); the path is a linked list on the stack
//! whose text is built only for an error or a pruned field; results are vectors that stay
//! unallocated while empty; defaulting clones only what it inserts and skips subtrees without
//! defaults; pruning removes in place. The crate forbids `unsafe`, so no counting allocator:
//! every place in the walk that allocates reports itself to [`super::probe`], and the check
//! below asserts that none is reached and that no result vector was allocated.

use super::probe::sites_reached;
use super::tests::schema;
use super::{CoerceOptions, Schema};
use serde_json::{json, Value};

fn crontab() -> Schema {
    schema(json!({
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": {
                "type": "object",
                "required": ["cronSpec", "image"],
                "properties": {
                    "cronSpec": {"type": "string", "pattern": "^(\\d+|\\*)(/\\d+)?(\\s+(\\d+|\\*)(/\\d+)?){4}$"},
                    "image": {"type": "string", "minLength": 1},
                    "replicas": {"type": "integer", "minimum": 1, "maximum": 10, "default": 1},
                    "concurrencyPolicy": {"type": "string", "enum": ["Allow", "Forbid", "Replace"], "default": "Allow"},
                    "suspend": {"type": "boolean"},
                    "startingDeadline": {"type": "string", "format": "date-time"},
                    "ports": {
                        "type": "array",
                        "x-kubernetes-list-type": "map",
                        "x-kubernetes-list-map-keys": ["name"],
                        "items": {
                            "type": "object",
                            "required": ["name"],
                            "properties": {
                                "name": {"type": "string"},
                                "port": {"type": "integer", "format": "int32", "minimum": 1, "maximum": 65535},
                                "protocol": {"type": "string", "enum": ["TCP", "UDP"], "default": "TCP"}
                            }
                        }
                    },
                    "env": {"type": "object", "additionalProperties": {"type": "string"}},
                    "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}}
                }
            },
            "status": {
                "type": "object",
                "properties": {
                    "active": {"type": "integer", "minimum": 0},
                    "lastScheduleTime": {"type": "string", "format": "date-time"}
                }
            }
        }
    }))
}

fn strings(errs: Vec<crate::registry::error::FieldError>) -> Vec<String> {
    errs.iter().map(ToString::to_string).collect()
}

#[test]
fn a_crontab_is_pruned_defaulted_and_validated() {
    let s = crontab();
    let mut obj = json!({
        "apiVersion": "stable.example.com/v1", "kind": "CronTab",
        "metadata": {"name": "my-cron", "namespace": "default"},
        "spec": {
            "cronSpec": "*/5 * * * *", "image": "my-awesome-cron-image", "colour": "blue",
            "ports": [{"name": "http", "port": 80, "hostIP": "1.2.3.4"}, {"name": "dns", "port": 53, "protocol": "UDP"}]
        },
        "extra": true
    });
    let opts = CoerceOptions {
        track_unknown: true,
        drop_invalid_metadata: false,
    };
    assert_eq!(
        s.coerce(&mut obj, opts).unwrap(),
        ["extra", "spec.colour", "spec.ports[0].hostIP"]
    );
    s.default(&mut obj);
    assert_eq!(
        obj["spec"],
        json!({
            "cronSpec": "*/5 * * * *", "image": "my-awesome-cron-image",
            "ports": [{"name": "http", "port": 80, "protocol": "TCP"}, {"name": "dns", "port": 53, "protocol": "UDP"}],
            "concurrencyPolicy": "Allow", "replicas": 1
        })
    );
    assert!(s.validate(&obj).is_empty());

    let bad = json!({
        "apiVersion": "stable.example.com/v1", "kind": "CronTab", "metadata": {"name": "x"},
        "spec": {
            "cronSpec": "every minute", "replicas": "3", "concurrencyPolicy": "Sometimes",
            "ports": [{"name": "http", "port": 70000}, {"name": "http", "port": 8080}],
            "tags": ["a", "b", "a"], "startingDeadline": "tomorrow"
        }
    });
    assert_eq!(
        strings(s.validate(&bad)),
        [
            "spec.cronSpec: Invalid value: \"every minute\": spec.cronSpec in body should match '^(\\d+|\\*)(/\\d+)?(\\s+(\\d+|\\*)(/\\d+)?){4}$'",
            "spec.replicas: Invalid value: \"string\": spec.replicas in body must be of type integer: \"string\"",
            "spec.concurrencyPolicy: Unsupported value: \"Sometimes\": supported values: \"Allow\", \"Forbid\", \"Replace\"",
            "spec.ports[0].port: Invalid value: 70000: spec.ports[0].port in body should be less than or equal to 65535",
            "spec.startingDeadline: Invalid value: \"tomorrow\": spec.startingDeadline in body must be of type date-time: \"tomorrow\"",
            "spec.image: Required value",
            "spec.ports[1]: Duplicate value: {\"name\":\"http\"}",
            "spec.tags[2]: Duplicate value: \"a\"",
        ]
    );
}

#[test]
fn a_crontab_status_update_ratchets() {
    let s = crontab();
    let old = json!({"spec": {"cronSpec": "* * * * *", "image": "i"}, "status": {"active": -1}});
    assert!(s.validate_status_update(&old, &old).is_empty());
    let new = json!({"spec": {"cronSpec": "* * * * *", "image": "i"}, "status": {"active": -2}});
    assert_eq!(
        strings(s.validate_status_update(&new, &old)),
        ["status.active: Invalid value: -2: active in body should be greater than or equal to 0"]
    );
}

/// A valid CronTab of about 1 KB, already pruned and defaulted.
fn kilobyte() -> Value {
    let ports: Vec<Value> = (0..12)
        .map(|i| json!({"name": format!("port-{i}"), "port": 8000 + i, "protocol": "TCP"}))
        .collect();
    json!({
        "apiVersion": "stable.example.com/v1", "kind": "CronTab",
        "metadata": {"name": "my-cron", "namespace": "default", "labels": {"app": "cron"}},
        "spec": {
            "cronSpec": "*/5 * * * *", "image": "registry.example.com/team/cron-image:v1.2.3",
            "replicas": 3, "concurrencyPolicy": "Forbid", "suspend": false,
            "startingDeadline": "2026-01-01T00:00:00Z",
            "ports": ports,
            "env": {"LOG_LEVEL": "debug", "REGION": "eu-west-1", "FEATURE_X": "on", "TIMEOUT": "30s", "ENDPOINT": "https://reports.example.com/api/v2/upload"},
            "tags": ["nightly", "batch", "reports", "critical"]
        },
        "status": {"active": 2, "lastScheduleTime": "2026-01-01T00:05:00Z"}
    })
}

#[test]
fn applying_the_schema_to_a_valid_object_does_not_allocate() {
    let s = crontab();
    let mut obj = kilobyte();
    let size = serde_json::to_vec(&obj).unwrap().len();
    assert!((900..1400).contains(&size), "{size}");
    let old = obj.clone();
    let opts = CoerceOptions {
        track_unknown: true,
        drop_invalid_metadata: false,
    };
    let unallocated = |v: Vec<crate::registry::error::FieldError>| v.capacity() == 0;
    assert_eq!(sites_reached(|| assert!(unallocated(s.validate(&obj)))), 0);
    assert_eq!(
        sites_reached(|| assert!(unallocated(s.validate_update(&obj, &old)))),
        0
    );
    assert_eq!(
        sites_reached(|| assert!(unallocated(s.validate_status_update(&obj, &old)))),
        0
    );
    let mut unknown = Vec::new();
    assert_eq!(
        sites_reached(|| unknown = s.coerce(&mut obj, opts).unwrap()),
        0
    );
    assert_eq!(unknown.capacity(), 0);
    assert_eq!(sites_reached(|| s.default(&mut obj)), 0);
    assert_eq!(obj, old);
    // The probe does see the walk allocate once there is something to report.
    assert!(sites_reached(|| drop(s.validate(&json!({"spec": {"replicas": 0}})))) > 0);
}
