/* SPDX-License-Identifier: MIT
   write_bytes, dynamic build (the setuid test makes a setuid-root copy of it). */
#include "write_bytes.h"
