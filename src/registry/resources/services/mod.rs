//! v1 Services (pkg/registry/core/service) as plain data, for a control plane that has no
//! cluster IP ranges, node ports, pods or proxies. Two kinds of Service mean something without
//! them, and only those are served:
//!
//! - `type: ExternalName`, a DNS alias (`externalName`), with no cluster IP;
//! - headless `ClusterIP` Services (`clusterIP: None`) without a selector, whose endpoints are
//!   whatever EndpointSlices name them (label `kubernetes.io/service-name`).
//!
//! Everything else (NodePort, LoadBalancer, a ClusterIP Service that would need an address or
//! pods) is refused as Invalid, naming the field and why. What is served gets upstream's v1
//! defaults, the cluster-IP and IP-family bookkeeping of its REST storage ([`prepare`]), its
//! validation ([`validation`]), the `status` subresource and the printer's table.
//! May use: registry (strategy, error, validation), api.

mod prepare;
mod protobuf;
mod validation;

#[cfg(test)]
mod tests;

use crate::api::At;
use crate::registry::error::FieldError;
use crate::registry::strategy::{
    age_of, col, name_of, schema_of, str_at, text, typed_roundtrip, Column, Input, KindSchema,
    Names, ResourceInfo, Strategy, AGE_COLUMN, NAME_COLUMN, STORED_VERBS,
};
use crate::registry::validation::NameRule;
use k8s_openapi::api::core::v1::Service;
use serde_json::Value;

/// What discovery reports for services.
pub(crate) static INFO: ResourceInfo = ResourceInfo {
    group: text(""),
    version: text("v1"),
    resource: text("services"),
    singular: text("service"),
    kind: text("Service"),
    namespaced: true,
    short_names: Names::Static(&["svc"]),
    categories: Names::Static(&["all"]),
    verbs: STORED_VERBS,
    subresources: &[("status", &["get", "patch", "update"])],
    schema: KindSchema::Typed(schema_of::<Service>),
    protobuf: Some(protobuf::from_protobuf),
};

/// The service strategy (svcStrategy and serviceStatusStrategy).
pub(crate) struct Services;

impl Strategy for Services {
    fn info(&self) -> &ResourceInfo {
        &INFO
    }

    fn canonicalize(&self, obj: Input<'_>) -> Result<(Value, Vec<String>), String> {
        let (mut obj, unknown) = typed_roundtrip::<Service>(obj)?;
        prepare::set_defaults(&mut obj);
        Ok((obj, unknown))
    }

    /// ValidateServiceName: a DNS-1035 label (a Service name is a DNS label of its own).
    fn name_rule(&self) -> NameRule {
        NameRule::Dns1035Label
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        prepare::for_create(obj);
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        prepare::for_update(new, old);
    }

    /// serviceStatusStrategy.PrepareForUpdate: the spec comes from `old`.
    fn prepare_for_subresource_update(&self, sub: &str, new: &mut Value, old: &Value) -> bool {
        if sub != "status" {
            return false;
        }
        crate::registry::strategy::keep_spec_and_meta(new, old, &[]);
        true
    }

    fn validate(&self, obj: &Value) -> Vec<FieldError> {
        validation::validate_service(obj)
    }

    fn validate_subresource_update(
        &self,
        _sub: &str,
        new: &Value,
        _old: &Value,
    ) -> Vec<FieldError> {
        validation::validate_service_status(new)
    }

    /// The service fields of upstream's SelectableFields.
    fn field(&self, obj: &Value, field: &str) -> Option<String> {
        match field {
            "spec.clusterIP" => Some(str_at(obj, "/spec/clusterIP").to_string()),
            "spec.type" => Some(str_at(obj, "/spec/type").to_string()),
            _ => None,
        }
    }

    fn supports_field(&self, field: &str) -> bool {
        matches!(field, "spec.clusterIP" | "spec.type")
    }

    /// AllowCreateOnUpdate of svcStrategy.
    fn allow_create_on_update(&self) -> bool {
        true
    }

