# Compiler flags. MODE=release (default) | asan | tsan; objects go to build/obj/$(MODE)
# so modes never mix.
CXX      ?= g++
CC       ?= gcc
MODE     ?= release
WARN     := -Wall -Wextra -Wshadow -Wpointer-arith -Wcast-align -Wformat -Wno-missing-field-initializers
CXXSTD   := -std=c++20
DEPFLAGS  = -MMD -MP
OPT_release := -O2 -g
# Sanitizer builds keep line tables only (-g1): their reports still name file and line,
# and they compile a quarter faster than with full debug information (make test builds
# both modes).
OPT_asan    := -O1 -g1 -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
OPT_tsan    := -O1 -g1 -fsanitize=thread -fno-omit-frame-pointer
OPT      := $(OPT_$(MODE))
# bonsaictl and the unit tests' own code in the ASan+UBSan build: -O0, which compiles
# 2.5x faster than -O1 with both sanitizers and checks as much (the library, preloaded
# into timed programs, stays at -O1).
OPT_CTL_asan := -O0 -g1 -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
OPT_CTL  := $(or $(OPT_CTL_$(MODE)),$(OPT))
WERROR   ?= -Werror
# The preloaded library: no exceptions, no RTTI, static TLS, only interposed symbols exported.
LIB_CXXFLAGS := $(CXXSTD) $(OPT) $(WARN) $(WERROR) -fPIC -fvisibility=hidden -fno-exceptions -fno-rtti \
                -ftls-model=initial-exec -fno-plt -Ilibbonsai $(DEPFLAGS)
CTL_CXXFLAGS := $(CXXSTD) $(OPT_CTL) $(WARN) $(WERROR) -Ibonsaictl -Ilibbonsai $(DEPFLAGS)
# Catch2 v2 trips g++ 12's maybe-uninitialized inside std::regex under -O1 -fsanitize.
TEST_CXXFLAGS := $(CXXSTD) $(OPT_CTL) $(WARN) $(WERROR) -Wno-maybe-uninitialized -Ibonsaictl -Ilibbonsai -Itests $(DEPFLAGS)
