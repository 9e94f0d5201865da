// SPDX-License-Identifier: MIT
// What kind of program `run` starts (see launch_kind.h): abi/program_kind.h's
// judgement, and the words for it.
#include "launch/launch_kind.h"

#include <climits>
#include <fmt/core.h>
#include <sys/stat.h>

namespace bonsai::ctl {

LaunchInfo launch_inspect(const std::string& path) {
  LaunchInfo info;
  char judged[PATH_MAX];
  info.kind = program_kind(path.c_str(), GoLook::Sections, judged, sizeof judged, &info.loader);
  info.program = judged;
  struct stat st;
  switch (info.kind) {
    case LaunchKind::Setuid:
      info.what = fmt::format("is set{}id", stat(judged, &st) == 0 && !(st.st_mode & S_ISUID) ? "g" : "u");
      break;
    case LaunchKind::Go: info.what = "is a Go program (it makes its own system calls)"; break;
    case LaunchKind::Static: info.what = "is statically linked"; break;
    case LaunchKind::Dynamic:
    case LaunchKind::Other: break;
  }
  return info;
}

std::string preload_warning(const std::string& path) {
  LaunchInfo i = launch_inspect(path);
  if (i.kind == LaunchKind::Dynamic || i.kind == LaunchKind::Other) return "";
  std::string subject = i.program == path ? path : fmt::format("{} runs {}, which", path, i.program);
  if (i.kind == LaunchKind::Setuid)
    return fmt::format("{} {}: the loader ignores LD_PRELOAD for it, so NO LIMITS WILL APPLY", subject, i.what);
  return fmt::format("{} {}: LD_PRELOAD cannot reach it, so NO LIMITS WILL APPLY", subject, i.what);
}

}  // namespace bonsai::ctl
