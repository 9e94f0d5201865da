#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The include-order check (`make test-layers`, run by `make test`): libbonsai's modules
# form one-way layers, lowest first:
#
#   sys <- abi <- bucket <- log <- shm <- runtime <- compress <- interpose
#
# A file in libbonsai/M/ may include its own module and lower ones only. bonsaictl/ is
# in rooms, layered the same way, lowest first (CTL_ORDER below):
#
#   base <- segment <- config <- stat <- fleet <- protect <- serve <- supervisor <- launch <- cmd <- main.cc
#
# each may include its own room, the rooms below and sys, abi, bucket, log, shm,
# compress (it links those, never runtime or interpose). Neither tree's files form a
# cycle (a header and its .cc taken as one unit: tsort finds loops, each printed as
# `A -> B -> A`, in include order). A module's subfolder belongs to the module
# (interpose/compressed/, the compression hooks, is part of interpose) and shows the
# rest of the library one header, its `*_hooks.h`: its other headers may be included
# from inside the folder only (the wrappers see compress_hooks.h alone). Every quoted
# include anywhere in the sources must name a file inside the repository. Prints each
# offence as FILE:LINE: text and exits 1.
# Pure bash and grep. Usage: tests/tools/check_layers.sh [REPO_ROOT]
set -u
ROOT=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "$ROOT" || exit 2

ORDER=(sys abi bucket log shm runtime compress interpose)
declare -A ALLOWED
below=""
for m in "${ORDER[@]}"; do
  below="$below $m"
  ALLOWED[$m]="$below"
done
# bonsaictl's rooms, lowest first: each may include its own files, the rooms below it
# and the library modules it links (sys abi bucket log shm compress; never runtime or
# interpose). main.cc, at the top, may include any room.
CTL_ORDER=(base segment config stat fleet protect serve supervisor launch cmd)
below=" sys abi bucket log shm compress"
for r in "${CTL_ORDER[@]}"; do
  below="$below ctl/$r"
  ALLOWED[ctl/$r]="$below"
done
ALLOWED[ctl]="$below"

# Normalizes a relative path (a/./b/../c -> a/c) into REPLY; "" if it climbs above ".".
# (Results go through REPLY, not $(...): no fork per include.)
normalize() {
  local IFS=/ part out=()
  REPLY=""
  for part in $1; do
    case $part in
      '' | .) ;;
      ..) ((${#out[@]})) || return; unset 'out[${#out[@]}-1]' ;;
      *) out+=("$part") ;;
    esac
  done
  REPLY="${out[*]}"
}

# The module a repository path belongs to, into REPLY ("" if none).
module_of() {
  case $1 in
    libbonsai/*/*) REPLY=${1#libbonsai/}; REPLY=${REPLY%%/*} ;;
    bonsaictl/*/*) REPLY=${1#bonsaictl/}; REPLY=ctl/${REPLY%%/*} ;;
    bonsaictl/*) REPLY=ctl ;;  # main.cc
    *) REPLY="" ;;
  esac
}

bad=0
unit_edges=()  # "FROM TO" between units of one tree (X.h and X.cc as one), for the cycle check
while IFS= read -r hit; do
  file=${hit%%:*}; rest=${hit#*:}; line=${rest%%:*}; text=${rest#*:}
  inc=${text#*\"}; inc=${inc%%\"*}
  dir=${file%/*}
  # The compiler's search order: the including file's directory, then -Ibonsaictl, -Ilibbonsai, -Itests.
  target=""
  case $inc in
    /*) ;;
    *)
      for base in "$dir" bonsaictl libbonsai tests; do
        normalize "$base/$inc"
        if [ -n "$REPLY" ] && [ -f "$REPLY" ]; then target=$REPLY; break; fi
      done ;;
  esac
  if [ -z "$target" ]; then
    echo "$file:$line: names no file inside the repository: $text"
    bad=1
    continue
  fi
  case $file:$target in
    libbonsai/*:libbonsai/*/*/*_hooks.h) ;;
    libbonsai/*:libbonsai/*/*/*)  # a subfolder's private header
      if [ "$dir" != "${target%/*}" ]; then
        echo "$file:$line: '$target' is private to ${target%/*}/ (the folder's *_hooks.h is its face): $text"
        bad=1
        continue
      fi ;;
  esac
  case $file:$target in
    bonsaictl/*:bonsaictl/* | libbonsai/*:libbonsai/*)
      [ "${file%.*}" = "${target%.*}" ] || unit_edges+=("${file%.*} ${target%.*}") ;;
  esac
  module_of "$file"; from=$REPLY
  module_of "$target"; to=$REPLY
  [ -z "$from" ] && continue            # tests, bench: any repository file
  [ "$from" = "$to" ] && continue
  allowed=${ALLOWED[$from]:-}
  if [ -z "$allowed" ]; then
    echo "$file:$line: module '$from' is not in the layer order (tests/tools/check_layers.sh): $text"
    bad=1
  elif [ -z "$to" ] || [[ " $allowed " != *" $to "* ]]; then
    echo "$file:$line: '$from' may not include '${to:-$target}' (order: ${ORDER[*]}; bonsaictl: ${CTL_ORDER[*]}; $from may use:$allowed): $text"
    bad=1
  fi
done < <(grep -rn --include='*.h' --include='*.cc' --include='*.c' --include='*.hpp' --include='*.cpp' \
           -E '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' libbonsai bonsaictl tests bench 2>/dev/null)

# No cycle between the units of libbonsai or of bonsaictl (X.h with X.cc as one): tsort
# names each loop it finds, its units in include order. (One edge of each loop is set
# aside to find the next, so a tangle may show as several loops.)
if ((${#unit_edges[@]})); then
  loop=()
  last_loop=""
  flush_loop() {
    ((${#loop[@]})) || return 0
    local text="" u
    for u in "${loop[@]}"; do text="$text$u -> "; done
    text="include cycle between units (a header and its .cc count as one): $text${loop[0]}"
    [ "$text" = "$last_loop" ] || echo "$text"
    last_loop=$text
    loop=()
  }
  while IFS= read -r line; do
    case $line in
      *'input contains a loop:'*) flush_loop; bad=1 ;;
      tsort:\ *) loop+=("${line#tsort: }") ;;
    esac
  done < <(printf '%s\n' "${unit_edges[@]}" | sort -u | tsort 2>&1 >/dev/null)
  flush_loop
fi

if [ "$bad" = 0 ]; then
  echo "layers: ok (${ORDER[*]}; bonsaictl rooms: ${CTL_ORDER[*]}; no include cycle between units)"
fi
exit "$bad"
