#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Source and function sizes of the library and the programs (scripts/lint.sh runs it).

  scripts/sizes.py [--check] [FILE...]   (default: every tracked .c under lib/ and src/)

Prints the five longest files and functions. --check fails (exit 1) when a file is over
FILE_MAX lines or a function over FUNC_MAX: past that a reader can no longer hold it, and it is
time to split by concern (docs/architecture.md). A definition is what clang-format leaves: a
line starting at column 0, its "{" alone at column 0 and its "}" at column 0."""
import re
import subprocess
import sys

FILE_MAX = 1000
FUNC_MAX = 150


def functions(path):
    lines = open(path, encoding="utf-8").read().split("\n")
    i = 0
    while i < len(lines):
        if lines[i] == "{" and i > 0:
            j = i
            while j < len(lines) and lines[j] != "}":
                j += 1
            k = i - 1
            while k > 0 and not re.match(r"^[A-Za-z_]", lines[k]):
                k -= 1
            m = re.search(r"(\w+)\s*\(", lines[k])
            yield (m.group(1) if m else lines[k].strip()), j - k + 1
            i = j
        i += 1


def main():
    args = sys.argv[1:]
    check = "--check" in args
    files = [a for a in args if a != "--check"]
    if not files:
        files = subprocess.check_output(["git", "ls-files", "lib/*.c", "src/*.c"],
                                        text=True).split()
    sizes = [(sum(1 for _ in open(f, encoding="utf-8")), f) for f in files]
    funcs = [(n, f, name) for f in files for name, n in functions(f)]
    sizes.sort(reverse=True)
    funcs.sort(reverse=True)
    if not check:
        print("longest files:", ", ".join(f"{f} {n}" for n, f in sizes[:5]))
        print("longest functions:", ", ".join(f"{name} ({f}) {n}" for n, f, name in funcs[:5]))
    bad = [f"{f}: {n} lines, more than {FILE_MAX}" for n, f in sizes if n > FILE_MAX]
    bad += [f"{f}: {name} is {n} lines, more than {FUNC_MAX}" for n, f, name in funcs
            if n > FUNC_MAX]
    for b in bad:
        print(b)
    return 1 if bad and check else 0


if __name__ == "__main__":
    sys.exit(main())
