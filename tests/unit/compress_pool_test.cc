// SPDX-License-Identifier: MIT
// The compression hooks' per-descriptor table and connection pool (issue 8 items 1
// and 2): no fixed maximum of descriptors or connections, identity checks that
// catch a number reused by another object, and retirement that waits for a lock
// holder instead of blocking on it.
#include <catch2/catch.hpp>
#include <fcntl.h>
#include <set>
#include <sys/socket.h>
#include <unistd.h>
#include <vector>

#include "compress/conn_pool.h"
#include "compress/fd_table.h"

using namespace bonsai::compress;

TEST_CASE("fd table: a distinct slot for every number, slabs made on demand", "[compress]") {
  CHECK(fd_slot(-1) == nullptr);
  CHECK(fd_slot_make(-5) == nullptr);
  std::vector<int> fds = {0, 1, 4095, 4096, 4097, 12287, 12288, 65535, 65536, 65537, 1000000};
  std::set<FdSlot*> seen;
  for (int fd : fds) {
    FdSlot* s = fd_slot_make(fd);
    REQUIRE(s != nullptr);
    CHECK(fd_slot(fd) == s);
    CHECK(seen.insert(s).second);
    CHECK(fd_state(fd) == kFdUnknown);
  }
  // Neighbours inside a slab are adjacent slots.
  CHECK(fd_slot(65536) == fd_slot(65535) + 1);
  CHECK(fd_slot(1) == fd_slot(0) + 1);
  fd_slot(65536)->st.store(kFdPlain);
  CHECK(fd_state(65536) == kFdPlain);
  CHECK(fd_state(65535) == kFdUnknown);
  CHECK(fd_state(65537) == kFdUnknown);
  fd_slot(65536)->st.store(kFdUnknown);
}

TEST_CASE("fd table: reset marks carry the inode and are never a Conn*", "[compress]") {
  uintptr_t m = fd_reset_mark(123456);
  CHECK(fd_is_reset(m));
  CHECK(fd_reset_ino(m) == 123456);
  CHECK(m > kFdPlain);
  CHECK_FALSE(fd_is_reset(kFdPlain));
  CHECK_FALSE(fd_is_reset(kFdUnknown));
}

TEST_CASE("conn pool: more records than any fixed table, recycled after retirement", "[compress]") {
  int sv[2];
  REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
  std::vector<Conn*> got;
  std::set<Conn*> distinct;
  for (int i = 0; i < 3000; ++i) {
    Conn* c = conn_acquire(sv[0]);
    REQUIRE(c != nullptr);
    got.push_back(c);
    distinct.insert(c);
  }
  CHECK(distinct.size() == 3000);
  size_t live = 0;
  pool_each([&](Conn*) { ++live; });
  CHECK(live >= 3000);
  for (Conn* c : got) conn_retire(c);
  for (Conn* c : got) CHECK(c->fd.load() == -1);
  // Reuse: the next 3000 come from the same records.
  std::set<Conn*> again;
  for (int i = 0; i < 3000; ++i) again.insert(conn_acquire(sv[0]));
  size_t reused = 0;
  for (Conn* c : again) reused += distinct.count(c);
  CHECK(reused == 3000);
  for (Conn* c : again) conn_retire(c);
  close(sv[0]);
  close(sv[1]);
}

TEST_CASE("conn pool: identity catches a number that holds another object", "[compress]") {
  int sv[2];
  REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
  Conn* c = conn_acquire(sv[0]);
  REQUIRE(c != nullptr);
  CHECK(conn_verify(c, sv[0]));
  CHECK_FALSE(conn_verify(c, sv[1]));  // another socket
  int num = sv[0];
  close(num);
  CHECK_FALSE(conn_verify(c, num));  // closed
  int f = open("/dev/null", O_RDWR);
  REQUIRE(f >= 0);
  if (f != num) {
    REQUIRE(dup2(f, num) == num);
    close(f);
  }
  CHECK_FALSE(conn_verify(c, num));  // a file now
  CHECK(conn_acquire(num) == nullptr);  // not a socket: no record
  conn_retire(c);
  close(num);
  close(sv[1]);
}

TEST_CASE("conn pool: a retired record in use is released by its lock holder", "[compress]") {
  int sv[2];
  REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
  Conn* c = conn_acquire(sv[0]);
  REQUIRE(c != nullptr);
  pthread_mutex_lock(&c->rx_mu);  // a reader inside a call
  conn_retire(c);                 // must not block
  CHECK(c->fd.load() == sv[0]);   // not released under the reader
  pthread_mutex_unlock(&c->rx_mu);
  conn_unlocked(c);
  CHECK(c->fd.load() == -1);
  CHECK_FALSE(c->retired.load());
  close(sv[0]);
  close(sv[1]);
}

