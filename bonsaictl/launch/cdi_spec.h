// SPDX-License-Identifier: MIT
// Containers through the Container Device Interface (docs/reference/containers.md):
// a CDI spec of kind bonsai.dev/service with one device per service of ctl_uid() under
// shm_prefix(), so that `podman run --device bonsai.dev/service=NAME ...` runs the
// container's processes as members of the host's service NAME. What a device injects:
// - the library's builds, read-only, as the `$LIB` layout under /run/bonsai (glibc's
//   loader expands $LIB to its own folder and takes the glibc build, musl's takes the
//   folder named `$LIB`: docs/reference/libc.md), and LD_PRELOAD=/run/bonsai/$LIB/libbonsai.so;
// - the service's segment bind-mounted at its own name in the container's /dev/shm,
//   read-write: the container's processes attach to the very segment the host's
//   processes use; BONSAI_SERVICE, BONSAI_SHM_UID (the segment names the host's uid),
//   BONSAI_SHM_PREFIX. A device is made only of a segment that passes bonsaictl's checks
//   (owner, mode, type, no symbolic link, header), and mounts a hard link to that very
//   file kept in a folder of the spec writer's (/dev/shm/<prefix>bonsai-cdi.<euid>), never
//   a path another user can replace. The user's host segment (shares) is not mounted: a
//   container's processes run at their guaranteed rates (docs/reference/shares.md);
// - the supervisor for static and Go programs: one static program (build/cdi/bonsaictl:
//   sv-exec alone), mounted read-only at /run/bonsai/sv/bonsaictl and named by BONSAI_CTL,
//   so the library's exec wrappers start it as on the host. No library of the host's.
// Device names: the writer's own services by their names, another user's (root's --user)
// as NAME:u<uid>. Specs written by `cdi generate` begin with a marker line naming the uid
// and prefix; a file without the same marker is never overwritten; `load` and `rm`
// rewrite the ones in the CDI folders that carry theirs (cdi_refresh).
#pragma once
#include <string>
#include <vector>

namespace bonsai::ctl {

// The folders Podman (4.3) and the other CDI runtimes read specs from.
inline constexpr const char* kCdiDirs[] = {"/etc/cdi", "/var/run/cdi"};
inline constexpr const char* kCdiDefaultOutput = "/var/run/cdi/bonsai.yaml";
inline constexpr const char* kCdiKind = "bonsai.dev/service";

// The device name of `service` of ctl_uid(): `service` for the effective user's own,
// `service:u<uid>` for another user's.
std::string cdi_device_name(const std::string& service);

// The spec for the services `services` of ctl_uid() under shm_prefix(). `notes` gets
// what the spec lacks (no musl build, no supervisor) in one line each.
std::string cdi_spec_text(const std::vector<std::string>& services, std::vector<std::string>& notes);

// Writes the spec of every service of ctl_uid() under shm_prefix() whose segment passes
// the checks to `output` ("-": stdout), atomically (a temporary file renamed over it),
// and links the segments it mounts. An existing `output` that is not this user's and
// prefix's spec is refused (usage error, nothing written). With no service a file is not
// written (an empty spec is refused by some runtimes) and a generated one there is
// removed. `notes` gets the segments refused. Throws CtlError. @return the number of devices.
size_t cdi_generate(const std::string& output, std::vector<std::string>& notes);

// The `docker run` options that do what `service`'s device does, for Docker without CDI
// (before 25): a --mount per mount of the device (the segment's link, made here as
// `generate` makes it), an -e per variable. Throws CtlError when `service` has no segment
// that passes the checks. `notes`: what the flags lack (no musl build, no supervisor).
std::vector<std::string> cdi_docker_args(const std::string& service, std::vector<std::string>& notes);

// After `load` or `rm`: rewrites (or removes, with no service left) every spec in the
// CDI folders that `cdi generate` made for ctl_uid() and shm_prefix() and that this
// user owns. Best effort: @return one line per file rewritten or failed.
std::vector<std::string> cdi_refresh();

}  // namespace bonsai::ctl
