#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The CLI check (`make test-cli`, run by `make test`): each bonsaictl command's options
# table (bonsaictl help --options, base/cli_options.h) is the one source, and
#  - the man page bonsaictl(1) defines exactly those options in the command's section
#    (its lines that start with *-...*; the table's global ones under GLOBAL OPTIONS),
#  - the bash completion's _bonsaictl_opts_<command> lists exactly those spellings,
#  - `bonsaictl help COMMAND` shows each of them,
#  - every `bonsaictl COMMAND ...` the docs write (README.md, docs/**/*.md, the man pages,
#    config/*.yaml comments) uses only options COMMAND has (words before " -- ").
# Prints each disagreement and exits 1. Usage:
#   tests/tools/check_cli_doc.sh BONSAICTL [REPO_ROOT]
set -u
CTL=${1:?usage: check_cli_doc.sh BONSAICTL [REPO_ROOT]}
ROOT=${2:-$(cd "$(dirname "$0")/../.." && pwd)}
CTL=$(cd "$(dirname "$CTL")" && pwd)/$(basename "$CTL")
cd "$ROOT" || exit 2
MAN=packaging/man/bonsaictl.1.scd
COMP=packaging/completion/bonsaictl
BUILTIN="-h --help --version"  # ctl_main's own, before any table

table=$("$CTL" help --options) || { echo "cli: $CTL help --options failed"; exit 1; }
[ -n "$table" ] || { echo "cli: $CTL help --options printed nothing"; exit 1; }
fail=0
say() { echo "cli: $*"; fail=1; }

# The spellings of one command's options ("*": every command's), sorted, one a line.
spellings() {
  awk -F'\t' -v c="$1" '$1 == c { n = split($2, a, ", "); for (i = 1; i <= n; i++) print a[i] }' <<<"$table" | sort -u
}
commands=$(cut -f1 <<<"$table" | sort -u | grep -v '^\*$')
commands=$(printf '%s\n' $commands run stat set load check check-limits ls rm serve top fleet-agent protect-agent cdi | sort -u)

# The man page section of a command: from "## NAME" (cdi: "## cdi generate") to the
# next heading; the definition lines' option spellings.
man_spellings() {
  local head
  if [ "$1" = "*" ]; then head='^# GLOBAL OPTIONS'; else head="^## $1( |\$)"; fi
  awk -v h="$head" '$0 ~ h { on = 1; next } on && /^#/ { exit } on' "$MAN" |
    grep -E '^\*-' | grep -oE '\*-{1,2}[a-zA-Z][-a-zA-Z0-9]*' | sed 's/^\*//' | sort -u
}

comp_spellings() {
  local var=_bonsaictl_opts_${1//-/_}
  [ "$1" = "*" ] && var=_bonsaictl_opts_global
  local line
  line=$(grep -E "^$var=" "$COMP") || { echo "MISSING"; return; }
  line=${line#*=\"}
  line=${line%\"}
  printf '%s\n' $line | sort -u
}

compare() {  # WHAT CMD EXPECTED GOT [ALLOWED_EXTRA]
  local what=$1 cmd=$2 want=$3 got=$4 extra=${5:-} w
  for w in $want; do
    grep -qxF -- "$w" <<<"$got" || say "$cmd: option $w (its table) is missing from $what"
  done
  for w in $got; do
    grep -qxF -- "$w" <<<"$want" && continue
    [[ " $extra " == *" $w "* ]] && continue
    say "$cmd: $what names option $w, which is not in its table"
  done
}

for cmd in '*' $commands; do
  want=$(spellings "$cmd")
  if [ "$cmd" != "*" ] && ! grep -qE "^## $cmd( |\$)" "$MAN"; then
    say "$cmd: no section '## $cmd' in $MAN"
  else
    compare "$MAN" "$cmd" "$want" "$(man_spellings "$cmd")" "$([ "$cmd" = "*" ] && echo "$BUILTIN")"
  fi
  got=$(comp_spellings "$cmd")
  if [ "$got" = MISSING ]; then
    say "$cmd: $COMP has no _bonsaictl_opts_${cmd//-/_}"
  else
    compare "$COMP" "$cmd" "$want" "$got"
  fi
  if [ "$cmd" != "*" ]; then
    help=$("$CTL" help "$cmd")
    for w in $want; do
      grep -qE -- "(^|[ ,])$w([ ,=[]|\$)" <<<"$help" || say "$cmd: option $w is missing from bonsaictl help $cmd"
    done
    grep -qE "[\" ]$cmd[\" ]" <<<"$(grep -E '^_bonsaictl_commands=' "$COMP")" ||
      say "$cmd: not in $COMP's _bonsaictl_commands"
  fi
done

# The docs' command lines: `bonsaictl CMD ...` in backticks, in code blocks, or in the
# man pages' bold (*bonsaictl set --wait*). An option word (-x, --xx, --xx=V) before
# " -- " must be the command's or a global one.
global=$(spellings '*')
docs=(README.md docs/*.md docs/reference/*.md docs/guides/*.md docs/notes/*.md packaging/man/*.scd config/*.yaml)
mentions=$(grep -noE 'bonsaictl +[a-z][-a-z]* [^`|]*' "${docs[@]}" 2>/dev/null | sed 's/[*_]//g')
checked=0
while IFS= read -r m; do
  [ -n "$m" ] || continue
  where=${m%%:bonsaictl*}
  line=${m#"$where":}
  read -r -a words <<<"${line%% -- *}"
  cmd=${words[1]:-}
  grep -qxF -- "$cmd" <<<"$commands" || continue
  own=$(spellings "$cmd")
  for w in "${words[@]:2}"; do
    [[ $w == bonsaictl || $w == \#* ]] && break  # the next command, or a comment
    w=${w%%[=\[\]\(\),;:.\'\"]*}
    w=${w%%\`*}
    [[ $w =~ ^--?[a-zA-Z][-a-zA-Z0-9]*$ ]] || continue
    checked=$((checked + 1))
    grep -qxF -- "$w" <<<"$own" && continue
    grep -qxF -- "$w" <<<"$global" && continue
    [[ " $BUILTIN " == *" $w "* ]] && continue
    say "$where: 'bonsaictl $cmd ... $w': $cmd has no option $w"
  done
done <<<"$mentions"

[ $fail = 0 ] && echo "cli: ok ($(wc -l <<<"$table") options of $(wc -w <<<"$commands") commands: help, $MAN, $COMP agree; $checked option uses in the docs)"
exit $fail
