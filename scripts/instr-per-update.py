#!/usr/bin/env python3
"""Instructions the server executes per lease UPDATE, counted by valgrind's callgrind.

This machine's CPU speed moves by 1.3-1.5x within minutes, which drowns a 5% change in the
API bench; an instruction count does not move (two runs of one binary agree within 1%). It
counts user-space instructions only (no kernel work: sockets, fsync), so it complements the
bench rather than replacing it.

    .tools/venv/bin/python scripts/instr-per-update.py target/release/kapi [THREADS] [PER_THREAD] [-- serve flags]
    .tools/venv/bin/python scripts/instr-per-update.py --create target/release/kapi ...
    .tools/venv/bin/python scripts/instr-per-update.py --policy target/release/kapi 2 300

With --create it counts instructions per CREATE instead: a POST of the API bench's ConfigMap
(`generateName`, so every create makes a new object) to the namespace `default`. With
--policy it counts per UPDATE of a ConfigMap (as --configmap) with the admission bench's
ValidatingAdmissionPolicy (three rules) and its binding in force, and with --webhook with a
validating webhook for ConfigMap updates instead (served by this script over TLS, HTTP/1.1,
a certificate made with the openssl command; its own work is not counted). With
--crontab it counts per UPDATE of the CRD bench's CronTab (schema, defaults, one CEL rule)
instead of a lease, and with --configmap per UPDATE of a ConfigMap of the same fields (the
bench's other half).

Starts `kapi serve` under callgrind on a temp data dir, creates one lease per thread, opens
one HTTPS connection per thread (HTTP/1.1, the admin client certificate), warms up, zeroes
the counters, runs THREADS x PER_THREAD updates (PUT of the object the last response
returned with spec.renewTime changed, as the API bench does), dumps the counters and prints
instructions per update. The dump is left in the temp dir for callgrind_annotate; the
server's data dir and the admin credentials are removed.
Needs valgrind and the Python packages `requests` and `PyYAML` (scripts/test.sh installs
both into .tools/venv as dependencies of the Python client).
"""
import base64
import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

import requests
import yaml


def main():
    args = sys.argv[1:]
    head = args[: args.index("--") if "--" in args else len(args)]
    create = "--create" in head
    if create:
        args.remove("--create")
    crontab = "--crontab" in head
    if crontab:
        args.remove("--crontab")
    configmap = "--configmap" in head
    if configmap:
        args.remove("--configmap")
        crontab = "configmap"
    policy = "--policy" in head
    if policy:
        args.remove("--policy")
        crontab = "configmap"
    if "--webhook" in head:
        args.remove("--webhook")
        crontab = "configmap"
        policy = "webhook"
    serve_flags = []
    if "--" in args:
        at = args.index("--")
        args, serve_flags = args[:at], args[at + 1:]
    if not args:
        sys.exit(__doc__)
    binary = args[0]
    threads = int(args[1]) if len(args) > 1 else 16
    per = int(args[2]) if len(args) > 2 else 150
    tmp = tempfile.mkdtemp(prefix="kapi-instr-")
    server = subprocess.Popen(
        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={tmp}/callgrind.%p", binary,
         "serve", "--bind-address", "127.0.0.1", "--secure-port", "0", "--data-dir",
         f"{tmp}/data"] + serve_flags,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        run(server, tmp, threads, per, create, crontab, policy)
    finally:
        server.terminate()
        server.wait()
        # Only the dump stays: the server's data dir and the admin credentials go.
        shutil.rmtree(f"{tmp}/data", ignore_errors=True)
        for name in ("ca", "crt", "key", "hook.key", "hook-ca.key"):
            if os.path.exists(f"{tmp}/{name}"):
                os.remove(f"{tmp}/{name}")


CONFIGMAP = {
    "apiVersion": "v1", "kind": "ConfigMap",
    "metadata": {"generateName": "bench-", "labels": {"app.kubernetes.io/name": "bench"}},
    "data": {"mode": "fast", "replicas": "3",
             "config.yaml": "server:\n  port: 8080\n  timeout: 30s\nlog:\n  level: info\n"},
}


CRONTAB_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "crontabs.stable.example.com"},
    "spec": {"group": "stable.example.com", "scope": "Namespaced",
             "names": {"plural": "crontabs", "singular": "crontab", "kind": "CronTab"},
             "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                 "type": "object", "properties": {"spec": {
                     "type": "object",
                     "x-kubernetes-validations": [{"rule": "self.replicas <= self.maxReplicas"}],
                     "properties": {
                         "cronSpec": {"type": "string", "pattern": "^(\\S+\\s+){4}\\S+$", "maxLength": 64},
                         "image": {"type": "string", "minLength": 1},
                         "replicas": {"type": "integer", "minimum": 0, "default": 1},
                         "maxReplicas": {"type": "integer", "minimum": 0, "default": 10},
                         "policy": {"type": "string", "enum": ["Allow", "Forbid"], "default": "Allow"},
                         "renewTime": {"type": "string"},
                         "config": {"type": "string"}}}}}}}]},
}


