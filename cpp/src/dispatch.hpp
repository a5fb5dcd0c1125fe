// Backend selection: which backends can run on a device, and running an op on the
// first backend of the chain that accepts it.
#pragma once

#include "backends.hpp"

namespace nvfp4 {

struct DeviceProps {
  bool valid = false;
  int cc_major = 0, cc_minor = 0, sm_count = 0;
  int64_t total_memory = 0;
  char name[256] = {};
};

// Cached cudaGetDeviceProperties; fails with a clear message for a bad ordinal.
nvfp4_status_t device_props(int device, const DeviceProps** out);

// The backend that ran the last op on this thread (AUTO if none ran).
void set_last_backend(nvfp4_backend_t b);
nvfp4_backend_t last_backend();

// The first backend AUTO would pick on a device of this compute capability.
nvfp4_backend_t preferred_backend(int cc_major, int cc_minor);

// Runs `member` of the chosen backend on `device` (stream/workspace from exec).
// exec->backend forces a backend (no fallback) unless NVFP4_BACKEND_AUTO. With
// `cached_workspace` > 0 the library's own scratch of that many bytes is the workspace.
template <class P>
nvfp4_status_t run_on_device(LaunchFn<P> BackendOps::*member, const char* op, const P& problem,
                             int device, const nvfp4_exec_t* exec, size_t cached_workspace = 0);

// Scratch bytes the backend that would run `launch` needs (its `workspace` entry; 0
// when it has none).
template <class P>
nvfp4_status_t workspace_on_device(LaunchFn<P> BackendOps::*launch, WorkspaceFn<P> BackendOps::*workspace,
                                   const char* op, const P& problem, int device, const nvfp4_exec_t* exec,
                                   size_t* bytes);

}  // namespace nvfp4