namespace {
// A socketpair and the records a test passed over (retired, and the pair closed, at the
// end), and the default levels (a stream keeps a pointer to them).
struct PoolRig {
  PoolRig() { REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0); }
  ~PoolRig() {
    for (Conn* k : held) conn_retire(k);
    close(sv[0]);
    close(sv[1]);
  }
  // A record for sv[0] that has none of what `has` looks for (records keep their
  // workspaces for reuse); the records passed over are held.
  template <typename Has>
  Conn* record_without(Has has) {
    for (int i = 0; i < 10000; ++i) {
      Conn* k = conn_acquire(sv[0]);
      REQUIRE(k != nullptr);
      if (!has(k)) return k;
      held.push_back(k);
    }
    FAIL("no record without it in 10000");
    return nullptr;
  }
  PolicyConfig policy(const char* name) {
    PolicyConfig p{};
    REQUIRE(policy_parse(name, levels, p) == nullptr);
    return p;
  }
  static LevelList& default_levels() {
    static LevelList l = levels_default();
    return l;
  }
  int sv[2] = {-1, -1};
  std::vector<Conn*> held;
  LevelList& levels = default_levels();  // outlives the records that point to it
};
}  // namespace

TEST_CASE("conn pool: past BONSAI_COMPRESS_MEM_MIB's cap a workspace is refused", "[compress]") {
  PoolRig rig;
  PolicyConfig p = rig.policy("fixed:zstd:3");
  LevelList& levels = rig.levels;
  // A record that has no sending workspace yet (records keep theirs for reuse).
  Conn* c = rig.record_without([](const Conn* k) { return k->tx_mem != nullptr; });
  uint64_t before = pool_mem_mapped();
  pool_set_mem_cap(before + 4096);
  CHECK_FALSE(conn_tx_enable(c, &levels, p));
  CHECK(pool_mem_mapped() == before);
  pool_set_mem_cap(UINT64_MAX);
  CHECK(conn_tx_enable(c, &levels, p));
  CHECK(pool_mem_mapped() == before + kMaxFrameRaw + tx_stream_size(levels, false));
  conn_retire(c);
}

TEST_CASE("conn pool: a sender maps its zstd context for 2 MiB and commits the 8 MiB window's in place, within the cap",
          "[compress]") {
  PoolRig rig;
  PolicyConfig p = rig.policy("fixed:zstd:3");
  LevelList& levels = rig.levels;
  Conn* c = rig.record_without([](const Conn* k) { return k->tx_mem != nullptr; });
  uint64_t before = pool_mem_mapped();
  REQUIRE(conn_tx_enable(c, &levels, p));
  uint64_t narrow = pool_mem_mapped() - before;
  CHECK(narrow < 5632 * 1024);  // a short connection's: ~5.1 MiB, not 11
  const ZstdSlot& z = c->tx.codec.zs[0];
  size_t wide = c->tx.codec.wide_room;
  REQUIRE(z.room < wide);
  REQUIRE(c->tx.codec.grow.fn != nullptr);
  auto grow = [&](size_t n) { return c->tx.codec.grow.fn(c->tx.codec.grow.ctx, z.base, n); };
  uint64_t refused = pool_mem_refused();
  pool_set_mem_cap(pool_mem_mapped() + 4096);  // past the cap: refused, nothing mapped
  CHECK_FALSE(grow(wide));
  CHECK(pool_mem_mapped() == before + narrow);
  CHECK(pool_mem_refused() == refused + 1);  // counted for the stats line
  pool_set_mem_cap(UINT64_MAX);
  CHECK(grow(wide));
  uint64_t grown = pool_mem_mapped() - before;
  CHECK(pool_mem_peak() >= pool_mem_mapped());
  CHECK(grown > narrow + 6000 * 1024);  // the window's 6 MiB more
  CHECK(grown <= kMaxFrameRaw + tx_stream_size(levels, true));
  static_cast<volatile uint8_t*>(z.base)[wide - 1] = 1;  // committed: writable to its end
  CHECK(grow(wide));  // again: nothing more
  CHECK(pool_mem_mapped() == before + grown);
  CHECK_FALSE(grow(wide + (1u << 20)));  // never past the reservation
  // The record, reused, keeps the wide room: the next connection's stream starts with it.
  REQUIRE(conn_tx_enable(c, &levels, p));
  CHECK(c->tx.codec.zs[0].room >= wide);
  CHECK(pool_mem_mapped() == before + grown);
  conn_retire(c);
}

