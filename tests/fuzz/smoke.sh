#!/usr/bin/env bash
# A short libFuzzer run of every harness from the committed corpus (tests/fuzz/corpus) and the
# inputs of past findings (tests/fuzz/regressions); any crash, sanitizer report, leak, timeout
# or out-of-memory fails. Fixed seed and run count; each harness stops after SECONDS at most.
#   tests/fuzz/smoke.sh BUILD_DIR [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:?build directory with the fuzz_* harnesses}
secs=${2:-25}
out="$build/fuzz-smoke"
export LSAN_OPTIONS="suppressions=$PWD/tests/fuzz/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
rm -rf "$out"
for h in model model_struct input profile weights idx npy events options; do
    mkdir -p "$out/$h"
    dirs=()
    [[ -d "tests/fuzz/corpus/$h" ]] && dirs+=("tests/fuzz/corpus/$h")
    [[ -d "tests/fuzz/regressions/$h" ]] && dirs+=("tests/fuzz/regressions/$h")
    echo "fuzz smoke: fuzz_$h for at most ${secs} s" >&2
    "$build/tests/fuzz/fuzz_$h" "$out/$h" "${dirs[@]}" -seed=1 -runs=100000 \
        -max_total_time="$secs" -timeout=25 -rss_limit_mb=3072 -print_final_stats=1 \
        -artifact_prefix="$out/finding-$h-" 2>"$out/$h.log" ||
        { tail -n 60 "$out/$h.log" >&2; echo "fuzz smoke: fuzz_$h failed (log $out/$h.log)" >&2; exit 1; }
    grep -E "stat::number_of_executed_units|Done [0-9]+ runs" "$out/$h.log" >&2 || true
done
