// SPDX-License-Identifier: MIT
// One process-wide one-shot codec for the datarate policy's calibration (each level
// run on one chunk). Connections stream through their own contexts; a one-shot
// context per connection would double a sender's memory for a job done once a
// second, so they share this one. Never blocks: a sender that finds it busy skips
// that calibration. Mapped on first use; nothing allocates afterwards.
#pragma once
#include <cstdint>

#include "compress/codec.h"

namespace bonsai::compress {

struct Calibrator {
  TxCodec codec;
  uint8_t* out;  // kMaxFrameWire bytes
  // A round over every level on one chunk, spread over the owner's next chunks (one
  // run each): the chunk is kept here, so every level still sees the same data.
  uint8_t* chunk;  // kMaxFrameRaw bytes
  size_t chunk_len;
  const void* owner;     // the sender whose round holds `chunk`; nullptr: none
  uint64_t owner_at_ns;  // when the owner last used it (a closed sender's claim lapses)
};

// @return the calibrator, locked for the caller, or nullptr (busy, no memory, or
// mapped for a smaller level list).
Calibrator* calibrator_try_acquire(const LevelList& levels) noexcept;
void calibrator_release() noexcept;
// In a fork()ed child: another thread of the parent may have held it.
void calibrator_after_fork() noexcept;

}  // namespace bonsai::compress
