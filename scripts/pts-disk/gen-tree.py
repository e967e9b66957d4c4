#!/usr/bin/env python3
"""Writes kernel-tree.trace: the extraction of a source tree shaped like
Linux 2.6.20's (the tree compilebench carries), as `tar x` does it.

The tree: about 22,000 files in about 1,250 directories up to six levels
deep, 17-18 files per directory; names .c (45%), .h (38%), .S, Makefile,
Kconfig and text files for the rest; sizes log-normal with a median of
4.5 KiB and a mean of about 10.5 KiB (sigma 1.3), cut to 1.5 MiB, about
230 MiB in all, the shape of that kernel's tree. Per file, as GNU tar
extracts: open(O_WRONLY|O_CREAT|O_EXCL), writes of up to 10240 bytes (the
archive's records), close, then utimensat of the path; directories are
made before their files. Deterministic: the same trace every time.

Usage: gen-tree.py [FILES] > kernel-tree.trace (22,000 files)
       gen-tree.py 1100 > small-tree.trace (the pack's tree=small)
"""
import math
import random
import sys

files_wanted = int(sys.argv[1]) if len(sys.argv) > 1 else 22000
r = random.Random(2620)

# Directories: a root, then each new directory under a random existing one
# no deeper than six levels.
dirs = ["linux"]
depth = {"linux": 1}
n_dirs = max(1, files_wanted // 18)
while len(dirs) < n_dirs:
    parent = r.choice(dirs)
    if depth[parent] >= 6:
        continue
    name = f"{parent}/d{len(dirs):04d}"
    dirs.append(name)
    depth[name] = depth[parent] + 1


def file_name(i):
    x = r.random()
    if x < 0.45:
        return f"f{i:05d}.c"
    if x < 0.83:
        return f"f{i:05d}.h"
    if x < 0.88:
        return f"f{i:05d}.S"
    if x < 0.93:
        return f"Makefile.{i:05d}"
    if x < 0.96:
        return f"Kconfig.{i:05d}"
    return f"f{i:05d}.txt"


def file_size():
    size = int(4608 * math.exp(r.gauss(0.0, 1.3)))
    return min(size, 1536 << 10)


entries = []  # (path, kind, size)
for d in dirs:
    entries.append((d, "d", 0))
files = []
for i in range(files_wanted):
    d = r.choice(dirs)
    files.append((f"{d}/{file_name(i)}", file_size()))
# tar archives hold a directory's files after it, in order.
files.sort()

out = sys.stdout
ops = []
t = 0
file_id = {}
table = []
for d in dirs:
    file_id[d] = len(table)
    table.append(f"file {len(table)} d - {d}")
for path, _ in files:
    file_id[path] = len(table)
    table.append(f"file {len(table)} f - {path}")


def op(text):
    global t
    ops.append(f"op 0 {t} 1 {text}")
    t += 2


for d in dirs:
    op(f"mkdir {file_id[d]}")
# Each open is a handle of its own (the descriptor number tar reuses is
# not what a trace names).
for h, (path, size) in enumerate(files):
    f = file_id[path]
    op(f"open {h} {f} w,creat,excl")
    off = 0
    while off < size:
        n = min(10240, size - off)
        op(f"write {h} {off} {n}")
        off += n
    op(f"close {h}")
    op(f"utimes {f}")

out.write("plumb-trace 2\n")
out.write(f"duration_us {t}\n")
for line in table:
    out.write(line + "\n")
out.write("thread 0 1\n")
for line in ops:
    out.write(line + "\n")
out.write(f"end {len(ops)}\n")
