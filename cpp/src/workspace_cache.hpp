// The library's own scratch for ops called with NVFP4_WORKSPACE_CACHED (nvfp4.h): one
// buffer per (calling thread, device, stream), grown in stream order, the least recently
// used of more than eight given back after its last use (an event, so the stream may be gone
// by then); a graph allocation while the stream is being captured. The caller has made
// `device` current. One lease per (thread, device, stream) at a time: a second acquire on the
// same stream while the first lease lives would share (or grow, freeing) its buffer; no op
// nests them today (dispatch.cpp's lease, or quantize's own, never both).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "nvfp4/nvfp4.h"

namespace nvfp4 {

class ScratchLease {
 public:
  ScratchLease() = default;
  ScratchLease(const ScratchLease&) = delete;
  ScratchLease& operator=(const ScratchLease&) = delete;
  ~ScratchLease();  // frees a graph allocation after the op's launches (stream order), or
                    // marks the cached buffer's last use (an event on the stream)

  // At least `bytes` (> 0) of scratch on the current device, usable on `stream` until the
  // lease ends.
  nvfp4_status_t acquire(int device, cudaStream_t stream, size_t bytes);
  void* data() const { return ptr_; }
  size_t size() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
  cudaStream_t stream_ = nullptr;
  bool graph_owned_ = false;
  cudaEvent_t done_ = nullptr;  // the cached buffer's last-use event (not for graph allocations)
};

}  // namespace nvfp4
