#!/usr/bin/env bash
# Fuzzes what kapi reads from the network with cargo-fuzz (libFuzzer): the targets in
# fuzz/fuzz_targets/, each from its committed seeds in fuzz/corpus/<target>/.
#
#   scripts/fuzz.sh                  every target, 600 s each
#   scripts/fuzz.sh patch 3600       one target for an hour
#   scripts/fuzz.sh all 60           every target for a minute (what scripts/test.sh runs)
#
# Installs cargo-fuzz into .tools/cargo on first use. libFuzzer needs unstable rustc flags:
# on a stable toolchain this sets RUSTC_BOOTSTRAP=1; a toolchain that refuses it gets one line
# and exit 0 (skipped, not failed). A crash, a hang (one input > 10 s) or an OOM (> 2 GiB)
# fails the run; the input is left in fuzz/artifacts/<target>/ — turn it into a unit test
# next to the code that failed. Inputs that found new coverage collect in
# fuzz/target/corpus/<target>/ (ignored by git; copy good ones into fuzz/corpus/).
# KAPI_FUZZ_SANITIZER=address builds with AddressSanitizer (slower; default: none, kapi has
# no unsafe code). Reproduce one input: scripts/fuzz.sh <target> 0 <file>.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
targets=(selectors query body protobuf patch apply)
target="${1:-all}"
secs="${2:-600}"
reproduce="${3:-}"
sanitizer="${KAPI_FUZZ_SANITIZER:-none}"
export RUSTC_BOOTSTRAP=1

if [ "$target" != all ] && [[ ! " ${targets[*]} " =~ " $target " ]]; then
    echo "fuzz.sh: unknown target $target (one of: all ${targets[*]})" >&2
    exit 2
fi

skip() {
    echo "fuzz.sh: SKIPPED fuzzing: $1" >&2
    exit 0
}

# Can this toolchain take the flags cargo-fuzz passes (coverage instrumentation; a sanitizer
# is a -Z flag, which a stable rustc takes only with RUSTC_BOOTSTRAP)?
probe="$(mktemp -d)"
trap 'rm -rf "$probe"' EXIT
echo 'pub fn probe() {}' >"$probe/probe.rs"
flags=(-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4)
[ "$sanitizer" = none ] || flags+=("-Zsanitizer=$sanitizer")
if ! rustc "${flags[@]}" --crate-type lib --emit obj --out-dir "$probe" "$probe/probe.rs" >"$probe/log" 2>&1; then
    skip "this Rust toolchain refuses the flags libFuzzer needs ($(head -n1 "$probe/log"))"
fi

cargo_fuzz="$root/.tools/cargo/bin/cargo-fuzz"
if [ ! -x "$cargo_fuzz" ]; then
    echo "fuzz.sh: installing cargo-fuzz into .tools/cargo" >&2
    if ! cargo install cargo-fuzz --locked --quiet --root "$root/.tools/cargo"; then
        skip "cargo-fuzz could not be installed"
    fi
fi

# Optimized, with debug assertions (cargo-fuzz's default) so overflows panic as in tests.
build=("$cargo_fuzz" build -s "$sanitizer")
echo "fuzz.sh: building the fuzz targets (sanitizer: $sanitizer)" >&2
started=$SECONDS
"${build[@]}"
echo "fuzz.sh: built in $((SECONDS - started)) s" >&2

run_one() {
    local t="$1" work="fuzz/target/corpus/$1" log="fuzz/target/logs/$1.log"
    mkdir -p "$work" "fuzz/artifacts/$t" "$(dirname "$log")"
    local flags=(-timeout=10 -rss_limit_mb=2048 -print_final_stats=1
        "-artifact_prefix=fuzz/artifacts/$t/")
    if [ -n "$reproduce" ]; then
        "$cargo_fuzz" run -s "$sanitizer" "$t" "$reproduce" -- "${flags[@]}"
        return
    fi
    local rc=0
    "$cargo_fuzz" run -s "$sanitizer" "$t" "$work" "fuzz/corpus/$t" -- \
        "${flags[@]}" "-max_total_time=$secs" >"$log" 2>&1 || rc=$?
    local last runs cov ft execs
    last="$(grep -E '^#[0-9]+' "$log" | tail -n1 || true)"
    runs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")"
    execs="$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")"
    cov="$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")"
    ft="$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")"
    if [ "$rc" -ne 0 ]; then
        tail -n 60 "$log" >&2
        echo "fuzz.sh: $t FAILED (exit $rc); input in fuzz/artifacts/$t/, log $log" >&2
        return "$rc"
    fi
    echo "fuzz.sh: $t ok: ${runs:-?} runs in ${secs} s, ${execs:-?} exec/s, cov ${cov:-?}, ft ${ft:-?}" >&2
}

if [ "$target" = all ]; then
    failed=0
    for t in "${targets[@]}"; do
        run_one "$t" || failed=1
    done
    exit "$failed"
fi
run_one "$target"
