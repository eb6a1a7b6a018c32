//! The protobuf form of a v1 Service (client-go's typed clients send it), decoded into the JSON
//! kube-apiserver would serialize: Go field order, `omitempty` left out. The canonical round
//! trip and the v1 defaults run on the result as on any JSON body. May use: api.

use crate::api::protobuf::{message, metadata, Obj, ProtobufError};
use k8s_pb::api::core::v1 as pb;
use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
use k8s_pb::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::{Map, Value};

/// Decodes the protobuf form of the object.
pub(super) fn from_protobuf(raw: &[u8]) -> Result<Map<String, Value>, ProtobufError> {
    Ok(service(message::<pb::Service>(raw, "Service")?).into_map())
}

/// An IntOrString: a number (type 0) or a string (type 1).
pub(crate) fn int_or_string(v: &IntOrString) -> Value {
    match v.r#type {
        Some(1) => Value::from(v.str_val.clone().unwrap_or_default()),
        _ => Value::from(v.int_val.unwrap_or(0)),
    }
}

/// A string field without omitempty: present even when empty or unset.
fn always(o: Obj, key: &str, v: &Option<String>) -> Obj {
    o.put(key, Value::from(v.clone().unwrap_or_default()))
}

/// A metav1.Condition.
fn condition(c: &meta::Condition) -> Obj {
    let o = always(Obj::default(), "type", &c.r#type);
    let o = always(o, "status", &c.status)
        .int("observedGeneration", c.observed_generation)
        .time("lastTransitionTime", &c.last_transition_time);
    always(always(o, "reason", &c.reason), "message", &c.message)
}

fn port(p: &pb::ServicePort) -> Obj {
    let o = Obj::default()
        .str("name", &p.name)
        .str("protocol", &p.protocol)
        .opt_str("appProtocol", &p.app_protocol)
        .put("port", p.port.unwrap_or(0).into());
    let o = match &p.target_port {
        Some(t) => o.put("targetPort", int_or_string(t)),
        None => o,
    };
    o.int("nodePort", p.node_port.map(i64::from))
}

fn spec(s: &pb::ServiceSpec) -> Obj {
    let affinity = s.session_affinity_config.as_ref().map(|c| {
        let client_ip = c
            .client_ip
            .as_ref()
            .map(|ip| Obj::default().opt_int("timeoutSeconds", ip.timeout_seconds.map(i64::from)));
        Obj::default().obj("clientIP", client_ip)
    });
    Obj::default()
        .list("ports", &s.ports, port)
        .str_map("selector", &s.selector)
        .str("clusterIP", &s.cluster_ip)
        .strs("clusterIPs", &s.cluster_ips)
        .str("type", &s.r#type)
        .strs("externalIPs", &s.external_ips)
        .str("sessionAffinity", &s.session_affinity)
        .str("loadBalancerIP", &s.load_balancer_ip)
        .strs("loadBalancerSourceRanges", &s.load_balancer_source_ranges)
        .str("externalName", &s.external_name)
        .str("externalTrafficPolicy", &s.external_traffic_policy)
        .int(
            "healthCheckNodePort",
            s.health_check_node_port.map(i64::from),
        )
        .bool("publishNotReadyAddresses", s.publish_not_ready_addresses)
        .obj("sessionAffinityConfig", affinity)
        .strs("ipFamilies", &s.ip_families)
        .opt_str("ipFamilyPolicy", &s.ip_family_policy)
        .opt_bool(
            "allocateLoadBalancerNodePorts",
            s.allocate_load_balancer_node_ports,
        )
        .opt_str("loadBalancerClass", &s.load_balancer_class)
        .opt_str("internalTrafficPolicy", &s.internal_traffic_policy)
        .opt_str("trafficDistribution", &s.traffic_distribution)
}

fn status(s: &pb::ServiceStatus) -> Obj {
    let ingress = |i: &pb::LoadBalancerIngress| {
        Obj::default()
            .str("ip", &i.ip)
            .str("hostname", &i.hostname)
            .opt_str("ipMode", &i.ip_mode)
            .list("ports", &i.ports, |p| {
                let o = Obj::default().put("port", p.port.unwrap_or(0).into());
                always(o, "protocol", &p.protocol).opt_str("error", &p.error)
            })
    };
    let lb = s
        .load_balancer
        .as_ref()
        .map(|lb| Obj::default().list("ingress", &lb.ingress, ingress))
        .unwrap_or_default();
    Obj::default()
        .obj("loadBalancer", Some(lb))
        .list("conditions", &s.conditions, condition)
}

fn service(s: pb::Service) -> Obj {
    metadata(&s.metadata)
        .obj("spec", s.spec.as_ref().map(spec))
        .obj("status", s.status.as_ref().map(status))
}
