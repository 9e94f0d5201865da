// SPDX-License-Identifier: MIT
// What a zstd window and long-distance matching give a bonsai-like sender (issue 53):
// compresses FILE's first BYTES as one zstd stream flushed every CHUNK bytes
// (ZSTD_e_flush, as libbonsai's tx_stream does per frame) at LEVEL with a 2^WLOG window,
// and prints the ratio, the CPU speed (MiB/s of input per CPU second) and the context's
// size. TABLES 0: bonsai's capped match tables (hash <= 2^18, chain <= 2^17, as
// codec_params.cc), 1: the level's own. LDM 0: off, 1: zstd's default parameters for
// the window, 2: bonsai's (codec.h: hash 2^11, min match 256, bucket 2^3).
//   cc -O2 -o zstd_window bench/helpers/zstd_window.c -lzstd
//   ./zstd_window FILE BYTES LEVEL TABLES CHUNK WLOG LDM
// Results: docs/notes/compression-measured.md#long-repeated-text-issue-53.
#define ZSTD_STATIC_LINKING_ONLY
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <zstd.h>

static double cpu_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int set(ZSTD_CCtx* z, ZSTD_cParameter k, int v) {
  size_t r = ZSTD_CCtx_setParameter(z, k, v);
  if (ZSTD_isError(r)) fprintf(stderr, "parameter %d = %d: %s\n", (int)k, v, ZSTD_getErrorName(r));
  return !ZSTD_isError(r);
}

int main(int argc, char** argv) {
  if (argc != 8) {
    fprintf(stderr, "usage: %s FILE BYTES LEVEL TABLES(0|1) CHUNK WLOG LDM(0|1|2)\n", argv[0]);
    return 2;
  }
  size_t want = strtoull(argv[2], NULL, 10), chunk = strtoull(argv[5], NULL, 10);
  int level = atoi(argv[3]), own = atoi(argv[4]), wlog = atoi(argv[6]), ldm = atoi(argv[7]);
  if (!want || !chunk || level < 1 || level > 19 || wlog < 10 || wlog > 30 || ldm < 0 || ldm > 2) {
    fprintf(stderr, "bad arguments\n");
    return 2;
  }
  FILE* f = fopen(argv[1], "rb");
  char* in = malloc(want);
  if (!f || !in) { perror(argv[1]); return 1; }
  size_t n = fread(in, 1, want, f);
  fclose(f);
  if (!n) { fprintf(stderr, "%s: empty\n", argv[1]); return 1; }

  ZSTD_compressionParameters cp = ZSTD_getCParams(level, (size_t)1 << 23, 0);
  cp.windowLog = (unsigned)wlog;
  if (!own) {
    if (cp.hashLog > 18) cp.hashLog = 18;
    if (cp.chainLog > 17) cp.chainLog = 17;
  }
  cp = ZSTD_adjustCParams(cp, 0, 0);
  ZSTD_CCtx* z = ZSTD_createCCtx();
  int ok = z && set(z, ZSTD_c_compressionLevel, level) && set(z, ZSTD_c_windowLog, (int)cp.windowLog) &&
           set(z, ZSTD_c_hashLog, (int)cp.hashLog) && set(z, ZSTD_c_chainLog, (int)cp.chainLog) &&
           set(z, ZSTD_c_searchLog, (int)cp.searchLog) && set(z, ZSTD_c_minMatch, (int)cp.minMatch) &&
           set(z, ZSTD_c_targetLength, (int)cp.targetLength) && set(z, ZSTD_c_strategy, (int)cp.strategy);
  if (ok && ldm) ok = set(z, ZSTD_c_enableLongDistanceMatching, 1);
  if (ok && ldm == 2)
    ok = set(z, ZSTD_c_ldmHashLog, 11) && set(z, ZSTD_c_ldmMinMatch, 256) && set(z, ZSTD_c_ldmBucketSizeLog, 3) &&
         set(z, ZSTD_c_ldmHashRateLog, wlog - 11);
  if (!ok) return 1;

  size_t cap = ZSTD_compressBound(chunk) + 1024, wire = 0;
  char* out = malloc(cap);
  if (!out) return 1;
  double t0 = cpu_s();
  for (size_t p = 0; p < n; p += chunk) {
    ZSTD_inBuffer src = {in + p, n - p < chunk ? n - p : chunk, 0};
    for (;;) {
      ZSTD_outBuffer dst = {out, cap, 0};
      size_t r = ZSTD_compressStream2(z, &dst, &src, ZSTD_e_flush);
      if (ZSTD_isError(r)) { fprintf(stderr, "%s\n", ZSTD_getErrorName(r)); return 1; }
      wire += dst.pos;
      if (r == 0) break;
    }
  }
  double t1 = cpu_s();
  printf("level=%d tables=%s chunk=%zu wlog=%d ldm=%d hash=%u chain=%u ratio=%.3f cpu_MiBps=%.1f ctx_bytes=%zu\n",
         level, own ? "own" : "capped", chunk, wlog, ldm, cp.hashLog, cp.chainLog, (double)n / (double)wire,
         (double)n / 1048576.0 / (t1 - t0 > 0 ? t1 - t0 : 1e-9), ZSTD_sizeof_CCtx(z));
  ZSTD_freeCCtx(z);
  free(out);
  free(in);
  return 0;
}
