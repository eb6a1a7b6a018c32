//! EndpointSlices (pkg/registry/discovery/endpointslice): the v1 port defaults, the strategy
//! (metadata.generation moved by any change but metadata's, labels included; the deprecated
//! topology dropped from v1 writes), validation (see [`super::validation`]) and the
//! Name/AddressType/Ports/Endpoints/Age table.
//! May use: registry (strategy, error, validation), api.

use super::super::network::{items, opt_str};
use super::validation::{validate_endpoint_slice, validate_endpoint_slice_update};
use super::GROUP;
use crate::api::protobuf::{message, metadata, object_reference, Obj, ProtobufError};
use crate::api::At;
use crate::registry::error::FieldError;
use crate::registry::strategy::{
    age_of, col, name_of, schema_of, text, typed_roundtrip, Column, Input, KindSchema, Names,
    ResourceInfo, Strategy, AGE_COLUMN, NAME_COLUMN, STORED_VERBS,
};
use crate::registry::validation::{name_errors, NameRule};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_pb::api::discovery::v1 as pb;
use serde_json::{json, Map, Value};

/// What discovery reports for endpointslices.
pub(crate) static INFO: ResourceInfo = ResourceInfo {
    group: text(GROUP),
    version: text("v1"),
    resource: text("endpointslices"),
    singular: text("endpointslice"),
    kind: text("EndpointSlice"),
    namespaced: true,
    short_names: Names::Static(&[]),
    categories: Names::Static(&[]),
    verbs: STORED_VERBS,
    subresources: &[],
    schema: KindSchema::Typed(schema_of::<EndpointSlice>),
    protobuf: Some(from_protobuf),
};

/// The label the deprecated topology kept a node's name under (corev1.LabelHostname).
const HOSTNAME_LABEL: &str = "kubernetes.io/hostname";

/// The endpointslice strategy.
pub(crate) struct EndpointSlices;

/// SetDefaults_EndpointPort: an unset name is "", an unset protocol TCP.
fn set_defaults(obj: &mut Value) {
    let Some(Value::Array(ports)) = obj.get_mut("ports") else {
        return;
    };
    for p in ports.iter_mut().filter_map(Value::as_object_mut) {
        p.entry("name").or_insert_with(|| Value::from(""));
        p.entry("protocol").or_insert_with(|| Value::from("TCP"));
    }
}

/// The node names a slice's deprecated topology recorded (getDeprecatedTopologyNodeNames).
fn topology_node_names(obj: Option<&Value>) -> Vec<String> {
    let Some(obj) = obj else {
        return Vec::new();
    };
    items(obj, "endpoints")
        .iter()
        .filter_map(|e| e.get("deprecatedTopology")?.get(HOSTNAME_LABEL)?.as_str())
        .map(str::to_string)
        .collect()
}

/// dropTopologyOnV1: a v1 write clears deprecatedTopology, unless it leaves the endpoints as
/// they were; a node name the old slice's topology recorded moves to `nodeName`.
fn drop_topology(new: &mut Value, old: Option<&Value>) {
    if old.is_some_and(|o| o.get("endpoints") == new.get("endpoints")) {
        return;
    }
    let previous = topology_node_names(old);
    let Some(Value::Array(endpoints)) = new.get_mut("endpoints") else {
        return;
    };
    for e in endpoints.iter_mut().filter_map(Value::as_object_mut) {
        let Some(topology) = e.remove("deprecatedTopology") else {
            continue;
        };
        let host = topology.get(HOSTNAME_LABEL).and_then(Value::as_str);
        if let Some(host) = host {
            let no_node = e.get("nodeName").is_none_or(Value::is_null);
            if no_node
                && previous.iter().any(|p| p == host)
                && name_errors(host, NameRule::Subdomain).is_empty()
            {
                e.insert("nodeName".into(), Value::from(host));
            }
        }
    }
}

impl Strategy for EndpointSlices {
    fn info(&self) -> &ResourceInfo {
        &INFO
    }

    fn canonicalize(&self, obj: Input<'_>) -> Result<(Value, Vec<String>), String> {
        let (mut obj, unknown) = typed_roundtrip::<EndpointSlice>(obj)?;
        set_defaults(&mut obj);
        Ok((obj, unknown))
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        drop_topology(obj, None);
    }

