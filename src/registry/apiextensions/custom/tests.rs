use super::*;
use serde_json::json;

fn crd(extra_version: Value) -> CustomResourceDefinition {
    serde_json::from_value(json!({
        "metadata": {"name": "crontabs.stable.example.com"},
        "spec": {
            "group": "stable.example.com",
            "names": {"plural": "crontabs", "singular": "crontab", "kind": "CronTab", "shortNames": ["ct"]},
            "scope": "Namespaced",
            "versions": [
                {
                    "name": "v1", "served": true, "storage": true,
                    "subresources": {"status": {}},
                    "selectableFields": [{"jsonPath": ".spec.color"}],
                    "additionalPrinterColumns": [
                        {"name": "Spec", "type": "string", "jsonPath": ".spec.cronSpec"},
                        {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
                        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}
                    ],
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                        "spec": {"type": "object", "properties": {
                            "cronSpec": {"type": "string"},
                            "color": {"type": "string"},
                            "replicas": {"type": "integer", "minimum": 1, "default": 1}
                        }},
                        "status": {"type": "object", "properties": {"ready": {"type": "integer", "minimum": 0}}}
                    }}}
                },
                extra_version
            ]
        }
    }))
    .unwrap()
}

fn v1() -> CustomResource {
    let c = crd(json!({"name": "v2", "served": true, "storage": false,
        "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}));
    CustomResource::new(&c, &c.spec.versions[0], false, Arc::new(Converter::of(&c)))
}

fn v2() -> CustomResource {
    let c = crd(json!({"name": "v2", "served": true, "storage": false,
        "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}));
    CustomResource::new(&c, &c.spec.versions[1], false, Arc::new(Converter::of(&c)))
}

#[test]
fn describes_itself_from_the_crd() {
    let r = v1();
    let i = r.info();
    assert_eq!(
        (&*i.group, &*i.version, &*i.resource),
        ("stable.example.com", "v1", "crontabs")
    );
    assert_eq!(
        (&*i.kind, &*i.singular, i.namespaced),
        ("CronTab", "crontab", true)
    );
    assert_eq!(i.short_names.iter().collect::<Vec<_>>(), ["ct"]);
    assert_eq!(i.subresources.len(), 1);
    assert!(i.protobuf.is_none());
}

#[test]
fn decoding_prunes_reports_and_defaults() {
    let (obj, unknown) = v1()
        .canonicalize(Input::Value(json!({
            "apiVersion": "stable.example.com/v1", "kind": "CronTab",
            "metadata": {"name": "a", "bogus": 1},
            "spec": {"cronSpec": "* * * * *", "colour": "blue"},
            "extra": true
        })))
        .unwrap();
    assert_eq!(unknown, ["metadata.bogus", "extra", "spec.colour"]);
    assert_eq!(obj["spec"], json!({"cronSpec": "* * * * *", "replicas": 1}));
    assert_eq!(obj["metadata"], json!({"name": "a"}));
}

#[test]
fn validation_reports_schema_violations() {
    let r = v1();
    let (obj, _) = r
        .canonicalize(Input::Value(json!({
            "apiVersion": "stable.example.com/v1", "kind": "CronTab",
            "metadata": {"name": "a"}, "spec": {"replicas": 0}
        })))
        .unwrap();
    let errs: Vec<String> = r.validate(&obj).iter().map(ToString::to_string).collect();
    assert_eq!(
        errs,
        ["spec.replicas: Invalid value: 0: spec.replicas in body should be greater than or equal to 1"]
    );
}

#[test]
fn status_is_written_only_through_its_subresource() {
    let r = v1();
    let mut created =
        json!({"metadata": {"name": "a"}, "spec": {"replicas": 2}, "status": {"ready": 1}});
    r.prepare_for_create(&mut created);
    assert!(created.get("status").is_none());

    let old = json!({"metadata": {"name": "a", "labels": {"x": "1"}}, "spec": {"replicas": 2}, "status": {"ready": 1}});
    let mut main =
        json!({"metadata": {"name": "a"}, "spec": {"replicas": 3}, "status": {"ready": 5}});
    r.prepare_for_update(&mut main, &old);
    assert_eq!(main["status"], json!({"ready": 1}));
    assert_eq!(main["spec"], json!({"replicas": 3}));

    let mut sub = json!({"metadata": {"name": "a", "resourceVersion": "7"}, "spec": {"replicas": 9}, "status": {"ready": 2}});
    assert!(r.prepare_for_subresource_update("status", &mut sub, &old));
    assert_eq!(sub["spec"], json!({"replicas": 2}));
    assert_eq!(sub["status"], json!({"ready": 2}));
    assert_eq!(sub["metadata"]["labels"], json!({"x": "1"}));
    assert_eq!(sub["metadata"]["resourceVersion"], json!("7"));
    assert!(!r.prepare_for_subresource_update("scale", &mut sub, &old));

    let errs = r.validate_subresource_update("status", &json!({"status": {"ready": -1}}), &old);
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert_eq!(errs[0].field, "status.ready");
}

#[test]
fn printer_columns_and_selectable_fields() {
    let r = v1();
    let names: Vec<String> = r.columns().iter().map(|c| c.name.to_string()).collect();
    assert_eq!(names, ["Name", "Spec", "Replicas", "Age"]);
    let obj = json!({"metadata": {"name": "a", "creationTimestamp": "2020-01-01T00:00:00Z"},
        "spec": {"cronSpec": "* * * * *", "replicas": 3, "color": "red"}});
    let cells = r.cells(&obj);
    assert_eq!(cells[..3], [json!("a"), json!("* * * * *"), json!(3)]);
    assert!(cells[3].as_str().unwrap().contains('y'), "{cells:?}");
    assert_eq!(r.field(&obj, "spec.color").as_deref(), Some("red"));
    assert!(!r.supports_field("spec.cronSpec"));

    // No columns defined: Name and Age, as upstream serves.
    let v2 = v2();
    let names: Vec<String> = v2.columns().iter().map(|c| c.name.to_string()).collect();
    assert_eq!(names, ["Name", "Age"]);
}

#[test]
fn stored_at_the_storage_version_and_served_at_each() {
    let stored = v2()
        .to_storage(json!({"apiVersion": "stable.example.com/v2", "kind": "CronTab", "spec": {}}))
        .unwrap();
    assert_eq!(stored["apiVersion"], "stable.example.com/v1");
    let served = v2().to_served(stored.clone()).unwrap();
    assert_eq!(served["apiVersion"], "stable.example.com/v2");
    assert!(!v2().stores_served_form());
    // Read back at v1, new defaults are filled in.
    let served = v1().to_served(stored).unwrap();
    assert_eq!(served["spec"]["replicas"], 1);
    assert!(v1().stores_served_form());
}

#[test]
fn a_terminating_crd_refuses_creates() {
    let c = crd(json!({"name": "v2", "served": false, "storage": false}));
    let r = CustomResource::new(&c, &c.spec.versions[0], true, Arc::new(Converter::of(&c)));
    match r.admit_create() {
        Err(Error::MethodNotAllowed { message, .. }) => assert_eq!(
            message.as_deref(),
            Some("create not allowed while custom resource definition is terminating")
        ),
        other => panic!("{other:?}"),
    }
    assert!(v1().admit_create().is_ok());
}
