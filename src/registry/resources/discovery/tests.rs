//! Tests of EndpointSlices: the v1 defaults, upstream's validation messages and field paths
//! (pkg/apis/discovery/validation), the strategy (generation, deprecated topology), the table,
//! the protobuf decoder, discovery order, and writes through the generic store.

use super::endpointslices::{from_protobuf, EndpointSlices};
use super::GROUP;
use crate::registry::error::{Error, FieldError};
use crate::registry::resources::{built_in, protobuf_decoder};
use crate::registry::strategy::{Input, Strategy};
use crate::registry::tests::{create, ctx, make_ns, registry, store, timed};
use k8s_pb::api::discovery::v1 as pb;
use prost::Message;
use serde_json::{json, Value};

fn texts(errs: &[FieldError]) -> Vec<String> {
    errs.iter().map(ToString::to_string).collect()
}

fn slice(address_type: &str, endpoints: Value, ports: Value) -> Value {
    json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": "db-1", "namespace": "ns",
            "labels": {"kubernetes.io/service-name": "db"}},
        "addressType": address_type, "endpoints": endpoints, "ports": ports})
}

fn canonical(obj: Value) -> Value {
    let mut obj = EndpointSlices.canonicalize(Input::Value(obj)).unwrap().0;
    EndpointSlices.prepare_for_create(&mut obj);
    obj
}

fn errors(obj: Value) -> Vec<String> {
    texts(&EndpointSlices.validate(&canonical(obj)))
}

fn valid() -> Value {
    slice(
        "IPv4",
        json!([{"addresses": ["10.1.2.3"], "conditions": {"ready": true}, "hostname": "db-0"}]),
        json!([{"name": "pg", "port": 5432}]),
    )
}

#[test]
fn a_valid_slice_gets_the_port_defaults() {
    let obj = canonical(valid());
    assert_eq!(
        obj["ports"][0],
        json!({"name": "pg", "port": 5432, "protocol": "TCP"})
    );
    assert_eq!(texts(&EndpointSlices.validate(&obj)), Vec::<String>::new());
    let unnamed = canonical(slice("FQDN", json!([]), json!([{"port": 53}])));
    assert_eq!(unnamed["ports"][0]["name"], "");
}

#[test]
fn address_type_is_required_known_and_immutable() {
    assert_eq!(
        errors(slice("", json!([]), json!([]))),
        ["addressType: Required value"]
    );
    assert_eq!(
        errors(slice("IP", json!([]), json!([]))),
        ["addressType: Unsupported value: \"IP\": supported values: \"FQDN\", \"IPv4\", \"IPv6\""]
    );
    let old = canonical(valid());
    let mut new = old.clone();
    new["addressType"] = json!("IPv6");
    new["endpoints"] = json!([{"addresses": ["2001:db8::1"]}]);
    assert_eq!(
        texts(&EndpointSlices.validate_update(&new, &old)),
        ["addressType: Invalid value: \"IPv6\": field is immutable"]
    );
}

#[test]
fn addresses_must_fit_the_type() {
    assert_eq!(
        errors(slice(
            "IPv4",
            json!([{"addresses": ["2001:db8::1", "127.0.0.1"]}, {"addresses": []}]),
            json!([])
        )),
        [
            "endpoints[0].addresses[0]: Invalid value: \"2001:db8::1\": must be a valid IPv4 address",
            "endpoints[0].addresses[1]: Invalid value: \"127.0.0.1\": may not be in the loopback range (127.0.0.0/8, ::1/128)",
            "endpoints[1].addresses: Required value: must contain at least 1 address",
        ]
    );
    assert_eq!(
        errors(slice(
            "IPv6",
            json!([{"addresses": ["10.0.0.1"]}]),
            json!([])
        )),
        ["endpoints[0].addresses[0]: Invalid value: \"10.0.0.1\": must be a valid IPv6 address"]
    );
    assert_eq!(
        errors(slice(
            "FQDN",
            json!([{"addresses": ["db.example.com", "db"]}]),
            json!([])
        )),
        ["endpoints[0].addresses[1]: Invalid value: \"db\": should be a domain with at least two segments separated by dots"]
    );
}

