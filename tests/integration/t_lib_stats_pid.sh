#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# BONSAI_STATS with %p: each process (the two dd a shell runs) writes its own
# file named by its pid, holding one JSON line with that pid and its own counts.
# timeout: 30
. "$(dirname "$0")/lib/lib.sh"
need_cmd dd sh
limited 'write=64MiB/s' "$T/st.%p.json" sh -c \
  'dd if=/dev/zero of=/dev/null bs=4k count=100 status=none; dd if=/dev/zero of=/dev/null bs=4k count=300 status=none; true' ||
  fail "sh failed"
python3 - "$T" <<'PY' || fail "stats files do not match their processes"
import glob, json, os, re, sys
files = sorted(glob.glob(os.path.join(sys.argv[1], "st.*.json")))
print("  files:", [os.path.basename(f) for f in files], file=sys.stderr)
writes = []
for f in files:
    lines = [l for l in open(f) if l.strip()]
    assert len(lines) == 1, f
    d = json.loads(lines[0])
    assert str(d["pid"]) == re.search(r"st\.(\d+)\.json$", f).group(1), f
    w = d["calls"].get("write", {})
    if w.get("bytes", 0) >= 4096 * 100:
        writes.append(w["calls"])
assert len(files) >= 2, files  # sh (dash) leaves with _exit: no line of its own
assert sorted(writes) == [100, 300], writes
PY
