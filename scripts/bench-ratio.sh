#!/usr/bin/env bash
# kapi's API bench against the limits kit's ceiling, interleaved round by round.
#
#   scripts/bench-ratio.sh [ROUNDS]        # default 6 rounds, each: ceiling run + kapi run
#
# The API bars are ratios to ceilings (UPDATE and CREATE c=64 against the group-commit fsync
# server, GET c=64 against the bare hyper+rustls server). This machine's speed moves by ~1.3x within
# minutes, so a ceiling measured minutes before kapi can be off by that much. Here each round
# runs the ceiling and kapi back to back for the same few seconds (the order alternates from
# round to round), and the ratio is taken per round; the median of the rounds is the figure.
#
# Loads, as the limits kit's run.sh and benches/api.rs do: HTTP/2 over TLS, 8 connections x
# 8 streams, one loader thread. Ceiling: h2load PUT of the kit's 500-byte lease (group commit)
# or GET, 1 s warm-up. kapi: `cargo bench --bench api` with KAPI_BENCH_OPS=update|get,
# KAPI_BENCH_CONC=64 (OPS=create: KAPI_BENCH_OPS=create), one run per round (set KAPI_BENCH_BIN to measure another build).
#
# Environment: LIMITS (the kit's folder, default ../shared/bench/limits), SECS (seconds per
# run, default 4), OPS (default "update get"; add "create"). Needs h2load and the kit built by its run.sh
# (CARGO_TARGET_DIR=/tmp/limits-target); 127.0.0.1:8443 must be free.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-6}
SECS=${SECS:-4}
OPS=${OPS:-update get}
LIMITS=${LIMITS:-../shared/bench/limits}
SERVER=${LIMITS_TARGET:-/tmp/limits-target}/release/server
ADDR=127.0.0.1:8443
for need in h2load python3; do
    command -v "$need" > /dev/null || { echo "bench-ratio: $need is not installed (the limits kit's run.sh installs it)" >&2; exit 2; }
done
[[ -x $SERVER ]] || { echo "bench-ratio: no $SERVER; build the limits kit first: (cd $LIMITS && ./run.sh)" >&2; exit 2; }
[[ -f $LIMITS/lease.json ]] || { echo "bench-ratio: no $LIMITS/lease.json; set LIMITS to the limits kit's folder" >&2; exit 2; }
if (exec 3<> /dev/tcp/127.0.0.1/8443) 2> /dev/null; then
    echo "bench-ratio: 127.0.0.1:8443 is in use; stop what listens there" >&2
    exit 2
fi
cargo bench --bench api --no-run -q 2> /dev/null || cargo bench --bench api --no-run

SCRATCH=$(mktemp -d)
SERVER_PID=
cleanup() {
    [[ -n $SERVER_PID ]] && kill "$SERVER_PID" 2> /dev/null
    rm -rf "$SCRATCH"
}
trap cleanup EXIT
# Ctrl-C reaches h2load and the bench too, and both end their run early and exit normally, so
# bash (which then takes the interrupt as handled) would go on with a partial figure; with a
# trap it stops once the interrupted run returns, before printing anything from it.
trap 'echo "bench-ratio: interrupted; the round in progress is not reported" >&2; exit 130' INT TERM

# ceiling OP: prints the limits server's ops/s for one run
ceiling() {
    local args=() body=()
    if [[ $1 == update || $1 == create ]]; then
        args=(--durability group --wal "$SCRATCH/wal.log")
        body=(-d "$LIMITS/lease.json" -H ':method: PUT')
    fi
    rm -f "$SCRATCH/wal.log"
    "$SERVER" --addr "$ADDR" "${args[@]}" > "$SCRATCH/server.log" 2>&1 &
    SERVER_PID=$!
    for _ in $(seq 100); do grep -q listening "$SCRATCH/server.log" && break; sleep 0.05; done
    h2load -t1 -c8 -m8 -D "$SECS" --warm-up-time=1 "${body[@]}" "https://$ADDR/obj" > "$SCRATCH/h2load.txt" 2>&1 || true
    kill "$SERVER_PID" 2> /dev/null; wait "$SERVER_PID" 2> /dev/null || true; SERVER_PID=
    rm -f "$SCRATCH/wal.log"
    grep -oE 'finished in [0-9.]+m?s, [0-9.]+ req/s' "$SCRATCH/h2load.txt" | awk '{print $4}'
}

# kapi OP: prints kapi's ops/s for one run at c=64
kapi() {
    local row=UPDATE
    [[ $1 == get ]] && row=GET
    [[ $1 == create ]] && row=CREATE
    KAPI_BENCH_OPS=$1 KAPI_BENCH_CONC=64 KAPI_BENCH_SECS=$SECS KAPI_BENCH_RUNS=1 KAPI_BENCH_RESTARTS=1 \
        cargo bench -q --bench api > "$SCRATCH/kapi.txt" 2>&1 || true
    awk -F' *\\| *' -v r="$row" '$2 == r && $3 == 64 {print $4}' "$SCRATCH/kapi.txt"
}

# positive X: whether X is a rate above zero
positive() { awk -v x="$1" 'BEGIN { exit !(x + 0 > 0) }'; }

MODEL=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
echo "# $(date -u +%FT%TZ) rounds=$ROUNDS secs=$SECS cpu ${MODEL:-unknown} x $(nproc); load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "| op | round | ceiling ops/s | kapi ops/s | ratio |"
echo "|---|---|---|---|---|"
results="$SCRATCH/results"
for op in $OPS; do
    for round in $(seq "$ROUNDS"); do
        if ((round % 2)); then c=$(ceiling "$op"); k=$(kapi "$op"); else k=$(kapi "$op"); c=$(ceiling "$op"); fi
        # A figure is a positive rate: h2load reports 0 req/s when the server died at start.
        if ! positive "$c" || ! positive "$k"; then
            # The output of the run that gave no figure names the cause.
            echo "bench-ratio: round $round of $op produced no figure (ceiling '$c', kapi '$k'); last output:" >&2
            if ! positive "$c"; then
                tail -n 5 "$SCRATCH/server.log" "$SCRATCH/h2load.txt" >&2
            else
                tail -n 5 "$SCRATCH/kapi.txt" >&2
            fi
            exit 1
        fi
        echo "$op $c $k" >> "$results"
        awk -v o="$op" -v r="$round" -v c="$c" -v k="$k" 'BEGIN {printf "| %s | %d | %.0f | %.0f | %.1f%% |\n", o, r, c, k, 100 * k / c}'
    done
done
python3 - "$results" << 'EOF'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    op, c, k = line.split()
    rows.setdefault(op, []).append((float(c), float(k)))
for op, rs in rows.items():
    ratios = sorted(100 * k / c for c, k in rs)
    print(f"{op}: median ratio {statistics.median(ratios):.1f}% (min {ratios[0]:.1f}%, max {ratios[-1]:.1f}%); "
          f"median ceiling {statistics.median(c for c, _ in rs):.0f}/s, median kapi {statistics.median(k for _, k in rs):.0f}/s")
EOF
