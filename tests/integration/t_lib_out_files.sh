#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The files the library writes at exit (BONSAI_STATS, BONSAI_COMPRESS_STATS; issue 17,
# libbonsai/log/out_file.h), from a program that zeroes its environment strings before
# it exits (as nginx's setproctitle does): a FIFO with no reader does not hold the exit
# (< 1 s, one warning); a full FIFO holds it at most its budget; a directory, a link or
# a file planted by another user (nobody, in a sticky world-writable directory) is
# refused with one warning and its target is unchanged; a regular file gets its JSON
# line appended, as before; a FIFO with a reader gets it too.
# timeout: 30
. "$(dirname "$0")/lib/lib.sh"
need_prog env_clobber
need_cmd mkfifo timeout python3

# run_to VAR PATH: env_clobber under the library with VAR=PATH (compression on, so
# that it has a line to write); its stderr lands in $T/err, its seconds in $T/secs.
run_to() {
  local var=$1 path=$2 s rc
  s=$(now_ns)
  timeout 20 env LD_PRELOAD="$PRELOAD" BONSAI_LIMITS='write=64MiB/s' BONSAI_COMPRESS_ACCEPT=1 "$var=$path" \
    "$PRE/env_clobber" 2>"$T/err"
  rc=$?
  secs_since "$s" > "$T/secs"
  [ $rc = 0 ] || fail "$var=$path: env_clobber exited $rc (124: hung at exit): $(cat "$T/err")"
}
# one_warning VAR WHAT: exactly one line of ours on stderr, naming VAR and saying WHAT.
one_warning() {
  local n
  n=$(grep -c '^bonsai\[' "$T/err")
  [ "$n" = 1 ] || fail "$1: expected one warning, got $n: $(cat "$T/err")"
  grep -q "$1: .*$2" "$T/err" || fail "$1: the warning does not say '$2': $(cat "$T/err")"
  note "$(cat "$T/err")"
}
no_warning() { [ ! -s "$T/err" ] || fail "$1: unexpected stderr: $(cat "$T/err")"; }
# json_lines FILE KEY: count of JSON lines in FILE that have KEY (checks each parses).
json_lines() {
  python3 - "$1" "$2" <<'PY'
import json, sys
n = 0
for line in open(sys.argv[1], errors="replace"):
    line = line.strip()
    if not line.startswith("{"):
        continue
    d = json.loads(line)
    n += sys.argv[2] in d
print(n)
PY
}

for var in BONSAI_STATS BONSAI_COMPRESS_STATS; do
  key=calls
  [ $var = BONSAI_COMPRESS_STATS ] && key=tx_app_bytes
  d=$T/$var
  mkdir -p "$d"

  # A regular file: one JSON line appended after what was there.
  echo "previous line" > "$d/reg.json"
  run_to $var "$d/reg.json"
  no_warning "$var regular file"
  [ "$(head -n1 "$d/reg.json")" = "previous line" ] || fail "$var: the previous content was not kept"
  [ "$(json_lines "$d/reg.json" $key)" = 1 ] || fail "$var: no JSON line with '$key' appended: $(cat "$d/reg.json")"
  # A new file: created with mode 0600, relative paths taken at start-up.
  (cd "$d" && run_to $var "new.%p.json")
  no_warning "$var new file"
  f=$(ls "$d"/new.*.json 2>/dev/null | head -n1)
  [ -n "$f" ] || fail "$var: no new.PID.json created"
  [ "$(stat -c %a "$f")" = 600 ] || fail "$var: new file has mode $(stat -c %a "$f"), not 600"

  # A FIFO with no reader: no hang, one warning.
  mkfifo "$d/fifo"
  run_to $var "$d/fifo"
  check_between "$var: exit with a FIFO without reader (s)" "$(cat "$T/secs")" 0 1
  one_warning $var "FIFO with no reader"

  # A FIFO with a reader gets the line; a full FIFO (a reader that never reads)
  # holds the exit at most its budget (250 ms), with one warning.
  for mode in reader full; do
    out=$(python3 - "$d/fifo" "$var" "$PRELOAD" "$PRE/env_clobber" $mode <<'PY'
import os, subprocess, sys, time
fifo, var, lib, prog, mode = sys.argv[1:]
fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)   # the reader
if mode == "full":
    w = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    try:
        while True:
            os.write(w, b"x" * 4096)
    except BlockingIOError:
        pass
