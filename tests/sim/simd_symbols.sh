#!/bin/sh
# The vector kernels of sim/simd are compiled once per instruction-set level. Any inline function
# or template of another namespace that such an object defines out of line (a weak symbol) could
# be the copy the linker keeps for the whole program, and it may then run AVX-512 code on a CPU
# without it. So the kernels' objects may define no global or weak symbol outside their own
# level's namespace ternion::simd::vN. Usage: simd_symbols.sh libternion_simd.a
set -eu
lib=$1
out=$(nm -A -C --defined-only "$lib" | awk '
    # lines: archive:member:address type name
    { split($1, p, ":"); member = p[2]; type = $2; $1 = ""; $2 = ""; name = substr($0, 3) }
    # DW.ref.__gxx_personality_v0: the address of the exception personality routine (data, the same
    # in every object), which instrumented builds emit.
    member ~ /kernels\.cpp\.o$/ && type ~ /^[A-Z]$|^[uvVwW]$/ && name !~ /^ternion::simd::v[0-9]+::/ &&
        name !~ /^DW\.ref\.__gxx_personality_v0$/ {
        print member ": " type " " name }')
# Every kernel object must define its level's table: the check above would pass on an archive
# that lost its kernels.
objects=$(ar t "$lib" | grep -c 'kernels\.cpp\.o$' || true)
n=$(nm -A -C --defined-only "$lib" | grep -c 'kernels\.cpp\.o:.* T ternion::simd::v[0-9]*::table()' || true)
if [ "$objects" -lt 1 ] || [ "$n" -ne "$objects" ]; then
    echo "simd_symbols: $objects kernel objects but $n level tables in $lib" >&2
    exit 1
fi
if [ -n "$out" ]; then
    echo "simd_symbols: symbols outside their level's namespace in $lib:" >&2
    echo "$out" >&2
    exit 1
fi
echo "simd_symbols: $n level objects, no symbol outside ternion::simd::vN"
