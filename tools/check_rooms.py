#!/usr/bin/env python3
"""Checks that every C++ file includes only its own room and the rooms below it
(docs/architecture.md draws them). Usage: check_rooms.py [ROOT]; exit 1 listing each include
that goes upwards or sideways."""
import os
import re
import sys

# room -> the rooms it may include besides itself, lowest first.
BELOW = {
    "sim/simd": [],
    "sim/kernels": ["sim/simd"],
    "sim/core": ["sim/simd", "sim/kernels"],
    "sim/io": ["sim/simd", "sim/kernels", "sim/core"],
    "sim/synaptic": ["sim/simd", "sim/kernels", "sim/core"],
    "sim/dist": ["sim/simd", "sim/kernels", "sim/core", "sim/io"],
    "neuron": ["sim/simd", "sim/kernels", "sim/core"],
    "neuron/fixed": ["sim/simd", "sim/kernels", "sim/core"],
    "attention/spiking": ["sim/simd", "sim/kernels", "sim/core", "sim/synaptic", "neuron",
                          "neuron/fixed"],
    "attention/ann": ["sim/simd", "sim/kernels", "sim/core", "sim/io"],
    "attention/analysis": ["sim/simd", "sim/kernels", "sim/core", "sim/io"],
    "attention": ["sim/simd", "sim/kernels", "sim/core", "attention/spiking", "attention/ann"],
    "hw": ["sim/simd", "sim/kernels", "sim/core"],
    "hw/chip": ["sim/simd", "sim/kernels", "sim/core"],
    "models/inputs": ["sim/simd", "sim/kernels", "sim/core", "sim/io"],
    "models": ["models/inputs", "sim/simd", "sim/kernels", "sim/core", "sim/io", "sim/synaptic", "neuron",
               "neuron/fixed", "attention", "attention/spiking", "attention/ann", "hw", "hw/chip"],
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def room_of(path):
    """The longest room that is a prefix of `path` (a file or an included header)."""
    best = None
    for r in BELOW:
        if path == r or path.startswith(r + "/"):
            if best is None or len(r) > len(best):
                best = r
    return best


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                           os.path.join(os.path.dirname(__file__), ".."))
    bad = []
    checked = 0
    for top in ("sim", "neuron", "attention", "hw", "models"):
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for f in files:
                if not f.endswith((".cpp", ".hpp")):
                    continue
                rel = os.path.relpath(os.path.join(dirpath, f), root)
                room = room_of(rel)
                allowed = set(BELOW[room]) | {room}
                checked += 1
                with open(os.path.join(root, rel), encoding="utf-8") as fh:
                    for n, line in enumerate(fh, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        target = room_of(m.group(1))
                        if target is not None and target not in allowed:
                            bad.append(f"{rel}:{n}: {room} includes {m.group(1)} ({target})")
    for b in bad:
        print(b)
    print(f"check_rooms: {checked} files, {len(bad)} includes against the rooms' order")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
