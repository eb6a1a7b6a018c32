//! Tests of Services: the v1 defaults, the IP-family bookkeeping, upstream's validation
//! messages and field paths (pkg/apis/core/validation), what kapi refuses and why, the status
//! strategy, the table, the protobuf decoder, and writes through the generic store.

use super::protobuf::from_protobuf;
use super::validation::NOT_SERVED;
use super::Services;
use crate::registry::error::{Error, FieldError};
use crate::registry::resources::protobuf_decoder;
use crate::registry::strategy::{Input, Strategy};
use crate::registry::tests::{create, ctx, make_ns, registry, store, timed};
use crate::registry::ListOptions;
use k8s_pb::api::core::v1 as pb;
use prost::Message;
use serde_json::{json, Value};

fn texts(errs: &[FieldError]) -> Vec<String> {
    errs.iter().map(ToString::to_string).collect()
}

fn service(spec: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "svc", "namespace": "ns"}, "spec": spec})
}

/// What the store validates on create: the canonical, defaulted, prepared form.
fn created(spec: Value) -> Value {
    let mut obj = Services
        .canonicalize(Input::Value(service(spec)))
        .unwrap()
        .0;
    Services.prepare_for_create(&mut obj);
    obj
}

fn errors(spec: Value) -> Vec<String> {
    texts(&Services.validate(&created(spec)))
}

fn headless() -> Value {
    json!({"clusterIP": "None", "ports": [{"port": 5432}]})
}

fn external() -> Value {
    json!({"type": "ExternalName", "externalName": "db.example.com"})
}

#[test]
fn headless_services_without_selector_are_served() {
    let obj = created(headless());
    let spec = &obj["spec"];
    assert_eq!(spec["type"], "ClusterIP");
    assert_eq!(spec["sessionAffinity"], "None");
    assert_eq!(spec["internalTrafficPolicy"], "Cluster");
    assert_eq!(spec["clusterIPs"], json!(["None"]));
    assert_eq!(spec["ipFamilyPolicy"], "RequireDualStack");
    assert_eq!(spec["ipFamilies"], json!(["IPv4", "IPv6"]));
    assert_eq!(
        spec["ports"][0],
        json!({"port": 5432, "protocol": "TCP", "targetPort": 5432})
    );
    assert_eq!(obj["status"], json!({"loadBalancer": {}}));
    assert_eq!(texts(&Services.validate(&obj)), Vec::<String>::new());
    // No ports at all is fine for a headless Service.
    assert_eq!(errors(json!({"clusterIP": "None"})), Vec::<String>::new());
    let single = created(json!({"clusterIP": "None", "ipFamilyPolicy": "SingleStack"}));
    assert_eq!(single["spec"]["ipFamilies"], json!(["IPv4"]));
    let v6 = created(json!({"clusterIP": "None", "ipFamilies": ["IPv6"]}));
    assert_eq!(v6["spec"]["ipFamilies"], json!(["IPv6", "IPv4"]));
    assert_eq!(
        errors(json!({"clusterIP": "None", "ipFamilyPolicy": "SingleStack",
            "ipFamilies": ["IPv4", "IPv6"]})),
        ["spec.ipFamilyPolicy: Invalid value: \"SingleStack\": must be 'RequireDualStack' or 'PreferDualStack' when multiple IP families are specified"]
    );
}

#[test]
fn external_name_services_are_served() {
    let obj = created(external());
    assert_eq!(obj["spec"]["sessionAffinity"], "None");
    assert!(obj["spec"].get("internalTrafficPolicy").is_none());
    assert!(obj["spec"].get("ipFamilyPolicy").is_none());
    assert!(obj["spec"].get("ipFamilies").is_none());
    assert_eq!(texts(&Services.validate(&obj)), Vec::<String>::new());
    assert_eq!(
        errors(json!({"type": "ExternalName", "externalName": "db.example.com."})),
        Vec::<String>::new()
    );
    assert_eq!(
        errors(json!({"type": "ExternalName"})),
        ["spec.externalName: Required value"]
    );
    let errs = errors(json!({"type": "ExternalName", "externalName": "Bad_Name"}));
    assert_eq!(errs.len(), 1);
    assert!(
        errs[0].starts_with(
            "spec.externalName: Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain"
        ),
        "{errs:?}"
    );
    // clusterIP fills clusterIPs on create, which an ExternalName Service may not have.
    assert_eq!(
        errors(json!({"type": "ExternalName", "externalName": "a.b", "clusterIP": "None"})),
        ["spec.clusterIPs: Forbidden: may not be set for ExternalName services"]
    );
    assert_eq!(
        errors(json!({"type": "ExternalName", "externalName": "a.b",
            "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack",
            "externalTrafficPolicy": "Local"})),
        [
            "spec.ipFamilies: Forbidden: may not be set for ExternalName services",
            "spec.ipFamilyPolicy: Forbidden: may not be set for ExternalName services",
            "spec.externalTrafficPolicy: Invalid value: \"Local\": may only be set for externally-accessible services",
        ]
    );
}

