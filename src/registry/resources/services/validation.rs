//! ValidateService and ValidateServiceStatusUpdate (pkg/apis/core/validation), with upstream's
//! messages and field paths, plus what kapi cannot serve: a NodePort or LoadBalancer Service,
//! or a ClusterIP Service that is not headless or has a selector, is Invalid with the reason.
//! The checks that only concern allocated addresses (dual-stack pairs, an IP against its
//! family) are left out: such Services are refused before they matter. Works on the canonical
//! JSON of an object, after [`super::prepare`]. May use: registry (error, validation), api.

use super::super::network::{
    dns1123_label, dns1123_subdomain, duplicate, duplicate_raw, endpoint_ip, go_strings, ip, items,
    opt_str, port_number, port_number_or_name, protocol, qualified_name, strings,
};
use super::prepare::{externally_accessible, NONE};
use crate::api::At;
use crate::registry::error::FieldError;
use crate::registry::validation::validate_labels;
use serde_json::Value;

/// Why kapi refuses every Service but the two kinds it serves.
pub(super) const NOT_SERVED: &str = "kapi has no cluster IPs, pods or proxies: only ExternalName Services and headless Services (clusterIP: None) without a selector are served";

/// supportedServiceType, sorted.
const TYPES: [&str; 4] = ["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"];
/// supportedSessionAffinityType, sorted.
const SESSION_AFFINITIES: [&str; 2] = ["ClientIP", "None"];
/// supportedServiceIPFamily, sorted.
const IP_FAMILIES: [&str; 2] = ["IPv4", "IPv6"];
/// supportedServiceIPFamilyPolicy, sorted.
const IP_FAMILY_POLICIES: [&str; 3] = ["PreferDualStack", "RequireDualStack", "SingleStack"];
/// The traffic policies (external and internal), sorted.
const TRAFFIC_POLICIES: [&str; 2] = ["Cluster", "Local"];
/// The traffic distributions.
const TRAFFIC_DISTRIBUTIONS: [&str; 3] = ["PreferClose", "PreferSameZone", "PreferSameNode"];
/// MaxClientIPServiceAffinitySeconds.
const MAX_AFFINITY_SECONDS: i64 = 86400;

const TOPOLOGY_MODE: &str = "service.kubernetes.io/topology-mode";
const TOPOLOGY_HINTS: &str = "service.kubernetes.io/topology-aware-hints";
const SOURCE_RANGES: &str = "service.beta.kubernetes.io/load-balancer-source-ranges";

/// A Service's spec, with its type.
struct Spec<'a> {
    spec: &'a Value,
    ty: &'a str,
}

impl<'a> Spec<'a> {
    fn str(&self, key: &str) -> &'a str {
        opt_str(self.spec, key).unwrap_or("")
    }

    fn set(&self, key: &str) -> bool {
        self.spec.get(key).is_some_and(|v| !v.is_null())
    }

    /// isHeadlessService: clusterIPs is exactly `["None"]`.
    fn headless(&self) -> bool {
        strings(self.spec, "clusterIPs") == [NONE]
    }
}

