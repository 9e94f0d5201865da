// SPDX-License-Identifier: MIT
// The shared calibration codec (see calibrator.h).
#include "compress/calibrator.h"

#include <pthread.h>
#include <sys/mman.h>

#include "sys/mutex_try.h"

namespace bonsai::compress {
namespace {
constinit pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
constinit Calibrator g_cal{};
constinit size_t g_codec_size = 0;  // 0: not mapped (under g_mu)
constinit bool g_failed = false;    // mapping failed once: do not retry on every chunk
}  // namespace

Calibrator* calibrator_try_acquire(const LevelList& levels) noexcept {
  if (mutex_trylock(&g_mu) != 0) return nullptr;
  size_t need = tx_codec_size(levels);
  if (!g_codec_size && !g_failed) {
    size_t total = need + kMaxFrameWire + kMaxFrameRaw;
    void* p = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED || !tx_codec_init(g_cal.codec, p, need, levels)) {
      if (p != MAP_FAILED) munmap(p, total);
      g_failed = true;
    } else {
      g_cal.out = static_cast<uint8_t*>(p) + need;
      g_cal.chunk = g_cal.out + kMaxFrameWire;
      g_codec_size = need;
    }
  }
  // Mapped for another (smaller) list of levels: its zstd context may be too small.
  int z = 0;
  for (unsigned i = 0; i < levels.count; ++i)
    if (levels.levels[i].method == Method::Zstd && levels.levels[i].param > z) z = levels.levels[i].param;
  if (!g_codec_size || need > g_codec_size || z > g_cal.codec.max_zstd) {
    pthread_mutex_unlock(&g_mu);
    return nullptr;
  }
  return &g_cal;
}

void calibrator_release() noexcept { pthread_mutex_unlock(&g_mu); }

void calibrator_after_fork() noexcept { pthread_mutex_init(&g_mu, nullptr); }

}  // namespace bonsai::compress