#[test]
fn what_needs_addresses_pods_or_proxies_is_refused() {
    let port = json!([{"port": 80}]);
    assert_eq!(
        errors(json!({"type": "NodePort", "ports": port})),
        [format!(
            "spec.type: Invalid value: \"NodePort\": {NOT_SERVED}"
        )]
    );
    assert_eq!(
        errors(json!({"type": "LoadBalancer", "ports": port})),
        [format!(
            "spec.type: Invalid value: \"LoadBalancer\": {NOT_SERVED}"
        )]
    );
    assert_eq!(
        errors(json!({"ports": port})),
        [format!(
            "spec.clusterIP: Invalid value: \"\": must be \"None\": {NOT_SERVED}"
        )]
    );
    assert_eq!(
        errors(json!({"clusterIP": "10.0.0.10", "ports": port})),
        [format!(
            "spec.clusterIP: Invalid value: \"10.0.0.10\": must be \"None\": {NOT_SERVED}"
        )]
    );
    assert_eq!(
        errors(json!({"clusterIP": "None", "selector": {"app": "db"}})),
        [format!(
            "spec.selector: Forbidden: must be empty: {NOT_SERVED}"
        )]
    );
    assert_eq!(
        errors(json!({"type": "Proxy", "externalName": "a.b"})),
        ["spec.ports: Required value", "spec.type: Unsupported value: \"Proxy\": supported values: \"ClusterIP\", \"ExternalName\", \"LoadBalancer\", \"NodePort\""]
    );
}

#[test]
fn ports_are_validated_as_upstream() {
    assert_eq!(
        errors(
            json!({"clusterIP": "None", "ports": [{"port": 80}, {"name": "dns", "port": 53, "protocol": "UDP"}]})
        ),
        ["spec.ports[0].name: Required value"]
    );
    assert_eq!(
        errors(json!({"clusterIP": "None", "ports": [
            {"name": "a", "port": 80}, {"name": "a", "port": 81}]})),
        ["spec.ports[1].name: Duplicate value: \"a\""]
    );
    assert_eq!(
        errors(json!({"clusterIP": "None", "ports": [
            {"name": "a", "port": 80}, {"name": "b", "port": 80}]})),
        ["spec.ports[1]: Duplicate value: core.ServicePort{Name:\"\", Protocol:\"TCP\", AppProtocol:(*string)(nil), Port:80, TargetPort:intstr.IntOrString{Type:0, IntVal:0, StrVal:\"\"}, NodePort:0}"]
    );
    assert_eq!(
        errors(json!({"clusterIP": "None", "ports": [
            {"name": "a", "port": 80}, {"name": "b", "port": 80, "protocol": "UDP"}]})),
        Vec::<String>::new()
    );
    assert_eq!(
        errors(json!({"clusterIP": "None", "ports": [{"port": 70000, "protocol": "HTTP",
            "targetPort": "8080", "nodePort": 30000, "appProtocol": "a b"}]})),
        [
            "spec.ports[0].port: Invalid value: 70000: must be between 1 and 65535, inclusive",
            "spec.ports[0].protocol: Unsupported value: \"HTTP\": supported values: \"SCTP\", \"TCP\", \"UDP\"",
            "spec.ports[0].targetPort: Invalid value: \"8080\": must contain at least one letter (a-z)",
            "spec.ports[0].appProtocol: Invalid value: \"a b\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
            "spec.ports[0].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'",
        ]
    );
    let named =
        created(json!({"clusterIP": "None", "ports": [{"port": 80, "targetPort": "http"}]}));
    assert_eq!(named["spec"]["ports"][0]["targetPort"], "http");
}

