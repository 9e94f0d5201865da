/* SPDX-License-Identifier: MIT
   open_loop, static (see open_loop.h): for the supervisor. */
// build-flags: -static
#include "open_loop.h"