    /// serviceColumnDefinitions and printService (generated wide, as the server does).
    fn columns(&self) -> Vec<Column> {
        let mut selector = col("Selector", "string", "Route service traffic to pods with label keys and values matching this selector. If empty or not present, the service is assumed to have an external process managing its endpoints, which Kubernetes will not modify. Only applies to types ClusterIP, NodePort, and LoadBalancer. Ignored if type is ExternalName. More info: https://kubernetes.io/docs/concepts/services-networking/service/");
        selector.priority = 1;
        vec![
            NAME_COLUMN,
            col("Type", "string", "type determines how the Service is exposed. Defaults to ClusterIP. Valid options are ExternalName, ClusterIP, NodePort, and LoadBalancer. \"ClusterIP\" allocates a cluster-internal IP address for load-balancing to endpoints. Endpoints are determined by the selector or if that is not specified, by manual construction of an Endpoints object or EndpointSlice objects. If clusterIP is \"None\", no virtual IP is allocated and the endpoints are published as a set of endpoints rather than a virtual IP. \"NodePort\" builds on ClusterIP and allocates a port on every node which routes to the same endpoints as the clusterIP. \"LoadBalancer\" builds on NodePort and creates an external load-balancer (if supported in the current cloud) which routes to the same endpoints as the clusterIP. \"ExternalName\" aliases this service to the specified externalName. Several other fields do not apply to ExternalName services. More info: https://kubernetes.io/docs/concepts/services-networking/service/#publishing-services-service-types"),
            col("Cluster-IP", "string", "clusterIP is the IP address of the service and is usually assigned randomly. If an address is specified manually, is in-range (as per system configuration), and is not in use, it will be allocated to the service; otherwise creation of the service will fail. This field may not be changed through updates unless the type field is also being changed to ExternalName (which requires this field to be blank) or the type field is being changed from ExternalName (in which case this field may optionally be specified, as describe above).  Valid values are \"None\", empty string (\"\"), or a valid IP address. Setting this to \"None\" makes a \"headless service\" (no virtual IP), which is useful when direct endpoint connections are preferred and proxying is not required.  Only applies to types ClusterIP, NodePort, and LoadBalancer. If this field is specified when creating a Service of type ExternalName, creation will fail. This field will be wiped when updating a Service to type ExternalName. More info: https://kubernetes.io/docs/concepts/services-networking/service/#virtual-ips-and-service-proxies"),
            col("External-IP", "string", "externalIPs is a list of IP addresses for which nodes in the cluster will also accept traffic for this service.  These IPs are not managed by Kubernetes.  The user is responsible for ensuring that traffic arrives at a node with this IP.  A common example is external load-balancers that are not part of the Kubernetes system."),
            col("Port(s)", "string", "The list of ports that are exposed by this service. More info: https://kubernetes.io/docs/concepts/services-networking/service/#virtual-ips-and-service-proxies"),
            AGE_COLUMN,
            selector,
        ]
    }

    fn cells(&self, obj: &Value) -> Vec<Value> {
        let cluster_ip = obj
            .at("/spec/clusterIPs/0")
            .and_then(Value::as_str)
            .unwrap_or("<none>");
        let ports = ports_cell(obj);
        vec![
            name_of(obj).into(),
            str_at(obj, "/spec/type").into(),
            cluster_ip.into(),
            external_ip_cell(obj).into(),
            (if ports.is_empty() {
                "<none>".into()
            } else {
                ports
            })
            .into(),
            age_of(obj),
            selector_cell(obj).into(),
        ]
    }
}

/// getServiceExternalIP for the types kapi serves (and what the others would show with no
/// load balancer).
fn external_ip_cell(obj: &Value) -> String {
    let external_ips: Vec<&str> = obj
        .at("/spec/externalIPs")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    match str_at(obj, "/spec/type") {
        "ExternalName" => str_at(obj, "/spec/externalName").into(),
        "ClusterIP" | "NodePort" if !external_ips.is_empty() => external_ips.join(","),
        "ClusterIP" | "NodePort" => "<none>".into(),
        "LoadBalancer" if !external_ips.is_empty() => external_ips.join(","),
        "LoadBalancer" => "<pending>".into(),
        _ => "<unknown>".into(),
    }
}

/// makePortString: `port/protocol`, or `port:nodePort/protocol`, comma-separated.
fn ports_cell(obj: &Value) -> String {
    let ports = obj
        .at("/spec/ports")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    ports
        .iter()
        .map(|p| {
            let port = p.get("port").and_then(Value::as_i64).unwrap_or(0);
            let protocol = str_at(p, "/protocol");
            match p.get("nodePort").and_then(Value::as_i64) {
                Some(n) if n > 0 => format!("{port}:{n}/{protocol}"),
                _ => format!("{port}/{protocol}"),
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// labels.FormatLabels of the selector: sorted `k=v` pairs, or `<none>`.
fn selector_cell(obj: &Value) -> String {
    let Some(sel) = obj.at("/spec/selector").and_then(Value::as_object) else {
        return "<none>".into();
    };
    if sel.is_empty() {
        return "<none>".into();
    }
    let mut pairs: Vec<String> = sel
        .iter()
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
        .collect();
    pairs.sort();
    pairs.join(",")
}