/// ValidateService (object meta is the store's).
pub(super) fn validate_service(obj: &Value) -> Vec<FieldError> {
    let spec_value = obj.get("spec").unwrap_or(&Value::Null);
    let s = Spec {
        spec: spec_value,
        ty: opt_str(spec_value, "type").unwrap_or(""),
    };
    let mut errs = Vec::new();
    let annotations = obj.at("/metadata/annotations");
    let annotation = |key: &str| annotations.and_then(|a| a.get(key)).and_then(Value::as_str);
    if let (Some(mode), Some(hints)) = (annotation(TOPOLOGY_MODE), annotation(TOPOLOGY_HINTS)) {
        if mode != hints {
            errs.push(FieldError::invalid(
                format!("metadata.annotations[{TOPOLOGY_MODE}]"),
                mode,
                format!("must match annotations[{TOPOLOGY_HINTS}] when both are specified"),
            ));
        }
    }
    let ports = items(s.spec, "ports");
    if ports.is_empty() && !s.headless() && s.ty != "ExternalName" {
        errs.push(FieldError::required("spec.ports", ""));
    }
    errs.extend(validate_type_fields(&s));
    let mut names: Vec<&str> = Vec::new();
    for (i, p) in ports.iter().enumerate() {
        errs.extend(validate_port(p, ports.len() > 1, &mut names, i));
    }
    if let Some(selector) = s.spec.get("selector") {
        errs.extend(validate_labels(Some(selector), "spec.selector"));
    }
    errs.extend(validate_session_affinity(&s));
    errs.extend(validate_cluster_ips(&s));
    for (i, addr) in strings(s.spec, "externalIPs").into_iter().enumerate() {
        let at = format!("spec.externalIPs[{i}]");
        let bad = ip(&at, addr);
        if bad.is_empty() {
            errs.extend(endpoint_ip(&at, addr));
        } else {
            errs.extend(bad);
        }
    }
    if s.ty.is_empty() {
        errs.push(FieldError::required("spec.type", ""));
    } else if !TYPES.contains(&s.ty) {
        errs.push(FieldError::not_supported("spec.type", s.ty, &TYPES));
    } else {
        errs.extend(refuse_unserved(&s));
    }
    errs.extend(validate_port_uniqueness(&s, ports));
    errs.extend(validate_load_balancer_fields(&s, annotation(SOURCE_RANGES)));
    errs.extend(validate_traffic(&s, obj));
    errs.extend(validate_ip_family_policy(&s));
    errs
}

/// What kapi cannot serve, once the type is a known one.
fn refuse_unserved(s: &Spec<'_>) -> Vec<FieldError> {
    match s.ty {
        "NodePort" | "LoadBalancer" => vec![FieldError::invalid("spec.type", s.ty, NOT_SERVED)],
        "ClusterIP" => {
            let mut errs = Vec::new();
            let cluster_ip = s.str("clusterIP");
            if cluster_ip != NONE {
                errs.push(FieldError::invalid(
                    "spec.clusterIP",
                    cluster_ip,
                    format!("must be \"None\": {NOT_SERVED}"),
                ));
            }
            let selector = s.spec.get("selector").and_then(Value::as_object);
            if selector.is_some_and(|m| !m.is_empty()) {
                errs.push(FieldError::forbidden(
                    "spec.selector",
                    format!("must be empty: {NOT_SERVED}"),
                ));
            }
            errs
        }
        _ => Vec::new(),
    }
}

/// The per-type checks of ValidateService's `switch service.Spec.Type`.
fn validate_type_fields(s: &Spec<'_>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    match s.ty {
        "LoadBalancer" | "NodePort" if s.headless() => errs.push(FieldError::invalid(
            "spec.clusterIPs[0]",
            NONE,
            format!("may not be set to 'None' for {} services", s.ty),
        )),
        "ExternalName" => {
            if !items(s.spec, "clusterIPs").is_empty() {
                errs.push(FieldError::forbidden(
                    "spec.clusterIPs",
                    "may not be set for ExternalName services",
                ));
            }
            if !items(s.spec, "ipFamilies").is_empty() {
                errs.push(FieldError::forbidden(
                    "spec.ipFamilies",
                    "may not be set for ExternalName services",
                ));
            }
            if s.set("ipFamilyPolicy") {
                errs.push(FieldError::forbidden(
                    "spec.ipFamilyPolicy",
                    "may not be set for ExternalName services",
                ));
            }
            // A CNAME may end with a dot to say it is fully qualified.
            let cname = s.str("externalName");
            let cname = cname.strip_suffix('.').unwrap_or(cname);
            if cname.is_empty() {
                errs.push(FieldError::required("spec.externalName", ""));
            } else {
                errs.extend(dns1123_subdomain("spec.externalName", cname));
            }
        }
        _ => {}
    }
    errs
}

