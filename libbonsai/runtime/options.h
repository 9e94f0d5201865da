// SPDX-License-Identifier: MIT
// Every BONSAI_* environment variable the library reads, one row each: name, type,
// default, one line of doc. The modules read their variable through option_env() (never
// by name), the durations below land in Options. docs/reference/limits.md's table "Environment of
// a limited process" lists the same rows (tests/tools/check_options_doc.sh holds the two
// together). Read once, at set-up (constructor), never on the fast path.
#pragma once
#include <cstddef>
#include <cstdint>

#include "sys/env.h"

namespace bonsai {

enum class OptType : uint8_t {
  Text,      // free text, parsed by the module that reads it
  Flag,      // 1 (or true, yes) switches something on
  Choice,    // one of a few words
  Path,      // a file the library writes at exit ("%p": the pid)
  Duration,  // ns, or with a unit: 500us, 2ms, 1s (abi/limit_parse.h duration_parse)
  Number,    // a plain number
};

// X(id, NAME, type, default ("": none), doc). One row per line: the doc check reads them.
#define BONSAI_OPTIONS(X)                                                                                       \
  X(limits, "BONSAI_LIMITS", Text, "", "per-process limits without bonsaictl (the limit language)")             \
  X(service, "BONSAI_SERVICE", Text, "", "attach to the service's shared-memory segment made by bonsaictl")     \
  X(shm_prefix, "BONSAI_SHM_PREFIX", Text, "", "namespace for segment names")                                   \
  X(shm_uid, "BONSAI_SHM_UID", Number, "", "owner of the service's segment (set by bonsaictl run)")             \
  X(shm_fd, "BONSAI_SHM_FD", Number, "", "the segment as an inherited descriptor (set by bonsaictl run)")       \
  X(slot, "BONSAI_SLOT", Text, "", "the slot the process held before its exec (set by the library, checked)")    \
  X(ctl, "BONSAI_CTL", Text, "", "bonsaictl, which supervises the static and Go programs executed (set by run)") \
  X(strict, "BONSAI_STRICT", Text, "", "MARK:SERVICE: the launch's mark for the data calls (set by run --strict)")     \
  X(leave, "BONSAI_LEAVE", Flag, "", "the library does nothing in this process and hands nothing down")         \
  X(io_uring, "BONSAI_IO_URING", Choice, "allow", "deny: io_uring_setup fails with ENOSYS here and in children") \
  X(stats, "BONSAI_STATS", Path, "", "file that gets one JSON line of counters per process at exit")            \
  X(log, "BONSAI_LOG", Choice, "warn", "library messages on stderr: off, error, warn, info, debug")               \
  X(spin_ns, "BONSAI_SPIN_NS", Duration, "1000000", "waits shorter than this busy-wait, longer ones sleep")      \
  X(debt_ns, "BONSAI_DEBT_NS", Duration, "2000000", "room a sleeper leaves for the takes after it (within the depth)")  \
  X(compress_to, "BONSAI_COMPRESS_TO", Text, "", "destinations whose connections are compressed")               \
  X(compress_accept, "BONSAI_COMPRESS_ACCEPT", Flag, "", "decode framed streams on accepted sockets")            \
  X(compress_levels, "BONSAI_COMPRESS_LEVELS", Text, "none,lz4,zstd:1,zstd:3,zstd:5,zstd:6,zstd:9", "compression levels, cheapest first") \
  X(compress_policy, "BONSAI_COMPRESS_POLICY", Choice, "datarate", "how a connection's level is chosen")         \
  X(compress_period_ms, "BONSAI_COMPRESS_PERIOD_MS", Number, "200", "datarate's measuring period (busy time)") \
  X(compress_alpha, "BONSAI_COMPRESS_ALPHA", Number, "0.2", "datarate's tolerance")                             \
  X(compress_mem_mib, "BONSAI_COMPRESS_MEM_MIB", Number, "16384", "compression workspaces in all; past it new connections go plain") \
  X(compress_stats, "BONSAI_COMPRESS_STATS", Path, "", "file that gets one JSON line of compression totals per process at exit")

enum class Opt : uint8_t {
#define BONSAI_X(id, name, type, def, doc) id,
  BONSAI_OPTIONS(BONSAI_X)
#undef BONSAI_X
};

struct OptionRow {
  const char* name;
  OptType type;
  const char* def;
  const char* doc;
};

inline constexpr OptionRow kOptions[] = {
#define BONSAI_X(id, name, type, def, doc) {name, OptType::type, def, doc},
    BONSAI_OPTIONS(BONSAI_X)
#undef BONSAI_X
};

inline constexpr const OptionRow& option_row(Opt o) noexcept { return kOptions[static_cast<size_t>(o)]; }

// The value of option `o` in this process's environment at set-up, or nullptr. The first
// call reads the environment once (sys/env.h env_each) for every option at a time,
// comparing the names from a copy in start-up data: no getenv, no .rodata page (every
// name begins with BONSAI_, checked below). Later changes to the environment are not seen,
// and the values point into it as it was: read them at set-up and copy what is kept (a
// program may overwrite its environment's strings, as setproctitle does).
const char* option_env(Opt o) noexcept;

// Does environment entry `e` ("NAME=value") set an option? Then `o` and `value` say which
// and to what. Reads no .rodata (as option_env).
bool option_entry(const char* e, Opt& o, const char*& value) noexcept;
consteval bool option_names_prefixed() {
  for (const OptionRow& r : kOptions)
    for (int i = 0; i < 7; ++i)
      if (r.name[i] != "BONSAI_"[i]) return false;
  return true;
}
static_assert(option_names_prefixed(), "option_env compares what follows BONSAI_");

// A row's default as a number (Duration rows).
constexpr uint64_t option_default_u64(Opt o) noexcept {
  uint64_t v = 0;
  for (const char* p = option_row(o).def; *p >= '0' && *p <= '9'; ++p) v = v * 10 + static_cast<uint64_t>(*p - '0');
  return v;
}

// The Duration rows, in ns, as the limiter uses them.
struct Options {
  uint64_t spin_ns = option_default_u64(Opt::spin_ns);
  uint64_t debt_ns = option_default_u64(Opt::debt_ns);
};

// Reads the Duration rows (numbers in ns, or with a unit: 500us, 2ms, 1s; at most a
// minute). Bad values are reported once and keep the default.
void options_load(Options& opts) noexcept;

}  // namespace bonsai
