//! What upstream does to a Service before validating it: the v1 defaults
//! (SetDefaults_Service, run on decode), the strategy's PrepareForCreate/PrepareForUpdate
//! (status, dropTypeDependentFields) and the REST storage's bookkeeping (patchAllocatedValues,
//! normalizeClusterIPs, initIPFamilyFields). No address is ever allocated: a headless Service
//! gets its IP families as a cluster whose default family is IPv4 gives them, an ExternalName
//! Service none. May use: registry (strategy), api.

use super::super::network::{items, opt_str};
use serde_json::{json, Map, Value};

/// ClusterIPNone.
pub(super) const NONE: &str = "None";

/// The spec of a Service, created when missing (the Go type's spec is not a pointer).
fn spec_mut(obj: &mut Value) -> Option<&mut Map<String, Value>> {
    let m = obj.as_object_mut()?;
    let spec = m.entry("spec").or_insert_with(|| json!({}));
    if !spec.is_object() {
        *spec = json!({});
    }
    spec.as_object_mut()
}

fn spec_str<'a>(obj: &'a Value, key: &str) -> &'a str {
    obj.get("spec").and_then(|s| opt_str(s, key)).unwrap_or("")
}

fn service_type(obj: &Value) -> &str {
    spec_str(obj, "type")
}

/// apiservice.ExternallyAccessible.
pub(super) fn externally_accessible(obj: &Value) -> bool {
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    match service_type(obj) {
        "LoadBalancer" | "NodePort" => true,
        "ClusterIP" => !items(spec, "externalIPs").is_empty(),
        _ => false,
    }
}

/// needsClusterIP: every type but ExternalName has (or is refused) a cluster IP.
fn needs_cluster_ip(obj: &Value) -> bool {
    service_type(obj) != "ExternalName"
}

/// Whether the Service is headless (`clusterIP: None`) and has no selector: the one ClusterIP
/// Service kapi serves.
pub(super) fn is_headless_without_selector(obj: &Value) -> bool {
    let selector_empty = obj
        .get("spec")
        .and_then(|s| s.get("selector"))
        .and_then(Value::as_object)
        .is_none_or(Map::is_empty);
    spec_str(obj, "clusterIP") == NONE && selector_empty
}

/// SetDefaults_Service (v1).
pub(super) fn set_defaults(obj: &mut Value) {
    let Some(spec) = spec_mut(obj) else {
        return;
    };
    let unset = |spec: &Map<String, Value>, key: &str| {
        spec.get(key)
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
    };
    if unset(spec, "sessionAffinity") {
        spec.insert("sessionAffinity".into(), "None".into());
    }
    match spec.get("sessionAffinity").and_then(Value::as_str) {
        Some("None") => {
            spec.remove("sessionAffinityConfig");
        }
        Some("ClientIP") => {
            let has_timeout = spec
                .get("sessionAffinityConfig")
                .and_then(|c| c.get("clientIP"))
                .and_then(|c| c.get("timeoutSeconds"))
                .is_some_and(|t| !t.is_null());
            if !has_timeout {
                spec.insert(
                    "sessionAffinityConfig".into(),
                    json!({"clientIP": {"timeoutSeconds": 10800}}),
                );
            }
        }
        _ => {}
    }
    if unset(spec, "type") {
        spec.insert("type".into(), "ClusterIP".into());
    }
    if let Some(Value::Array(ports)) = spec.get_mut("ports") {
        for p in ports.iter_mut().filter_map(Value::as_object_mut) {
            if unset(p, "protocol") {
                p.insert("protocol".into(), "TCP".into());
            }
            let no_target = match p.get("targetPort") {
                None | Some(Value::Null) => true,
                Some(Value::String(s)) => s.is_empty(),
                Some(v) => v.as_i64() == Some(0),
            };
            if no_target {
                let port = p.get("port").cloned().unwrap_or(Value::from(0));
                p.insert("targetPort".into(), port);
            }
        }
    }
    let ty = spec.get("type").and_then(Value::as_str).unwrap_or("");
    let accessible = match ty {
        "LoadBalancer" | "NodePort" => true,
        "ClusterIP" => spec
            .get("externalIPs")
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty()),
        _ => false,
    };
    let cluster_typed = matches!(ty, "NodePort" | "LoadBalancer" | "ClusterIP");
    let load_balancer = ty == "LoadBalancer";
    if accessible && unset(spec, "externalTrafficPolicy") {
        spec.insert("externalTrafficPolicy".into(), "Cluster".into());
    }
    if cluster_typed && spec.get("internalTrafficPolicy").is_none_or(Value::is_null) {
        spec.insert("internalTrafficPolicy".into(), "Cluster".into());
    }
    if load_balancer
        && spec
            .get("allocateLoadBalancerNodePorts")
            .is_none_or(Value::is_null)
    {
        spec.insert("allocateLoadBalancerNodePorts".into(), true.into());
    }
}