/// validateServicePort.
fn validate_port<'a>(
    p: &'a Value,
    require_name: bool,
    names: &mut Vec<&'a str>,
    i: usize,
) -> Vec<FieldError> {
    let at = format!("spec.ports[{i}]");
    let mut errs = Vec::new();
    let name = opt_str(p, "name").unwrap_or("");
    if require_name && name.is_empty() {
        errs.push(FieldError::required(format!("{at}.name"), ""));
    } else if !name.is_empty() {
        errs.extend(dns1123_label(&format!("{at}.name"), name));
        if names.contains(&name) {
            errs.push(duplicate(format!("{at}.name"), name));
        } else {
            names.push(name);
        }
    }
    let port = p.get("port").and_then(Value::as_i64).unwrap_or(0);
    errs.extend(port_number(&format!("{at}.port"), port));
    errs.extend(protocol(&format!("{at}.protocol"), opt_str(p, "protocol")));
    let target = p.get("targetPort").unwrap_or(&Value::Null);
    errs.extend(port_number_or_name(&format!("{at}.targetPort"), target));
    if let Some(app) = opt_str(p, "appProtocol") {
        errs.extend(qualified_name(&format!("{at}.appProtocol"), app));
    }
    errs
}

/// sessionAffinity and validateClientIPAffinityConfig.
fn validate_session_affinity(s: &Spec<'_>) -> Vec<FieldError> {
    let affinity = s.str("sessionAffinity");
    let config = s.spec.get("sessionAffinityConfig").filter(|c| !c.is_null());
    match affinity {
        "" => vec![FieldError::required("spec.sessionAffinity", "")],
        "ClientIP" => {
            let required = |path: &str| {
                vec![FieldError::required(
                    path,
                    "when session affinity type is ClientIP",
                )]
            };
            let Some(config) = config else {
                return required("spec.sessionAffinityConfig");
            };
            let Some(client_ip) = config.get("clientIP").filter(|c| !c.is_null()) else {
                return required("spec.sessionAffinityConfig.clientIP");
            };
            let path = "spec.sessionAffinityConfig.clientIP.timeoutSeconds";
            match client_ip.get("timeoutSeconds").and_then(Value::as_i64) {
                None => required(path),
                Some(t) if t <= 0 || t > MAX_AFFINITY_SECONDS => {
                    vec![FieldError::invalid_raw(
                        path,
                        t,
                        format!("must be greater than 0 and less than {MAX_AFFINITY_SECONDS}"),
                    )]
                }
                Some(_) => Vec::new(),
            }
        }
        "None" if config.is_some() => vec![FieldError::forbidden(
            "spec.sessionAffinityConfig",
            "must not be set when session affinity is None",
        )],
        "None" => Vec::new(),
        other => vec![FieldError::not_supported(
            "spec.sessionAffinity",
            other,
            &SESSION_AFFINITIES,
        )],
    }
}

/// ValidateServiceClusterIPsRelatedFields, up to the dual-stack checks (which only concern
/// addresses kapi refuses).
fn validate_cluster_ips(s: &Spec<'_>) -> Vec<FieldError> {
    if s.ty == "ExternalName" {
        return Vec::new();
    }
    let mut errs = Vec::new();
    let cluster_ip = s.str("clusterIP");
    let ips = strings(s.spec, "clusterIPs");
    if !cluster_ip.is_empty() {
        if ips.is_empty() {
            errs.push(FieldError::required("spec.clusterIPs", ""));
        } else if ips[0] != cluster_ip {
            errs.push(FieldError::invalid_raw(
                "spec.clusterIPs",
                go_strings(&ips),
                "first value must match `clusterIP`",
            ));
        }
    } else if !ips.is_empty() {
        errs.push(FieldError::invalid_raw(
            "spec.clusterIPs",
            go_strings(&ips),
            "must be empty when `clusterIP` is not specified",
        ));
    }
    let mut seen: Vec<&str> = Vec::new();
    for (i, family) in strings(s.spec, "ipFamilies").into_iter().enumerate() {
        let at = format!("spec.ipFamilies[{i}]");
        if !IP_FAMILIES.contains(&family) {
            errs.push(FieldError::not_supported(&at, family, &IP_FAMILIES));
        }
        if seen.contains(&family) {
            errs.push(duplicate(at, family));
        }
        seen.push(family);
    }
    if let Some(policy) = opt_str(s.spec, "ipFamilyPolicy") {
        if !IP_FAMILY_POLICIES.contains(&policy) {
            errs.push(FieldError::not_supported(
                "spec.ipFamilyPolicy",
                policy,
                &IP_FAMILY_POLICIES,
            ));
        }
    }
    for (i, addr) in ips.iter().enumerate() {
        if i == 0 && *addr == NONE {
            if ips.len() > 1 {
                errs.push(FieldError::invalid_raw(
                    "spec.clusterIPs",
                    go_strings(&ips),
                    "'None' must be the first and only value",
                ));
            }
            continue;
        }
        errs.extend(ip(&format!("spec.clusterIPs[{i}]"), addr));
    }
    if ips.len() > 2 {
        errs.push(FieldError::invalid_raw(
            "spec.clusterIPs",
            go_strings(&ips),
            "may only hold up to 2 values",
        ));
    }
    errs
}

