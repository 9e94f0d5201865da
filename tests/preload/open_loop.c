/* SPDX-License-Identifier: MIT
   open_loop, dynamic (see open_loop.h). */
#include "open_loop.h"
