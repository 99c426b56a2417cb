#!/usr/bin/env python3
"""Lists C++ and Python functions longer than a limit (default 100 lines) in the given folders and
exits 1 if there are any. Python functions are measured by the standard library's parser (def
line to last line, nested functions counted apart). For C++: A brace-counting heuristic, no parser: a function is a top-level-or-class-level `{`
whose preceding text ends like a signature (`)` possibly followed by qualifiers, or an
initialiser list), counted from its signature's first line to its closing brace. Lambdas and
blocks inside a function count toward that function.

  /usr/bin/python3 tools/check_function_length.py [--max 100] sim hw models
"""
import argparse
import ast
import os
import re
import sys

EXTS = (".cpp", ".hpp", ".h", ".cc")
# Brace openers that do not start a function body.
NOT_FUNCTION = re.compile(
    r"(\b(namespace|class|struct|union|enum)\b[^;{}()]*$)|(=\s*$)|(\b(if|for|while|switch|catch|do|else|try)\b)"
)


def strip(text):
    """Blanks comments, string and character literals, keeping line breaks."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith('R"', i) and re.match(r'R"([^(\s]*)\(', text[i:]):
            delim = re.match(r'R"([^(\s]*)\(', text[i:]).group(1)
            j = text.find(")" + delim + '"', i)
            j = n if j < 0 else j + len(delim) + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + " " * (min(j, n) - i - 1) + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def functions(path):
    """Yields (name, first line, last line) of every function body in the file."""
    text = strip(open(path, encoding="utf-8", errors="replace").read())
    depth_kinds = []  # per open brace: "func", "scope" (namespace/class) or "block"
    line = 1
    stmt_start = 0  # where the text before the current brace starts
    starts = []
    for i, c in enumerate(text):
        if c == "\n":
            line += 1
        elif c == "{":
            inside_function = "func" in depth_kinds
            head = text[stmt_start:i]
            if inside_function:
                depth_kinds.append("block")
            else:
                h = head.strip()
                if NOT_FUNCTION.search(h) or not h:
                    depth_kinds.append("scope" if re.search(r"\b(namespace|class|struct|union|enum)\b", h) or not h else "block")
                elif re.search(r"\)\s*(const|override|final|noexcept|volatile|&|&&|->\s*[\w:<>,\s*&]+|\s)*$", h) or re.search(r"\)\s*:\s*[\s\S]*\)\s*$", h) or re.search(r"\)\s*:[\s\S]*\}\s*$", h):
                    name = re.findall(r"([~\w:]+(?:<[^()]*>)?)\s*\(", h)
                    first = line - head.lstrip().count("\n")  # the signature's first line
                    starts.append((name[0] if name else "?", first))
                    depth_kinds.append("func")
                else:
                    depth_kinds.append("block")
            stmt_start = i + 1
        elif c == "}":
            kind = depth_kinds.pop() if depth_kinds else "scope"
            if kind == "func":
                name, first = starts.pop()
                yield name, first, line
            stmt_start = i + 1
        elif c == ";" and "func" not in depth_kinds:
            stmt_start = i + 1
        elif c in ":" and "func" not in depth_kinds and re.search(r"\b(public|private|protected)\s*$", text[stmt_start:i]):
            stmt_start = i + 1


def python_functions(path):
    """(name, first line, last line) of every function and method in a Python file."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    for n in ast.walk(tree):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield n.name, n.lineno, n.end_lineno


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max", type=int, default=100, help="longest function allowed, in lines")
    ap.add_argument("folders", nargs="+")
    args = ap.parse_args()
    long = []
    for folder in args.folders:
        for root, _, files in os.walk(folder):
            for f in sorted(files):
                p = os.path.join(root, f)
                found = functions(p) if f.endswith(EXTS) else (
                    python_functions(p) if f.endswith(".py") else ())
                for name, a, b in found:
                    if b - a + 1 > args.max:
                        long.append((p, a, b - a + 1, name))
    for p, a, n, name in sorted(long):
        print(f"{p}:{a}: {name} is {n} lines (limit {args.max})")
    if long:
        print(f"{len(long)} function(s) over {args.max} lines")
        return 1
    print(f"no function over {args.max} lines in {' '.join(args.folders)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