#[test]
fn session_affinity_and_external_ips() {
    let obj = created(json!({"clusterIP": "None", "sessionAffinity": "ClientIP"}));
    assert_eq!(
        obj["spec"]["sessionAffinityConfig"],
        json!({"clientIP": {"timeoutSeconds": 10800}})
    );
    assert_eq!(
        errors(json!({"clusterIP": "None", "sessionAffinity": "ClientIP",
            "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 0}}})),
        ["spec.sessionAffinityConfig.clientIP.timeoutSeconds: Invalid value: 0: must be greater than 0 and less than 86400"]
    );
    assert_eq!(
        errors(json!({"clusterIP": "None", "sessionAffinity": "Sticky"})),
        ["spec.sessionAffinity: Unsupported value: \"Sticky\": supported values: \"ClientIP\", \"None\""]
    );
    let with_ips = created(json!({"clusterIP": "None", "externalIPs": ["127.0.0.1", "x"]}));
    assert_eq!(with_ips["spec"]["externalTrafficPolicy"], "Cluster");
    assert_eq!(
        texts(&Services.validate(&with_ips)),
        [
            "spec.externalIPs[0]: Invalid value: \"127.0.0.1\": may not be in the loopback range (127.0.0.0/8, ::1/128)",
            "spec.externalIPs[1]: Invalid value: \"x\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
        ]
    );
}

#[test]
fn cluster_ips_follow_cluster_ip() {
    assert_eq!(
        errors(json!({"clusterIP": "None", "clusterIPs": ["None", "10.0.0.1"]})),
        ["spec.ports: Required value", "spec.clusterIPs: Invalid value: []string{\"None\", \"10.0.0.1\"}: 'None' must be the first and only value"]
    );
    let errs = errors(json!({"clusterIPs": ["None"]}));
    assert_eq!(
        errs[0],
        "spec.clusterIPs: Invalid value: []string{\"None\"}: must be empty when `clusterIP` is not specified"
    );
}

#[test]
fn the_name_is_a_dns_1035_label() {
    assert_eq!(
        Services.name_rule(),
        crate::registry::validation::NameRule::Dns1035Label
    );
}

#[test]
fn an_update_to_external_name_drops_the_cluster_ip_fields() {
    let old = created(headless());
    let mut new = old.clone();
    new["spec"]["type"] = json!("ExternalName");
    new["spec"]["externalName"] = json!("db.example.com");
    Services.prepare_for_update(&mut new, &old);
    for key in ["clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"] {
        assert!(new["spec"].get(key).is_none(), "{key}: {new}");
    }
    assert_eq!(
        texts(&Services.validate_update(&new, &old)),
        Vec::<String>::new()
    );
    // And back: a resubmitted headless manifest gets its families again.
    let mut back = Services
        .canonicalize(Input::Value(service(headless())))
        .unwrap()
        .0;
    Services.prepare_for_update(&mut back, &new);
    assert_eq!(back["spec"]["clusterIPs"], json!(["None"]));
    assert_eq!(back["spec"]["ipFamilyPolicy"], "RequireDualStack");
    assert_eq!(
        texts(&Services.validate_update(&back, &new)),
        Vec::<String>::new()
    );
    // A client that leaves clusterIP out keeps the old one.
    let mut resubmitted = Services
        .canonicalize(Input::Value(service(json!({"ports": [{"port": 5432}]}))))
        .unwrap()
        .0;
    Services.prepare_for_update(&mut resubmitted, &old);
    assert_eq!(resubmitted["spec"]["clusterIP"], "None");
    assert_eq!(
        texts(&Services.validate_update(&resubmitted, &old)),
        Vec::<String>::new()
    );
}

#[test]
fn status_keeps_the_spec_and_refuses_ingress() {
    let old = created(headless());
    let mut new = old.clone();
    new["spec"]["clusterIP"] = json!("10.0.0.1");
    new["status"] = json!({"loadBalancer": {"ingress": [{"ip": "1.2.3.4"}]}});
    assert!(Services.prepare_for_subresource_update("status", &mut new, &old));
    assert_eq!(new["spec"], old["spec"]);
    assert_eq!(
        texts(&Services.validate_subresource_update("status", &new, &old)),
        ["status.loadBalancer.ingress: Forbidden: may only be used when `spec.type` is 'LoadBalancer'"]
    );
    new["status"] = json!({"loadBalancer": {}, "conditions": [{"type": "Ready",
        "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z", "reason": "R", "message": ""}]});
    assert_eq!(
        texts(&Services.validate_subresource_update("status", &new, &old)),
        Vec::<String>::new()
    );
    assert!(!Services.prepare_for_subresource_update("scale", &mut new, &old));
}

#[test]
fn the_table_is_the_printers() {
    let cols: Vec<(String, i32)> = Services
        .columns()
        .iter()
        .map(|c| (c.name.to_string(), c.priority))
        .collect();
    assert_eq!(
        cols,
        [
            ("Name".into(), 0),
            ("Type".into(), 0),
            ("Cluster-IP".into(), 0),
            ("External-IP".into(), 0),
            ("Port(s)".into(), 0),
            ("Age".into(), 0),
            ("Selector".into(), 1)
        ]
    );
    let cells = Services.cells(&created(external()));
    assert_eq!(
        cells[..5],
        [
            json!("svc"),
            json!("ExternalName"),
            json!("<none>"),
            json!("db.example.com"),
            json!("<none>")
        ]
    );
    assert_eq!(cells[6], "<none>");
    let cells = Services.cells(&created(json!({"clusterIP": "None", "ports": [
        {"name": "a", "port": 80}, {"name": "b", "port": 53, "protocol": "UDP"}]})));
    assert_eq!(
        cells[1..5],
        [
            json!("ClusterIP"),
            json!("None"),
            json!("<none>"),
            json!("80/TCP,53/UDP")
        ]
    );
}

#[test]
fn field_selectors_cover_type_and_cluster_ip() {
    let obj = created(headless());
    assert!(Services.supports_field("spec.type"));
    assert!(Services.supports_field("spec.clusterIP"));
    assert!(!Services.supports_field("spec.externalName"));
    assert_eq!(
        Services.field(&obj, "spec.type").as_deref(),
        Some("ClusterIP")
    );
    assert_eq!(
        Services.field(&obj, "spec.clusterIP").as_deref(),
        Some("None")
    );
}

#[test]
fn protobuf_decodes_as_json_would() {
    let s = pb::Service {
        metadata: Some(k8s_pb::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            name: Some("db".into()),
            namespace: Some("ns".into()),
            ..Default::default()
        }),
        spec: Some(pb::ServiceSpec {
            ports: vec![pb::ServicePort {
                name: Some("pg".into()),
                port: Some(5432),
                target_port: Some(k8s_pb::apimachinery::pkg::util::intstr::IntOrString {
                    r#type: Some(1),
                    int_val: None,
                    str_val: Some("pg".into()),
                }),
                ..Default::default()
            }],
            cluster_ip: Some("None".into()),
            r#type: Some("ClusterIP".into()),
            ..Default::default()
        }),
        status: None,
    };
    let decoded = Value::Object(from_protobuf(&s.encode_to_vec()).unwrap());
    assert_eq!(
        decoded,
        json!({"metadata": {"name": "db", "namespace": "ns"}, "spec": {
            "ports": [{"name": "pg", "port": 5432, "targetPort": "pg"}],
            "clusterIP": "None", "type": "ClusterIP"}})
    );
    let gvk = crate::api::GroupVersionKind::new("", "v1", "Service");
    assert!(protobuf_decoder(&gvk).is_some());
}

#[tokio::test]
async fn store_serves_headless_and_external_name_services() {
    let (_d, r) = registry().await;
    timed(make_ns(&r, "ns")).await;
    let s = store(&r, "", "v1", "services");
    let c = ctx("ns");
    let mut db = service(headless());
    db["metadata"]["name"] = json!("db");
    let db = timed(create(s, &c, db)).await.unwrap();
    assert_eq!(db["spec"]["ipFamilies"], json!(["IPv4", "IPv6"]));
    let mut alias = service(external());
    alias["metadata"]["name"] = json!("alias");
    timed(create(s, &c, alias)).await.unwrap();
    let list = timed(s.list(&c, &ListOptions::default())).await.unwrap();
    let names: Vec<&Value> = list
        .items
        .iter()
        .map(|i| &i.obj["metadata"]["name"])
        .collect();
    assert_eq!(names, [&json!("alias"), &json!("db")]);
    let mut bad = service(json!({"type": "NodePort", "ports": [{"port": 80}]}));
    bad["metadata"]["name"] = json!("9web");
    let Err(Error::Invalid { kind, errors, .. }) = timed(create(s, &c, bad)).await else {
        panic!("created")
    };
    assert_eq!(kind, "Service");
    assert_eq!(
        texts(&errors),
        [
            "metadata.name: Invalid value: \"9web\": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')".to_string(),
            format!("spec.type: Invalid value: \"NodePort\": {NOT_SERVED}"),
        ]
    );
}
