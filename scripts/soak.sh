#!/usr/bin/env bash
# Long forms of the fault tests. Each soak is a function that runs one test of the integration
# binary with more rounds and prints its lines of figures; add a soak by adding a function and
# its name to SOAKS. Usage: scripts/soak.sh [soak...] (default: all of them).
#
#   chaos   tests/integration/chaos.rs, KAPI_CHAOS_ROUNDS (default 5) rounds of: kill -9 of the
#           etcd leader, kill -9 of a replica, SIGSTOP of the etcd leader for 10 s, under 64
#           writers. One line per round: acknowledged writes, lost writes (must be 0), the
#           slowest /readyz recovery per fault in seconds, the round's duration.
#
# Needs etcd on PATH (scripts/test.sh installs it into .tools/venv).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
if [ -d "$root/.tools/venv/bin" ]; then
    export PATH="$root/.tools/venv/bin:$PATH"
fi

# Runs one integration test with --nocapture, printing the lines that start with $2.
run_test() {
    local filter="$1" prefix="$2" log
    log="$(mktemp)"
    if ! cargo test --locked --test integration "$filter" -- --exact --nocapture >"$log" 2>&1; then
        grep -- "$prefix" "$log" || true
        echo "soak.sh: $filter failed; its output follows" >&2
        tail -n 60 "$log" >&2
        rm -f "$log"
        return 1
    fi
    grep -- "$prefix" "$log"
    rm -f "$log"
}

soak_chaos() {
    KAPI_CHAOS_ROUNDS="${KAPI_CHAOS_ROUNDS:-5}" \
        run_test chaos::etcd_and_replica_faults_lose_no_acknowledged_write "chaos round"
}

SOAKS=(chaos)
selected=("$@")
[ ${#selected[@]} -eq 0 ] && selected=("${SOAKS[@]}")
status=0
for soak in "${selected[@]}"; do
    if ! declare -F "soak_$soak" >/dev/null; then
        echo "soak.sh: unknown soak '$soak' (known: ${SOAKS[*]})" >&2
        exit 2
    fi
    echo "== $soak"
    "soak_$soak" || status=1
done
exit $status
