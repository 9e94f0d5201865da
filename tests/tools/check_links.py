#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# The link check (run by tests/tools/doc_test.sh, `make test-docs`): every relative link
# of a tracked Markdown file, [text](PATH) or [text](PATH#anchor), names a file of the
# tree, and an anchor names a heading of that file as GitHub spells it (lower case,
# punctuation dropped, spaces as '-', a repeated heading with -1, -2...). Pages move
# (docs/reference/, docs/guides/): a link that no longer resolves is a reader's dead end.
# Links inside code spans and fenced blocks are examples, not links. Prints each broken
# link as FILE:LINE and exits 1. Usage: tests/tools/check_links.py [REPO_ROOT]
import os
import re
import subprocess
import sys

root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), '..', '..')
os.chdir(root)
files = subprocess.run(['git', 'ls-files', '*.md'], capture_output=True, text=True, check=True).stdout.split()
# bench/doc_notes.md is prose that make_doc.sh splices into docs/benchmarks.md: its links
# are written from docs/ and checked there.
files = [f for f in files if f != 'bench/doc_notes.md']


def lines_outside_fences(path):
    fence = False
    with open(path, encoding='utf-8') as f:
        for number, line in enumerate(f, 1):
            if line.startswith('```'):
                fence = not fence
            elif not fence:
                yield number, line


anchors_of = {}


def anchors(path):
    if path not in anchors_of:
        seen, out = {}, set()
        for _, line in lines_outside_fences(path):
            m = re.match(r'#{1,6}\s+(.*?)\s*#*\s*$', line)
            if not m:
                continue
            slug = re.sub(r'[^\w\- ]', '', m.group(1).strip().lower()).replace(' ', '-')
            n = seen.get(slug, 0)
            seen[slug] = n + 1
            out.add(slug if n == 0 else f'{slug}-{n}')
        anchors_of[path] = out
    return anchors_of[path]


broken = 0
for f in files:
    for number, line in lines_outside_fences(f):
        for m in re.finditer(r'\]\(([^)\s]+)\)', re.sub(r'`[^`]*`', '', line)):
            target = m.group(1)
            if re.match(r'[a-z]+:', target):  # http:, https:, mailto:
                continue
            path, _, anchor = target.partition('#')
            # bench/report/topics/ holds fragments of docs/benchmarks.md: their links are
            # written from docs/, where make_doc.sh puts them.
            base = 'docs' if f.startswith('bench/report/topics/') else os.path.dirname(f)
            resolved = os.path.normpath(os.path.join(base, path)) if path else f
            if not os.path.exists(resolved):
                print(f'links: {f}:{number}: {target}: no file {resolved}')
                broken += 1
            elif anchor and resolved.endswith('.md') and anchor not in anchors(resolved):
                print(f'links: {f}:{number}: {target}: no heading #{anchor} in {resolved}')
                broken += 1
if broken == 0:
    print(f'links: ok (every relative link of {len(files)} Markdown files resolves)')
sys.exit(1 if broken else 0)
