// SPDX-License-Identifier: MIT
// sys/next_symbol: the lock-free RTLD_NEXT lookup gives what dlsym gives. From
// this test program the objects "next" are its libraries (libstdc++, libc, ...).
#include <catch2/catch.hpp>
#include <dlfcn.h>
#include <pthread.h>

#include <cerrno>
#include <string>

#include "interpose/real.h"
#include "sys/cancel_cleanup.h"
#include "sys/late_bound.h"
#include "sys/mutex_try.h"
#include "sys/next_symbol.h"

namespace {
// Every glibc function the library resolves, and some that are versioned several times
// (pthread_cond_wait: a default and a compat version), IFUNCs (memcpy, time) and data.
const char* const kNames[] = {
    "read", "write", "pread", "pread64", "pwrite", "pwrite64", "readv", "writev", "preadv", "preadv64",
    "pwritev", "pwritev64", "preadv2", "preadv64v2", "pwritev2", "pwritev64v2", "send", "sendto",
    "sendmsg", "sendmmsg", "recv", "recvfrom", "recvmsg", "recvmmsg", "sendfile", "sendfile64",
    "copy_file_range", "splice", "vmsplice", "tee", "fread", "fwrite", "fread_unlocked", "fwrite_unlocked",
    "fgets_unlocked", "open", "openat", "close", "connect", "accept", "accept4", "fsync", "execve",
    "execvpe", "fexecve", "execveat", "dup2", "close_range", "closefrom", "_exit", "_Exit", "poll",
    "epoll_wait", "epoll_pwait2", "select", "pselect", "posix_spawn", "posix_spawnp", "fork", "vfork",
    "syscall", "aio_read", "aio_write", "lio_listio", "pthread_cond_wait", "pthread_cond_signal",
    "realpath", "fopen", "fclose", "clock_gettime", "gettimeofday", "environ", "stdout",
};
}  // namespace

TEST_CASE("next_symbol: the lookup answers what dlsym(RTLD_NEXT) answers", "[next_symbol]") {
  REQUIRE(bonsai::next_objects_note());
  REQUIRE(bonsai::next_objects_ready());
  int found_here = 0;
  for (const char* name : kNames) {
    INFO(name);
    void* mine = bonsai::next_symbol(name);
    void* theirs = dlsym(RTLD_NEXT, name);
    // nullptr here means "ask dlsym" (an IFUNC, say): never a different answer.
    if (mine) {
      CHECK(mine == theirs);
      ++found_here;
    }
  }
  CHECK(found_here >= 60);  // the plain functions, at least, are found without dlsym
}

TEST_CASE("next_symbol: names nobody defines, and near misses, are not found", "[next_symbol]") {
  REQUIRE(bonsai::next_objects_note());
  for (const char* name : {"bonsai_no_such_symbol", "writ", "writee", "", "read@GLIBC_2.2.5", "READ"}) {
    INFO(name);
    CHECK(bonsai::next_symbol(name) == nullptr);
    CHECK(dlsym(RTLD_NEXT, name) == nullptr);
  }
  // A long name walks every table without reading past anything.
  std::string longname(5000, 'x');
  CHECK(bonsai::next_symbol(longname.c_str()) == nullptr);
}

TEST_CASE("next_symbol: every name resolved where dlsym must not run is found without it", "[next_symbol]") {
  REQUIRE(bonsai::next_objects_note());
  // With the lookup available the constructor resolves none of these up front
  // (interpose/init.cc): a vfork()ed child or a signal handler resolves them itself.
#define EAGER_NAME(name) #name,
  const char* const eager[] = {BONSAI_REAL_EAGER(EAGER_NAME)};
#undef EAGER_NAME
  for (const char* name : eager) {
    INFO(name);
    void* mine = bonsai::next_symbol(name);
    CHECK(mine != nullptr);
    CHECK(mine == dlsym(RTLD_NEXT, name));
  }
}

// The functions the library looks up rather than links (issue #48: the glibc build needs
// nothing newer than GLIBC_2.17): found, and the very ones dlsym finds.
TEST_CASE("libc_symbol: what the library does not link is found at run time", "[next_symbol][libc]") {
  for (const char* name : {"dlsym", "dlopen", "dlerror", "__pthread_register_cancel", "__pthread_unregister_cancel",
                           "__pthread_unwind_next", "pthread_mutex_trylock", "sigaction"}) {
    INFO(name);
    void* mine = bonsai::libc_symbol(name);
    CHECK(mine != nullptr);
    CHECK(mine == dlsym(RTLD_DEFAULT, name));
    CHECK(bonsai::default_symbol(name) == mine);
  }
  // (A variable a program refers to is its own copy, which libc then writes:
  // late_symbol(..., object = true) looks in the program first. Here the "library" is
  // this test program itself, which default_symbol skips, so that is not testable.)
  bonsai::LateSlot flag{0};
  CHECK(bonsai::late_symbol(flag, "__libc_single_threaded", true) != nullptr);
  CHECK(bonsai::libc_symbol("bonsai_no_such_symbol") == nullptr);
  CHECK(bonsai::default_symbol("bonsai_no_such_symbol") == nullptr);
}

TEST_CASE("late_bound: a slot keeps what it found, and that nothing was found", "[next_symbol][libc]") {
  bonsai::LateSlot slot{0};
  CHECK(bonsai::late_symbol(slot, "dlsym") == dlsym(RTLD_DEFAULT, "dlsym"));
  CHECK(slot.load() == reinterpret_cast<uintptr_t>(dlsym(RTLD_DEFAULT, "dlsym")));
  bonsai::LateSlot none{0};
  errno = 1234;
  CHECK(bonsai::late_symbol(none, "bonsai_no_such_symbol") == nullptr);
  CHECK(errno == 1234);
  CHECK(none.load() == 1);  // looked up once: "missing" is kept too
  CHECK(bonsai::late_symbol(none, "bonsai_no_such_symbol") == nullptr);
}

TEST_CASE("cancel_cleanup and mutex_trylock: glibc's hooks are found here", "[next_symbol][libc]") {
  bonsai::CancelHooks h = bonsai::cancel_hooks();
  CHECK(h.reg != nullptr);
  CHECK(h.unreg != nullptr);
  CHECK(h.next != nullptr);
  pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
  CHECK(bonsai::mutex_trylock(&m) == 0);
  CHECK(bonsai::mutex_trylock(&m) == EBUSY);
  pthread_mutex_unlock(&m);
}
