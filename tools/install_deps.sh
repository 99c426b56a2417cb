#!/usr/bin/env bash
# Installs everything ternion needs to build, test and plot, from Debian 12's apt only.
# Idempotent: skips apt when every package is already installed. clang and libclang-rt-14-dev
# (libFuzzer) build the fuzz harnesses of tests/fuzz; qemu-user runs the build on emulated older
# CPUs (tests/install/test_portable_cpu.sh). libopenblas0-openmp gives Debian's torch a
# fast BLAS (its default libblas.so.3 is the reference one), for training and the benchmarks.
set -euo pipefail
PKGS=(build-essential cmake pkg-config
      libeigen3-dev libfftw3-dev libtbb-dev libhdf5-dev libboost-program-options-dev doctest-dev
      nlohmann-json3-dev libbenchmark-dev libssl-dev zlib1g-dev libopenmpi-dev openmpi-bin
      clang libclang-rt-14-dev dataset-fashion-mnist libopenblas0-openmp qemu-user
      python3-h5py python3-numpy python3-matplotlib python3-torch python3-sklearn python3-scipy
      python3-pytest python3-dev pybind11-dev python3-pybind11)
missing=()
for p in "${PKGS[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
    echo "install_deps: installing ${missing[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
