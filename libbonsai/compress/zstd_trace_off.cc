// SPDX-License-Identifier: MIT
// zstd's tracing hooks, answered "off" here. Debian's libzstd.a (linked into the
// library) references them as weak symbols; left undefined, each is a symbol lookup
// that fails through every loaded object at every exec. A begin hook that
// returns 0 tells zstd not to trace; the end hooks are then never called.
#include <cstddef>

extern "C" {
struct ZSTD_CCtx_s;
struct ZSTD_DCtx_s;
struct ZSTD_Trace;
__attribute__((visibility("hidden"))) unsigned long long ZSTD_trace_compress_begin(const ZSTD_CCtx_s*) { return 0; }
__attribute__((visibility("hidden"))) void ZSTD_trace_compress_end(unsigned long long, const ZSTD_Trace*) {}
__attribute__((visibility("hidden"))) unsigned long long ZSTD_trace_decompress_begin(const ZSTD_DCtx_s*) { return 0; }
__attribute__((visibility("hidden"))) void ZSTD_trace_decompress_end(unsigned long long, const ZSTD_Trace*) {}
}
