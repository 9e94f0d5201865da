#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Packaging (issue 11): `make deb` builds a lintian-clean package (reusing this build's
# objects); dpkg -i installs it; the installed /usr/bin/bonsaictl finds the installed
# library and caps a dd; the man pages render with no warning; the bash completion
# completes subcommands and call names; the systemd examples verify; dpkg -P leaves no
# file of it. Then `make install`/`make uninstall` in a DESTDIR: the same layout, the
# staged bonsaictl finds the staged library, uninstall leaves no file.
# Needs root (dpkg -i); never leaves the package installed.
# timeout: 600
# parallel: no (dpkg-buildpackage and lintian keep both cores busy)
# (make deb takes ~35 s on an idle 2-vCPU machine, 90 s on a loaded one, 193..245 s at
# load 11..17, where 270 s timed the test out; the whole test took 39 s at load 3)
. "$(dirname "$0")/lib/ctl_lib.sh"
[ "$(id -u)" = 0 ] || skip "needs root (dpkg -i)"
[ -z "${BONSAI_SANITIZER:-}" ] || skip "the package is built in release mode only"
need_cmd dpkg-buildpackage dh scdoc lintian man git
REPO=$(cd "$(dirname "$0")/../.." && pwd)
VERSION=$(cat "$REPO/VERSION")
ARCH=$(dpkg-architecture -qDEB_HOST_ARCH)
MULTIARCH=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
if dpkg-query -W -f='${Status}' bonsai 2>/dev/null | grep -q installed || [ -e /usr/bin/bonsaictl ]; then
  skip "bonsai is already installed on this machine: not touching it"
fi
# make, without the jobserver of the make that runs the tests.
mk() { env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make --no-print-directory -C "$REPO" B="$BONSAI_BUILD" "$@"; }
cleanup_hooks+=('dpkg -s bonsai >/dev/null 2>&1 && dpkg -P bonsai >/dev/null 2>&1')

# ---- the package ----
s=$(now_ns)
mk deb > "$T/deb.log" 2>&1 || { tail -n 30 "$T/deb.log" >&2; fail "make deb failed"; }
note "make deb: $(secs_since "$s") s"
# The version stamped from git describe (VERSION~gitN.gHASH between tags; packaging/deb.sh).
DEB_VERSION=$(sed -n 's/^make deb: version //p' "$T/deb.log")
case $DEB_VERSION in
  "$VERSION" | "$VERSION~git"[0-9]*.g[0-9a-f]*) ;;
  *) fail "make deb stamped '$DEB_VERSION' (VERSION $VERSION)" ;;
esac
DEB=$BONSAI_BUILD/bonsai_${DEB_VERSION}_${ARCH}.deb
[ -f "$DEB" ] || fail "no $DEB"
lintian "$DEB" > "$T/lintian" 2>&1
grep '^E:' "$T/lintian" && fail "lintian reports errors"
note "lintian: $(grep -c '^[WI]:' "$T/lintian") warnings/infos, no error"

dpkg -i "$DEB" > "$T/dpkg.log" 2>&1 || { cat "$T/dpkg.log" >&2; fail "dpkg -i failed"; }
[ "$(dpkg-query -W -f='${Version}' bonsai)" = "$DEB_VERSION" ] || fail "installed version $(dpkg-query -W -f='${Version}' bonsai)"
dpkg -L bonsai | while read -r f; do [ -d "$f" ] || echo "$f"; done | sort > "$T/pkg.files"
for f in /usr/bin/bonsaictl /usr/lib/"$MULTIARCH"/bonsai/libbonsai.so /usr/lib/"$MULTIARCH"/bonsai/\$LIB/libbonsai.so \
  /usr/lib/"$MULTIARCH"/bonsai/lib/x86_64-linux-gnu/libbonsai.so /usr/lib/"$MULTIARCH"/bonsai/lib64/libbonsai.so \
  /usr/lib/"$MULTIARCH"/bonsai/lib/libbonsai.so /etc/bonsai/bonsai.yaml \
  /usr/share/bash-completion/completions/bonsaictl /usr/share/doc/bonsai/examples/web.yaml \
  /usr/share/doc/bonsai/examples/systemd/bonsai.conf /usr/share/doc/bonsai/copyright; do
  grep -qx "$f" "$T/pkg.files" || fail "the package has no $f"
