// SPDX-License-Identifier: MIT
// bonsaictl's handle on service segments (of the target user, target_user.h): create (exclusively, mode 0600), open
// with owner, type, mode, size and layout checked (a file another user planted
// under our name is refused, for root too), list, remove, and publish limits.
// Everything read from a segment is untrusted: a damaged one is reported with what
// is wrong and how to recover. Errors are thrown as CtlError.
#pragma once
#include <memory>
#include <string>
#include <sys/types.h>
#include <vector>

#include "abi/shm_abi.h"
#include "shm/shm_check.h"
#include "segment/target_user.h"  // whose segments: the names carry the uid

namespace bonsai::ctl {

std::string shm_prefix();          // BONSAI_SHM_PREFIX or ""
std::string segment_path(const std::string& service);  // /dev/shm/<prefix>bonsai.<uid>.<service>
uint64_t unix_now_ns();

// What the name of an open segment points to now (stat --watch).
enum class FileState { Same, Removed, Replaced };

class Segment {
 public:
  // Opens the service's segment; if absent and `create`, creates it with `scope`.
  // Throws CtlError (exit 1): absent, planted by another user, not a regular file,
  // wrong mode, truncated, or a header this build cannot use.
  static std::unique_ptr<Segment> open(const std::string& service, bool create, ShmScope scope = ShmScope::Process);
  // Takes `fd` (an inherited descriptor on the segment, BONSAI_SHM_FD: a process that
  // changed uid cannot open it by name) after the same checks, and that its name
  // (segment_path: ctl_uid() names the owner) is that very file. Closes `fd` on failure.
  static std::unique_ptr<Segment> adopt(const std::string& service, int fd);
  ~Segment();
  Segment(const Segment&) = delete;
  Segment& operator=(const Segment&) = delete;

  ShmSegment& seg() { return *seg_; }
  const std::string& service() const { return service_; }
  const std::string& path() const { return path_; }
  bool created() const { return created_; }
  int fd() const { return fd_; }  // the open segment file (O_CLOEXEC)
  // The segment's layout version (14: made by 0.2.0, the base alone; written in place)
  // and its checked section directory (abi/shm_abi.h).
  uint32_t layout() const { return layout_; }
  const ShmSections& sections() const { return sections_; }

  // Checks what bonsaictl relies on before reading: the file still holds the whole
  // segment, the header, the slot table (states, pids, high-water mark).
  // Throws the damage (see damaged()).
  void check();

  // Runs `fn` on the mapping with SIGBUS turned harmless (a file truncated under us
  // reads as zeros: shm/shm_guard.h); throws the damage if that happened.
  template <class F>
  void guarded(F&& fn) {
    guard_begin();
    try {
      fn();
    } catch (...) {
      guard_abort();
      throw;
    }
    guard_end();
  }

  // Throws CtlError(1): "<path> is damaged: <what>" and how to recover.
  [[noreturn]] void damaged(const std::string& what) const;

  // Whether the segment's name still leads to this very file.
  FileState file_state() const;

  // Publishes `set` under the seqlock; scope `service` buckets keep their state (bucket/limits_carry.h).
  // @return the new limits sequence number.
  uint64_t write_limits(const LimitSet& set);
  void set_scope(ShmScope scope);
  // Live processes attached (dead ones are reclaimed first; a slot not proved dead counts).
  unsigned live_processes();

 private:
  static std::unique_ptr<Segment> from_fd(const std::string& service, const std::string& path, int fd, bool created);
  Segment(std::string service, std::string path, ShmSegment* seg, size_t map_len, int fd, bool created, dev_t dev,
          ino_t ino)
      : service_(std::move(service)), path_(std::move(path)), seg_(seg), map_len_(map_len), fd_(fd),
        created_(created), dev_(dev), ino_(ino) {}
  void guard_begin();
  void guard_end();
  void guard_abort() noexcept;
  std::string service_, path_;
  ShmSegment* seg_;
  size_t map_len_;  // the mapping: the base, and from layout 15 its directory and sections
  ShmSections sections_{};
  uint32_t layout_ = 0;
  int fd_;
  bool created_;
  dev_t dev_;
  ino_t ino_;
  bool guarded_ = false;
  bool lost_ = false;  // a truncation replaced the mapping with zeros
};

// What bonsaictl says of a segment whose layout is newer than it reads.
std::string newer_layout_message(const std::string& path, uint32_t version, const std::string& service);

// The damage report: what is wrong and how to recover (rm --force, then load/run).
std::string damage_message(const std::string& service, const std::string& path, const std::string& what);

// Services with a segment of this user under the current prefix, sorted.
std::vector<std::string> services_list();

// Every user's services under the current prefix (root's view): (uid, service), sorted.
std::vector<std::pair<unsigned, std::string>> services_list_all_users();

// Removes the service's segment (processes attached keep their mapping). A file of
// another user under our name is removed only with `force` (root can; others are
// told to ask its owner or root).
void segment_remove(const std::string& service, bool force = false);

// Checks that a segment file belongs to us; @return "" or why not (another user's,
// root included; bad mode). `path`/`service` go into the advice on how to clear it.
std::string segment_owner_problem(unsigned file_uid, unsigned file_mode, unsigned me, const std::string& path = "",
                                  const std::string& service = "");

}  // namespace bonsai::ctl
