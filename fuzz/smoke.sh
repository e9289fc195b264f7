#!/usr/bin/env bash
# Bounded fuzz smoke run of every target (the last CI step in CONTRIBUTING.md): each target runs for
# FUZZ_SECONDS seconds (default 20); any panic, disagreement between feeding modes, or input
# taking over 10 s fails the run and leaves the input in fuzz/artifacts/<target>/.
#
# Needs cargo-fuzz (installed from crates.io when missing: about 50 s on our 2-core machines)
# and the nightly-only flags libFuzzer builds with, which RUSTC_BOOTSTRAP=1 unlocks on the
# stable toolchain (the only toolchain our machines have). Builds go to CARGO_TARGET_DIR if set.
set -euo pipefail
cd "$(dirname "$0")"
secs="${FUZZ_SECONDS:-20}"

if ! cargo fuzz --version >/dev/null 2>&1; then
    cargo install cargo-fuzz --locked
fi
export RUSTC_BOOTSTRAP=1

log="$(mktemp)"
trap 'rm -f "$log"' EXIT
for target in ${FUZZ_TARGETS:-parse_head decode_chunked proxy_protocol parse_uwsgi forwarded}; do
    echo "== fuzz $target for ${secs}s"
    mkdir -p "corpus/$target"
    # The first corpus directory collects new inputs; seeds/ is read only.
    status=0
    cargo fuzz run "$target" "corpus/$target" "seeds/$target" -- \
        -max_total_time="$secs" -timeout=10 -dict=http.dict -print_final_stats=1 >"$log" 2>&1 ||
        status=$?
    # libFuzzer's progress lines are noise here: show the summary, or everything on failure.
    if [ "$status" -ne 0 ]; then
        tail -n 60 "$log"
        echo "fuzz smoke: $target FAILED (exit $status)"
        exit 1
    fi
    grep -E '^(Done|stat::number_of_executed_units|stat::peak_rss_mb|INFO: Seed)' "$log" || true
done
echo "fuzz smoke: all targets ran ${secs}s without a failure"
