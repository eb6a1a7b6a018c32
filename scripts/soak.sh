#!/usr/bin/env bash
# Long forms of the fault tests. Each soak is a function that runs one test of the integration
# binary with more rounds and prints its lines of figures; add a soak by adding a function and
# its name to SOAKS. Usage: scripts/soak.sh [soak...] (default: all of them).
#
#   chaos   tests/integration/chaos.rs, KAPI_CHAOS_ROUNDS (default 5) rounds of: kill -9 of the
#           etcd leader, kill -9 of a replica, SIGSTOP of the etcd leader for 10 s, under 64
#           writers. One line per round: acknowledged writes, lost writes (must be 0), the
#           slowest /readyz recovery per fault in seconds, the round's duration.
#   watchers  benches/watchers.rs for KAPI_WATCH_SECS (default 600) s: 1,000 slow watch
#           streams and 64 writers that create ConfigMaps and delete each writer's oldest beyond
#           100 (so the object count stays flat), RSS sampled every 100 ms; fails when RSS after
#           the first fifth moves by more than 10%, peak RSS >= 300 MiB, any 5xx or failed
#           /readyz. Prints the bench's summary lines.
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

soak_watchers() {
    KAPI_WATCH_SECS="${KAPI_WATCH_SECS:-600}" KAPI_WATCH_WRITERS=64 KAPI_WATCH_KEEP=100 \
        KAPI_WATCH_FLAT_PCT=10 cargo bench --locked --bench watchers 2>&1 |
        grep -v '^\s*\(Compiling\|Finished\|Running\)'
    return "${PIPESTATUS[0]}"
}

SOAKS=(chaos watchers)
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