/// PrepareForCreate and the allocation step of the REST Create: an empty status, clusterIPs
/// from clusterIP, the IP families.
pub(super) fn for_create(obj: &mut Value) {
    if let Some(m) = obj.as_object_mut() {
        m.insert("status".into(), json!({"loadBalancer": {}}));
    }
    // normalizeClusterIPs of a create: an old client's clusterIP alone fills clusterIPs.
    let cluster_ip = spec_str(obj, "clusterIP").to_string();
    if let Some(spec) = spec_mut(obj) {
        if !cluster_ip.is_empty() && spec.get("clusterIPs").is_none_or(is_empty_list) {
            spec.insert("clusterIPs".into(), json!([cluster_ip]));
        }
    }
    init_ip_families(obj, None);
}

/// PrepareForUpdate of the main resource and the REST Update's bookkeeping: the status is
/// kept, values the client left out are kept, fields the new type has no use for are dropped.
pub(super) fn for_update(new: &mut Value, old: &Value) {
    if let Some(m) = new.as_object_mut() {
        match old.get("status") {
            Some(s) => m.insert("status".into(), s.clone()),
            None => m.remove("status"),
        };
    }
    patch_allocated_values(new, old);
    normalize_cluster_ips(new, old);
    drop_type_dependent_fields(new, old);
    init_ip_families(new, Some(old));
}

fn is_empty_list(v: &Value) -> bool {
    v.as_array().is_none_or(Vec::is_empty)
}

/// The spec value at `key`, treating null as absent.
fn spec_value<'a>(obj: &'a Value, key: &str) -> Option<&'a Value> {
    obj.get("spec")
        .and_then(|s| s.get(key))
        .filter(|v| !v.is_null())
}

/// Whether `key` of the spec is the same in both (absent and empty lists alike).
fn same(new: &Value, old: &Value, key: &str) -> bool {
    let norm = |v: Option<&Value>| match v {
        Some(Value::Array(a)) if a.is_empty() => None,
        Some(Value::String(s)) if s.is_empty() => None,
        v => v.cloned(),
    };
    norm(spec_value(new, key)) == norm(spec_value(old, key))
}

/// patchAllocatedValues: a client that resubmits its manifest without the cluster IPs it was
/// given keeps them.
fn patch_allocated_values(new: &mut Value, old: &Value) {
    if !(needs_cluster_ip(old) && needs_cluster_ip(new)) {
        return;
    }
    let old_ip = spec_value(old, "clusterIP").cloned();
    let old_ips = spec_value(old, "clusterIPs").cloned();
    let Some(spec) = spec_mut(new) else {
        return;
    };
    if spec
        .get("clusterIP")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        if let Some(ip) = old_ip {
            spec.insert("clusterIP".into(), ip);
        }
    }
    if spec.get("clusterIPs").is_none_or(is_empty_list) {
        if let Some(ips) = old_ips.filter(|v| !is_empty_list(v)) {
            spec.insert("clusterIPs".into(), ips);
        }
    }
}