/// The internal core.ServicePort of a (protocol, port) pair as Go's `%#v` prints it.
fn go_service_port(protocol: &str, port: i64) -> String {
    format!(
        "core.ServicePort{{Name:\"\", Protocol:{}, AppProtocol:(*string)(nil), Port:{port}, TargetPort:intstr.IntOrString{{Type:0, IntVal:0, StrVal:\"\"}}, NodePort:0}}",
        crate::registry::error::quote(protocol)
    )
}

/// nodePort on a ClusterIP Service, and duplicate node ports and ports.
fn validate_port_uniqueness(s: &Spec<'_>, ports: &[Value]) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let int = |p: &Value, key: &str| p.get(key).and_then(Value::as_i64).unwrap_or(0);
    if s.ty == "ClusterIP" {
        for (i, p) in ports.iter().enumerate() {
            if int(p, "nodePort") != 0 {
                errs.push(FieldError::forbidden(
                    format!("spec.ports[{i}].nodePort"),
                    "may not be used when `type` is 'ClusterIP'",
                ));
            }
        }
    }
    let mut node_ports: Vec<(&str, i64)> = Vec::new();
    for (i, p) in ports.iter().enumerate() {
        let node_port = int(p, "nodePort");
        if node_port == 0 {
            continue;
        }
        let key = (opt_str(p, "protocol").unwrap_or(""), node_port);
        if node_ports.contains(&key) {
            errs.push(duplicate_raw(
                format!("spec.ports[{i}].nodePort"),
                node_port.to_string(),
            ));
        }
        node_ports.push(key);
    }
    let mut seen: Vec<(&str, i64)> = Vec::new();
    for (i, p) in ports.iter().enumerate() {
        let key = (opt_str(p, "protocol").unwrap_or(""), int(p, "port"));
        if seen.contains(&key) {
            errs.push(duplicate_raw(
                format!("spec.ports[{i}]"),
                go_service_port(key.0, key.1),
            ));
        }
        seen.push(key);
    }
    errs
}

/// The fields only a LoadBalancer Service may set.
fn validate_load_balancer_fields(s: &Spec<'_>, source_ranges: Option<&str>) -> Vec<FieldError> {
    const ONLY_LB: &str = "may only be used when `type` is 'LoadBalancer'";
    let lb = s.ty == "LoadBalancer";
    let mut errs = Vec::new();
    if !items(s.spec, "loadBalancerSourceRanges").is_empty() {
        if !lb {
            errs.push(FieldError::forbidden(
                "spec.LoadBalancerSourceRanges",
                ONLY_LB,
            ));
        }
    } else if source_ranges.is_some() && !lb {
        errs.push(FieldError::forbidden(
            format!("metadata.annotations[{SOURCE_RANGES}]"),
            ONLY_LB,
        ));
    }
    if s.set("allocateLoadBalancerNodePorts") && !lb {
        errs.push(FieldError::forbidden(
            "spec.allocateLoadBalancerNodePorts",
            ONLY_LB,
        ));
    }
    if lb && !s.set("allocateLoadBalancerNodePorts") {
        // Upstream's path has no `spec.`.
        errs.push(FieldError::required("allocateLoadBalancerNodePorts", ""));
    }
    if let Some(class) = opt_str(s.spec, "loadBalancerClass") {
        if lb {
            errs.extend(qualified_name("spec.loadBalancerClass", class));
        } else {
            errs.push(FieldError::forbidden("spec.loadBalancerClass", ONLY_LB));
        }
    }
    errs
}

