# bonsai: LD_PRELOAD I/O rate limiter. `make` builds build/libbonsai.so (glibc 2.17 on),
# build/musl/libbonsai.so (musl) laid out for LD_PRELOAD='build/$LIB/libbonsai.so'
# (docs/reference/libc.md), and build/bonsaictl.
# Targets: deps all test test-asan test-tsan bench bench-helpers bench-publish demo install uninstall deb clean. V=1 shows commands.
# bench: results, plots and report in build/bench/ (BENCH=full: the long sweep); bench-publish:
# copies the last run into bench/results/ and regenerates docs/benchmarks.md (tracked files).
include mk/flags.mk

PREFIX  ?= /usr/local
DESTDIR ?=
# The version, from one place: the file VERSION (bonsaictl --version; `make deb` checks
# that packaging/debian/changelog's top entry says the same).
VERSION := $(shell cat VERSION)
# B: build root (helpers and CI may use a private one: make B=/tmp/b).
B       ?= build
OUT     := $(B)$(if $(filter release,$(MODE)),,/$(MODE))
OBJ     := $(B)/obj/$(MODE)

ifeq ($(V),1)
Q :=
else
Q := @
endif
say = $(if $(filter 1,$(V)),,@printf '  %-7s %s\n' $(1) $(2);)