done
dpkg-query -W -f='${Conffiles}\n' bonsai | grep -q ' /etc/bonsai/bonsai.yaml ' ||
  fail "/etc/bonsai/bonsai.yaml is not a conffile"
[ "$(/usr/bin/bonsaictl --version | head -n 1)" = "bonsaictl $VERSION" ] || fail "--version: $(/usr/bin/bonsaictl --version)"
/usr/bin/bonsaictl check /etc/bonsai/bonsai.yaml > /dev/null || fail "the shipped bonsai.yaml is invalid"
/usr/bin/bonsaictl load > "$T/load.out" 2>&1 || fail "load without FILE (/etc/bonsai/bonsai.yaml): $(cat "$T/load.out")"

# The installed bonsaictl preloads the installed library (named for the loaders' choice
# of build, docs/reference/libc.md) and caps dd: 4 MiB at 4 MiB/s.
pre=$(/usr/bin/bonsaictl run -s pkgtest -- sh -c 'echo "$LD_PRELOAD"') || fail "run failed"
[ "$pre" = "/usr/lib/$MULTIARCH/bonsai/\$LIB/libbonsai.so" ] || fail "run preloaded '$pre'"
s=$(now_ns)
/usr/bin/bonsaictl run -s pkgtest -l write=4MiB/s -- dd if=/dev/zero of=/dev/null bs=64k count=64 status=none ||
  fail "capped dd failed"
check_rate "dd under the installed bonsaictl, cap 4 MiB/s" $((4 * MiB)) "$(secs_since "$s")" $((4 * MiB)) 0.7
/usr/bin/bonsaictl rm pkgtest > /dev/null || fail "rm pkgtest"

# Man pages: installed, found by name, rendered with no groff/man warning.
for p in 1/bonsaictl.1 5/bonsai.yaml.5 7/libbonsai.7; do
  f=/usr/share/man/man$p.gz
  [ -f "$f" ] || fail "no $f"
  w=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$f" 2>&1 > /dev/null)
  [ -z "$w" ] || fail "man --warnings $f: $w"
done
[ "$(man -w bonsaictl 2>/dev/null)" = /usr/share/man/man1/bonsaictl.1.gz ] || fail "man bonsaictl finds no page"
MANWIDTH=80 man bonsaictl 2>/dev/null | grep -q 'check-limits' || fail "man bonsaictl lacks check-limits"

# Completion through bash (with bash-completion when it is installed).
comp() {
  bash -c '[ -r /usr/share/bash-completion/bash_completion ] && . /usr/share/bash-completion/bash_completion
    . /usr/share/bash-completion/completions/bonsaictl
    COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}; COMPREPLY=()
    _bonsaictl bonsaictl "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
    echo "${COMPREPLY[*]}"' comp "$@"
}
got=$(comp bonsaictl s)
[ "$got" = "stat set serve" ] || fail "completion of 'bonsaictl s': '$got'"
got=$(comp bonsaictl run -l wr)
[ "$got" = "write writev writes" ] || fail "completion of 'bonsaictl run -l wr': '$got'"
got=$(comp bonsaictl set svc read+pr)
[ "$got" = "read+pread read+preadv" ] || fail "completion of 'bonsaictl set svc read+pr': '$got'"
note "completion: ok"

