#!/usr/bin/env bash
# Builds the Debian package (cpack -G DEB), unpacks it into a temporary root without installing
# it, and runs what it holds from there: the CLI on the bundled digits model and the Python
# package (when the build has the extension). Results must equal the build tree's CLI exactly,
# and the package must declare the libraries it links and recommend the data set it runs.
# usage: test_deb.sh BUILD_DIR CPACK
set -euo pipefail
build=$1 cpack=$2
fail() { echo "test_deb: $*" >&2; exit 1; }
command -v dpkg-deb >/dev/null || { echo "skipped: no dpkg-deb"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
unset TERNION_DATA_DIR TERNION_PROFILE_DIR

"$cpack" --config "$build/CPackConfig.cmake" -G DEB -B "$tmp/pkg" >"$tmp/cpack.log" 2>&1 ||
    { cat "$tmp/cpack.log"; fail "cpack -G DEB failed"; }
deb=$(echo "$tmp"/pkg/ternion_*_amd64.deb)
[[ -f $deb ]] || fail "no .deb in $tmp/pkg"
depends=$(dpkg-deb -f "$deb" Depends)
for lib in libhdf5 libtbb libboost-program-options zlib1g libssl; do
    grep -q "$lib" <<<"$depends" || fail "Depends lacks $lib: $depends"
done
dpkg-deb -f "$deb" Recommends | grep -q dataset-fashion-mnist || fail "does not recommend dataset-fashion-mnist"

root="$tmp/root"
dpkg-deb -x "$deb" "$root"
for f in usr/bin/ternion usr/share/ternion/profiles/horowitz45-fp32.json \
         usr/share/ternion/bundled/bsa_digits.h5 usr/share/ternion/bundled/bsa_fmnist.h5 \
         usr/share/ternion/bundled/ssa_fmnist.h5 usr/share/doc/ternion/README.md; do
    [[ -e $root/$f ]] || fail "the package lacks /$f"
done

# The unpacked CLI finds its data beside itself and gives the build tree's results.
bundled="$root/usr/share/ternion/bundled"
"$root/usr/bin/ternion" run "$bundled/bsa_digits.h5" --input "$bundled/digits_test.h5" \
    --threads 1 --json --no-progress >"$tmp/deb.json"
"$build/ternion" run "$bundled/bsa_digits.h5" --input "$bundled/digits_test.h5" --threads 1 \
    --json --no-progress >"$tmp/tree.json"

python_dir=$(echo "$root"/usr/lib/python3*/dist-packages)
has_core=0
compgen -G "$build/python/ternion/_core*.so" >/dev/null && has_core=1
if ((has_core)); then
    compgen -G "$python_dir/ternion/_core*.so" >/dev/null || fail "the package lacks the extension"
    (cd "$tmp" && PYTHONPATH="$python_dir" /usr/bin/python3 -c '
import json, ternion
m = ternion.load_bundled()
r = ternion.run(m, threads=1, record=())
print(json.dumps({"file": ternion.__file__, "model": m.path, "accuracy": r.accuracy,
                  "energy": r.energy["per_inference_pj"]}))' >"$tmp/python.json") ||
        fail "the packaged Python module"
else
    echo '{}' >"$tmp/python.json"
fi

/usr/bin/python3 - "$root" "$tmp/deb.json" "$tmp/tree.json" "$tmp/python.json" <<'PY'
import json, sys
root, deb, tree, python = sys.argv[1:]
a, b = json.load(open(deb)), json.load(open(tree))
for k in ("accuracy", "predictions", "layers"):
    assert a[k] == b[k], k
assert a["per_inference"]["energy_pj"] == b["per_inference"]["energy_pj"]
assert a["profile"]["name"] == "horowitz45-fp32"
py = json.load(open(python))
if py:
    assert py["file"].startswith(root + "/usr/lib/python3"), py["file"]
    assert py["model"] == root + "/usr/share/ternion/bundled/bsa_digits.h5", py["model"]
    assert py["accuracy"] == a["accuracy"] and py["energy"] == a["per_inference"]["energy_pj"], py
print("test_deb: the unpacked package's CLI" + (" and Python module" if py else "") +
      " equal the build tree: accuracy", a["accuracy"])
PY
