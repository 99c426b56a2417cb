#!/usr/bin/env bash
# Installs the build into a temporary prefix, moves the prefix, then runs the installed CLI
# from the new place and configures, builds and runs a find_package(ternion) consumer against
# it. The installed CLI's and the consumer's results must equal the build tree's CLI exactly.
# usage: test_install.sh BUILD_DIR CONSUMER_SRC CMAKE CXX_COMPILER C_COMPILER BUILD_TYPE [LAUNCHER]
set -euo pipefail
build=$1 consumer_src=$2 cmake=$3 cxx=$4 cc=$5 build_type=$6 launcher=${7:-}
fail() { echo "test_install: $*" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
unset TERNION_DATA_DIR TERNION_PROFILE_DIR

"$cmake" --install "$build" --prefix "$tmp/first" >/dev/null
mv "$tmp/first" "$tmp/moved"
p=$(cd "$tmp/moved" && pwd -P)
[[ ! -e $tmp/first ]] || fail "the first prefix still exists"

for f in bin/ternion lib/libternion_core.a lib/libternion_kernels.a lib/libternion_io.a \
         lib/libternion_synaptic.a lib/libternion_models.a include/ternion/sim/kernels/neuron_rules.hpp \
         include/ternion/sim/core/engine.hpp include/ternion/models/nir_loader.hpp \
         include/ternion/hw/cost_model.hpp lib/cmake/ternion/ternionConfig.cmake \
         lib/cmake/ternion/ternionConfigVersion.cmake lib/cmake/ternion/ternionTargets.cmake \
         share/ternion/profiles/horowitz45-fp32.json share/ternion/bundled/bsa_digits.h5 \
         share/ternion/bundled/digits_test.h5 share/ternion/bundled/bsa_fmnist.h5 \
         share/ternion/bundled/ssa_fmnist.h5 share/ternion/plot_trace.py share/ternion/plot_mesh.py \
         share/doc/ternion/README.md share/doc/ternion/docs/cost-model.md; do
    [[ -e $p/$f ]] || fail "missing $f in the installed prefix"
done
# The Python package: lib/python3.X/dist-packages outside /usr (Debian's path for local installs).
pkg=$(echo "$p"/lib/python3*/dist-packages)
[[ -e $pkg/ternion/__init__.py ]] || fail "missing the Python package under $p/lib"

# Profiles come from the moved prefix's share/ternion, found relative to the executable.
profiles=$("$p/bin/ternion" profiles)
grep -Eq '^horowitz45-fp32 .*\[default\]$' <<<"$profiles" || fail "profiles: $profiles"
[[ $(grep -c . <<<"$profiles") == 6 ]] || fail "expected 6 profiles: $profiles"
"$p/bin/ternion" profiles --help | grep -qF "A NAME is looked up in $p/share/ternion/profiles" ||
    fail "profiles are not looked up in the moved prefix"

# The default run (the bundled Fashion-MNIST model and its SSA twin, from the moved prefix, on
# Debian's Fashion-MNIST test set; its first 500 images here), same results as in-tree; then the
# bundled digits model and test set, which the consumer runs too.
"$p/bin/ternion" run --samples 500 --json --no-progress >"$tmp/installed_default.json"
"$build/ternion" run --samples 500 --json --no-progress >"$tmp/intree_default.json"
"$p/bin/ternion" run "$p/share/ternion/bundled/bsa_digits.h5" \
    --input "$p/share/ternion/bundled/digits_test.h5" --json --no-progress >"$tmp/installed.json"
"$build/ternion" run "$(dirname "$consumer_src")/../../models/bundled/bsa_digits.h5" \
    --input "$(dirname "$consumer_src")/../../models/bundled/digits_test.h5" \
    --json --no-progress >"$tmp/intree.json"

# TERNION_DATA_DIR, when set, is the only place searched, and the error names it.
if TERNION_DATA_DIR="$tmp/nowhere" "$p/bin/ternion" run --no-progress 2>"$tmp/err.txt"; then
    fail "ran with TERNION_DATA_DIR pointing nowhere"
fi
grep -qF "searched $tmp/nowhere/bundled" "$tmp/err.txt" || fail "error: $(cat "$tmp/err.txt")"

# A consumer project: find_package(ternion) from the moved prefix.
args=(-S "$consumer_src" -B "$tmp/consumer" -DCMAKE_PREFIX_PATH="$p" -DCMAKE_BUILD_TYPE="$build_type"
      -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_C_COMPILER="$cc")
[[ -z $launcher ]] || args+=(-DCMAKE_CXX_COMPILER_LAUNCHER="$launcher")
"$cmake" "${args[@]}" >"$tmp/consumer.log" 2>&1 || { cat "$tmp/consumer.log"; fail "consumer configure"; }
"$cmake" --build "$tmp/consumer" -j2 >>"$tmp/consumer.log" 2>&1 ||
    { cat "$tmp/consumer.log"; fail "consumer build"; }
"$tmp/consumer/app" >"$tmp/consumer.txt" || fail "consumer run: $(cat "$tmp/consumer.txt")"
cat "$tmp/consumer.txt"

# The same consumer with add_subdirectory(<source tree>): configured, and its source compiled
# against the subproject's targets (include roots, flags). Compile only: building the whole
# library again would take minutes; linking is covered by the find_package consumer above.
src=$(cd "$consumer_src/../../.." && pwd)
args=(-S "$consumer_src" -B "$tmp/subdir" -DTERNION_SOURCE_DIR="$src" -DTERNION_PYTHON=OFF
      -DCMAKE_BUILD_TYPE="$build_type" -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_C_COMPILER="$cc")
[[ -z $launcher ]] || args+=(-DCMAKE_CXX_COMPILER_LAUNCHER="$launcher")
"$cmake" "${args[@]}" >"$tmp/subdir.log" 2>&1 || { cat "$tmp/subdir.log"; fail "add_subdirectory configure"; }
make -C "$tmp/subdir" main.cpp.o >>"$tmp/subdir.log" 2>&1 ||
    { cat "$tmp/subdir.log"; fail "add_subdirectory: the consumer does not compile"; }
grep -q "TERNION_BUILD_TESTS:BOOL=OFF" "$tmp/subdir/CMakeCache.txt" ||
    fail "add_subdirectory: tests are not off by default in a subproject"

# The installed extension module finds the bundled data beside its own (moved) prefix.
if compgen -G "$pkg/ternion/_core*.so" >/dev/null; then
    (cd "$tmp" && PYTHONPATH="$pkg" /usr/bin/python3 -c '
import json, sys, ternion
m = ternion.load_bundled()
r = ternion.run(m, threads=1, record=())
print(json.dumps({"model": m.path, "accuracy": r.accuracy,
                  "energy": r.energy["per_inference_pj"], "file": ternion.__file__}))
' >"$tmp/python.json") || fail "installed Python package"
else
    echo '{}' >"$tmp/python.json"
fi

# The installed plot script draws from the installed package (share/ternion -> lib/python3*),
# run from elsewhere without PYTHONPATH; matplotlib is only suggested, so skipped without it.
if /usr/bin/python3 -c 'import matplotlib, h5py' 2>/dev/null; then
    "$p/bin/ternion" run "$p/share/ternion/bundled/bsa_digits.h5" --samples 2 --no-progress \
        --input "$p/share/ternion/bundled/digits_test.h5" --trace "$tmp/trace.h5" >/dev/null
    (cd "$tmp" && env -u PYTHONPATH /usr/bin/python3 "$p/share/ternion/plot_trace.py" trace.h5 \
        --out figs --figures raster,rates >/dev/null) || fail "installed plot_trace.py"
    [[ -s $tmp/figs/raster.png && -s $tmp/figs/rates.png ]] || fail "installed plot_trace.py wrote no figures"
    "$p/bin/ternion" map "$p/share/ternion/bundled/bsa_digits.h5" --chip loihi-like --json \
        | (cd "$tmp" && env -u PYTHONPATH /usr/bin/python3 "$p/share/ternion/plot_mesh.py" - \
            -o figs/mesh.png >/dev/null) || fail "installed plot_mesh.py"
    [[ -s $tmp/figs/mesh.png ]] || fail "installed plot_mesh.py wrote no figure"
fi

/usr/bin/python3 - "$p" "$tmp/installed.json" "$tmp/intree.json" "$tmp/consumer.txt" \
    "$tmp/python.json" "$tmp/installed_default.json" "$tmp/intree_default.json" <<'PY'
import json, sys
prefix, installed, intree, consumer, python, installed_d, intree_d = sys.argv[1:]
bundled = prefix + "/share/ternion/bundled/"
a, b = json.load(open(installed_d)), json.load(open(intree_d))
assert a["model"] == bundled + "bsa_fmnist.h5", a["model"]
assert a["compare"]["model"] == bundled + "ssa_fmnist.h5", a["compare"]["model"]
assert a["input"] == "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz", a["input"]
assert b["model"] != a["model"] and a["samples"] == 500
for k in ("accuracy", "predictions"):
    assert a[k] == b[k], k
assert a["per_inference"]["energy_pj"] == b["per_inference"]["energy_pj"]
assert a["compare"]["energy_pj_per_inference"] == b["compare"]["energy_pj_per_inference"]
a, b = json.load(open(installed)), json.load(open(intree))
assert a["model"] == bundled + "bsa_digits.h5", a["model"]
assert a["input"] == bundled + "digits_test.h5", a["input"]
assert b["model"] != a["model"]
assert a["samples"] == 360 and a["profile"]["name"] == "horowitz45-fp32", (a["samples"], a["profile"])
for k in ("accuracy", "predictions"):
    assert a[k] == b[k], k
assert a["per_inference"]["energy_pj"] == b["per_inference"]["energy_pj"]
assert a["per_inference"]["energy_pj"] > 0 and a["accuracy"] > 0.5
c = dict(line.split(" ", 1) for line in open(consumer).read().splitlines())
assert c["model"] == bundled + "bsa_digits.h5", c["model"]
assert float(c["accuracy"]) == a["accuracy"], (c["accuracy"], a["accuracy"])
assert float(c["energy_pj_per_inference"]) == a["per_inference"]["energy_pj"], c
py = json.load(open(python))
if py:
    assert py["file"].startswith(prefix + "/lib/python3"), py["file"]
    assert py["model"] == bundled + "bsa_digits.h5", py["model"]
    assert py["accuracy"] == a["accuracy"] and py["energy"] == a["per_inference"]["energy_pj"], py
print("test_install: installed CLI, moved prefix, consumer and Python agree: accuracy",
      a["accuracy"], "energy/inference", a["per_inference"]["energy_pj"], "pJ")
PY
