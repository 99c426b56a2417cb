#!/bin/sh
# Runs a test with the vector kernels of one instruction-set level forced (TERNION_ISA, see
# sim/simd/simd.hpp); exit 77 (ctest: skipped) where this CPU cannot run that level.
# Usage: at_level.sh LEVEL TERNION_BINARY COMMAND...
level=$1
ternion=$2
shift 2
if ! TERNION_ISA=$level "$ternion" version >/dev/null 2>&1; then
    echo "skipped: this CPU does not run the $level kernels"
    exit 77
fi
TERNION_ISA=$level exec "$@"
