#include "workspace_cache.hpp"

#include <vector>

#include "backends.hpp"

namespace nvfp4 {
namespace {

struct Entry {
  int device;
  unsigned long long stream_id;  // cudaStreamGetId: unique for the process's lifetime (no handle
                                 // kept: the stream may be destroyed after the call)
  void* ptr;
  size_t bytes;
};

// Entries per thread before the least recently grown one is given back: a thread seldom
// drives more than a few (device, stream) pairs.
constexpr size_t kMaxEntries = 8;

// An entry's stream may be destroyed by now (CuPy destroys a stream when its object goes,
// and the handle may then name a newer stream): nothing here touches it. The device is
// synchronized, so the buffer is idle when cudaFree gives it back (a thread cycling through
// more than kMaxEntries streams pays that sync per new stream); relaxed capture mode, so that
// the calls do not invalidate a global-mode capture another thread has open. Best effort: if
// the sync fails (a capture in progress, the context gone at exit) the buffer is kept by the
// pool until the context's teardown rather than freed under running work.
void free_entry(const Entry& e) {
  int current = -1;
  if (cudaGetDevice(&current) != cudaSuccess) current = -1;
  if (current != e.device && cudaSetDevice(e.device) != cudaSuccess) {
    (void)cudaGetLastError();
    return;
  }
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  const bool exchanged = cudaThreadExchangeStreamCaptureMode(&mode) == cudaSuccess;
  if (cudaDeviceSynchronize() != cudaSuccess || cudaFree(e.ptr) != cudaSuccess) (void)cudaGetLastError();
  if (exchanged) (void)cudaThreadExchangeStreamCaptureMode(&mode);
  if (current >= 0 && current != e.device) (void)cudaSetDevice(current);
}

// Per thread, so that two threads on one stream handle (the legacy default stream, or
// each its own per-thread default stream) never hand each other a buffer mid-op.
struct ThreadCache {
  std::vector<Entry> entries;
  ~ThreadCache() {
    for (const Entry& e : entries) free_entry(e);
  }
};
thread_local ThreadCache t_cache;

}  // namespace

nvfp4_status_t ScratchLease::acquire(int device, cudaStream_t stream, size_t bytes) {
  bytes = (bytes + 255) / 256 * 256;
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  cudaError_t err = cudaStreamIsCapturing(stream, &capture);
  if (err != cudaSuccess) return fail(NVFP4_ERROR_CUDA, "workspace: cudaStreamIsCapturing: %s", cudaGetErrorString(err));
  stream_ = stream;
  if (capture == cudaStreamCaptureStatusActive) {
    err = cudaMallocAsync(&ptr_, bytes, stream);
    if (err != cudaSuccess)
      return fail(NVFP4_ERROR_CUDA, "workspace: cudaMallocAsync of %zu bytes during stream capture: %s", bytes,
                  cudaGetErrorString(err));
    bytes_ = bytes;
    graph_owned_ = true;
    return NVFP4_SUCCESS;
  }
  // Keyed by the stream's id, not its handle: a handle freed by cudaStreamDestroy and handed
  // to a new stream must not find the old stream's buffer (its work may still be queued).
  unsigned long long stream_id = 0;
  err = cudaStreamGetId(stream, &stream_id);
  if (err != cudaSuccess) return fail(NVFP4_ERROR_CUDA, "workspace: cudaStreamGetId: %s", cudaGetErrorString(err));
  std::vector<Entry>& entries = t_cache.entries;
  Entry* hit = nullptr;
  for (Entry& e : entries)
    if (e.device == device && e.stream_id == stream_id) hit = &e;
  if (hit && hit->bytes >= bytes) {
    ptr_ = hit->ptr;
    bytes_ = hit->bytes;
    return NVFP4_SUCCESS;
  }
  if (hit) {  // grow: the old buffer is released after the work already queued on `stream` (the same stream)
    err = cudaFreeAsync(hit->ptr, stream);
    if (err != cudaSuccess) return fail(NVFP4_ERROR_CUDA, "workspace: cudaFreeAsync: %s", cudaGetErrorString(err));
    entries.erase(entries.begin() + (hit - entries.data()));
  } else if (entries.size() >= kMaxEntries) {
    free_entry(entries.front());
    entries.erase(entries.begin());
  }
  void* p = nullptr;
  err = cudaMallocAsync(&p, bytes, stream);
  if (err != cudaSuccess)
    return fail(NVFP4_ERROR_CUDA, "workspace: cudaMallocAsync of %zu bytes: %s", bytes, cudaGetErrorString(err));
  entries.push_back(Entry{device, stream_id, p, bytes});
  ptr_ = p;
  bytes_ = bytes;
  return NVFP4_SUCCESS;
}

ScratchLease::~ScratchLease() {
  if (graph_owned_ && ptr_ && cudaFreeAsync(ptr_, stream_) != cudaSuccess) (void)cudaGetLastError();
}

}  // namespace nvfp4