# systemd: the drop-in on a unit, the exporter unit and the fleet agent's verify clean.
if command -v systemd-analyze > /dev/null; then
  u=$T/units
  mkdir -p "$u/bonsai-pkgtest.service.d"
  printf '[Unit]\nDescription=bonsai packaging test\n[Service]\nExecStart=/bin/sleep 1\n' > "$u/bonsai-pkgtest.service"
  cp /usr/share/doc/bonsai/examples/systemd/bonsai.conf "$u/bonsai-pkgtest.service.d/"
  cp "/usr/share/doc/bonsai/examples/systemd/bonsai-exporter@.service" "$u/"
  cp "/usr/share/doc/bonsai/examples/systemd/bonsai-fleet-agent@.service" "$u/"
  for unit in bonsai-pkgtest.service bonsai-exporter@root.service bonsai-fleet-agent@root.service; do
    out=$(cd "$u" && SYSTEMD_UNIT_PATH="$u:" systemd-analyze verify "$u/$unit" 2>&1) ||
      fail "systemd-analyze verify $unit: $out"
    [ -z "$out" ] || fail "systemd-analyze verify $unit: $out"
  done
  note "systemd-analyze verify: clean"
else
  note "systemd-analyze not installed: systemd files not verified"
fi

# Purge: no file of the package is left.
dpkg -P bonsai > "$T/dpkg.log" 2>&1 || { cat "$T/dpkg.log" >&2; fail "dpkg -P failed"; }
while read -r f; do [ ! -e "$f" ] || fail "dpkg -P left $f"; done < "$T/pkg.files"
[ ! -e /etc/bonsai ] || fail "dpkg -P left /etc/bonsai"
[ ! -e /usr/lib/"$MULTIARCH"/bonsai ] || fail "dpkg -P left /usr/lib/$MULTIARCH/bonsai"

# ---- make install / uninstall in a DESTDIR ----
R=$T/root
chmod 755 "$T"   # a library under a private directory draws a warning from run
mk install DESTDIR="$R" PREFIX=/usr > "$T/install.log" 2>&1 || { tail -n 20 "$T/install.log" >&2; fail "make install failed"; }
(cd "$R" && find . ! -type d | sed 's|^\.||' | sort) > "$T/inst.files"
# The same layout as the package (which adds its docs, and gzips man pages).
sed 's/\.gz$//' "$T/pkg.files" > "$T/pkg.plain"
missing=$(comm -23 "$T/inst.files" "$T/pkg.plain")
[ -z "$missing" ] || fail "make install put files the package has not: $missing"
for f in /usr/bin/bonsaictl /usr/lib/"$MULTIARCH"/bonsai/libbonsai.so /usr/share/man/man1/bonsaictl.1 \
  /usr/share/bash-completion/completions/bonsaictl /etc/bonsai/bonsai.yaml; do
  grep -qx "$f" "$T/inst.files" || fail "make install did not install $f"
done
# The staged bonsaictl finds the staged library (the package is gone: no other one).
pre=$("$R/usr/bin/bonsaictl" run -s pkgtest2 -- sh -c 'echo "$LD_PRELOAD"') || fail "staged run failed"
[ "$pre" = "$R/usr/lib/$MULTIARCH/bonsai/\$LIB/libbonsai.so" ] || fail "staged run preloaded '$pre'"
s=$(now_ns)
"$R/usr/bin/bonsaictl" run -s pkgtest2 -l write=4MiB/s -- dd if=/dev/zero of=/dev/null bs=64k count=64 status=none ||
  fail "staged capped dd failed"
check_rate "dd under the staged bonsaictl, cap 4 MiB/s" $((4 * MiB)) "$(secs_since "$s")" $((4 * MiB)) 0.7
"$R/usr/bin/bonsaictl" rm pkgtest2 > /dev/null || fail "rm pkgtest2"
mk uninstall DESTDIR="$R" PREFIX=/usr > "$T/uninstall.log" 2>&1 || { cat "$T/uninstall.log" >&2; fail "make uninstall failed"; }
left=$(cd "$R" && find . ! -type d)
[ -z "$left" ] || fail "make uninstall left: $left"
note "install/uninstall round trip: ok ($(wc -l < "$T/inst.files") files)"
echo "PASS: package $(basename "$DEB"), install round trip"
