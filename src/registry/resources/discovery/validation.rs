//! pkg/apis/discovery/validation: ValidateEndpointSliceCreate and ValidateEndpointSliceUpdate,
//! with upstream's messages and field paths (object meta is the store's). The deprecated
//! topology is not validated: the v1 strategy drops it before validation runs. Works on the
//! canonical JSON of an object. May use: registry (error, validation), api.

use super::super::network::{
    dns1123_label, duplicate, endpoint_ip, fully_qualified_domain_name, ipv4, ipv6, items, opt_str,
    qualified_name, too_many, PROTOCOLS,
};
use crate::api::selectors::label_value_errors;
use crate::registry::error::FieldError;
use crate::registry::validation::{name_errors, NameRule};
use serde_json::Value;

/// supportedAddressTypes, sorted.
const ADDRESS_TYPES: [&str; 3] = ["FQDN", "IPv4", "IPv6"];
const MAX_ADDRESSES: usize = 100;
const MAX_PORTS: usize = 20000;
const MAX_ENDPOINTS: usize = 1000;
const MAX_ZONE_HINTS: usize = 8;
const MAX_NODE_HINTS: usize = 8;

/// ValidateNodeName (a DNS subdomain) as Invalid values at `path`.
fn node_name(path: &str, name: &str) -> Vec<FieldError> {
    name_errors(name, NameRule::Subdomain)
        .into_iter()
        .map(|e| FieldError::invalid(path, name, e))
        .collect()
}

/// ValidateEndpointSlice.
pub(super) fn validate_endpoint_slice(obj: &Value) -> Vec<FieldError> {
    let address_type = opt_str(obj, "addressType").unwrap_or("");
    let mut errs = Vec::new();
    if address_type.is_empty() {
        errs.push(FieldError::required("addressType", ""));
    } else if !ADDRESS_TYPES.contains(&address_type) {
        errs.push(FieldError::not_supported(
            "addressType",
            address_type,
            &ADDRESS_TYPES,
        ));
    }
    errs.extend(validate_endpoints(items(obj, "endpoints"), address_type));
    errs.extend(validate_ports(items(obj, "ports")));
    errs
}

/// ValidateEndpointSliceUpdate: the create rules, and the address type is immutable.
pub(super) fn validate_endpoint_slice_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let mut errs = validate_endpoint_slice(new);
    let (n, o) = (
        opt_str(new, "addressType").unwrap_or(""),
        opt_str(old, "addressType").unwrap_or(""),
    );
    if n != o {
        errs.push(FieldError::invalid("addressType", n, "field is immutable"));
    }
    errs
}

fn validate_endpoints(endpoints: &[Value], address_type: &str) -> Vec<FieldError> {
    if endpoints.len() > MAX_ENDPOINTS {
        return vec![too_many("endpoints", endpoints.len(), MAX_ENDPOINTS)];
    }
    let mut errs = Vec::new();
    for (i, endpoint) in endpoints.iter().enumerate() {
        let at = format!("endpoints[{i}]");
        let addresses_at = format!("{at}.addresses");
        let addresses = items(endpoint, "addresses");
        if addresses.is_empty() {
            errs.push(FieldError::required(
                &addresses_at,
                "must contain at least 1 address",
            ));
        } else if addresses.len() > MAX_ADDRESSES {
            errs.push(too_many(&addresses_at, addresses.len(), MAX_ADDRESSES));
        }
        for (j, address) in addresses.iter().enumerate() {
            let address = address.as_str().unwrap_or("");
            let path = format!("{addresses_at}[{j}]");
            // Unknown types fall through unvalidated, as upstream's switch does.
            match address_type {
                "IPv4" => {
                    errs.extend(ipv4(&path, address));
                    errs.extend(endpoint_ip(&path, address));
                }
                "IPv6" => {
                    errs.extend(ipv6(&path, address));
                    errs.extend(endpoint_ip(&path, address));
                }
                "FQDN" => errs.extend(fully_qualified_domain_name(&path, address)),
                _ => {}
            }
        }
        if let Some(name) = opt_str(endpoint, "nodeName") {
            errs.extend(node_name(&format!("{at}.nodeName"), name));
        }
        if let Some(hostname) = opt_str(endpoint, "hostname") {
            errs.extend(dns1123_label(&format!("{at}.hostname"), hostname));
        }
        if let Some(hints) = endpoint.get("hints").filter(|h| !h.is_null()) {
            errs.extend(validate_hints(hints, &format!("{at}.hints")));
        }
    }
    errs
}

/// validateHints: at most 8 zones and 8 nodes, each named once.
fn validate_hints(hints: &Value, at: &str) -> Vec<FieldError> {
    let zones = items(hints, "forZones");
    let zones_at = format!("{at}.forZones");
    if zones.len() > MAX_ZONE_HINTS {
        return vec![too_many(zones_at, zones.len(), MAX_ZONE_HINTS)];
    }
    let mut errs = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    for (i, zone) in zones.iter().enumerate() {
        let path = format!("{zones_at}[{i}].name");
        let name = opt_str(zone, "name").unwrap_or("");
        if seen.contains(&name) {
            errs.push(duplicate(&path, name));
        } else {
            seen.push(name);
        }
        for e in label_value_errors(name) {
            errs.push(FieldError::invalid(&path, name, e));
        }
    }
    let nodes = items(hints, "forNodes");
    let nodes_at = format!("{at}.forNodes");
    if nodes.len() > MAX_NODE_HINTS {
        errs.push(too_many(nodes_at, nodes.len(), MAX_NODE_HINTS));
        return errs;
    }
    let mut seen: Vec<&str> = Vec::new();
    for (i, node) in nodes.iter().enumerate() {
        let path = format!("{nodes_at}[{i}].name");
        let name = opt_str(node, "name").unwrap_or("");
        if seen.contains(&name) {
            errs.push(duplicate(&path, name));
        } else {
            seen.push(name);
        }
        errs.extend(node_name(&path, name));
    }
    errs
}

fn validate_ports(ports: &[Value]) -> Vec<FieldError> {
    if ports.len() > MAX_PORTS {
        return vec![too_many("ports", ports.len(), MAX_PORTS)];
    }
    let mut errs = Vec::new();
    let mut names: Vec<&str> = Vec::new();
    for (i, port) in ports.iter().enumerate() {
        let at = format!("ports[{i}]");
        // The v1 default makes the name "" when unset.
        let name = opt_str(port, "name").unwrap_or("");
        if !name.is_empty() {
            errs.extend(dns1123_label(&format!("{at}.name"), name));
        }
        if names.contains(&name) {
            errs.push(duplicate(format!("{at}.name"), name));
        } else {
            names.push(name);
        }
        // A pointer upstream: unset is Required, "" is Unsupported.
        match opt_str(port, "protocol") {
            None => errs.push(FieldError::required(format!("{at}.protocol"), "")),
            Some(p) if !PROTOCOLS.contains(&p) => errs.push(FieldError::not_supported(
                format!("{at}.protocol"),
                p,
                &PROTOCOLS,
            )),
            Some(_) => {}
        }
        if let Some(app) = opt_str(port, "appProtocol") {
            errs.extend(qualified_name(&format!("{at}.appProtocol"), app));
        }
    }
    errs
}
