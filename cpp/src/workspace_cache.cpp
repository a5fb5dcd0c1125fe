#include "workspace_cache.hpp"

#include <vector>

#include "backends.hpp"

namespace nvfp4 {
namespace {

struct Entry {
  int device;
  cudaStream_t stream;
  void* ptr;
  size_t bytes;
};

// Entries per thread before the least recently grown one is given back: a thread seldom
// drives more than a few (device, stream) pairs.
constexpr size_t kMaxEntries = 8;

void free_entry(const Entry& e) {
  if (cudaFreeAsync(e.ptr, e.stream) != cudaSuccess) {  // e.g. the stream is gone
    (void)cudaGetLastError();
    int current = 0;
    if (cudaGetDevice(&current) == cudaSuccess && current == e.device) {
      if (cudaFree(e.ptr) != cudaSuccess) (void)cudaGetLastError();
    }
  }
}

// Per thread, so that two threads on one stream handle (the legacy default stream, or
// each its own per-thread default stream) never hand each other a buffer mid-op.
struct ThreadCache {
  std::vector<Entry> entries;
  ~ThreadCache() {
    for (const Entry& e : entries) {
      if (cudaFreeAsync(e.ptr, e.stream) != cudaSuccess) (void)cudaGetLastError();  // at exit: best effort
    }
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
  std::vector<Entry>& entries = t_cache.entries;
  Entry* hit = nullptr;
  for (Entry& e : entries)
    if (e.device == device && e.stream == stream) hit = &e;
  if (hit && hit->bytes >= bytes) {
    ptr_ = hit->ptr;
    bytes_ = hit->bytes;
    return NVFP4_SUCCESS;
  }
  if (hit) {  // grow: the old buffer is released after the work already queued on `stream`
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
  entries.push_back(Entry{device, stream, p, bytes});
  ptr_ = p;
  bytes_ = bytes;
  return NVFP4_SUCCESS;
}

ScratchLease::~ScratchLease() {
  if (graph_owned_ && ptr_ && cudaFreeAsync(ptr_, stream_) != cudaSuccess) (void)cudaGetLastError();
}

}  // namespace nvfp4