POLICY = {
    "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
    "metadata": {"name": "bench-policy"},
    "spec": {
        "failurePolicy": "Fail",
        "matchConstraints": {"resourceRules": [{
            "apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"],
            "resources": ["configmaps"]}]},
        "validations": [
            {"expression": "object.metadata.name.size() < 64", "message": "name too long"},
            {"expression": "!has(object.data) || size(object.data) < 100", "message": "too many keys"},
            {"expression": "request.userInfo.username != 'nobody'"},
        ],
    },
}

BINDING = {
    "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
    "metadata": {"name": "bench-policy"},
    "spec": {"policyName": "bench-policy", "validationActions": ["Deny"]},
}


def webhook_config(tmp):
    """Starts the webhook (a thread of this process) and returns its configuration: it allows
    every review, and refuses a ConfigMap of 100 keys as the policy does, for the probe."""
    import http.server
    import ssl
    # A CA and a certificate for 127.0.0.1 it signs (webpki refuses a CA as the server's).
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    with open(f"{tmp}/hook.ext", "w") as f:
        f.write("subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n")
    for cmd in (["req", "-x509", *ec, "-days", "1", "-subj", "/CN=instr-ca",
                 "-keyout", f"{tmp}/hook-ca.key", "-out", f"{tmp}/hook-ca.crt"],
                ["req", *ec, "-subj", "/CN=127.0.0.1", "-keyout", f"{tmp}/hook.key",
                 "-out", f"{tmp}/hook.csr"],
                ["x509", "-req", "-in", f"{tmp}/hook.csr", "-CA", f"{tmp}/hook-ca.crt",
                 "-CAkey", f"{tmp}/hook-ca.key", "-CAcreateserial", "-days", "1",
                 "-extfile", f"{tmp}/hook.ext", "-out", f"{tmp}/hook.crt"]):
        subprocess.run(["openssl", *cmd], check=True, capture_output=True)

    class Hook(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self):
            review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            request = review["request"]
            allowed = len((request.get("object") or {}).get("data") or {}) < 100
            body = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                               "response": {"uid": request["uid"], "allowed": allowed,
                                            "status": {"code": 400, "message": "too many keys"}}})
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body.encode())

        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hook)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(f"{tmp}/hook.crt", f"{tmp}/hook.key")
    httpd.socket = ctx.wrap_socket(httpd.socket, server_side=True)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    ca = base64.b64encode(open(f"{tmp}/hook-ca.crt", "rb").read()).decode()
    return {
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "bench-webhook"},
        "webhooks": [{"name": "validate.bench.example.com",
                      "clientConfig": {"url": f"https://127.0.0.1:{httpd.server_port}/validate",
                                       "caBundle": ca},
                      "rules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": [""],
                                 "apiVersions": ["v1"], "resources": ["configmaps"]}],
                      "failurePolicy": "Fail", "sideEffects": "None",
                      "admissionReviewVersions": ["v1"], "timeoutSeconds": 10}],
    }


