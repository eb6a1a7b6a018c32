//! Where a Service sends the aggregator and the admission webhooks (k8s.io/apiserver
//! pkg/util/proxy ResolveCluster and ResolveEndpoint, as kube-aggregator's resolvers use
//! them), from the Services and EndpointSlices the server follows. A generic control plane
//! has no cluster IPs: an ExternalName Service resolves to `externalName:port` (the caller's
//! port), a headless one to a ready address of its EndpointSlices, on the slice port named as
//! the Service port whose number is the caller's port, taken in turn. What a Service resolves
//! to is kept until a Service or an EndpointSlice changes, so a proxied request or a webhook
//! call looks nothing up.

use super::follow::{ns_name, Change};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};

/// The label by which an EndpointSlice names its Service.
const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";

/// Why a Service does not resolve; messages as upstream's.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub(crate) enum ResolveError {
    #[error("service \"{0}\" not found")]
    NotFound(String),
    #[error("unsupported service type {0:?}")]
    UnsupportedType(String),
    #[error("no service port {port} found for service \"{service}\"")]
    NoPort { port: u16, service: String },
    #[error("no endpoints available for service \"{0}\"")]
    NoEndpoints(String),
}

/// A Service and a port of it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct ServiceRef {
    pub namespace: String,
    pub name: String,
    pub port: u16,
}

/// The followed Services and EndpointSlices.
#[derive(Default)]
pub(crate) struct Services {
    /// By namespace/name.
    services: RwLock<BTreeMap<(String, String), Value>>,
    /// By namespace/service name, then slice name.
    slices: RwLock<BTreeMap<(String, String), BTreeMap<String, Value>>>,
    /// Spreads requests over a Service's endpoints.
    next: AtomicUsize,
    /// What each Service resolved to since the Services and slices last changed.
    resolved: RwLock<Resolved>,
}

/// A Service's addresses (`host:port`), not empty.
type Addresses = Arc<[Arc<str>]>;

/// What Services resolved to: their addresses (`host:port`) or why they do not resolve, and
/// the generation of the Services and slices they were read from.
#[derive(Default)]
struct Resolved {
    generation: u64,
    by_service: HashMap<ServiceRef, Result<Addresses, ResolveError>>,
}

fn owner(slice: &Value) -> (String, String) {
    let (ns, _) = ns_name(slice);
    let svc = slice
        .pointer("/metadata/labels")
        .and_then(|l| l.get(SERVICE_NAME_LABEL))
        .and_then(Value::as_str)
        .unwrap_or("");
    (ns.to_string(), svc.to_string())
}

fn key(o: &Value) -> (String, String) {
    let (ns, name) = ns_name(o);
    (ns.to_string(), name.to_string())
}

impl Services {
    pub(crate) fn apply_service(&self, change: Change<'_>) {
        let mut map = self.services.write().unwrap_or_else(|e| e.into_inner());
        change.mirror(&mut map, key, Value::clone);
        drop(map);
        self.forget_resolved();
    }

    pub(crate) fn apply_slice(&self, change: Change<'_>) {
        let mut map = self.slices.write().unwrap_or_else(|e| e.into_inner());
        let name = |o: &Value| ns_name(o).1.to_string();
        match change {
            Change::Listed(items) => {
                map.clear();
                for o in items {
                    map.entry(owner(o)).or_default().insert(name(o), o.clone());
                }
            }
            Change::Put(o) => {
                // A slice may have been relabelled to another Service.
                for slices in map.values_mut() {
                    slices.remove(&name(o));
                }
                map.entry(owner(o)).or_default().insert(name(o), o.clone());
            }
            Change::Deleted(o) => {
                if let Some(slices) = map.get_mut(&owner(o)) {
                    slices.remove(&name(o));
                }
            }
        }
        drop(map);
        self.forget_resolved();
    }

    /// The Service `svc` points to, if it exists.
    pub(crate) fn service(&self, svc: &ServiceRef) -> Option<Value> {
        let map = self.services.read().unwrap_or_else(|e| e.into_inner());
        map.get(&(svc.namespace.clone(), svc.name.clone())).cloned()
    }

    /// The EndpointSlices of `svc`.
    pub(crate) fn slices(&self, svc: &ServiceRef) -> Vec<Value> {
        let map = self.slices.read().unwrap_or_else(|e| e.into_inner());
        map.get(&(svc.namespace.clone(), svc.name.clone()))
            .map(|s| s.values().cloned().collect())
            .unwrap_or_default()
    }

