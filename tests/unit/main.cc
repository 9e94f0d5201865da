// SPDX-License-Identifier: MIT
// Catch2 entry point for every unit test (tests/unit/*_test.cc).
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
