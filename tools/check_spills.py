#!/usr/bin/python3
"""Stack operands in the innermost loops of vector code: register spills (docs/cpu-levels.md).

Disassembles an object file (objdump), finds each function's innermost loops (backward jumps
that contain no other loop) and counts, in those with vector instructions, the vector
instructions that read or write the stack. A kernel whose register tile fits the level's
register file has none. Usage:

  tools/check_spills.py build/sim/simd/CMakeFiles/ternion_simd_v3.dir/kernels.cpp.o [--all]

Prints one line per function with such operands (--all: every function with vector adds or
multiplies in an inner loop) and exits 1 when any has stack operands.
"""
import re
import subprocess
import sys


def functions(obj):
    dis = subprocess.run(["objdump", "-d", "--no-show-raw-insn", "-C", obj],
                         capture_output=True, text=True, check=True).stdout
    fns, name = {}, None
    for line in dis.splitlines():
        m = re.match(r"^([0-9a-f]+) <(.*)>:$", line)
        if m:
            name = m.group(2)
            fns[name] = []
            continue
        m = re.match(r"^\s+([0-9a-f]+):\s+(.*)$", line)
        if m and name:
            fns[name].append((int(m.group(1), 16), m.group(2)))
    return fns


def inner_loops(ins):
    loops = []
    for addr, text in ins:
        m = re.match(r"j\w+\s+([0-9a-f]+) ", text)
        if m and int(m.group(1), 16) < addr:
            loops.append((int(m.group(1), 16), addr))
    return [a for a in loops if not any(b != a and b[0] >= a[0] and b[1] <= a[1] for b in loops)]


def main():
    obj, show_all = sys.argv[1], "--all" in sys.argv[2:]
    spilled = 0
    for name, ins in functions(obj).items():
        stack = arith = 0
        for lo, hi in inner_loops(ins):
            body = [t for a, t in ins if lo <= a <= hi]
            if not any(re.search(r"[xyz]mm", t) for t in body):
                continue
            arith += sum(1 for t in body if re.search(r"fmadd|addps|mulps|subps", t))
            stack += sum(1 for t in body if re.search(r"[xyz]mm", t) and "(%rsp)" in t)
        if arith and (stack or show_all):
            print(f"{stack:3d} stack operands / {arith:3d} vector adds and multiplies: {name[:100]}")
        spilled += stack > 0 and arith > 0
    sys.exit(1 if spilled else 0)


if __name__ == "__main__":
    main()