    /// Forgets what Services resolved to, once a change of Services or slices is in place;
    /// a resolution read before it is not kept (its generation has passed).
    fn forget_resolved(&self) {
        let mut resolved = self.resolved.write().unwrap_or_else(|e| e.into_inner());
        resolved.generation += 1;
        resolved.by_service.clear();
    }

    /// `host:port` to dial for `svc`: its addresses taken in turn.
    pub(crate) fn resolve(&self, svc: &ServiceRef) -> Result<Arc<str>, ResolveError> {
        let (generation, cached) = {
            let resolved = self.resolved.read().unwrap_or_else(|e| e.into_inner());
            (resolved.generation, resolved.by_service.get(svc).cloned())
        };
        let addresses = match cached {
            Some(found) => found,
            None => {
                let found = self.addresses(svc);
                let mut resolved = self.resolved.write().unwrap_or_else(|e| e.into_inner());
                if resolved.generation == generation {
                    resolved.by_service.insert(svc.clone(), found.clone());
                }
                found
            }
        }?;
        let turn = self.next.fetch_add(1, Ordering::Relaxed) % addresses.len();
        Ok(addresses[turn].clone())
    }

    /// Every address `svc` resolves to now (not empty).
    fn addresses(&self, svc: &ServiceRef) -> Result<Addresses, ResolveError> {
        let services = self.services.read().unwrap_or_else(|e| e.into_inner());
        let service = services
            .get(&(svc.namespace.clone(), svc.name.clone()))
            .ok_or_else(|| ResolveError::NotFound(svc.name.clone()))?;
        let spec = service.get("spec").unwrap_or(&Value::Null);
        let kind = spec
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("ClusterIP");
        match kind {
            "ExternalName" => {
                let host = spec
                    .get("externalName")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                Ok(Arc::from([Arc::from(join_host_port(host, svc.port))]))
            }
            "ClusterIP" => {
                let port_name = service_port_name(spec, svc)?;
                drop(services);
                let slices = self.slices.read().unwrap_or_else(|e| e.into_inner());
                let own = slices.get(&(svc.namespace.clone(), svc.name.clone()));
                let list: Vec<&Value> = own.map(|s| s.values().collect()).unwrap_or_default();
                let found: Addresses = endpoints(&list, &port_name)
                    .into_iter()
                    .map(Arc::from)
                    .collect();
                if found.is_empty() {
                    return Err(ResolveError::NoEndpoints(svc.name.clone()));
                }
                Ok(found)
            }
            other => Err(ResolveError::UnsupportedType(other.to_string())),
        }
    }
}