def run(server, tmp, threads, per, create, crontab=False, policy=False):
    kubeconfig = None
    for line in server.stderr:
        if line.startswith("export KUBECONFIG="):
            kubeconfig = line.strip().split("=", 1)[1]
            break
    if kubeconfig is None:
        sys.exit("kapi serve exited before writing its kubeconfig")
    threading.Thread(target=lambda: [None for _ in server.stderr], daemon=True).start()
    cfg = yaml.safe_load(open(kubeconfig))
    url = cfg["clusters"][0]["cluster"]["server"]
    user = cfg["users"][0]["user"]
    for name, data in [("ca", cfg["clusters"][0]["cluster"]["certificate-authority-data"]),
                       ("crt", user["client-certificate-data"]),
                       ("key", user["client-key-data"])]:
        # Created 0600: the admin key never sits readable by others, even briefly.
        with os.fdopen(os.open(f"{tmp}/{name}", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as f:
            f.write(base64.b64decode(data))

    def session():
        s = requests.Session()
        s.trust_env = False  # REQUESTS_CA_BUNDLE would otherwise replace our CA
        s.verify, s.cert = f"{tmp}/ca", (f"{tmp}/crt", f"{tmp}/key")
        return s

    admin = session()
    for _ in range(600):
        try:
            if admin.get(url + "/readyz").status_code == 200:
                break
        except requests.RequestException:
            pass
        time.sleep(0.5)
    else:
        sys.exit("kapi serve did not become ready")
    base = url + "/apis/coordination.k8s.io/v1/namespaces/default/leases"

    def now():
        return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")

    if crontab == "configmap":
        base = url + "/api/v1/namespaces/default/configmaps"
        if policy:
            group = url + "/apis/admissionregistration.k8s.io/v1/"
            configs = [("validatingadmissionpolicies", POLICY),
                       ("validatingadmissionpolicybindings", BINDING)]
            if policy == "webhook":
                configs = [("validatingwebhookconfigurations", webhook_config(tmp))]
            for path, body in configs:
                r = admin.post(group + path, json=body)
                if r.status_code != 201:
                    sys.exit(f"creating the {path}: {r.status_code} {r.text}")
            # In force once a ConfigMap with 100 keys is refused (a dry run stores nothing).
            probe = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "probe"},
                     "data": {f"k{i}": "v" for i in range(100)}}
            for _ in range(600):
                r = admin.post(base + "?dryRun=All", json=probe)
                if r.status_code in (422, 400):
                    break
                time.sleep(0.2)
            else:
                sys.exit(f"the admission configuration did not come into force: {r.status_code} {r.text}")
    elif crontab:
        r = admin.post(url + "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", json=CRONTAB_CRD)
        if r.status_code != 201:
            sys.exit(f"creating the CRD: {r.status_code} {r.text}")
        base = url + "/apis/stable.example.com/v1/namespaces/default/crontabs"
        for _ in range(600):
            if admin.get(base).status_code == 200:
                break
            time.sleep(0.2)
    for i in range(threads):
        if crontab == "configmap":
            body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"instr-{i}"},
                    "data": {"cronSpec": "*/5 * * * *", "image": "registry.example.com/app:1.0",
                             "replicas": "3", "renewTime": now(),
                             "config": "server:\n  port: 8080\n" * 16}}
        elif crontab:
            body = {"apiVersion": "stable.example.com/v1", "kind": "CronTab",
                    "metadata": {"name": f"instr-{i}"},
                    "spec": {"cronSpec": "*/5 * * * *", "image": "registry.example.com/app:1.0",
                             "replicas": 3, "renewTime": now(),
                             "config": "server:\n  port: 8080\n" * 16}}
        else:
            body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                    "metadata": {"name": f"instr-{i}"},
                    "spec": {"holderIdentity": "instr", "leaseDurationSeconds": 40,
                             "acquireTime": now(), "renewTime": now()}}
        r = admin.post(base, json=body)
        if r.status_code != 201:
            sys.exit(f"creating instr-{i}: {r.status_code} {r.text}")
    sessions = [session() for _ in range(threads)]
    objects = [s.get(f"{base}/instr-{i}").json() for i, s in enumerate(sessions)]
    failures = []

    def work(i, n):
        if create:
            return work_create(i, n)
        s, obj = sessions[i], objects[i]
        for _ in range(n):
            obj["data" if crontab == "configmap" else "spec"]["renewTime"] = now()
            r = s.put(f"{base}/instr-{i}", data=json.dumps(obj),
                      headers={"Content-Type": "application/json"})
            if r.status_code != 200:
                failures.append(f"{r.status_code} {r.text}")
                return
            obj = r.json()
        objects[i] = obj

    cm_url = url + "/api/v1/namespaces/default/configmaps"
    cm_body = json.dumps(CONFIGMAP)

    def work_create(i, n):
        s = sessions[i]
        for _ in range(n):
            r = s.post(cm_url, data=cm_body, headers={"Content-Type": "application/json"})
            if r.status_code != 201:
                failures.append(f"{r.status_code} {r.text}")
                return

    def round_of(n):
        ts = [threading.Thread(target=work, args=(i, n)) for i in range(threads)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()

    round_of(20)  # warm-up: connections open, caches filled
    subprocess.run(["callgrind_control", "-z", str(server.pid)], check=True, capture_output=True)
    started = time.time()
    round_of(per)
    took = time.time() - started
    subprocess.run(["callgrind_control", "-d", str(server.pid)], check=True, capture_output=True)
    time.sleep(1)
    if failures:
        sys.exit(f"{len(failures)} requests failed, first: {failures[0]}")
    dump = sorted(f for f in os.listdir(tmp) if f.startswith("callgrind.") and f.endswith(".1"))
    if not dump:
        sys.exit("callgrind wrote no dump")
    with open(f"{tmp}/{dump[0]}") as f:
        total = next(int(line.split()[1]) for line in f if line.startswith("summary:"))
    n = threads * per
    what = "create" if create else "update"
    print(f"{total / n / 1000:.1f}k instructions per {what} ({n} {what}s, {threads} connections, "
          f"{n / took:.0f}/s under valgrind); dump: {tmp}/{dump[0]}")


if __name__ == "__main__":
    main()
