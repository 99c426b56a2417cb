#!/bin/sh
# The default build must run on every x86-64-v2 CPU and use the kernels of the CPU it runs on.
# qemu's user-mode emulator stands in for older CPUs: a Nehalem (SSE4.2, no AVX: x86-64-v2) and
# a Haswell (AVX2 + FMA, no AVX-512: x86-64-v3). On each, `ternion version` must report that
# level, and the bundled digits model must give exactly the native run's report (predictions,
# spikes, counts, energies). An instruction above the emulated CPU's level anywhere in the
# binary that the run reaches ends it with SIGILL. Exit 77 (skipped) without qemu-x86_64.
# Usage: test_portable_cpu.sh path/to/ternion models/bundled
set -eu
ternion=$1
bundled=$2
qemu=$(command -v qemu-x86_64 || true)
if [ -z "$qemu" ] || [ "$(uname -m)" != x86_64 ]; then
    echo "skipped: qemu-x86_64 not installed (apt-get install qemu-user)"
    exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
strip_timing() { /usr/bin/python3 -c 'import json,sys; j=json.load(sys.stdin); j.pop("timing"); print(json.dumps(j, sort_keys=True))'; }
"$ternion" run "$bundled/bsa_digits.h5" --input "$bundled/digits_test.h5" --samples 12 --json --no-progress | strip_timing >"$tmp/native"
for cpu in Nehalem:v2 Haswell:v3; do
    model=${cpu%%:*}
    level=${cpu##*:}
    "$qemu" -cpu "$model" "$ternion" version >"$tmp/version" 2>&1 || {
        cat "$tmp/version"
        echo "test_portable_cpu: ternion version failed on a $model CPU" >&2
        exit 1
    }
    grep -q "kernels: x86-64-$level" "$tmp/version" || {
        cat "$tmp/version"
        echo "test_portable_cpu: a $model CPU should run the x86-64-$level kernels" >&2
        exit 1
    }
    "$qemu" -cpu "$model" "$ternion" run "$bundled/bsa_digits.h5" --input "$bundled/digits_test.h5" --samples 12 --json \
        --no-progress | strip_timing >"$tmp/$model"
    if ! cmp -s "$tmp/native" "$tmp/$model"; then
        echo "test_portable_cpu: the report on a $model CPU differs from the native run's" >&2
        exit 1
    fi
    echo "$model: x86-64-$level kernels, report equal to the native run"
done
