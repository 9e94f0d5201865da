// SPDX-License-Identifier: MIT
// bonsaictl: the control CLI. Everything lives in the subcommand table (commands.cc)
// so that the unit tests can reach it; this file only hands over argv.
#include "cmd/commands.h"

int main(int argc, char** argv) { return bonsai::ctl::ctl_main(argc, argv); }
