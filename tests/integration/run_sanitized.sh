#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The C-program hardening tests (t_*.sh marked "# sanitized: yes") against the ASan+UBSan
# (BONSAI_SANITIZER=asan) or TSan (=tsan) build of libbonsai.so in $BONSAI_BUILD: run.sh
# in its sanitizer mode (a report fails the test; timeouts scaled; see run.sh).
set -u
: "${BONSAI_BUILD:?set BONSAI_BUILD to the sanitized build dir}"
: "${BONSAI_SANITIZER:?set BONSAI_SANITIZER to asan or tsan}"
exec bash "$(dirname "$0")/run.sh"