#[test]
fn limits_are_upstreams() {
    let addresses: Vec<String> = (0..101)
        .map(|i| format!("10.0.{}.{}", i / 200, i % 200 + 1))
        .collect();
    assert_eq!(
        errors(slice("IPv4", json!([{"addresses": addresses}]), json!([]))),
        ["endpoints[0].addresses: Too many: 101: must have at most 100 items"]
    );
    let endpoints: Vec<Value> = (0..1001)
        .map(|i| json!({"addresses": [format!("10.{}.{}.1", i / 250, i % 250)]}))
        .collect();
    assert_eq!(
        errors(slice("IPv4", json!(endpoints), json!([]))),
        ["endpoints: Too many: 1001: must have at most 1000 items"]
    );
}

#[test]
fn endpoint_fields_and_hints() {
    assert_eq!(
        errors(slice(
            "IPv4",
            json!([{"addresses": ["10.0.0.1"], "hostname": "Db_0", "nodeName": "Node_1",
                "hints": {"forZones": [{"name": "a"}, {"name": "a"}],
                    "forNodes": [{"name": "n1"}]}}]),
            json!([])
        )),
        [
            "endpoints[0].nodeName: Invalid value: \"Node_1\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
            "endpoints[0].hostname: Invalid value: \"Db_0\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
            "endpoints[0].hints.forZones[1].name: Duplicate value: \"a\"",
        ]
    );
    let zones: Vec<Value> = (0..9).map(|i| json!({"name": format!("z{i}")})).collect();
    assert_eq!(
        errors(slice(
            "IPv4",
            json!([{"addresses": ["10.0.0.1"], "hints": {"forZones": zones}}]),
            json!([])
        )),
        ["endpoints[0].hints.forZones: Too many: 9: must have at most 8 items"]
    );
}

#[test]
fn ports_have_unique_names_and_known_protocols() {
    assert_eq!(
        errors(slice(
            "IPv4",
            json!([]),
            json!([{"name": "a", "port": 1}, {"name": "a", "port": 2, "protocol": "ICMP"},
                {"port": 3}, {"port": 4, "appProtocol": "a b"}])
        )),
        [
            "ports[1].name: Duplicate value: \"a\"",
            "ports[1].protocol: Unsupported value: \"ICMP\": supported values: \"SCTP\", \"TCP\", \"UDP\"",
            "ports[3].name: Duplicate value: \"\"",
            "ports[3].appProtocol: Invalid value: \"a b\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
        ]
    );
}

#[test]
fn v1_writes_drop_the_deprecated_topology() {
    let obj = canonical(slice(
        "IPv4",
        json!([{"addresses": ["10.0.0.1"],
            "deprecatedTopology": {"kubernetes.io/hostname": "node-a"}}]),
        json!([]),
    ));
    assert!(obj["endpoints"][0].get("deprecatedTopology").is_none());
    // An update that changes the endpoints keeps a node name the old topology recorded.
    let mut old = obj.clone();
    old["endpoints"][0]["deprecatedTopology"] = json!({"kubernetes.io/hostname": "node-a"});
    let mut new = old.clone();
    new["endpoints"][0]["addresses"] = json!(["10.0.0.2"]);
    EndpointSlices.prepare_for_update(&mut new, &old);
    assert_eq!(new["endpoints"][0]["nodeName"], "node-a");
    assert!(new["endpoints"][0].get("deprecatedTopology").is_none());
    // One that leaves them alone keeps the topology.
    let mut same = old.clone();
    EndpointSlices.prepare_for_update(&mut same, &old);
    assert_eq!(same["endpoints"], old["endpoints"]);
}

#[test]
fn the_table_lists_up_to_three() {
    let cols: Vec<String> = EndpointSlices
        .columns()
        .iter()
        .map(|c| c.name.to_string())
        .collect();
    assert_eq!(cols, ["Name", "AddressType", "Ports", "Endpoints", "Age"]);
    let obj = canonical(slice(
        "IPv4",
        json!([{"addresses": ["10.0.0.1", "10.0.0.2"]}, {"addresses": ["10.0.0.3", "10.0.0.4", "10.0.0.5"]}]),
        json!([{"port": 80}, {"name": "dns"}, {}, {"port": 9}]),
    ));
    let cells = EndpointSlices.cells(&obj);
    assert_eq!(
        cells[..4],
        [
            json!("db-1"),
            json!("IPv4"),
            json!("80,dns, + 1 more..."),
            json!("10.0.0.1,10.0.0.2,10.0.0.3 + 2 more...")
        ]
    );
    let empty = canonical(slice("FQDN", json!([]), json!([])));
    assert_eq!(
        EndpointSlices.cells(&empty)[2..4],
        [json!("<unset>"), json!("<unset>")]
    );
}

