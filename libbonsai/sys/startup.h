// SPDX-License-Identifier: MIT
// Code and data every process start touches, kept on few pages. Every exec
// of a limited program runs the constructor and the exit hooks; each page of the
// library they touch first costs a page fault (2-5 us on a virtual machine, against
// ~750 us for a whole start of /bin/true), and the library's 1 MiB of code (zstd)
// scattered them over a dozen pages. Functions that run at every start go to
// .text.startup, where the linker also puts constructors (one run of pages); globals
// they write go to .data, whose pages the loader has written already.
// .data must stay within one page (~3.9 of 4 KiB used): a second is a fault for every
// start. Measured by bench/scenarios/startup.sh; docs/notes/bench-startup.md; checked by
// tests/integration/t_startup_pages.sh.
#pragma once

#define BONSAI_STARTUP __attribute__((section(".text.startup")))
#define BONSAI_STARTUP_DATA __attribute__((section(".data.bonsai_startup")))
