/* SPDX-License-Identifier: MIT
   write_bytes, static build: LD_PRELOAD cannot reach it; it must simply run unlimited. */
// build-flags: -static
#include "write_bytes.h"