TEST_CASE("conn pool: a second zstd stream's workspace is mapped on first need, within the cap, once", "[compress]") {
  PoolRig rig;
  PolicyConfig p = rig.policy("datarate");
  LevelList& levels = rig.levels;
  Conn* c = rig.record_without([](const Conn* k) { return k->tx_extra || k->rx_extra; });
  REQUIRE(conn_tx_enable(c, &levels, p));
  REQUIRE(conn_rx_enable(c));
  REQUIRE(c->tx.extra.get != nullptr);
  REQUIRE(c->rx.extra.get != nullptr);
  size_t tn = tx_stream_codec_extra_size(levels), rn = rx_codec_extra_size();
  uint64_t before = pool_mem_mapped();
  pool_set_mem_cap(before + 4096);  // past the cap: none
  CHECK(c->tx.extra.get(c->tx.extra.ctx, tn) == nullptr);
  CHECK(pool_mem_mapped() == before);
  pool_set_mem_cap(UINT64_MAX);
  void* t = c->tx.extra.get(c->tx.extra.ctx, tn);
  void* r = c->rx.extra.get(c->rx.extra.ctx, rn);
  REQUIRE(t != nullptr);
  REQUIRE(r != nullptr);
  CHECK(pool_mem_mapped() == before + tn + rn);
  CHECK(c->tx.extra.get(c->tx.extra.ctx, tn) == t);  // the same block again, not mapped twice
  CHECK(pool_mem_mapped() == before + tn + rn);
  CHECK(tx_stream_codec_attach(c->tx.codec, t, tn, levels));
  CHECK(c->tx.codec.nzstd == 2);
  // The record, reused, starts with one stream and gets the same block back.
  REQUIRE(conn_tx_enable(c, &levels, p));
  CHECK(c->tx.codec.nzstd == 1);
  CHECK(c->tx.extra.get(c->tx.extra.ctx, tn) == t);
  CHECK(c->tx.extra.get(c->tx.extra.ctx, tn + 1) == nullptr);  // never past its size
  CHECK(pool_mem_mapped() == before + tn + rn);
  conn_retire(c);
}

TEST_CASE("conn pool: a receiver's decoders grow in place to the 8 MiB window when first asked, within the cap, once",
          "[compress]") {
  PoolRig rig;
  Conn* c = rig.record_without([](const Conn* k) { return k->rx_mem || k->rx_extra; });
  REQUIRE(conn_rx_enable(c));
  REQUIRE(c->rx.extra.wide != nullptr);
  size_t n = rx_codec_wide_size(), narrow = rx_codec_extra_size();
  auto* base0 = static_cast<uint8_t*>(c->rx.codec.zbase[0]);
  CHECK(base0 == static_cast<uint8_t*>(c->rx_mem) + rx_stream_size() - narrow);  // last in the workspace
  auto wide = [&](int stream) { return c->rx.extra.wide(c->rx.extra.ctx, stream, n); };
  uint64_t before = pool_mem_mapped();
  pool_set_mem_cap(before + 4096);  // past the cap: none
  CHECK(wide(0) == nullptr);
  CHECK(pool_mem_mapped() == before);
  pool_set_mem_cap(UINT64_MAX);
  void* w0 = wide(0);
  CHECK(w0 == base0);  // in place
  CHECK(pool_mem_mapped() == before + n - narrow);  // the 8 MiB window's 6 MiB more
  static_cast<volatile uint8_t*>(w0)[n - 1] = 1;    // committed: writable to its end
  // The second stream: its 2 MiB decoder's block, grown in place likewise.
  void* e1 = c->rx.extra.get(c->rx.extra.ctx, narrow);
  REQUIRE(e1 != nullptr);
  void* w1 = wide(1);
  CHECK(w1 == e1);
  CHECK(pool_mem_mapped() == before + 2 * (n - narrow) + narrow);
  CHECK(wide(0) == w0);  // the same block again, not mapped twice
  CHECK(wide(2) == nullptr);  // two zstd streams only
  CHECK(c->rx.extra.wide(c->rx.extra.ctx, 0, n + (1u << 20)) == nullptr);  // never past the reservation
  CHECK(rx_codec_widen(c->rx.codec, 0, w0, n));
  CHECK(c->rx.codec.wide[0]);
  // The record, reused, starts with its 2 MiB decoder at the same place and widens
  // there again without mapping more.
  REQUIRE(conn_rx_enable(c));
  CHECK_FALSE(c->rx.codec.wide[0]);
  CHECK(c->rx.codec.zbase[0] == base0);
  CHECK(wide(0) == w0);
  CHECK(pool_mem_mapped() == before + 2 * (n - narrow) + narrow);
  conn_retire(c);
}

