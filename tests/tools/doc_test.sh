#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The doc test (`make test-docs`, run by `make test`): the docs cannot rot.
#  0. The configuration keys the loader accepts, docs/reference/config.md's table and
#     bonsai.yaml(5)'s KEYS are the same set.
#  1. Every bonsai configuration the docs show passes `bonsaictl check`: each fenced
#     ```yaml block of README.md and docs/**/*.md, each ``` block of the man pages, that
#     has a top-level `version:`, `services:` or `host:` key (other YAML, such as a
#     Prometheus scrape configuration, is not bonsai's), and every config/*.yaml.
#     bonsai.yaml(5) names every shipped example (config/*.yaml). A password file the
#     configuration names is replaced by a 0600 file of the test's (the reader makes it).
#  2. Every shell example the docs mark as runnable runs and exits 0: a fenced block
#     whose info string is `sh doctest` (CONTRIBUTING.md, "Runnable examples"),
#     optionally with `needs=root`, `needs=CMD` (a program on PATH): skipped, with
#     the reason, where that is missing. Each block runs with bash -e -o pipefail, at
#     most 60 s, in a fresh directory holding `build` (the build under test) and
#     `config`, under its own BONSAI_SHM_PREFIX, with `bonsaictl` on PATH; `make`
#     lines are taken as done (the build is what is tested).
#  3. Every relative link of a tracked Markdown file names a file of the tree, and its
#     anchor a heading there (tests/tools/check_links.py).
# Prints each failure (FILE:LINE of the block) and exits 1. Usage:
#   tests/tools/doc_test.sh BUILD_DIR [REPO_ROOT]
set -u
BUILD=${1:?usage: doc_test.sh BUILD_DIR [REPO_ROOT]}
ROOT=${2:-$(cd "$(dirname "$0")/../.." && pwd)}
BUILD=$(cd "$BUILD" && pwd)
cd "$ROOT" || exit 2
CTL=$BUILD/bonsaictl
[ -x "$CTL" ] || { echo "docs: no $CTL (make first)"; exit 2; }
TMP=$(mktemp -d /tmp/bonsai-doctest.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
fail=0
say() { echo "docs: $*"; fail=1; }

# Blocks of FILE as TMP/blocks/N.{txt,where,info}: fenced by ``` lines; the info
# string is what follows the opening fence.
n=0
extract() {
  local file=$1 line=0 in=0 text info start
  while IFS= read -r l || [ -n "$l" ]; do
    line=$((line + 1))
    if [ $in = 0 ] && [[ $l =~ ^\`\`\`(.*)$ ]]; then
      in=1 info=${BASH_REMATCH[1]} start=$line text=
    elif [ $in = 1 ] && [[ $l =~ ^\`\`\`[[:space:]]*$ ]]; then
      in=0 n=$((n + 1))
      printf '%s' "$text" >"$TMP/blocks/$n.txt"
      echo "$file:$start" >"$TMP/blocks/$n.where"
      echo "$info" >"$TMP/blocks/$n.info"
    elif [ $in = 1 ]; then
      text+="$l"$'\n'
    fi
  done <"$file"
}
mkdir -p "$TMP/blocks"
for f in README.md docs/*.md docs/reference/*.md docs/guides/*.md docs/notes/*.md packaging/man/*.scd; do extract "$f"; done

# 0. Keys: every key the loader accepts (its kKeys lists, bonsaictl/config/) is a row
# of docs/reference/config.md's table and a definition in bonsai.yaml(5), and neither documents
# a key the loader refuses.
keys=$(grep -hoE 'kKeys = \{[^}]*\}?' bonsaictl/config/*.cc | grep -oE '"[a-z_0-9]+"' | tr -d '"' | sort -u)
# A list that goes on to the next line: its continuation.
keys=$(printf '%s\n' $keys $(grep -hA1 -E 'kKeys = \{[^}]*$' bonsaictl/config/*.cc | grep -v kKeys |
  grep -oE '"[a-z_0-9]+"' | tr -d '"') | sort -u)
doc_keys=$(grep -oE '^\| `[a-z_0-9]+` \|' docs/reference/config.md | grep -oE '[a-z_0-9]+' | sort -u)
# bonsai.yaml(5): "*key* (where)" at the start of a line, a section's "\t*key*:" or
# "\t*key* (required):" inside it.
man_keys=$(grep -oE '^(\*[a-z_0-9]+\* \(|'$'\t''\*[a-z_0-9]+\*( \(required\))?:)' packaging/man/bonsai.yaml.5.scd |
  grep -oE '\*[a-z_0-9]+\*' | tr -d '*' | sort -u)
for k in $keys; do
  grep -qx "$k" <<<"$doc_keys" || say "key '$k' (the loader's) is not a row of docs/reference/config.md's table"
  grep -qx "$k" <<<"$man_keys" || say "key '$k' (the loader's) is not defined in packaging/man/bonsai.yaml.5.scd"
done
for k in $doc_keys; do grep -qx "$k" <<<"$keys" || say "docs/reference/config.md documents key '$k', which the loader refuses"; done
for k in $man_keys; do grep -qx "$k" <<<"$keys" || say "bonsai.yaml(5) documents key '$k', which the loader refuses"; done

# 1. Configurations.
(umask 077 && echo doctest-password >"$TMP/secret")
yaml_ok=0 yaml_other=0
for ((i = 1; i <= n; i++)); do
  info=$(cat "$TMP/blocks/$i.info") where=$(cat "$TMP/blocks/$i.where")
  case $where in
    *.scd:*) [ -z "$info" ] || continue ;;
    *) [ "${info%% *}" = yaml ] || continue ;;
  esac
  if ! grep -qE '^(version|services|host):' "$TMP/blocks/$i.txt"; then
    yaml_other=$((yaml_other + 1))
    continue
  fi
  # A secret the configuration names (password_file: /etc/bonsai/redis.pass) is the
  # reader's to make: a 0600 file of ours stands in for it, checked as the agent would.
  sed -E "s#^([[:space:]]*(sentinel_)?password_file:[[:space:]]*)/[^[:space:]]+#\1$TMP/secret#" \
    "$TMP/blocks/$i.txt" >"$TMP/example.yaml"
  if out=$(cd "$TMP" && "$CTL" check example.yaml 2>&1); then
    yaml_ok=$((yaml_ok + 1))
  else
    say "$where: the configuration fails bonsaictl check:"
    sed 's/^/    /' <<<"$out"
  fi
done
for f in config/*.yaml; do
  if out=$("$CTL" check "$f" 2>&1); then yaml_ok=$((yaml_ok + 1)); else say "$f fails bonsaictl check:"; sed 's/^/    /' <<<"$out"; fi
  grep -qF "*$(basename "$f")*" packaging/man/bonsai.yaml.5.scd ||
    say "packaging/man/bonsai.yaml.5.scd (FILES) does not name the shipped example $(basename "$f")"
done

# 2. Runnable examples.
mkdir -p "$TMP/bin"
ln -s "$CTL" "$TMP/bin/bonsaictl"
cat >"$TMP/bin/make" <<'EOF'
#!/bin/sh
# The doc test runs after the build: an example's `make` is done already.
exit 0
EOF
chmod +x "$TMP/bin/make"
ran=0 skipped=0
for ((i = 1; i <= n; i++)); do
  info=$(cat "$TMP/blocks/$i.info") where=$(cat "$TMP/blocks/$i.where")
  read -r -a words <<<"$info"
  [ "${words[0]:-}" = sh ] && [ "${words[1]:-}" = doctest ] || continue
  why=
  for w in "${words[@]:2}"; do
    case $w in
      needs=root) [ "$(id -u)" = 0 ] || why="needs root" ;;
      needs=*) command -v "${w#needs=}" >/dev/null || why="needs ${w#needs=}" ;;
    esac
  done
  if [ -n "$why" ]; then
    echo "docs: SKIP $where ($why)"
    skipped=$((skipped + 1))
    continue
  fi
  dir=$TMP/run$i
  mkdir -p "$dir"
  ln -s "$BUILD" "$dir/build"
  ln -s "$ROOT/config" "$dir/config"
  prefix="doctest$$.$i."
  t0=$(date +%s.%N)
  if out=$(cd "$dir" && PATH="$TMP/bin:$PATH" BONSAI_SHM_PREFIX=$prefix BONSAI_LIB="$BUILD/libbonsai.so" \
           timeout -k 5 60 bash -e -o pipefail "$TMP/blocks/$i.txt" 2>&1 </dev/null); then
    ran=$((ran + 1))
    echo "docs: ran $where ($(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s)"
  else
    say "$where: the runnable example failed (exit $?):"
    sed 's/^/    /' <<<"$out" | tail -n 20
  fi
  # What the example left: its services (processes it started are its own to end).
  for s in $(BONSAI_SHM_PREFIX=$prefix "$CTL" ls --json 2>/dev/null | grep -o '"service":"[^"]*"' | cut -d'"' -f4); do
    BONSAI_SHM_PREFIX=$prefix "$CTL" rm --force "$s" >/dev/null 2>&1
  done
done

# 3. Links: every relative link of the Markdown files resolves, anchors included.
python3 tests/tools/check_links.py "$ROOT" || fail=1

[ $fail = 0 ] && echo "docs: ok ($(wc -w <<<"$keys") keys in reference/config.md and bonsai.yaml(5); $yaml_ok configurations pass check, $yaml_other other YAML blocks; $ran runnable examples ran, $skipped skipped)"
exit $fail
