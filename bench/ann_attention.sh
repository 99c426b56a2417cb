#!/bin/bash
# Benchmark: ternion's ANN attentions next to the PyTorch reference script attention_scaling.py
# (softmax and CAT attention in PyTorch; see docs/benchmarks.md), D = 512, 8 heads, batch 1,
# 1 thread, alternated per N within one run. Prints one line per
# round and N: round N cat_ternion_ms softmax_ternion_ms cat_pytorch_ms softmax_pytorch_ms
# (softmax up to N = 4096; each figure is the median of 5 forward passes).
#
#   bash bench/ann_attention.sh [build/ternion] [rounds]
#
# The reference script's location is set by the variable peer below; point it at your copy.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
tern="${1:-$here/../build/ternion}"
rounds="${2:-3}"
peer="$here/../../shared/peers/perf/attention_scaling.py"
tb() {
    "$tern" bench attention --kind "$1" --tokens "$2" --dim 512 --heads 8 --threads 1 \
        --repeats 5 --json | /usr/bin/python3 -c "import json,sys; print(json.load(sys.stdin)['ms_median'])"
}
for r in $(seq "$rounds"); do
    for N in 256 1024 4096 16384; do
        c=$(tb cat "$N")
        s=NA
        [ "$N" -le 4096 ] && s=$(tb softmax "$N")
        p=$(/usr/bin/python3 "$peer" --N "$N" --threads 1 --repeats 5 --max_softmax_n 4096 | tail -1 |
            /usr/bin/python3 -c "import json,sys; j=json.loads(sys.stdin.read()); print(j['cat']['ms_median'], (j.get('softmax') or {}).get('ms_median','NA'))")
        echo "$r $N $c $s $p"
    done
done