TEST_CASE("conn pool: a long connection's zstd pages are given back at release, a short one's kept", "[compress]") {
  PoolRig rig;
  PolicyConfig p = rig.policy("fixed:zstd:3");
  LevelList& levels = rig.levels;
  for (bool long_conn : {true, false}) {
    INFO((long_conn ? "long connection" : "short connection"));
    Conn* c = rig.record_without([](const Conn* k) { return k->tx_mem || k->rx_mem; });
    REQUIRE(conn_tx_enable(c, &levels, p));
    REQUIRE(conn_rx_enable(c));
    // Both sides widened, as after 2 MiB of zstd frames each way.
    auto* tx_room = static_cast<volatile uint8_t*>(c->tx.codec.zs[0].base);
    size_t tx_wide = c->tx.codec.wide_room, rx_wide = rx_codec_wide_size();
    REQUIRE(c->tx.codec.grow.fn(c->tx.codec.grow.ctx, c->tx.codec.zs[0].base, tx_wide));
    void* w0 = c->rx.extra.wide(c->rx.extra.ctx, 0, rx_wide);
    REQUIRE(w0 != nullptr);
    auto* rx_room = static_cast<volatile uint8_t*>(w0);
    if (long_conn) {
      c->tx.codec.zstd_bytes = kZstdWidenAfter;
      REQUIRE(rx_codec_widen(c->rx.codec, 0, w0, rx_wide));
    }
    size_t at[] = {64 * 1024, tx_wide / 2, tx_wide - 1};
    for (size_t a : at) tx_room[a] = 0x5a;
    rx_room[rx_wide - 1] = 0xa5;
    conn_retire(c);  // released: nobody holds its locks
    for (size_t a : at) CHECK(tx_room[a] == (long_conn ? 0 : 0x5a));  // mapped still: records are never unmapped
    CHECK(rx_room[rx_wide - 1] == (long_conn ? 0 : 0xa5));
  }
}

TEST_CASE("conn pool: duplicates of a connection's number are aliases; the owner hands over", "[compress]") {
  int sv[2];
  REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
  Conn* c = conn_acquire(sv[0]);
  REQUIRE(c != nullptr);
  std::vector<int> dups;
  for (unsigned i = 0; i < kConnAliases; ++i) {
    dups.push_back(dup(sv[0]));
    REQUIRE(conn_add_alias(c, dups.back()));
  }
  int extra = dup(sv[0]);
  CHECK_FALSE(conn_add_alias(c, extra));  // full: not linked
  CHECK_FALSE(conn_reaches(c, extra));
  for (int d : dups) {
    CHECK(conn_reaches(c, d));
    CHECK(conn_verify(c, d));  // the same socket
  }
  CHECK(conn_reaches(c, sv[0]));
  CHECK(conn_drop_number(c, sv[1]) == Dropped::Elsewhere);  // never reached it
  CHECK(conn_drop_number(c, dups[1]) == Dropped::Kept);     // an alias goes
  CHECK_FALSE(conn_reaches(c, dups[1]));
  CHECK(conn_drop_number(c, sv[0]) == Dropped::Kept);  // the owner goes: an alias takes over
  CHECK_FALSE(conn_reaches(c, sv[0]));
  int owner = c->fd.load();
  CHECK((owner == dups[0] || owner == dups[2] || owner == dups[3]));
  int seen = 0;
  conn_each_number(c, [&](int n) { seen += (n == dups[0]) + (n == dups[2]) + (n == dups[3]); });
  CHECK(seen == 3);
  CHECK(conn_drop_number(c, dups[0]) == Dropped::Kept);
  CHECK(conn_drop_number(c, dups[2]) == Dropped::Kept);
  CHECK(conn_drop_number(c, dups[3]) == Dropped::Last);  // its last number: the caller retires it
  CHECK(conn_reaches(c, dups[3]));
  conn_retire(c);
  CHECK(c->fd.load() == -1);
  for (int d : dups) close(d);
  close(extra);
  close(sv[0]);
  close(sv[1]);
}
