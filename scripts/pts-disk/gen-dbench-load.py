#!/usr/bin/env python3
"""Writes scripts/pts-disk/dbench.load, the pts-disk pack's dbench load file.

    python3 scripts/pts-disk/gen-dbench-load.py > scripts/pts-disk/dbench.load

A NetBench load file in dbench's client.txt format (one client's operations,
paths under \\clients\\client1), made by plumb rather than copied from
dbench: an office day modelled on the proportions of Debian's client.txt
(about 27% ReadX, 17% NTCreateX, 16% QUERY_PATH_INFORMATION, 13% Close,
9% WriteX, 6% FIND_FIRST, 3.5% Unlink, 3% QUERY_FS_INFORMATION, 2.7%
QUERY_FILE_INFORMATION, 1.4% SET_FILE_INFORMATION, 1.2% Flush, 0.7% Rename,
a few LockX/UnlockX pairs): the directory tree made, documents written in
64 KiB and 4 KiB writes, opened and read in 4 KiB to 64 KiB reads, probed
for files that do not exist, listed with FIND_FIRST, saved Word-style
(a temporary file written, flushed and renamed over the original), temporary
files unlinked, and a database locked and unlocked; then the whole tree
deleted with Deltree, as client.txt ends.

Deterministic (its own random numbers, no dependence on Python's) and
standard library only. Every status is the one a local file system gives
from an empty directory, so `plumb trace import --dbench` takes it and a
replay sees no divergence.
"""

import fnmatch
import sys

LINES = 50_000
ROOT = "\\clients\\client1"
TOP = ROOT + "\\~dmtmp"
DIRS = [
    ("WORD", "DOC"),
    ("EXCEL", "XLS"),
    ("PWRPNT", "PPT"),
    ("ACCESS", "MDB"),
    ("COREL", "CDR"),
    ("PARADOX", "DB"),
    ("PM", "PM5"),
    ("SEED", "TXT"),
    ("WORDPRO", "LWP"),
]
NAMES = [
    "BUDGET", "CHAP01", "CHAP02", "CHAP03", "CHAP10", "FACTS", "HANDOUT",
    "INVOICE", "LETTER", "MEMO", "MINUTES", "NEWS", "PLAN", "REPORT",
    "RESULTS", "SALES", "SCHEDULE", "SUMMARY", "TIPS", "TRAIN",
]
SIZES = [4096, 8192, 16384, 32768, 65536]


