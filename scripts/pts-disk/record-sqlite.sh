#!/usr/bin/env bash
# Records sqlite-inserts.trace, the trace pts-disk/sqlite replays: the real
# sqlite3 shell (Debian's 3.40) making an indexed table and inserting 1000
# rows, each INSERT its own transaction (autocommit, rollback journal,
# synchronous=FULL: the defaults), as Phoronix's pts/sqlite times them.
# Needs plumb (cargo build --release), sqlite3, strace and python3.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
plumb="${PLUMB:-$here/../../target/release/plumb}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
python3 - <<'PY'
import random
r = random.Random(7)
with open("inserts.sql", "w") as f:
    f.write("CREATE TABLE pts1 (id INTEGER PRIMARY KEY, name TEXT, value REAL, note TEXT);\n")
    f.write("CREATE INDEX pts1_name ON pts1(name);\n")
    for i in range(1000):
        name = "".join(r.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(12))
        note = "x" * r.randint(20, 200)
        f.write(f"INSERT INTO pts1 (name, value, note) VALUES ('{name}', {r.random() * 1000:.4f}, '{note}');\n")
PY
"$plumb" trace record -o "$here/sqlite-inserts.trace" -- sh -c 'sqlite3 bench.db < inserts.sql'