env = dict(os.environ, LD_PRELOAD=lib, BONSAI_LIMITS="write=64MiB/s", BONSAI_COMPRESS_ACCEPT="1")
env[var] = fifo
t = time.monotonic()
p = subprocess.run([prog], env=env, stderr=subprocess.PIPE, text=True, timeout=20)
secs = time.monotonic() - t
got = b""
if mode == "reader":
    while True:
        try:
            b = os.read(fd, 65536)
        except BlockingIOError:
            break
        if not b:
            break
        got += b
lines = [l for l in got.decode(errors="replace").splitlines() if l.startswith("{")]
print("%.3f %d %d %s" % (secs, p.returncode, len(lines), p.stderr.strip().replace("\n", " | ")))
PY
    ) || fail "$var: FIFO probe ($mode) failed"
    note "$var FIFO, $mode: $out"
    set -- $out
    [ "$2" = 0 ] || fail "$var: exit status $2 with a FIFO ($mode)"
    check_between "$var: exit with a FIFO ($mode) (s)" "$1" 0 1
    if [ $mode = reader ]; then
      [ "$3" = 1 ] || fail "$var: the FIFO's reader got $3 JSON lines"
      [ -z "${4:-}" ] || fail "$var: a FIFO with a reader gave a warning"
    else
      [ "$(grep -o 'bonsai\[' <<<"$out" | wc -l)" = 1 ] || fail "$var: expected one warning with a full FIFO"
      [[ "$out" == *"destination full"* ]] || fail "$var: no warning about the full FIFO"
    fi
  done

  # A directory at the path: one warning.
  mkdir "$d/dir.json"
  run_to $var "$d/dir.json"
  one_warning $var "directory"
done

# Planted by another user in a sticky, world-writable directory (like /tmp): a
# symlink to a root-owned file, a FIFO with no reader, a regular file.
[ "$(id -u)" = 0 ] || skip "the planted-link and planted-file cases need root (setpriv to nobody); the rest passed"
need_cmd setpriv
chmod 755 "$T"
pub=$T/pub
mkdir -m 1777 "$pub"
echo "root's file" > "$T/victim"
chmod 644 "$T/victim"
nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
nobody ln -s "$T/victim" "$pub/link.json" || fail "nobody cannot make a link in $pub"
nobody mkfifo "$pub/fifo.json" || fail "nobody cannot make a FIFO in $pub"
nobody sh -c "echo planted > '$pub/file.json'" || fail "nobody cannot make a file in $pub"
for var in BONSAI_STATS BONSAI_COMPRESS_STATS; do
  run_to $var "$pub/link.json"
  one_warning $var "symbolic link"
  [ "$(cat "$T/victim")" = "root's file" ] || fail "$var: the link's target was written: $(cat "$T/victim")"
  run_to $var "$pub/fifo.json"
  check_between "$var: exit with nobody's FIFO (s)" "$(cat "$T/secs")" 0 1
  one_warning $var "uid 65534"
  run_to $var "$pub/file.json"
  one_warning $var "uid 65534"
  [ "$(cat "$pub/file.json")" = planted ] || fail "$var: nobody's file was written"
  # Root's own new file in that directory is fine.
  run_to $var "$pub/root.%p.json"
  no_warning "$var own file in a sticky directory"
done
[ "$(ls "$pub"/root.*.json | wc -l)" = 2 ] || fail "root's own files were not written in $pub"
