#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The maps check (`make test-maps`, run by `make test`): every source file of a tree is
# named in its map, the README.md nearest to it inside its tree (libbonsai/README.md,
# bonsaictl/README.md, bench/README.md, tests/README.md, or a README.md of a folder
# between). The trees and what counts as a source file:
#
#   libbonsai/ bonsaictl/ bench/ tests/tools/ tests/integration/ tests/scenarios/   .cc .h .c .sh .py .go
#   bench/ also .gp and .md (plots, prose sources; not bench/results/, the published data)
#
# A file is named by its name (`tx_stream.cc`), by its unit's (X.h and X.cc are one:
# either names both; `X.{h,cc}` and `X.*` too), or by a family pattern in backquotes
# (`compress_*.cc`, `t_*.sh`: a shell glob on the file's name). The other way round, a
# map names no file that is gone: each backquoted file name of a source extension
# (with its folder, or alone) and each family pattern must match a file of the
# repository. Prints each offence with the file and the README to fix, exits 1.
# Pure bash and git. Usage: tests/tools/check_maps.sh [REPO_ROOT]
set -u
ROOT=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "$ROOT" || exit 2

TREES=(libbonsai bonsaictl bench tests/tools tests/integration tests/scenarios)
EXT_RE='\.(cc|h|c|sh|py|go)$'
BENCH_EXT_RE='\.(cc|h|c|sh|py|go|gp|md)$'  # bench/: every file of its rooms is in its map

# The repository's files (tracked and new, not ignored): a check run before a commit
# sees the files a helper just added.
# Outside a git checkout (a release tarball): every file but the build's.
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t ALL < <(git ls-files --cached --others --exclude-standard | sort -u)
else
  mapfile -t ALL < <(find . -path ./build -prune -o -path ./.git -prune -o -type f -print | sed 's|^\./||' | sort)
fi
declare -A EXISTS
for f in "${ALL[@]}"; do [ -e "$f" ] && EXISTS[$f]=1; done

# The map of file $1 into REPLY: the nearest README.md of its folder or a folder above,
# up to its tree's top folder (tests/tools, tests/integration, tests/scenarios: up to tests/).
map_of() {
  local dir=${1%/*} top
  case $1 in
    tests/*) top=tests ;;
    *) top=${1%%/*} ;;
  esac
  while :; do
    if [ -f "$dir/README.md" ]; then REPLY=$dir/README.md; return; fi
    [ "$dir" = "$top" ] && break
    dir=${dir%/*}
  done
  REPLY=$top/README.md
}

# Per map: its text and its backquoted family patterns (tokens with a `*`).
declare -A TEXT PATTERNS
load_map() {
  [ -n "${TEXT[$1]+x}" ] && return
  if [ -f "$1" ]; then TEXT[$1]=$(<"$1"); else TEXT[$1]=""; fi
  local pats
  pats=$(printf '%s\n' "${TEXT[$1]}" | grep -o '`[^`]*\*[^`]*`' | tr -d '`' | sort -u)
  PATTERNS[$1]=$pats
}

# True if map $2 names file $1.
named_in() {
  local file=$1 map=$2 base stem text p q
  base=${file##*/}
  stem=${base%.*}
  text=${TEXT[$map]}
  # The name, or its unit's: X.h, X.cc, X.c, X.*, X.{...}, as a whole word.
  if [[ $text =~ (^|[^A-Za-z0-9_.-])${stem//./\\.}\.(cc|h|c|sh|py|go|gp|md|\*|\{) ]]; then return 0; fi
  # A `stem` alone (`blog`) names its unit too.
  [[ $text == *"\`$stem\`"* ]] && return 0
  while IFS= read -r p; do
    [ -n "$p" ] || continue
    p=${p##*/}
    # A family has a fixed part besides its extension (`*` or `*.sh` alone is no family).
    q=${p%.*}
    [ -n "${q//\*/}" ] || continue
    # A pattern may carry its folder (`interpose/compressed/compress_*.cc`): match the
    # name against the pattern's last part.
    # shellcheck disable=SC2053
    [[ $base == $p ]] && return 0
  done <<<"${PATTERNS[$map]}"
  return 1
}

bad=0
for f in "${ALL[@]}"; do
  case $f in
    bench/results/* | */README.md) continue ;;
    bench/*) [[ $f =~ $BENCH_EXT_RE ]] || continue ;;
    *) [[ $f =~ $EXT_RE ]] || continue ;;
  esac
  in_tree=0
  for t in "${TREES[@]}"; do
    case $f in "$t"/*) in_tree=1 ;; esac
  done
  ((in_tree)) || continue
  [ -e "$f" ] || continue
  map_of "$f"; map=$REPLY
  load_map "$map"
  if [ ! -f "$map" ]; then
    echo "$f: no map: $map does not exist (name the file there)"
    bad=1
  elif ! named_in "$f" "$map"; then
    echo "$f: named in no map: add it to $map (its name, its unit's X.h/X.cc, or a \`prefix_*\` family)"
    bad=1
  fi
done

# Stale entries: what the maps name must exist. Only names of a source extension count
# (not `BONSAI_*`, `results/*`), and not placeholders (`policy_NAME.cc`). A name with a
# folder is the end of a repository path (`abi/calls.h`, `lib/lib.sh`, `../x/y.c`); a
# bare name is any file's name.
declare -A BASENAMES
for f in "${ALL[@]}"; do BASENAMES[${f##*/}]=1; done
# True if some file's path ends with /$1 (or is $1); $1 may be a glob.
path_found() {
  local f
  for f in "${ALL[@]}"; do
    # shellcheck disable=SC2053
    [[ $f == $1 || $f == */$1 ]] && return 0
  done
  return 1
}
for map in libbonsai/README.md bonsaictl/README.md bench/README.md tests/README.md; do
  [ -f "$map" ] || continue
  while IFS=: read -r line tok; do
    if [ "$map" = bench/README.md ]; then [[ $tok =~ $BENCH_EXT_RE ]] || continue
    else [[ $tok =~ $EXT_RE ]] || continue; fi
    [[ $tok =~ [A-Z]{3,} ]] && continue  # a placeholder
    while [[ $tok == ../* || $tok == ./* ]]; do tok=${tok#*/}; done
    [[ $tok == .* ]] && continue  # an extension alone (`.h`)
    if [[ $tok == *'*'* || $tok == */* ]]; then
      path_found "$tok" && continue
    elif [ -n "${BASENAMES[$tok]:-}" ]; then
      continue
    fi
    echo "$map:$line: \`$tok\` names no file of the repository (a stale entry: fix or drop it)"
    bad=1
  done < <(grep -no '`[^` ]*`' "$map" | tr -d '`')
done

if [ "$bad" = 0 ]; then
  echo "maps: ok (every source file of ${TREES[*]} named in its README; no stale entry)"
fi
exit "$bad"