#[test]
fn protobuf_decodes_as_json_would() {
    let s = pb::EndpointSlice {
        metadata: Some(k8s_pb::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            name: Some("db-1".into()),
            ..Default::default()
        }),
        address_type: Some("IPv4".into()),
        endpoints: vec![pb::Endpoint {
            addresses: vec!["10.0.0.1".into()],
            conditions: Some(pb::EndpointConditions {
                ready: Some(true),
                ..Default::default()
            }),
            ..Default::default()
        }],
        ports: vec![pb::EndpointPort {
            name: Some("pg".into()),
            port: Some(5432),
            ..Default::default()
        }],
    };
    let decoded = Value::Object(from_protobuf(&s.encode_to_vec()).unwrap());
    assert_eq!(
        decoded,
        json!({"metadata": {"name": "db-1"}, "addressType": "IPv4",
            "endpoints": [{"addresses": ["10.0.0.1"], "conditions": {"ready": true}}],
            "ports": [{"name": "pg", "port": 5432}]})
    );
    let gvk = crate::api::GroupVersionKind::new(GROUP, "v1", "EndpointSlice");
    assert!(protobuf_decoder(&gvk).is_some());
}

#[test]
fn discovery_lists_the_group_after_apiextensions() {
    let groups: Vec<String> = built_in()
        .iter()
        .map(|b| b.info().group.to_string())
        .collect();
    let at = |g: &str| groups.iter().position(|x| x == g).unwrap();
    assert!(at("apiextensions.k8s.io") < at(GROUP));
    assert_eq!(groups.last().map(String::as_str), Some(GROUP));
    let core: Vec<String> = built_in()
        .iter()
        .map(|b| b.info())
        .filter(|i| i.group.is_empty())
        .map(|i| i.resource.to_string())
        .collect();
    let at = |r: &str| core.iter().position(|x| x == r).unwrap();
    assert_eq!(at("services"), at("serviceaccounts") + 1);
}

#[tokio::test]
async fn store_moves_the_generation_on_labels_and_content() {
    let (_d, r) = registry().await;
    timed(make_ns(&r, "ns")).await;
    let s = store(&r, GROUP, "v1", "endpointslices");
    let c = ctx("ns");
    let created = timed(create(s, &c, valid())).await.unwrap();
    assert_eq!(created["metadata"]["generation"], 1);
    let mut relabelled = created.clone();
    relabelled["metadata"]["labels"]["extra"] = json!("x");
    let t = move |_: Option<&Value>| Ok(relabelled.clone());
    let updated = timed(s.update(&c, "db-1", "", false, &t)).await.unwrap();
    assert_eq!(updated.object.obj["metadata"]["generation"], 2);
    let mut annotated = updated.object.obj.clone();
    annotated["metadata"]["annotations"] = json!({"a": "b"});
    let t = move |_: Option<&Value>| Ok(annotated.clone());
    let updated = timed(s.update(&c, "db-1", "", false, &t)).await.unwrap();
    assert_eq!(updated.object.obj["metadata"]["generation"], 2);
    let mut moved = updated.object.obj.clone();
    moved["endpoints"][0]["addresses"] = json!(["10.1.2.4"]);
    let t = move |_: Option<&Value>| Ok(moved.clone());
    let updated = timed(s.update(&c, "db-1", "", false, &t)).await.unwrap();
    assert_eq!(updated.object.obj["metadata"]["generation"], 3);
    let mut bad = slice("IPv4", json!([{"addresses": ["0.0.0.0"]}]), json!([]));
    bad["metadata"]["name"] = json!("db-2");
    let Err(Error::Invalid { kind, errors, .. }) = timed(create(s, &c, bad)).await else {
        panic!("created")
    };
    assert_eq!(kind, "EndpointSlice");
    assert_eq!(
        texts(&errors),
        ["endpoints[0].addresses[0]: Invalid value: \"0.0.0.0\": may not be unspecified (0.0.0.0)"]
    );
}