/// normalizeClusterIPs of an update: clusterIP and clusterIPs kept in step for clients that
/// set only one of them.
fn normalize_cluster_ips(new: &mut Value, old: &Value) {
    let (old_ip, new_ip) = (
        spec_str(old, "clusterIP"),
        spec_str(new, "clusterIP").to_string(),
    );
    let old_ips = spec_value(old, "clusterIPs").cloned();
    let new_ips_empty = spec_value(new, "clusterIPs").is_none_or(is_empty_list);
    if old_ips.as_ref().is_some_and(|v| !is_empty_list(v)) && new_ips_empty && old_ip == new_ip {
        if let (Some(spec), Some(ips)) = (spec_mut(new), old_ips) {
            spec.insert("clusterIPs".into(), ips);
        }
    }
    if old_ip != new_ip {
        let same_ips = same(new, old, "clusterIPs");
        let Some(spec) = spec_mut(new) else {
            return;
        };
        if !old_ip.is_empty() && new_ip.is_empty() {
            if same_ips {
                spec.remove("clusterIPs");
            }
        } else if same_ips {
            spec.insert("clusterIPs".into(), json!([new_ip]));
        }
    }
}

/// dropTypeDependentFields: what an update to another type no longer uses, unless the client
/// also changed it (then validation speaks).
fn drop_type_dependent_fields(new: &mut Value, old: &Value) {
    let mut drop: Vec<&str> = Vec::new();
    if needs_cluster_ip(old) && !needs_cluster_ip(new) {
        if same(new, old, "clusterIPs") {
            drop.extend(["clusterIP", "clusterIPs"]);
        }
        if same(new, old, "ipFamilies") {
            drop.push("ipFamilies");
        }
        if same(new, old, "ipFamilyPolicy") {
            drop.push("ipFamilyPolicy");
        }
    }
    if externally_accessible(old)
        && !externally_accessible(new)
        && same(new, old, "externalTrafficPolicy")
    {
        drop.push("externalTrafficPolicy");
    }
    let not_lb = service_type(new) != "LoadBalancer";
    if let Some(spec) = spec_mut(new) {
        for key in drop {
            spec.remove(key);
        }
    }
    // The load-balancer status is no longer appropriate for another type.
    if not_lb {
        if let Some(status) = new.get_mut("status").and_then(Value::as_object_mut) {
            status.insert("loadBalancer".into(), json!({}));
        }
    }
}

/// initIPFamilyFields for a cluster with no service CIDRs and IPv4 as its default family: the
/// policy defaults (to the old one, RequireDualStack for a headless Service without a selector,
/// SingleStack otherwise), and such a headless Service lists its families.
fn init_ip_families(obj: &mut Value, old: Option<&Value>) {
    if !needs_cluster_ip(obj) {
        return;
    }
    let headless = is_headless_without_selector(obj);
    let old_policy = old.and_then(|o| spec_value(o, "ipFamilyPolicy")).cloned();
    let same_ips = old.is_some_and(|o| same(obj, o, "clusterIPs"));
    let same_families = old.is_some_and(|o| same(obj, o, "ipFamilies"));
    let Some(spec) = spec_mut(obj) else {
        return;
    };
    if spec.get("ipFamilyPolicy").is_none_or(Value::is_null) {
        let policy = match old_policy {
            Some(p) => p,
            None if headless => "RequireDualStack".into(),
            None => "SingleStack".into(),
        };
        spec.insert("ipFamilyPolicy".into(), policy);
    }
    let single = spec.get("ipFamilyPolicy").and_then(Value::as_str) == Some("SingleStack");
    if old.is_some() && single {
        // Setting SingleStack without touching the lists releases the secondary entries.
        for (key, unchanged) in [("clusterIPs", same_ips), ("ipFamilies", same_families)] {
            if let Some(Value::Array(list)) = spec.get_mut(key) {
                if unchanged && list.len() > 1 {
                    list.truncate(1);
                }
            }
        }
    }
    if !headless {
        return;
    }
    let families = spec.entry("ipFamilies").or_insert_with(|| json!([]));
    if !families.is_array() {
        *families = json!([]);
    }
    if let Some(list) = families.as_array_mut() {
        if list.is_empty() {
            list.push("IPv4".into());
        }
        if list.len() < 2 && !single {
            let alt = if list[0] == "IPv4" { "IPv6" } else { "IPv4" };
            list.push(alt.into());
        }
    }
}
