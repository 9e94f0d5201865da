#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The symbol check (`make test-symbols`, run by `make test`): the names the library
# interposes are listed three times and the three must agree:
#   - libbonsai/interpose/real.h: every X(ret, name, ...) row of the glibc table, plus
#     BONSAI_OWN_SYMBOLS (interposed names made from other real functions);
#   - libbonsai/bonsai.map: the `global:` list;
#   - `nm -D --defined-only LIB`: what the built library really exports.
# Also what every process pays for at exec (issue #34): the library needs no shared
# library but libc (compression's libzstd/liblz4 linked in, libseccomp opened on
# demand) and imports nothing of the C++ runtime (a libstdc++.a member brings its
# exception runtime, which mallocs a pool in every process at start).
# And which libcs can load it (issue #48, docs/reference/libc.md): the glibc build requires no
# symbol version newer than GLIBC_2.17 (GLIBC_MAX), or glibc 2.17..2.33's loader
# refuses it and the program does not start; a newer function is looked up at run
# time (libbonsai/sys/late_bound.h), never linked. The musl build (its NEEDED is
# musl's libc.so) requires no version at all.
# Prints each name missing from one of them and exits 1. Usage:
#   tests/tools/check_symbols.sh LIBBONSAI_SO [REPO_ROOT]
# (a release build: sanitizer builds leave some wrappers out, e.g. sigaction in TSan).
set -u
GLIBC_MAX=${GLIBC_MAX:-2.17}
LIB=${1:?usage: check_symbols.sh path/to/libbonsai.so [REPO_ROOT]}
ROOT=${2:-$(cd "$(dirname "$0")/../.." && pwd)}
[ -f "$LIB" ] || { echo "symbols: no library at $LIB" >&2; exit 2; }

tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT

# real.h: the first two fields of each X(...) row, and Y(name) of BONSAI_OWN_SYMBOLS.
{
  grep -oE '^[[:space:]]*X\([^,]+,[[:space:]]*[A-Za-z_0-9]+' "$ROOT/libbonsai/interpose/real.h" |
    sed -E 's/.*,[[:space:]]*//'
  grep -E '^#define BONSAI_OWN_SYMBOLS' "$ROOT/libbonsai/interpose/real.h" | grep -oE 'Y\([A-Za-z_0-9]+\)' |
    sed -E 's/Y\((.*)\)/\1/'
} | sort -u >"$tmp/real"
sed -n '/global:/,/local:/p' "$ROOT/libbonsai/bonsai.map" | grep -oE '^[[:space:]]*[A-Za-z_0-9]+;' |
  tr -d ' ;\t' | sort -u >"$tmp/map"
nm -D --defined-only "$LIB" | awk 'NF == 3 && $2 ~ /^[TtWwi]$/ {print $3}' | sed 's/@.*//' | sort -u >"$tmp/nm"

fail=0
report() {  # report A B: names in list A that list B lacks
  local missing
  missing=$(comm -23 "$tmp/$1" "$tmp/$2")
  if [ -n "$missing" ]; then
    fail=1
    for n in $missing; do echo "symbols: $n is in $1 ($3) but not in $2 ($4)"; done
  fi
}
report real map "interpose/real.h" "bonsai.map"
report map real "bonsai.map" "interpose/real.h"
report map nm "bonsai.map" "nm -D $LIB"
report nm map "nm -D $LIB" "bonsai.map"
all_needed=$(readelf -d "$LIB" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
if printf '%s\n' "$all_needed" | grep -qx 'libc\.so'; then
  libc=musl
  allowed='libc\.so'
else
  libc=glibc
  allowed='libc\.so\.6|ld-linux-x86-64\.so\.2|libdl\.so\.2|libpthread\.so\.0|librt\.so\.1'
fi
needed=$(printf '%s\n' "$all_needed" | grep -vE "^($allowed)\$" | grep -v '^$')
if [ -n "$needed" ]; then
  fail=1
  echo "symbols: $LIB needs" $needed "(each one is mapped and relocated at every exec: link it in or dlopen it)"
fi
# Symbol versions: what the loader checks before the program runs.
versions=$(objdump -T "$LIB" | awk '$0 ~ /\*UND\*/ { for (i = 1; i <= NF; ++i) if ($i ~ /^\(?[A-Z_]+_[0-9.]+\)?$/) { v = $i; gsub(/[()]/, "", v); print v, $NF } }')
if [ $libc = musl ]; then
  if [ -n "$versions" ]; then
    fail=1
    printf '%s\n' "$versions" | while read -r v n; do echo "symbols: $LIB (musl) requires $n@$v: musl defines no symbol versions"; done
  fi
  newest=none
else
  newest=$(printf '%s\n' "$versions" | awk '$1 ~ /^GLIBC_[0-9]/ { sub(/^GLIBC_/, "", $1); print $1 }' | sort -uV | tail -n1)
  too_new=$(printf '%s\n' "$versions" | awk -v max="$GLIBC_MAX" '$1 ~ /^GLIBC_[0-9]/ {
      v = $1; sub(/^GLIBC_/, "", v); split(v, a, "."); split(max, m, ".")
      if (a[1] + 0 > m[1] + 0 || (a[1] + 0 == m[1] + 0 && a[2] + 0 > m[2] + 0)) print $2 "@" $1 }' | sort -u)
  if [ -n "$too_new" ]; then
    fail=1
    for n in $too_new; do
      echo "symbols: $LIB requires $n, newer than GLIBC_$GLIBC_MAX: an older glibc's loader refuses the library and" \
        "the program does not start (look it up at run time: libbonsai/sys/late_bound.h; docs/reference/libc.md)"
    done
  fi
  newest=GLIBC_$newest
fi
cxx=$(nm -D --undefined-only "$LIB" | awk '{print $NF}' |
  grep -E '^(_Z|__gxx_|_Unwind_|__cxa_(allocate|throw|begin|end|rethrow|guard|pure|deleted))' | tr '\n' ' ')
if [ -n "$cxx" ]; then
  fail=1
  echo "symbols: $LIB imports C++ runtime symbols: $cxx(libstdc++.a's exception runtime would come with them)"
fi
# Start-up layout (issue #34): the globals every start writes sit on .data's one page,
# and set-up code is one mapping with the headers (-z noseparate-code).
data=$(readelf -SW "$LIB" | awk '$2 == ".data" { print $4, $6 }')
if [ -n "$data" ]; then
  read -r addr size <<<"$data"
  if [ $(((0x$addr % 4096) + 0x$size)) -gt 4096 ]; then
    fail=1
    echo "symbols: $LIB's .data ($((0x$size)) bytes at 0x$addr) spans two pages: every start writes both (libbonsai/sys/startup.h)"
  fi
fi
loads=$(readelf -lW "$LIB" | grep -c '^ *LOAD')
if [ "$loads" -gt 2 ]; then
  fail=1
  echo "symbols: $LIB has $loads PT_LOAD segments (2 expected: -z noseparate-code, Makefile): each is an mmap at every exec"
fi
[ $fail = 0 ] && echo "symbols: ok ($(wc -l <"$tmp/map") names: real.h, bonsai.map and nm -D agree; needs $libc's libc only (newest version $newest), no C++ runtime; .data on one page, 2 segments)"
exit $fail
