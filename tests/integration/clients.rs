//! The official Python client (PyPI `kubernetes`) against the real server: CRUD, a 409 on a
//! stale update, and a watch stream. Uses KAPI_TEST_PYTHON or `python3` from PATH; fails
//! (with a message) when the `kubernetes` module is not importable.

use crate::crud::wait_default;
use crate::support::{within, TestServer};
use std::time::Duration;

const SCRIPT: &str = r#"
import sys, threading
from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException
config.load_kube_config(config_file=sys.argv[1])
v1 = client.CoreV1Api()
coord = client.CoordinationV1Api()
cm = v1.create_namespaced_config_map("default", {"metadata": {"name": "py"}, "data": {"a": "1"}})
assert cm.data == {"a": "1"}, cm
got = v1.read_namespaced_config_map("py", "default")
got.data["a"] = "2"
v1.replace_namespaced_config_map("py", "default", got)
try:
    v1.replace_namespaced_config_map("py", "default", got)
    raise SystemExit("stale update succeeded")
except ApiException as e:
    assert e.status == 409, e
    assert "the object has been modified" in e.body, e.body
lst = v1.list_namespaced_config_map("default")
assert [i.metadata.name for i in lst.items] == ["py"], lst
assert v1.list_namespaced_secret("default").items == []
lease = coord.create_namespaced_lease("default", {"metadata": {"name": "pl"}, "spec": {"holderIdentity": "me"}})
rv = lease.metadata.resource_version
def mutate():
    import time
    time.sleep(1)
    l = coord.read_namespaced_lease("pl", "default")
    l.spec.holder_identity = "you"
    coord.replace_namespaced_lease("pl", "default", l)
    coord.delete_namespaced_lease("pl", "default")
threading.Thread(target=mutate).start()
seen = []
w = watch.Watch()
for ev in w.stream(coord.list_namespaced_lease, "default", resource_version=rv, timeout_seconds=15):
    seen.append((ev["type"], ev["object"].metadata.name))
    if ev["type"] == "DELETED":
        w.stop()
assert seen == [("MODIFIED", "pl"), ("DELETED", "pl")], seen
v1.delete_namespaced_config_map("py", "default")
print("ok")
"#;

fn python() -> String {
    std::env::var("KAPI_TEST_PYTHON").unwrap_or_else(|_| "python3".into())
}

#[tokio::test]
async fn python_client_crud_conflict_and_watch() {
    let probe = std::process::Command::new(python())
        .args(["-c", "import kubernetes"])
        .output();
    if !probe.is_ok_and(|o| o.status.success()) {
        panic!(
            "the Python `kubernetes` client is not installed: run the suite through scripts/test.sh \
             (or set KAPI_TEST_PYTHON to a python with `kubernetes`)"
        );
    }
    let server = TestServer::start().await;
    wait_default(&server).await;
    let out = within(
        Duration::from_secs(90),
        "python client",
        tokio::process::Command::new(python())
            .args(["-c", SCRIPT])
            .arg(server.kubeconfig())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .unwrap();
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).contains("ok"),
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
