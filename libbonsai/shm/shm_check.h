// SPDX-License-Identifier: MIT
// Trust checks on a mapped segment: the library runs unlimited rather than act on a
// segment that is not exactly what this build expects. Shared with bonsaictl.
// No allocation, no syscalls.
//
// Layouts read: 14 (the base exactly as 0.2.0 made it, no directory) and 15 on (the
// base, then a section directory whose oldest_reader is at most this build's layout);
// see abi/shm_abi.h. The directory is copied before it is checked, and every entry must
// lie inside the bytes the header says the segment spans, inside the file and inside
// the caller's mapping, after the directory, without overlapping another.
#pragma once
#include <cstddef>
#include <cstdint>

#include "abi/host_abi.h"
#include "abi/shm_abi.h"

namespace bonsai {

// A checked copy of a segment's section directory (count 0 for layout 14).
struct ShmSections {
  uint32_t count;
  ShmSectionEntry entries[kShmMaxSections];
  // Set when a segment of a layout this build knows has a damaged directory (its user
  // wrote over it): the base is used alone, no section (bonsaictl says so); nullptr else.
  const char* damage = nullptr;
};

// The problem string for a segment made by a newer bonsai than this build reads (the
// header's version says which): callers compare the pointer to word their message.
extern const char kShmNewerLayout[];

// Checks magic, layout version, sizes, fingerprint, scope and (layout 15 on) the
// section directory of a segment whose file is `file_size` bytes, of which the caller
// mapped `mapped` from &seg. Fills `sections` (if given) with the checked directory.
// @return nullptr if usable, else why not (a static string; kShmNewerLayout for a newer layout).
const char* shm_header_problem(const ShmSegment& seg, size_t file_size, size_t mapped,
                               ShmSections* sections = nullptr) noexcept;

// The same for the host segment (abi/host_abi.h); the uid is the caller's to check.
const char* host_header_problem(const ShmHost& host, size_t file_size, size_t mapped,
                                ShmSections* sections = nullptr) noexcept;

// How many bytes of a segment file of `file_size` bytes a reader maps: enough for the
// base (`base_size`), at most the file and kShmSpanMax.
size_t shm_map_size(size_t file_size, size_t base_size) noexcept;

// The offset of section `id` if the checked directory lists it with exactly `size`
// bytes; 0 if not (the feature is absent for that segment).
uint64_t shm_section_offset(const ShmSections& sections, ShmSectionId id, uint64_t size) noexcept;

// Checks a LimitSet read from a segment: rule count, rates, units, fd masks, known
// calls, byte rates only on data calls, no call in two buckets.
// @return nullptr if usable, else why not.
const char* limits_problem(const LimitSet& set) noexcept;

// Fills a fresh segment's header, limits and (when `mapped` holds it) directory
// (bonsaictl, when it creates one: the file is kShmMadeSize bytes). With mapped ==
// kShmBaseSize it makes a layout-14 segment, as 0.2.0 did (tests of old segments).
void shm_header_init(ShmSegment& seg, size_t mapped, ShmScope scope, unsigned uid, const char* service,
                     uint64_t now_unix_ns) noexcept;

// Fills a fresh host segment's header and (when `mapped` holds it) directory, likewise.
void host_header_init(ShmHost& host, size_t mapped, unsigned uid) noexcept;

}  // namespace bonsai
