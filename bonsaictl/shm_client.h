// SPDX-License-Identifier: MIT
// bonsaictl's handle on service segments: create (mode 0600), open with the owner,
// mode and layout checked (another user's segment is refused, root excepted),
// list, remove, and publish limits. Errors are thrown as CtlError.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "abi/shm_abi.h"

namespace bonsai::ctl {

std::string shm_prefix();          // BONSAI_SHM_PREFIX or ""
unsigned ctl_uid();                // the effective uid names the segments
std::string segment_path(const std::string& service);  // /dev/shm/<prefix>bonsai.<uid>.<service>
uint64_t unix_now_ns();

class Segment {
 public:
  // Opens the service's segment; if absent and `create`, creates it with `scope`.
  // Throws CtlError: absent (exit 1), another user's, wrong mode, or bad layout.
  static std::unique_ptr<Segment> open(const std::string& service, bool create, ShmScope scope = ShmScope::Process);
  ~Segment();
  Segment(const Segment&) = delete;
  Segment& operator=(const Segment&) = delete;

  ShmSegment& seg() { return *seg_; }
  const std::string& service() const { return service_; }
  bool created() const { return created_; }

  // Publishes `set` under the seqlock; scope `service` buckets start full again.
  // @return the new limits sequence number.
  uint64_t write_limits(const LimitSet& set);
  void set_scope(ShmScope scope);
  // Live processes attached (dead ones are reclaimed first).
  unsigned live_processes();

 private:
  Segment(std::string service, ShmSegment* seg, bool created) : service_(std::move(service)), seg_(seg), created_(created) {}
  std::string service_;
  ShmSegment* seg_;
  bool created_;
};

// Services with a segment of this user under the current prefix, sorted.
std::vector<std::string> services_list();

// Removes the service's segment (processes attached keep their mapping).
void segment_remove(const std::string& service);

// Checks that a segment file belongs to us; @return "" or why not (another user's, bad mode).
std::string segment_owner_problem(unsigned file_uid, unsigned file_mode, unsigned me);

}  // namespace bonsai::ctl
