//! Rendering tests of the leases view: byte-for-byte tables, JSON and YAML from fixed rows.

use super::*;
use crate::output::{render, Format, Options};

fn at(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).unwrap().to_utc()
}

fn lease(json: serde_json::Value) -> Lease {
    serde_json::from_value(json).unwrap()
}

fn identity() -> Lease {
    lease(serde_json::json!({
        "metadata": {
            "name": "apiserver-lgabes5ywnaqeagh5dny4zlzs4", "namespace": "kube-system",
            "labels": {"apiserver.kubernetes.io/identity": "kube-apiserver",
                       "kubernetes.io/hostname": "node-1"},
            "annotations": {"kubernetes.io/peer-advertise-address": "10.0.0.1:6443"}
        },
        "spec": {"holderIdentity": "apiserver-lgabes5ywnaqeagh5dny4zlzs4_0b6d",
                 "leaseDurationSeconds": 3600, "renewTime": "2026-01-01T00:00:00.000000Z"}
    }))
}

fn lock() -> Lease {
    lease(serde_json::json!({
        "metadata": {"name": "kube-scheduler", "namespace": "kube-system"},
        "spec": {"holderIdentity": "node-2_1234", "leaseDurationSeconds": 15,
                 "renewTime": "2025-12-31T23:00:00.000000Z", "leaseTransitions": 3,
                 "strategy": "OldestEmulationVersion", "preferredHolder": "node-1_99"}
    }))
}

fn view(all: bool) -> LeasesView {
    let now = at("2026-01-01T00:00:05Z");
    let mut leases = vec![LeaseRow::from_lease(&identity(), now)];
    if all {
        leases.push(LeaseRow::from_lease(&lock(), now));
    }
    LeasesView { leases, all, now }
}

fn out(v: &LeasesView, format: Format, no_headers: bool) -> String {
    let mut buf = Vec::new();
    render(
        v,
        format,
        Options {
            no_headers,
            color: false,
        },
        &mut buf,
    )
    .unwrap();
    String::from_utf8(buf).unwrap()
}

#[test]
fn flattening_and_state() {
    let v = view(true);
    assert_eq!(v.leases[0].state, LeaseState::Live);
    assert_eq!(v.leases[0].expire_time, Some(at("2026-01-01T01:00:00Z")));
    assert_eq!(v.leases[1].state, LeaseState::Expired);
    assert_eq!(v.leases[1].lease_type, LeaseType::LeaderElection);
    assert!(v.any_expired());
    let free = lease(serde_json::json!({"metadata": {"name": "x"}, "spec": {}}));
    assert_eq!(LeaseRow::from_lease(&free, v.now).state, LeaseState::Free);
}

#[test]
fn table() {
    assert_eq!(
        out(&view(false), Format::Table, false),
        "NAME                                   COMPONENT        HOLDER                                      HOSTNAME   RENEWED   EXPIRES   STATE\n\
         apiserver-lgabes5ywnaqeagh5dny4zlzs4   kube-apiserver   apiserver-lgabes5ywnaqeagh5dny4zlzs4_0b6d   node-1     5s        in 59m    Live\n"
    );
}

#[test]
fn wide_all_no_headers() {
    assert_eq!(
        out(&view(true), Format::Wide, true),
        "apiserver-lgabes5ywnaqeagh5dny4zlzs4   identity          kube-apiserver   apiserver-lgabes5ywnaqeagh5dny4zlzs4_0b6d   node-1   5s    in 59m    Live      <none>                   <none>      10.0.0.1:6443   60m   0\n\
         kube-scheduler                         leader-election   <none>           node-2_1234                                 <none>   60m   59m ago   Expired   OldestEmulationVersion   node-1_99   <none>          15s   3\n"
    );
    assert_eq!(
        headers(true, true).join(" "),
        "NAME TYPE COMPONENT HOLDER HOSTNAME RENEWED EXPIRES STATE STRATEGY PREFERRED-HOLDER PEER-ADDRESS DURATION TRANSITIONS"
    );
}

#[test]
fn json_shape() {
    let got: serde_json::Value =
        serde_json::from_str(&out(&view(true), Format::Json, false)).unwrap();
    assert_eq!(
        got,
        serde_json::json!({"leases": [
            {"namespace": "kube-system", "name": "apiserver-lgabes5ywnaqeagh5dny4zlzs4",
             "type": "identity", "component": "kube-apiserver",
             "holder": "apiserver-lgabes5ywnaqeagh5dny4zlzs4_0b6d", "hostname": "node-1",
             "peerAddress": "10.0.0.1:6443", "renewTime": "2026-01-01T00:00:00Z",
             "expireTime": "2026-01-01T01:00:00Z", "leaseDurationSeconds": 3600,
             "leaseTransitions": null, "acquireTime": null, "strategy": null,
             "preferredHolder": null, "state": "Live"},
            {"namespace": "kube-system", "name": "kube-scheduler", "type": "leader-election",
             "component": null, "holder": "node-2_1234", "hostname": null, "peerAddress": null,
             "renewTime": "2025-12-31T23:00:00Z", "expireTime": "2025-12-31T23:00:15Z",
             "leaseDurationSeconds": 15, "leaseTransitions": 3, "acquireTime": null,
             "strategy": "OldestEmulationVersion", "preferredHolder": "node-1_99",
             "state": "Expired"}
        ]})
    );
}

#[test]
fn yaml_and_name() {
    let yaml = out(&view(false), Format::Yaml, false);
    assert!(yaml.starts_with("leases:\n- namespace: kube-system\n  name: apiserver-lgabes5ywnaqeagh5dny4zlzs4\n  type: identity\n"), "{yaml}");
    assert!(
        yaml.contains("\n  renewTime: 2026-01-01T00:00:00Z\n"),
        "{yaml}"
    );
    assert!(yaml.contains("\n  state: Live\n"), "{yaml}");
    assert_eq!(
        out(&view(true), Format::Name, false),
        "lease.coordination.k8s.io/apiserver-lgabes5ywnaqeagh5dny4zlzs4\nlease.coordination.k8s.io/kube-scheduler\n"
    );
}

#[test]
fn selectors() {
    let q = |all, component: Option<&str>, sel: Option<&str>| {
        Query {
            all,
            component: component.map(Into::into),
            selector: sel.map(Into::into),
        }
        .label_selector()
    };
    assert_eq!(
        q(false, None, None).as_deref(),
        Some("apiserver.kubernetes.io/identity")
    );
    assert_eq!(q(true, None, None), None);
    assert_eq!(
        q(false, Some("kube-apiserver"), Some("a=b")).as_deref(),
        Some("apiserver.kubernetes.io/identity=kube-apiserver,a=b")
    );
}
