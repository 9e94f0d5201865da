// SPDX-License-Identifier: MIT
// `bonsai-oci-runtime` (build/bonsai-oci-runtime, the same program as bonsaictl under
// that name): an OCI runtime in front of runc, as NVIDIA's container runtime is
// (docs/reference/containers.md, "Static programs and other users: bonsai-oci-runtime"). For
// `create` and `run` of a container that carries a bonsai.dev/service device (its
// BONSAI_SERVICE and BONSAI_SHM_UID in process.env and the segment's mount, as the CDI
// spec makes them) it edits the bundle's config.json, then execs the real runtime with
// the arguments it was given (plus one more preserved descriptor):
// - the segment, opened on the host by the runtime (root), is handed to the container's
//   first process as an inherited descriptor (runc's --preserve-fds; BONSAI_SHM_FD names
//   it): a container user of any uid reaches its service's segment, which stays mode
//   0600 on the host (no host uid other than its owner can open it);
// - a static or Go command (judged in the container's root, the way runc finds it) runs
//   through the supervisor the device mounts, `BONSAI_CTL sv-exec COMMAND...`.
// Every other command, and every other container, goes to the real runtime unchanged.
// The real runtime: BONSAI_OCI_RUNTIME, else runc in PATH.
#pragma once

namespace bonsai::ctl {

// argv as the container engine gave it (argv[0] the runtime's name). Returns only when
// the real runtime cannot be executed: the exit status.
int oci_runtime_main(int argc, char** argv);

}  // namespace bonsai::ctl