    /// PrepareForUpdate: a change of the labels moves the generation too (the store moves it
    /// for any other change but metadata's).
    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        drop_topology(new, Some(old));
        let same_content = crate::api::json::same_except(new, old, &["metadata"]);
        if same_content && new.at("/metadata/labels") != old.at("/metadata/labels") {
            let generation = old
                .at("/metadata/generation")
                .and_then(Value::as_i64)
                .unwrap_or(0)
                + 1;
            if let Some(meta) = new.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.insert("generation".into(), Value::from(generation));
            }
        }
    }

    fn validate(&self, obj: &Value) -> Vec<FieldError> {
        validate_endpoint_slice(obj)
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        validate_endpoint_slice_update(new, old)
    }

    fn uses_generation(&self) -> bool {
        true
    }

    /// endpointSliceColumnDefinitions and printEndpointSlice.
    fn columns(&self) -> Vec<Column> {
        vec![
            NAME_COLUMN,
            col("AddressType", "string", "addressType specifies the type of address carried by this EndpointSlice. All addresses in this slice must be the same type. This field is immutable after creation. The following address types are currently supported: * IPv4: Represents an IPv4 Address. * IPv6: Represents an IPv6 Address. * FQDN: Represents a Fully Qualified Domain Name."),
            col("Ports", "string", "ports specifies the list of network ports exposed by each endpoint in this slice. Each port must have a unique name. When ports is empty, it indicates that there are no defined ports. When a port is defined with a nil port value, it indicates \"all ports\". Each slice may include a maximum of 100 ports."),
            col("Endpoints", "string", "endpoints is a list of unique endpoints in this slice. Each slice may include a maximum of 1000 endpoints."),
            AGE_COLUMN,
        ]
    }

    fn cells(&self, obj: &Value) -> Vec<Value> {
        let ports: Vec<String> = items(obj, "ports")
            .iter()
            .map(|p| match p.get("port").and_then(Value::as_i64) {
                Some(n) => n.to_string(),
                None => opt_str(p, "name").map_or("*".into(), str::to_string),
            })
            .collect();
        let addresses: Vec<String> = items(obj, "endpoints")
            .iter()
            .flat_map(|e| items(e, "addresses"))
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect();
        vec![
            name_of(obj).into(),
            opt_str(obj, "addressType").unwrap_or("").into(),
            list_with_more(&ports).into(),
            list_with_more(&addresses).into(),
            age_of(obj),
        ]
    }
}

/// listWithMoreString with upstream's maximum of three: `a,b,c + 2 more...`, `<unset>` when
/// empty.
fn list_with_more(list: &[String]) -> String {
    const MAX: usize = 3;
    let shown = list[..list.len().min(MAX)].join(",");
    if list.len() > MAX {
        format!("{shown} + {} more...", list.len() - MAX)
    } else if shown.is_empty() {
        "<unset>".into()
    } else {
        shown
    }
}

/// Decodes the protobuf form of the object (client-go's typed clients send it).
pub(crate) fn from_protobuf(raw: &[u8]) -> Result<Map<String, Value>, ProtobufError> {
    Ok(endpoint_slice(message::<pb::EndpointSlice>(raw, "EndpointSlice")?).into_map())
}

fn endpoint(e: &pb::Endpoint) -> Obj {
    let conditions = e.conditions.as_ref().map_or_else(Obj::default, |c| {
        Obj::default()
            .opt_bool("ready", c.ready)
            .opt_bool("serving", c.serving)
            .opt_bool("terminating", c.terminating)
    });
    let hints = e.hints.as_ref().map(|h| {
        let named = |n: &Option<String>| json!({"name": n.clone().unwrap_or_default()});
        let o = Obj::default();
        let o = if h.for_zones.is_empty() {
            o
        } else {
            o.put(
                "forZones",
                h.for_zones.iter().map(|z| named(&z.name)).collect(),
            )
        };
        if h.for_nodes.is_empty() {
            o
        } else {
            o.put(
                "forNodes",
                h.for_nodes.iter().map(|n| named(&n.name)).collect(),
            )
        }
    });
    Obj::default()
        .put(
            "addresses",
            e.addresses.iter().cloned().map(Value::String).collect(),
        )
        .obj("conditions", Some(conditions))
        .opt_str("hostname", &e.hostname)
        .obj("targetRef", e.target_ref.as_ref().map(object_reference))
        .str_map("deprecatedTopology", &e.deprecated_topology)
        .opt_str("nodeName", &e.node_name)
        .opt_str("zone", &e.zone)
        .obj("hints", hints)
}

fn endpoint_slice(s: pb::EndpointSlice) -> Obj {
    let o = metadata(&s.metadata)
        .put(
            "addressType",
            Value::from(s.address_type.clone().unwrap_or_default()),
        )
        .put(
            "endpoints",
            Value::Array(
                s.endpoints
                    .iter()
                    .map(|e| Value::Object(endpoint(e).into_map()))
                    .collect(),
            ),
        );
    o.list("ports", &s.ports, |p| {
        Obj::default()
            .opt_str("name", &p.name)
            .opt_str("protocol", &p.protocol)
            .opt_int("port", p.port.map(i64::from))
            .opt_str("appProtocol", &p.app_protocol)
    })
}