# ---- sources ----
# Modules (layers, lowest first: sys abi bucket log shm runtime compress interpose; an include
# may only go down: `make test-layers`, tests/tools/check_layers.sh).
ABI_SRC     := $(wildcard libbonsai/abi/*.cc)
LIB_SRC     := $(wildcard libbonsai/sys/*.cc) $(ABI_SRC) $(wildcard libbonsai/bucket/*.cc libbonsai/shm/*.cc libbonsai/compress/*.cc \
               libbonsai/runtime/*.cc libbonsai/log/*.cc libbonsai/interpose/*.cc \
               libbonsai/interpose/compressed/*.cc)
# bonsaictl's rooms, lowest first (each includes only those below it, checked the same
# way): base segment config stat fleet protect serve supervisor launch cmd, then main.cc.
CTL_SRC     := $(filter-out bonsaictl/sv_main.cc bonsaictl/sv_fmt.cc,$(wildcard bonsaictl/*.cc bonsaictl/*/*.cc))
UNIT_SRC    := $(wildcard tests/unit/*.cc)
PRELOAD_SRC := $(wildcard tests/preload/*.c)

LIB_OBJ   := $(LIB_SRC:%.cc=$(OBJ)/%.o)
# Modules the unit tests and bonsaictl link directly (they define no interposed symbol).
CORE_OBJ  := $(filter $(OBJ)/libbonsai/sys/% $(OBJ)/libbonsai/abi/% $(OBJ)/libbonsai/bucket/% $(OBJ)/libbonsai/shm/%,$(LIB_OBJ))
# Library modules only the unit tests link (compression, the runtime limiter, the wrapper
# shapes' fd classification: nothing that defines a glibc name).
UNIT_LIB_OBJ := $(filter $(OBJ)/libbonsai/compress/% $(OBJ)/libbonsai/log/% $(OBJ)/libbonsai/runtime/% \
                  $(OBJ)/libbonsai/interpose/shape.o,$(LIB_OBJ))
CTL_OBJ   := $(CTL_SRC:%.cc=$(OBJ)/%.o)
CTL_LIB_OBJ := $(filter-out $(OBJ)/bonsaictl/main.o,$(CTL_OBJ))
UNIT_OBJ  := $(UNIT_SRC:%.cc=$(OBJ)/%.o)

UNIT_LDLIBS := -lyaml-cpp -lfmt -lzstd -llz4 -lpthread -lrt -lseccomp -lmicrohttpd -lgnutls -lcrypt -lhiredis
# Every process of a service pays at exec for each library the preloaded one needs (map,
# relocate, fault in: issue #34), so libbonsai.so needs libc only (`make test-symbols`
# checks): compression's libzstd/liblz4 are linked in (Debian's static archives, PIC; the
# static-context API, docs/reference/compression.md) and their symbols kept hidden; libseccomp
# (LGPL) is opened with dlopen by the io_uring guard when BONSAI_IO_URING=deny asks for
# it (libbonsai/runtime/uring_guard.cc); libstdc++ is not linked at all
# (interpose/cxx_runtime.cc); libm goes with -fno-math-errno (sqrt inline: math sets no
# errno in the host's process either) and --as-needed. -Bsymbolic-functions: the
# library's calls to its own exported names (its wrappers) bind at link time, 19 fewer
# symbol lookups at every exec.
# Nothing newer than GLIBC_2.17 (issue #48, docs/reference/libc.md; `make test-symbols` checks): a
# libc function added later, or kept in libdl/libpthread before glibc 2.34, is looked up
# at run time (libbonsai/sys/late_bound.h), so -ldl -lpthread -lrt add no NEEDED entry.
# -fini: no DT_FINI. The default, crti.o's _fini, does nothing, yet the loader calls it
# at every exit from the end of the 1 MiB of code (after zstd): one more page fault.
# The destructors (.fini_array) are untouched.
# -z noseparate-code: headers, code and read-only data in one mapping, as binutils laid
# out every library before 2.31. The default puts them in three (read, read+exec,
# read): the loader then makes two more mmap calls at every exec and the first code
# page faults apart from the headers' page, ~25 us per start of /bin/true on this kind
# of VM (0.035x, docs/notes/bench-startup.md "Start-up, third pass"). The cost: the library's
# 16 KiB of headers and 140 KiB of constants are executable too.
LIB_LDLIBS  := -Wl,--as-needed -ldl -lpthread -lrt -Wl,-fini=bonsai_no_dt_fini -Wl,-z,noseparate-code
LIB_LDLIBS  += -Wl,--exclude-libs,ALL -Wl,-Bstatic -lzstd -llz4 -Wl,-Bdynamic
LIB_CXXFLAGS += -fno-math-errno
LIBBONSAI := $(OUT)/libbonsai.so
BONSAICTL := $(OUT)/bonsaictl
CDI_CTL   := $(OUT)/cdi/bonsaictl
OCI_RUNTIME := $(OUT)/bonsai-oci-runtime
UNIT_BIN  := $(OUT)/unit_tests
PRELOAD_BIN := $(PRELOAD_SRC:tests/preload/%.c=$(OUT)/preload/%)

.PHONY: all lib ctl deps test test-layers test-maps test-symbols test-options test-cli test-docs test-unit test-integration test-asan test-tsan bench bench-helpers bench-publish demo install clean
all: lib ctl $(if $(filter release,$(MODE)),lib-musl libc-layout)
lib: $(LIBBONSAI)
ctl: $(BONSAICTL) $(CDI_CTL) $(OCI_RUNTIME)

# Code a service member runs at every start (map and check the segment, claim a slot)
# goes beside the library's own start-up code (sys/startup.h): on this kind of VM each
# page of code a start touches first is a fault of ~10-25 us, against ~1.8 ms for a
# whole start of /bin/true. Whole files, as their every function runs at attach or at
# exit, or seldom after (bench/scenarios/startup.sh, t_startup_pages).
ATTACH_SRC := shm/shm_attach shm/shm_check shm/shm_name shm/shm_slots shm/shm_proc shm/shm_fd shm/shm_guard \
              shm/seqlock runtime/fleet_lapse runtime/limiter_install
to_startup = objcopy --rename-section .text=.text.startup $@
ATTACH_OBJ := $(ATTACH_SRC:%=$(OBJ)/libbonsai/%.o)
# The same for data: the files whose zero-initialised globals a start writes (the
# service's segment name and descriptor, the prefix, then the environment kept for exec,
# whose store is large but used from its start) are linked first, so their .bss shares the
# page after .data with crtbegin's flag that every exit writes: no page of their own.
STARTUP_BSS_SRC := shm/shm_fd shm/shm_attach runtime/limiter_setup runtime/exec_env
startup_first = $(foreach s,$(STARTUP_BSS_SRC),$(filter $(1)/libbonsai/$(s).o,$(2))) $(filter-out $(STARTUP_BSS_SRC:%=$(1)/libbonsai/%.o),$(2))

$(OBJ)/libbonsai/%.o: libbonsai/%.cc
	@mkdir -p $(@D)
	$(call say,CXX,$<)$(CXX) $(LIB_CXXFLAGS) -c $< -o $@$(if $(filter $@,$(ATTACH_OBJ)), && $(to_startup))

$(LIBBONSAI): $(LIB_OBJ) libbonsai/bonsai.map
	@mkdir -p $(@D)
	$(call say,LINK,$@)$(CXX) $(OPT) -shared -o $@ $(call startup_first,$(OBJ),$(LIB_OBJ)) -Wl,--version-script=libbonsai/bonsai.map -Wl,--no-undefined \
	  -Wl,-Bsymbolic-functions -Wl,-z,now -Wl,-z,relro -static-libstdc++ -static-libgcc $(LIB_LDLIBS)

# ---- the musl build (issue #48, docs/reference/libc.md) ----
# The same library for programs linked to musl (Alpine and other musl images), built
# by `make` beside the glibc one: $(B)/musl/libbonsai.so. musl-gcc is C only, so g++
# compiles the sources against musl's headers (musl-dev, from musl-tools: `make deps`)
# and the header-only parts of libstdc++ (the library links no C++ runtime,
# interpose/cxx_runtime.cc); what libstdc++'s glibc configuration names and musl lacks
# is declared in sys/musl_prelude.h, included first. Kernel, zstd, lz4 and seccomp
# headers come from a folder of links ($(MUSL_OBJ)/include): /usr/include itself would
# hand glibc's headers to whatever musl lacks. Linked with musl's crt files and libc.so
# (NEEDED libc.so: musl's loader answers that name itself), Debian's static libzstd/
# liblz4 (plain C imports: memcpy, malloc, qsort) and libgcc. Release flags only.
MUSL_ARCH   := x86_64
MUSL_INC    ?= /usr/include/$(MUSL_ARCH)-linux-musl
MUSL_LIBDIR ?= /usr/lib/$(MUSL_ARCH)-linux-musl
MUSL_OUT    := $(B)/musl
MUSL_OBJ    := $(B)/obj/musl
LIBBONSAI_MUSL := $(MUSL_OUT)/libbonsai.so
MUSL_LIB_OBJ := $(LIB_SRC:%.cc=$(MUSL_OBJ)/%.o)
# Evaluated once, when first used: the compiler's C++ header folders and its own.
MUSL_CXX_INC = $(eval MUSL_CXX_INC := $$(shell echo | $(CXX) -x c++ -E -Wp,-v - 2>&1 | grep -E '^ /.*/c\+\+/'))$(MUSL_CXX_INC)
GCC_INC      = $(eval GCC_INC := $$(shell $(CXX) -print-file-name=include))$(GCC_INC)
HOST_MULTIARCH = $(eval HOST_MULTIARCH := $$(shell $(CC) -print-multiarch))$(HOST_MULTIARCH)
MUSL_CXXFLAGS = $(CXXSTD) $(OPT_release) $(WARN) $(WERROR) -fPIC -fvisibility=hidden -fno-exceptions -fno-rtti \
                -ftls-model=initial-exec -fno-plt -fno-math-errno $(DEPFLAGS) -nostdinc \
                $(addprefix -isystem ,$(MUSL_CXX_INC)) -isystem $(MUSL_OBJ)/include -isystem $(MUSL_INC) \
                -isystem $(GCC_INC) -include libbonsai/sys/musl_prelude.h -Ilibbonsai
MUSL_LDFLAGS = -shared -nostdlib -Wl,--version-script=libbonsai/bonsai.map -Wl,--no-undefined \
               -Wl,-Bsymbolic-functions -Wl,-z,now -Wl,-z,relro -Wl,-fini=bonsai_no_dt_fini -Wl,-z,noseparate-code
MUSL_HEADER_LINKS := linux asm-generic zstd.h zstd_errors.h lz4.h seccomp.h seccomp-syscalls.h

.PHONY: lib-musl
lib-musl: $(LIBBONSAI_MUSL)

$(MUSL_OBJ)/include/.stamp:
	@[ -f $(MUSL_INC)/stdio.h ] || { echo "no musl headers in $(MUSL_INC): make deps (musl-tools)" >&2; exit 1; }
	@mkdir -p $(@D)
	$(Q)for h in $(MUSL_HEADER_LINKS); do ln -sfn /usr/include/$$h $(@D)/$$h; done
	$(Q)ln -sfn /usr/include/$(HOST_MULTIARCH)/asm $(@D)/asm
	@touch $@

$(MUSL_OBJ)/libbonsai/%.o: libbonsai/%.cc | $(MUSL_OBJ)/include/.stamp
	@mkdir -p $(@D)
	$(call say,CXX,$< [musl])$(CXX) $(MUSL_CXXFLAGS) -c $< -o $@$(if $(filter $@,$(ATTACH_SRC:%=$(MUSL_OBJ)/libbonsai/%.o)), && $(to_startup))
$(MUSL_OBJ)/libbonsai/shm/shm_slots.o: MUSL_CXXFLAGS += -DBONSAI_VERSION_CODE=$(VERSION_CODE)
$(MUSL_OBJ)/libbonsai/shm/shm_slots.o: VERSION

$(LIBBONSAI_MUSL): $(MUSL_LIB_OBJ) libbonsai/bonsai.map
	@mkdir -p $(@D)
	$(call say,LINK,$@)$(CXX) $(OPT_release) $(MUSL_LDFLAGS) -o $@ $(MUSL_LIBDIR)/crti.o \
	  $$($(CXX) -print-file-name=crtbeginS.o) $(call startup_first,$(MUSL_OBJ),$(MUSL_LIB_OBJ)) -Wl,--exclude-libs,ALL \
	  $$($(CXX) -print-file-name=libzstd.a) $$($(CXX) -print-file-name=liblz4.a) -L$(MUSL_LIBDIR) -lc \
	  $$($(CXX) -print-libgcc-file-name) $$($(CXX) -print-file-name=crtendS.o) $(MUSL_LIBDIR)/crtn.o

# ---- one injection for both libcs (issue #48, docs/reference/libc.md) ----
# LD_PRELOAD=DIR/$LIB/libbonsai.so, `$LIB` as written. glibc's loader expands it to the
# name of its own library folder -- lib/x86_64-linux-gnu (Debian, Ubuntu), lib64
# (Fedora, RHEL, SUSE), lib (Arch) -- and finds the glibc build there; musl's loader
# expands nothing and finds the musl build in DIR/$LIB, a folder literally named so.
# The loader of every program chooses, at every exec, whatever executed it: a glibc
# shell running a musl program and the other way round, in a container or not.
# `bonsaictl run` names the library that way when the folder that holds it is laid out
# so (bonsaictl/launch/run_env.h preload_entry): the build tree, with links.
.PHONY: libc-layout
libc-layout: $(OUT)/lib64/libbonsai.so
$(OUT)/lib64/libbonsai.so: | $(LIBBONSAI) $(LIBBONSAI_MUSL)
	@mkdir -p '$(OUT)/$$LIB' $(OUT)/lib/$(MUSL_ARCH)-linux-gnu $(OUT)/lib64
	$(Q)ln -sfn ../musl/libbonsai.so '$(OUT)/$$LIB/libbonsai.so'
	$(Q)ln -sfn ../../libbonsai.so $(OUT)/lib/$(MUSL_ARCH)-linux-gnu/libbonsai.so
	$(Q)ln -sfn ../libbonsai.so $(OUT)/lib/libbonsai.so
	$(Q)ln -sfn ../libbonsai.so $@

$(OBJ)/bonsaictl/%.o: bonsaictl/%.cc
	@mkdir -p $(@D)
	$(call say,CXX,$<)$(CXX) $(CTL_CXXFLAGS) -c $< -o $@

# bonsaictl --version: the VERSION file.
$(OBJ)/bonsaictl/cmd/commands.o: CTL_CXXFLAGS += -DBONSAI_VERSION='"$(VERSION)"'
$(OBJ)/bonsaictl/cmd/commands.o: VERSION
# Each slot records the version of whoever claimed it (stat shows it): 0.2.0 -> 0x000200.
VERSION_CODE := $(shell awk -F. '{ printf "%d", $$1 * 65536 + $$2 * 256 + $$3 }' VERSION)
$(OBJ)/libbonsai/shm/shm_slots.o: LIB_CXXFLAGS += -DBONSAI_VERSION_CODE=$(VERSION_CODE)
$(OBJ)/libbonsai/shm/shm_slots.o: VERSION

# bonsaictl checks compression settings with the library's own grammar; its supervisor
# (run --supervise) uses libseccomp, its exporter (serve) libmicrohttpd, GnuTLS (client
# certificates) and libcrypt (bcrypt of basic_auth_users).
CTL_LDLIBS := -lyaml-cpp -lfmt -lrt -lseccomp -lmicrohttpd -lgnutls -lcrypt -lhiredis
$(BONSAICTL): $(CTL_OBJ) $(CORE_OBJ) $(OBJ)/libbonsai/compress/grammar.o
	@mkdir -p $(@D)
	$(call say,LINK,$@)$(CXX) $(OPT) -o $@ $^ $(CTL_LDLIBS)
# The supervisor for containers (docs/reference/containers.md): one static program that runs
# `sv-exec` and nothing else (bonsaictl/sv_main.cc), so that a device mounts it alone and
# no host library: it runs in any image, whatever its libc, or none. bonsaictl's objects
# archived, so that the link takes only those sv-exec reaches; Debian's libseccomp.a and
# libyaml-cpp.a; fmt's compiled part from its headers (bonsaictl/sv_fmt.cc: Debian has no
# libfmt.a).
$(OBJ)/sv/libctl.a: $(CTL_LIB_OBJ) $(CORE_OBJ) $(OBJ)/libbonsai/compress/grammar.o
	@mkdir -p $(@D)
	$(call say,AR,$@)rm -f $@ && ar rcs $@ $^
$(CDI_CTL): $(OBJ)/bonsaictl/sv_main.o $(OBJ)/bonsaictl/sv_fmt.o $(OBJ)/sv/libctl.a
	@mkdir -p $(@D)
	$(call say,LINK,$@)$(CXX) $(OPT) -static -o $@ $^ -lyaml-cpp -lseccomp -lrt -lpthread

# The OCI runtime in front of runc (docs/reference/containers.md): bonsaictl under another name.
$(OCI_RUNTIME): $(BONSAICTL)
	$(call say,LN,$@)ln -f $< $@

# ---- tests ----
$(OBJ)/tests/%.o: tests/%.cc
	@mkdir -p $(@D)
	$(call say,CXX,$<)$(CXX) $(TEST_CXXFLAGS) -c $< -o $@

$(UNIT_BIN): $(UNIT_OBJ) $(CORE_OBJ) $(UNIT_LIB_OBJ) $(CTL_LIB_OBJ)
	@mkdir -p $(@D)
	$(call say,LINK,$@)$(CXX) $(OPT) -o $@ $^ $(UNIT_LDLIBS)

# A program may add flags with a line `// build-flags: ...` (fortify, LFS, -static,
# -shared); shared bodies live in tests/preload/*.h.
$(OUT)/preload/%: tests/preload/%.c $(wildcard tests/preload/*.h)
	@mkdir -p $(@D)
	$(call say,CC,$<)$(CC) -std=gnu11 -O2 -g -Wall -Wextra $(WERROR) \
	  $(shell sed -n 's|^// build-flags: ||p' $<) -o $@ $< -lpthread

# Programs of another libc (tests/preload/musl/, issue #48): built by musl-gcc, run by
# the t_libc_* tests with the musl build of the library.
PRELOAD_MUSL_SRC := $(wildcard tests/preload/musl/*.c)
PRELOAD_MUSL_BIN := $(PRELOAD_MUSL_SRC:tests/preload/musl/%.c=$(B)/preload/musl/%)
MUSL_GCC ?= musl-gcc
$(B)/preload/musl/%: tests/preload/musl/%.c
	@mkdir -p $(@D)
	$(call say,MUSLCC,$<)$(MUSL_GCC) -std=gnu11 -O2 -g -Wall -Wextra $(WERROR) -o $@ $<

# Each case's time goes to $(OUT)/unit-durations.txt and the ten slowest are shown: the
# sanitized runs are the longest CPU-bound suites of `make test` (test_scale.h).
test-unit: $(UNIT_BIN)
	$(Q)$(UNIT_BIN) --durations yes >$(OUT)/unit.log 2>&1; rc=$$?; \
	  grep -E '^[0-9]+\.[0-9]+ s: ' $(OUT)/unit.log | sort -rn >$(OUT)/unit-durations.txt; \
	  grep -vE '^[0-9]+\.[0-9]+ s: ' $(OUT)/unit.log; \
	  echo "slowest cases ($(OUT)/unit-durations.txt):"; head -n 10 $(OUT)/unit-durations.txt | sed 's/^/  /'; exit $$rc

test-integration: $(LIBBONSAI) $(BONSAICTL) $(PRELOAD_BIN) $(if $(filter release,$(MODE)),$(LIBBONSAI_MUSL) $(PRELOAD_MUSL_BIN))
	$(Q)BONSAI_BUILD=$(OUT) bash tests/integration/lib/make_roots.sh
	BONSAI_BUILD=$(OUT) bash tests/integration/run.sh

# Includes go down the module order only, never outside the repository, and form no
# cycle between units (a header and its .cc) in libbonsai/ or bonsaictl/.
test-layers:
	$(Q)bash tests/tools/check_layers.sh

# Every source file is named in its tree's README map, and no map names a file that is gone.
test-maps:
	$(Q)bash tests/tools/check_maps.sh

# interpose/real.h, bonsai.map and the built library's exports name the same symbols;
# the glibc build needs nothing newer than GLIBC_2.17, the musl one no symbol version.
test-symbols: $(LIBBONSAI) $(if $(filter release,$(MODE)),$(LIBBONSAI_MUSL))
	$(Q)bash tests/tools/check_symbols.sh $(LIBBONSAI)
	$(Q)$(if $(filter release,$(MODE)),bash tests/tools/check_symbols.sh $(LIBBONSAI_MUSL))

# runtime/options.h's table and docs/reference/limits.md's environment table agree.
test-options:
	$(Q)bash tests/tools/check_options_doc.sh

# Each command's options table (bonsaictl help --options) and the man page, the bash
# completion, the help and every `bonsaictl CMD --option` of the docs agree.
test-cli: $(BONSAICTL)
	$(Q)bash tests/tools/check_cli_doc.sh $(BONSAICTL)

# Every configuration in the docs passes `bonsaictl check`; every example marked
# runnable (```sh doctest, CONTRIBUTING.md) runs.
test-docs: $(LIBBONSAI) $(BONSAICTL)
	$(Q)bash tests/tools/doc_test.sh $(OUT)

# Every suite (tests/suite.sh): the integration tests first, several at a time, while
# the unit, fuzz and sanitizer builds compile at idle CPU priority; then the suites that
# keep the CPU busy, one at a time. ~15 min on 2 cores; the closing lines give each
# suite's time. One suite alone: test-unit, test-integration, test-upgrade, test-fuzz, test-asan, test-tsan.
test: deps-check
	$(Q)$(MAKE) --no-print-directory all preload
	$(Q)$(MAKE) --no-print-directory test-layers test-maps test-symbols test-options test-cli test-docs
	$(Q)MAKE="$(MAKE)" B=$(B) OUT=$(OUT) bash tests/suite.sh

# The previous release's library (tests/golden/build_prev.sh: from the tag v0.2.0 of this
# clone, cached in $(B)/prev) and the tests that swap it for this build under a running
# service (tests/upgrade/). No git history (a tarball): nothing to build, the test says so.
# prev-deb: the previous release's .deb (tests/golden/build_prev_deb.sh, cached in
# $(B)/prev-deb) that t_upgrade_deb.sh upgrades to this build's under a running service.
.PHONY: prev-lib prev-deb test-upgrade
prev-lib:
	$(Q)MAKE="$(MAKE)" CXX="$(CXX)" CC="$(CC)" bash tests/golden/build_prev.sh $(B)/prev || { rc=$$?; [ $$rc = 3 ] || [ $$rc = 4 ]; }
prev-deb:
	$(Q)CXX="$(CXX)" CC="$(CC)" bash tests/golden/build_prev_deb.sh $(B)/prev-deb || { rc=$$?; [ $$rc -ge 3 ]; }
test-upgrade: $(LIBBONSAI) $(BONSAICTL) $(PRELOAD_BIN)
	BONSAI_BUILD=$(OUT) BONSAI_PREV_LIB=$(abspath $(B))/prev/libbonsai.so BONSAI_PREV_DEB=$(abspath $(B))/prev-deb/bonsai.deb \
	  bash tests/upgrade/run.sh

# What a suite needs built (tests/suite.sh builds them in the background).
.PHONY: preload unit-tests sanitizer-build
preload: $(PRELOAD_BIN) $(if $(filter release,$(MODE)),$(PRELOAD_MUSL_BIN))
unit-tests: $(UNIT_BIN)
sanitizer-build: $(LIBBONSAI) $(PRELOAD_BIN) $(UNIT_BIN)

# Sanitizer builds: unit tests, plus the preload programs with the sanitized library
# (the sanitizer runtime is preloaded first, as an uninstrumented host requires).
test-asan:
	$(Q)$(MAKE) --no-print-directory MODE=asan test-unit test-integration-asan
test-tsan:
	$(Q)$(MAKE) --no-print-directory MODE=tsan test-unit test-integration-tsan
test-integration-asan: $(LIBBONSAI) $(PRELOAD_BIN)
	BONSAI_BUILD=$(OUT) BONSAI_SANITIZER=asan bash tests/integration/run_sanitized.sh
test-integration-tsan: $(LIBBONSAI) $(PRELOAD_BIN)
	BONSAI_BUILD=$(OUT) BONSAI_SANITIZER=tsan bash tests/integration/run_sanitized.sh

# ---- fuzzing (clang-14 libFuzzer): the compressed-stream decoder ----
FUZZ_CXX     ?= clang++-14
FUZZ_SECONDS ?= 30
FUZZ_BIN     := $(B)/fuzz/frame_decoder_fuzz
FUZZ_SRC     := tests/fuzz/frame_decoder_fuzz.cc libbonsai/compress/rx_stream.cc libbonsai/compress/codec_encode.cc \
                libbonsai/compress/codec_decode.cc libbonsai/compress/codec_params.cc \
                libbonsai/log/blog.cc
.PHONY: fuzz test-fuzz
fuzz: $(FUZZ_BIN)
$(FUZZ_BIN): $(FUZZ_SRC) $(wildcard libbonsai/compress/*.h)
	@mkdir -p $(@D)
	$(call say,FUZZ,$@)$(FUZZ_CXX) -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -Ilibbonsai -o $@ $(FUZZ_SRC) -lzstd -llz4
test-fuzz: $(FUZZ_BIN)
	@mkdir -p $(B)/fuzz/corpus
	@$(FUZZ_BIN) -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=1024 -print_final_stats=1 $(B)/fuzz/corpus \
	  >$(B)/fuzz/last.log 2>&1; rc=$$?; tail -n 6 $(B)/fuzz/last.log; exit $$rc

# ---- packages ----
DEB_PACKAGES := g++ make libseccomp-dev libyaml-cpp-dev libfmt-dev catch2 libzstd-dev liblz4-dev \
                fio gnuplot-nox trickle pv zstd curl python3 coreutils procps strace busybox-static file rclone \
                clang-14 libclang-rt-14-dev liburing-dev golang-go \
                libmicrohttpd-dev libgnutls28-dev libcrypt-dev openssl apache2-utils \
                prometheus tmux nlohmann-json3-dev \
                dpkg-dev debhelper lintian scdoc man-db bash-completion nginx-light redis-server redis-sentinel libhiredis-dev nodejs \
                mmdebstrap musl-tools podman runc docker.io
deps:
	@missing=$$(for p in $(DEB_PACKAGES); do dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing:" $$missing; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing >/dev/null; \
	else echo "deps: all Debian packages present"; fi
deps-check: deps

# ---- experiments ----
# make bench writes only under $(OUT)/bench; its wall time counts from make's start.
ifneq ($(filter bench,$(MAKECMDGOALS)),)
BENCH_T0 := $(shell date +%s)
endif
bench: all bench-helpers $(LIMITER_BENCH)
	BENCH_T0=$(BENCH_T0) BONSAI_BUILD=$(OUT) bash bench/run.sh
# The bench's C helpers (bench/helpers/*.c) and, with Go installed, gocopy; the scripts
# build a missing or stale one themselves (lib/common.sh) when run alone, with these flags.
BENCH_BIN := $(OUT)/bench/bin
BENCH_HELPERS := rx_meter tx_threads call_cost spawn_loop cotenant_stream share_tenant
bench-helpers: $(addprefix $(BENCH_BIN)/,$(BENCH_HELPERS)) $(if $(shell command -v go),$(BENCH_BIN)/gocopy)
$(BENCH_BIN)/%: bench/helpers/%.c
	@mkdir -p $(@D)
	$(Q)gcc -std=gnu11 -O2 -Wall -Wextra -U_FORTIFY_SOURCE -o $@ $< -lpthread -lm
# The library's install cost (ctl_churn.sh): the unit tests' benchmark case alone, linked
# with Catch2's main, not the whole unit_tests (~280 s more to compile on a fresh tree).
LIMITER_BENCH := $(BENCH_BIN)/limiter_install_bench
$(LIMITER_BENCH): $(OBJ)/tests/unit/main.o $(OBJ)/tests/unit/runtime_limiter_test.o $(CORE_OBJ) $(UNIT_LIB_OBJ) $(CTL_LIB_OBJ)
	@mkdir -p $(@D)
	$(call say,LINK,$@)$(CXX) $(OPT) -o $@ $^ $(UNIT_LDLIBS)
$(BENCH_BIN)/gocopy: bench/helpers/gocopy.go
	@mkdir -p $(@D)
	$(Q)cd $(@D) && GOCACHE=$(abspath $(OUT))/bench/gocache go build -o gocopy $(abspath $<) || \
	  echo "bench-helpers: cannot build gocopy: supervised.sh will say so, the other steps run"
bench-publish:
	BONSAI_BUILD=$(OUT) bash bench/report/publish.sh
demo: deps all
	BONSAI_BUILD=$(OUT) bash bench/demo.sh

# ---- install, uninstall, Debian package (packaging/README.md) ----
# The same layout as the package: /usr/bin/bonsaictl, the library in a private
# directory that the installed bonsaictl has fixed in it (BONSAI_LIBDIR, given only to
# that build of run_env.cc; the build tree's bonsaictl finds the library next to
# itself), man pages, bash completion, examples, /etc/bonsai/bonsai.yaml.
# `make install PREFIX=/usr DESTDIR=/tmp/root` stages; `make uninstall` with the same
# variables removes what install put there.
MULTIARCH  ?= $(shell dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || $(CC) -print-multiarch)
SYSCONFDIR ?= /etc
BINDIR     := $(PREFIX)/bin
PKGLIBDIR  := $(PREFIX)/lib/$(MULTIARCH)/bonsai
MANDIR     := $(PREFIX)/share/man
DOCDIR     := $(PREFIX)/share/doc/bonsai
COMPDIR    := $(PREFIX)/share/bash-completion/completions
MAN_SRC    := $(wildcard packaging/man/*.scd)
MAN_OUT    := $(MAN_SRC:packaging/man/%.scd=$(B)/man/%)
EXAMPLES   := $(wildcard config/*.yaml)
SYSTEMD_EXAMPLES := $(wildcard packaging/systemd/*)
INSTALLED_CTL := $(OUT)/installed/bonsaictl
.PHONY: man uninstall deb FORCE

man: $(MAN_OUT)
$(B)/man/%: packaging/man/%.scd
	@mkdir -p $(@D)
	$(call say,SCDOC,$@)scdoc < $< > $@.tmp && mv $@.tmp $@

# Rebuilt every time: PREFIX may differ from the last install.
$(OBJ)/bonsaictl/launch/run_env.installed.o: bonsaictl/launch/run_env.cc FORCE
	@mkdir -p $(@D)
	$(call say,CXX,$< [BONSAI_LIBDIR=$(PKGLIBDIR)])$(CXX) $(CTL_CXXFLAGS) -DBONSAI_LIBDIR='"$(PKGLIBDIR)"' \
	  -DBONSAI_BINDIR='"$(BINDIR)"' -c $< -o $@
$(INSTALLED_CTL): $(filter-out $(OBJ)/bonsaictl/launch/run_env.o,$(CTL_OBJ)) $(OBJ)/bonsaictl/launch/run_env.installed.o \
                  $(CORE_OBJ) $(OBJ)/libbonsai/compress/grammar.o
	@mkdir -p $(@D)
	$(call say,LINK,$@)$(CXX) $(OPT) -Wl,-z,relro -Wl,-z,now -o $@ $^ $(CTL_LDLIBS)
FORCE:

install: all $(INSTALLED_CTL) man
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(PKGLIBDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man5 \
	  $(DESTDIR)$(MANDIR)/man7 $(DESTDIR)$(COMPDIR) $(DESTDIR)$(DOCDIR)/examples/systemd $(DESTDIR)$(SYSCONFDIR)/bonsai
	install -m 0755 $(INSTALLED_CTL) $(DESTDIR)$(BINDIR)/bonsaictl
	@# The OCI runtime in front of runc (docs/reference/containers.md): bonsaictl under that name.
	ln -sfn bonsaictl $(DESTDIR)$(BINDIR)/bonsai-oci-runtime
	install -m 0644 $(LIBBONSAI) $(DESTDIR)$(PKGLIBDIR)/libbonsai.so
	@# Both builds, laid out for the loaders to choose (libc-layout above, docs/reference/libc.md).
	install -d '$(DESTDIR)$(PKGLIBDIR)/$$LIB' $(DESTDIR)$(PKGLIBDIR)/lib/$(MUSL_ARCH)-linux-gnu $(DESTDIR)$(PKGLIBDIR)/lib64
	install -m 0644 $(LIBBONSAI_MUSL) '$(DESTDIR)$(PKGLIBDIR)/$$LIB/libbonsai.so'
	ln -sfn ../../libbonsai.so $(DESTDIR)$(PKGLIBDIR)/lib/$(MUSL_ARCH)-linux-gnu/libbonsai.so
	ln -sfn ../libbonsai.so $(DESTDIR)$(PKGLIBDIR)/lib64/libbonsai.so
	ln -sfn ../libbonsai.so $(DESTDIR)$(PKGLIBDIR)/lib/libbonsai.so
	@# The supervisor for containers (docs/reference/containers.md): `cdi generate` looks beside the library.
	install -d $(DESTDIR)$(PKGLIBDIR)/cdi
	install -m 0755 $(CDI_CTL) $(DESTDIR)$(PKGLIBDIR)/cdi/bonsaictl
	$(foreach m,$(MAN_OUT),install -m 0644 $(m) $(DESTDIR)$(MANDIR)/man$(subst .,,$(suffix $(m)))/$(notdir $(m));)
	install -m 0644 packaging/completion/bonsaictl $(DESTDIR)$(COMPDIR)/bonsaictl
	install -m 0644 $(EXAMPLES) $(DESTDIR)$(DOCDIR)/examples/
	install -m 0644 $(SYSTEMD_EXAMPLES) $(DESTDIR)$(DOCDIR)/examples/systemd/
	@# A configuration file is the operator's: never overwritten.
	@f=$(DESTDIR)$(SYSCONFDIR)/bonsai/bonsai.yaml; if [ -e $$f ]; then echo "keeping $$f"; \
	  else install -m 0644 packaging/bonsai.yaml $$f; fi

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/bonsaictl $(DESTDIR)$(BINDIR)/bonsai-oci-runtime $(DESTDIR)$(PKGLIBDIR)/libbonsai.so $(DESTDIR)$(COMPDIR)/bonsaictl \
	  '$(DESTDIR)$(PKGLIBDIR)/$$LIB/libbonsai.so' $(DESTDIR)$(PKGLIBDIR)/lib/$(MUSL_ARCH)-linux-gnu/libbonsai.so \
	  $(DESTDIR)$(PKGLIBDIR)/lib64/libbonsai.so $(DESTDIR)$(PKGLIBDIR)/lib/libbonsai.so $(DESTDIR)$(PKGLIBDIR)/cdi/bonsaictl \
	  $(foreach m,$(MAN_SRC:packaging/man/%.scd=%),$(DESTDIR)$(MANDIR)/man$(subst .,,$(suffix $(m)))/$(m)) \
	  $(addprefix $(DESTDIR)$(DOCDIR)/examples/,$(notdir $(EXAMPLES))) \
	  $(addprefix $(DESTDIR)$(DOCDIR)/examples/systemd/,$(notdir $(SYSTEMD_EXAMPLES)))
	@# The configuration goes only if it is still the example install put there.
	@f=$(DESTDIR)$(SYSCONFDIR)/bonsai/bonsai.yaml; if [ -e $$f ] && ! cmp -s $$f packaging/bonsai.yaml; then \
	  echo "keeping $$f (changed since install)"; else rm -f $$f; fi
	@for d in '$(DESTDIR)$(PKGLIBDIR)/$$LIB' $(DESTDIR)$(PKGLIBDIR)/cdi $(DESTDIR)$(PKGLIBDIR)/lib/$(MUSL_ARCH)-linux-gnu $(DESTDIR)$(PKGLIBDIR)/lib \
	  $(DESTDIR)$(PKGLIBDIR)/lib64 $(DESTDIR)$(PKGLIBDIR) $(DESTDIR)$(DOCDIR)/examples/systemd $(DESTDIR)$(DOCDIR)/examples \
	  $(DESTDIR)$(DOCDIR) $(DESTDIR)$(SYSCONFDIR)/bonsai; do [ ! -d $$d ] || rmdir $$d 2>/dev/null || true; done

# build/bonsai_<version>_<arch>.deb with dpkg-buildpackage -us -uc -b in a copy of the
# tree (packaging/deb.sh), reusing this build's objects (B); then lintian when present.
deb: all
	$(Q)B_ABS=$(abspath $(B)) VERSION=$(VERSION) MAKE="$(MAKE)" bash packaging/deb.sh

clean:
	rm -rf build

-include $(LIB_OBJ:.o=.d) $(CTL_OBJ:.o=.d) $(OBJ)/bonsaictl/sv_main.d $(OBJ)/bonsaictl/sv_fmt.d $(UNIT_OBJ:.o=.d) $(MUSL_LIB_OBJ:.o=.d)