class Rng:
    """splitmix64: the same numbers on every Python."""

    def __init__(self, seed):
        self.s = seed & 0xFFFFFFFFFFFFFFFF

    def next(self):
        self.s = (self.s + 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
        z = self.s
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
        return z ^ (z >> 31)

    def below(self, n):
        return self.next() % n

    def pick(self, seq):
        return seq[self.below(len(seq))]

    def chance(self, percent):
        return self.below(1000) < percent * 10


class Load:
    def __init__(self):
        self.out = []
        self.files = {}  # path -> size
        self.dirs = {ROOT}
        self.fnum = 10000
        self.rng = Rng(0xDBE4C4)
        self.temp = 0

    def emit(self, line):
        self.out.append(line)

    # The tree as a local file system sees it.
    def exists(self, p):
        return p in self.files or p in self.dirs

    def children(self, d):
        pre = d + "\\"
        return [p[len(pre):] for p in list(self.files) + list(self.dirs)
                if p.startswith(pre) and "\\" not in p[len(pre):]]

    # One line per dbench operation, its status what fileio will see.
    def qpi(self, p):
        st = "NT_STATUS_OK" if self.exists(p) else "NT_STATUS_OBJECT_NAME_NOT_FOUND"
        self.emit(f'QUERY_PATH_INFORMATION "{p}" 1004 {st}')

    def qfs(self):
        self.emit("QUERY_FS_INFORMATION 259 NT_STATUS_OK")

    def find(self, d, pattern):
        if d not in self.dirs:
            n = 0
        else:
            n = sum(1 for c in self.children(d)
                    if fnmatch.fnmatch(c.lower(), pattern.lower()))
        st = "NT_STATUS_OK" if n else "NT_STATUS_NO_SUCH_FILE"
        self.emit(f'FIND_FIRST "{d}\\{pattern}" 260 1366 {n} {st}')

    def new_fnum(self):
        self.fnum += 1
        return self.fnum

    def mkdir(self, d):
        self.qpi(d)
        self.find(d.rsplit("\\", 1)[0], d.rsplit("\\", 1)[1] + ".*")
        f = self.new_fnum()
        self.emit(f'NTCreateX "{d}" 0x1 0x2 {f} NT_STATUS_OK')
        self.dirs.add(d)
        self.emit(f"Close {f} NT_STATUS_OK")

    def open(self, p):
        f = self.new_fnum()
        if p in self.files:
            self.emit(f'NTCreateX "{p}" 0x40 0x1 {f} NT_STATUS_OK')
            return f
        self.emit(f'NTCreateX "{p}" 0x40 0x1 {f} NT_STATUS_OBJECT_NAME_NOT_FOUND')
        return None

    def create(self, p, overwrite=False):
        f = self.new_fnum()
        disp = "0x5" if overwrite else "0x2"
        self.emit(f'NTCreateX "{p}" 0x40 {disp} {f} NT_STATUS_OK')
        self.files[p] = 0
        return f, p

    def write(self, h, off, n):
        f, p = h
        self.emit(f"WriteX {f} {off} {n} {n} NT_STATUS_OK")
        self.files[p] = max(self.files[p], off + n)

    def read(self, f, off, n):
        self.emit(f"ReadX {f} {off} {n} {n} NT_STATUS_OK")

    def close(self, f):
        self.emit(f"Close {f} NT_STATUS_OK")

    def unlink(self, p):
        st = "NT_STATUS_OK" if p in self.files else "NT_STATUS_OBJECT_NAME_NOT_FOUND"
        self.emit(f'Unlink "{p}" 0x6 {st}')
        self.files.pop(p, None)

    def rename(self, a, b):
        self.emit(f'Rename "{a}" "{b}" NT_STATUS_OK')
        self.files[b] = self.files.pop(a)

    # What an office does.
    def fill(self, h, size, big):
        """Writes a file from the start: in 64 KiB writes and one for the
        rest (big), or in 4 KiB writes."""
        off = 0
        while off < size:
            n = min(65536 if big else 4096, size - off)
            self.write(h, off, n)
            off += n

    def docs(self, d):
        pre = d + "\\"
        return sorted(p for p in self.files
                      if p.startswith(pre) and "~" not in p[len(pre):])

    def read_doc(self):
        d, _ = self.rng.pick(DIRS)
        docs = self.docs(TOP + "\\" + d)
        if not docs:
            return
        p = self.rng.pick(docs)
        self.qpi(p)
        f = self.open(p)
        if self.rng.chance(30):
            self.emit(f"QUERY_FILE_INFORMATION {f} 258 NT_STATUS_OK")
        size = self.files[p]
        off = 0
        want = size if self.rng.chance(60) else size // 2
        while off < want:
            n = min(self.rng.pick(SIZES), size - off)
            self.read(f, off, n)
            off += n
        if self.rng.chance(10):
            self.emit(f"SET_FILE_INFORMATION {f} 1004 NT_STATUS_OK")
        self.close(f)

    def probe(self):
        d, ext = self.rng.pick(DIRS)
        dd = TOP + "\\" + d
        name = self.rng.pick(NAMES)
        self.qpi(f"{dd}\\~${name}.{ext}")
        self.open(f"{dd}\\~${name}.{ext}")
        self.qpi(f"{dd}\\{name}.BAK")
        if self.rng.chance(40):
            # Word deletes a backup that may not be there.
            self.unlink(f"{dd}\\~WRL{self.rng.below(10000):04d}.TMP")
        if self.rng.chance(80):
            self.find(dd, "~WR*.TMP")
        if self.rng.chance(40):
            self.qfs()

    def save_doc(self):
        d, ext = self.rng.pick(DIRS)
        dd = TOP + "\\" + d
        docs = self.docs(dd)
        if not docs:
            return
        p = self.rng.pick(docs)
        self.temp += 1
        tmp = f"{dd}\\~WRD{self.temp:04d}.TMP"
        old = f"{dd}\\~WRL{self.temp:04d}.TMP"
        self.qpi(tmp)
        self.qfs()
        h = self.create(tmp)
        self.emit(f"QUERY_FILE_INFORMATION {h[0]} 258 NT_STATUS_OK")
        size = self.files[p]
        size = max(4096, size + (self.rng.below(size // 5 + 1) - size // 10))
        self.fill(h, size, big=self.rng.chance(75))
        self.emit(f"Flush {h[0]} NT_STATUS_OK")
        self.emit(f"SET_FILE_INFORMATION {h[0]} 1004 NT_STATUS_OK")
        self.close(h[0])
        self.rename(p, old)
        self.rename(tmp, p)
        self.unlink(old)

    def peek(self):
        """A document opened for its attributes and closed."""
        d, _ = self.rng.pick(DIRS)
        docs = self.docs(TOP + "\\" + d)
        if not docs:
            return
        f = self.open(self.rng.pick(docs))
        if self.rng.chance(10):
            self.emit(f"QUERY_FILE_INFORMATION {f} 258 NT_STATUS_OK")
        self.close(f)

    def list_dir(self):
        d, ext = self.rng.pick(DIRS)
        dd = TOP + "\\" + d
        self.find(dd, "*.*")
        self.find(dd, f"*.{ext}")
        for p in self.docs(dd)[:1]:
            self.qpi(p)

    def database(self):
        dd = TOP + "\\ACCESS"
        docs = self.docs(dd)
        if not docs:
            return
        p = docs[0]
        f = self.open(p)
        size = self.files[p]
        for _ in range(2):
            at = self.rng.below(max(1, size // 4096)) * 4096
            self.emit(f"LockX {f} {2147483538 - self.rng.below(8)} 1 NT_STATUS_OK")
            self.read(f, at, 4096)
            self.emit(f"UnlockX {f} {2147483538 - self.rng.below(8)} 1 NT_STATUS_OK")
        self.close(f)

    def churn(self):
        """A new document written, or an old one deleted."""
        d, ext = self.rng.pick(DIRS)
        dd = TOP + "\\" + d
        docs = self.docs(dd)
        if len(docs) > 14 and self.rng.chance(50):
            self.unlink(self.rng.pick(docs))
            return
        name = f"{self.rng.pick(NAMES)}{self.rng.below(100):02d}.{ext}"
        p = f"{dd}\\{name}"
        self.qpi(p)
        h = self.create(p, overwrite=p in self.files)
        self.fill(h, 4096 * (1 + self.rng.below(48)), big=True)
        if self.rng.chance(60):
            self.emit(f"Flush {h[0]} NT_STATUS_OK")
        self.close(h[0])

    def run(self):
        self.emit(f'Deltree "{ROOT}" NT_STATUS_OK')
        self.emit('Mkdir "\\clients" NT_STATUS_OK')
        f = self.new_fnum()
        self.emit(f'NTCreateX "{ROOT}" 0x1 0x2 {f} NT_STATUS_OK')
        self.emit(f"Close {f} NT_STATUS_OK")
        self.mkdir(TOP)
        for d, ext in DIRS:
            dd = TOP + "\\" + d
            self.mkdir(dd)
            for i in range(12):
                p = f"{dd}\\{NAMES[(i * 7 + len(d)) % len(NAMES)]}.{ext}"
                if p in self.files:
                    continue
                self.qpi(p)
                h = self.create(p)
                self.fill(h, 4096 * (2 + self.rng.below(60)), big=True)
                self.emit(f"QUERY_FILE_INFORMATION {h[0]} 258 NT_STATUS_OK")
                self.close(h[0])
        work = [
            (self.read_doc, 90),
            (self.peek, 60),
            (self.probe, 60),
            (self.save_doc, 8),
            (self.list_dir, 16),
            (self.churn, 12),
            (self.database, 1),
        ]
        total = sum(w for _, w in work)
        while len(self.out) < LINES - 1:
            r = self.rng.below(total)
            for fn, w in work:
                if r < w:
                    fn()
                    break
                r -= w
        self.emit(f'Deltree "{ROOT}" NT_STATUS_OK')
        sys.stdout.write("\n".join(self.out) + "\n")


if __name__ == "__main__":
    Load().run()
