#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The options check (`make test-options`, run by `make test`): every BONSAI_* variable
# the library reads is a row of BONSAI_OPTIONS in libbonsai/runtime/options.h, and
# docs/reference/limits.md's table "Environment of a limited process" lists the same variables;
# a row with a default shows it in the doc as "default `VALUE`". Prints each
# disagreement and exits 1. Pure bash, grep and sed. Usage:
#   tests/tools/check_options_doc.sh [REPO_ROOT]
set -u
ROOT=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "$ROOT" || exit 2
HDR=libbonsai/runtime/options.h
DOC=docs/reference/limits.md

# Rows: X(id, "NAME", Type, "default", "doc") -> NAME<TAB>default
rows=$(grep -oE '^[[:space:]]*X\([a-z_0-9]+, "BONSAI_[A-Z_0-9]+", [A-Za-z]+, "[^"]*"' "$HDR" |
  sed -E 's/.*"(BONSAI_[A-Z_0-9]+)", [A-Za-z]+, "([^"]*)"/\1\t\2/')
# The doc's table: from its heading to the next heading, rows naming a BONSAI_ variable.
table=$(sed -n '/^## Environment of a limited process/,/^## /p' "$DOC" | grep -E '^\| `BONSAI_')

fail=0
[ -n "$rows" ] || { echo "options: no rows found in $HDR"; exit 1; }
[ -n "$table" ] || { echo "options: no table found in $DOC"; exit 1; }
while IFS=$'\t' read -r name def; do
  line=$(grep -E "^\| \`$name[\`= (]" <<<"$table")
  if [ -z "$line" ]; then
    echo "options: $name ($HDR) is missing from $DOC's environment table"
    fail=1
  elif [ -n "$def" ] && ! grep -qF "default \`$def\`" <<<"$line"; then
    echo "options: $DOC's row of $name does not say its default: default \`$def\`"
    fail=1
  fi
done <<<"$rows"
for name in $(grep -oE '^\| `BONSAI_[A-Z_0-9]+' <<<"$table" | sed 's/^| `//'); do
  if ! grep -qP "^$name\t" <<<"$rows"; then
    echo "options: $name ($DOC) is not a row of $HDR"
    fail=1
  fi
done
# No module reads a BONSAI_ variable by name: through option_env() only.
if grep -rnE '(getenv|env_get)\("BONSAI_' libbonsai; then
  echo "options: the reads above bypass the options table (use option_env(Opt::...))"
  fail=1
fi
[ $fail = 0 ] && echo "options: ok ($(wc -l <<<"$rows") variables: $HDR and $DOC agree)"
exit $fail