/// validateServiceExternalTrafficPolicy, validateServiceInternalTrafficFieldsValue and
/// validateServiceTrafficDistribution.
fn validate_traffic(s: &Spec<'_>, obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let external = s.str("externalTrafficPolicy");
    if !externally_accessible(obj) {
        if !external.is_empty() {
            errs.push(FieldError::invalid(
                "spec.externalTrafficPolicy",
                external,
                "may only be set for externally-accessible services",
            ));
        }
    } else if external.is_empty() {
        errs.push(FieldError::required("spec.externalTrafficPolicy", ""));
    } else if !TRAFFIC_POLICIES.contains(&external) {
        errs.push(FieldError::not_supported(
            "spec.externalTrafficPolicy",
            external,
            &TRAFFIC_POLICIES,
        ));
    }
    let health_check = s
        .spec
        .get("healthCheckNodePort")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    if !(s.ty == "LoadBalancer" && external == "Local") {
        if health_check != 0 {
            errs.push(FieldError::invalid_raw(
                "spec.healthCheckNodePort",
                health_check,
                "may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'",
            ));
        }
    } else if health_check == 0 {
        errs.push(FieldError::required("spec.healthCheckNodePort", ""));
    } else {
        errs.extend(port_number("spec.healthCheckNodePort", health_check));
    }
    match opt_str(s.spec, "internalTrafficPolicy") {
        None if matches!(s.ty, "NodePort" | "LoadBalancer" | "ClusterIP") => {
            errs.push(FieldError::required("spec.internalTrafficPolicy", ""));
        }
        Some(p) if !TRAFFIC_POLICIES.contains(&p) => errs.push(FieldError::not_supported(
            "spec.internalTrafficPolicy",
            p,
            &TRAFFIC_POLICIES,
        )),
        _ => {}
    }
    if let Some(d) = opt_str(s.spec, "trafficDistribution") {
        if !TRAFFIC_DISTRIBUTIONS.contains(&d) {
            errs.push(FieldError::not_supported(
                "spec.trafficDistribution",
                d,
                &TRAFFIC_DISTRIBUTIONS,
            ));
        }
    }
    errs
}

/// The checks of initIPFamilyFields that precede allocation: a SingleStack policy with two
/// cluster IPs or two families.
fn validate_ip_family_policy(s: &Spec<'_>) -> Vec<FieldError> {
    if s.ty == "ExternalName" || s.str("ipFamilyPolicy") != "SingleStack" {
        return Vec::new();
    }
    let mut errs = Vec::new();
    for (key, what) in [
        ("clusterIPs", "multiple cluster IPs"),
        ("ipFamilies", "multiple IP families"),
    ] {
        if items(s.spec, key).len() == 2 {
            errs.push(FieldError::invalid(
                "spec.ipFamilyPolicy",
                "SingleStack",
                format!(
                    "must be 'RequireDualStack' or 'PreferDualStack' when {what} are specified"
                ),
            ));
        }
    }
    errs
}

/// ValidateServiceStatusUpdate: ValidateLoadBalancerStatus, where a Service of another type
/// has no ingress (the AllowServiceLBStatusOnNonLB gate is off).
pub(super) fn validate_service_status(obj: &Value) -> Vec<FieldError> {
    let ingress = obj
        .at("/status/loadBalancer/ingress")
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty());
    if ingress && obj.at("/spec/type").and_then(Value::as_str) != Some("LoadBalancer") {
        return vec![FieldError::forbidden(
            "status.loadBalancer.ingress",
            "may only be used when `spec.type` is 'LoadBalancer'",
        )];
    }
    Vec::new()
}