/// The name of the Service port whose number is the APIService's port.
pub(crate) fn service_port_name(spec: &Value, svc: &ServiceRef) -> Result<String, ResolveError> {
    spec.get("ports")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|p| p.get("port").and_then(Value::as_u64) == Some(u64::from(svc.port)))
        .map(|p| {
            p.get("name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        })
        .ok_or_else(|| ResolveError::NoPort {
            port: svc.port,
            service: svc.name.clone(),
        })
}

/// The ready addresses of `slices` on the port named `port_name` (upstream's
/// ResolveEndpoint picks one of them at random; kapi takes them in turn).
pub(crate) fn endpoints<S: std::borrow::Borrow<Value>>(
    slices: &[S],
    port_name: &str,
) -> Vec<String> {
    let mut found = Vec::new();
    for slice in slices.iter().map(std::borrow::Borrow::borrow) {
        let ports = slice.get("ports").and_then(Value::as_array);
        let Some(port) = ports.into_iter().flatten().find_map(|p| {
            (p.get("name").and_then(Value::as_str) == Some(port_name))
                .then(|| p.get("port").and_then(Value::as_u64))
                .flatten()
        }) else {
            continue;
        };
        let port = u16::try_from(port).unwrap_or(0);
        for ep in slice
            .get("endpoints")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if ep.pointer("/conditions/ready").and_then(Value::as_bool) == Some(false) {
                continue;
            }
            if let Some(ip) = ep.pointer("/addresses/0").and_then(Value::as_str) {
                found.push(join_host_port(ip, port));
            }
        }
    }
    found
}

/// Go's net.JoinHostPort: an IPv6 address in brackets.
pub(crate) fn join_host_port(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn svc_ref(port: u16) -> ServiceRef {
        ServiceRef {
            namespace: "ns".into(),
            name: "api".into(),
            port,
        }
    }

    fn services(objs: &[Value]) -> Services {
        let s = Services::default();
        s.apply_service(Change::Listed(
            objs.iter().filter(|o| o["kind"] == "Service").collect(),
        ));
        s.apply_slice(Change::Listed(
            objs.iter()
                .filter(|o| o["kind"] == "EndpointSlice")
                .collect(),
        ));
        s
    }

    #[test]
    fn external_name_resolves_to_its_host_and_the_apiservice_port() {
        let s = services(&[
            json!({"kind": "Service", "metadata": {"namespace": "ns", "name": "api"},
            "spec": {"type": "ExternalName", "externalName": "ext.example.com"}}),
        ]);
        assert_eq!(&*s.resolve(&svc_ref(8443)).unwrap(), "ext.example.com:8443");
    }

    #[test]
    fn headless_resolves_to_a_ready_address_on_the_named_port() {
        let s = services(&[
            json!({"kind": "Service", "metadata": {"namespace": "ns", "name": "api"},
                "spec": {"clusterIP": "None", "ports": [{"name": "https", "port": 443}]}}),
            json!({"kind": "EndpointSlice", "metadata": {"namespace": "ns", "name": "api-1",
                "labels": {SERVICE_NAME_LABEL: "api"}}, "addressType": "IPv6",
                "ports": [{"name": "https", "port": 6443}],
                "endpoints": [{"addresses": ["fd00::1"], "conditions": {"ready": false}},
                              {"addresses": ["fd00::2"]}]}),
        ]);
        for _ in 0..3 {
            assert_eq!(&*s.resolve(&svc_ref(443)).unwrap(), "[fd00::2]:6443");
        }
        assert_eq!(
            s.resolve(&svc_ref(444)).unwrap_err().to_string(),
            "no service port 444 found for service \"api\""
        );
    }

    fn slice(name: &str, addresses: &[&str]) -> Value {
        let endpoints: Vec<Value> = addresses
            .iter()
            .map(|a| json!({"addresses": [a]}))
            .collect();
        json!({"kind": "EndpointSlice", "metadata": {"namespace": "ns", "name": name,
            "labels": {SERVICE_NAME_LABEL: "api"}}, "addressType": "IPv4",
            "ports": [{"name": "https", "port": 6443}], "endpoints": endpoints})
    }

    #[test]
    fn addresses_of_every_slice_are_taken_in_turn_until_a_slice_changes() {
        let service = json!({"kind": "Service", "metadata": {"namespace": "ns", "name": "api"},
            "spec": {"clusterIP": "None", "ports": [{"name": "https", "port": 443}]}});
        let s = services(&[
            service,
            slice("api-1", &["10.0.0.1"]),
            slice("api-2", &["10.0.0.2", "10.0.0.3"]),
        ]);
        let mut seen: Vec<String> = (0..6)
            .map(|_| s.resolve(&svc_ref(443)).unwrap().to_string())
            .collect();
        seen.sort();
        seen.dedup();
        assert_eq!(seen, ["10.0.0.1:6443", "10.0.0.2:6443", "10.0.0.3:6443"]);
        // A slice replaced: its old addresses are gone at once.
        s.apply_slice(Change::Put(&slice("api-2", &["10.0.0.9"])));
        let mut seen: Vec<String> = (0..4)
            .map(|_| s.resolve(&svc_ref(443)).unwrap().to_string())
            .collect();
        seen.sort();
        seen.dedup();
        assert_eq!(seen, ["10.0.0.1:6443", "10.0.0.9:6443"]);
        // The Service gone: it no longer resolves.
        s.apply_service(Change::Listed(Vec::new()));
        assert_eq!(
            s.resolve(&svc_ref(443)).unwrap_err(),
            ResolveError::NotFound("api".into())
        );
    }

    #[test]
    fn missing_service_and_endpoints_are_named() {
        let s = services(&[
            json!({"kind": "Service", "metadata": {"namespace": "ns", "name": "api"},
            "spec": {"clusterIP": "None", "ports": [{"port": 443}]}}),
        ]);
        assert_eq!(
            s.resolve(&svc_ref(443)).unwrap_err().to_string(),
            "no endpoints available for service \"api\""
        );
        let none = services(&[]);
        assert_eq!(
            none.resolve(&svc_ref(443)).unwrap_err(),
            ResolveError::NotFound("api".into())
        );
    }
}
