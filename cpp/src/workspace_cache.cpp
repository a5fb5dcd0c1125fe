#include "workspace_cache.hpp"

#include <stdint.h>

#include <vector>

#include "backends.hpp"

namespace nvfp4 {
namespace {

// One cached buffer. No stream handle is kept: the stream may be destroyed after the call
// (CuPy and cuda.core destroy theirs with the Python object) and its handle handed to a new
// stream. Streams are told apart by cudaStreamGetId (unique for the process's lifetime), and
// the buffer's last use is the event `done`, recorded on the stream when each lease ends: an
// event stays valid after its stream is gone.
struct Entry {
  int device;
  unsigned long long stream_id;
  void* ptr;
  size_t bytes;
  cudaEvent_t done;
  uint64_t last_use;
};

// Entries per thread before the least recently used one is given back: a thread seldom
// drives more than a few (device, stream) pairs, and each buffer can be large.
constexpr size_t kMaxEntries = 8;

// Gives back `e`'s buffer once its last use is over, without its stream. On `stream` (the
// calling op's, same device, not capturing): the free is queued behind that use, nothing
// waits on the host. Otherwise (another device, thread exit): the host waits for that use
// (cudaEventSynchronize: that stream's work only, never a device-wide sync, which would
// invalidate a capture another thread has open) and frees, both in relaxed capture mode, so
// that neither is refused while another thread captures in global mode. If the wait fails
// (the context gone at exit, a sticky error), the buffer is left to the context's teardown
// rather than freed under work that may still run.
void free_entry(const Entry& e, int device, cudaStream_t stream, bool have_stream) {
  if (e.ptr == nullptr) {  // (a grow whose allocation failed)
    (void)cudaEventDestroy(e.done);
    return;
  }
  if (have_stream && e.device == device) {
    if (cudaStreamWaitEvent(stream, e.done, 0) == cudaSuccess && cudaFreeAsync(e.ptr, stream) == cudaSuccess) {
      (void)cudaEventDestroy(e.done);
      return;
    }
    (void)cudaGetLastError();
  }
  int current = -1;
  if (cudaGetDevice(&current) != cudaSuccess) current = -1;
  if (current != e.device && cudaSetDevice(e.device) != cudaSuccess) {
    (void)cudaGetLastError();
    return;
  }
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  const bool exchanged = cudaThreadExchangeStreamCaptureMode(&mode) == cudaSuccess;
  if (cudaEventSynchronize(e.done) == cudaSuccess) (void)cudaFree(e.ptr);
  if (exchanged) (void)cudaThreadExchangeStreamCaptureMode(&mode);
  (void)cudaEventDestroy(e.done);
  (void)cudaGetLastError();
  if (current >= 0 && current != e.device) (void)cudaSetDevice(current);
}

// Per thread, so that two threads on one stream (the legacy default stream, or each its own
// per-thread default stream) never hand each other a buffer mid-op.
struct ThreadCache {
  std::vector<Entry> entries;
  uint64_t clock = 0;
  ThreadCache() { entries.reserve(kMaxEntries + 1); }
  ~ThreadCache() {
    for (const Entry& e : entries) free_entry(e, -1, nullptr, false);
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
  unsigned long long stream_id = 0;
  err = cudaStreamGetId(stream, &stream_id);
  if (err != cudaSuccess) return fail(NVFP4_ERROR_CUDA, "workspace: cudaStreamGetId: %s", cudaGetErrorString(err));
  ThreadCache& cache = t_cache;
  std::vector<Entry>& entries = cache.entries;
  Entry* hit = nullptr;
  for (Entry& e : entries)
    if (e.device == device && e.stream_id == stream_id) hit = &e;
  auto lend = [&](Entry& e) {
    e.last_use = ++cache.clock;
    ptr_ = e.ptr;
    bytes_ = e.bytes;
    done_ = e.done;
    return NVFP4_SUCCESS;
  };
  if (hit && hit->bytes >= bytes) return lend(*hit);
  void* p = nullptr;
  if (hit) {  // grow on the same stream: the old buffer goes after the work already queued there
    if (hit->ptr) {
      err = cudaFreeAsync(hit->ptr, stream);
      if (err != cudaSuccess) return fail(NVFP4_ERROR_CUDA, "workspace: cudaFreeAsync: %s", cudaGetErrorString(err));
    }
    hit->ptr = nullptr;
    hit->bytes = 0;
    err = cudaMallocAsync(&p, bytes, stream);
    if (err != cudaSuccess)
      return fail(NVFP4_ERROR_CUDA, "workspace: cudaMallocAsync of %zu bytes: %s", bytes, cudaGetErrorString(err));
    hit->ptr = p;
    hit->bytes = bytes;
    return lend(*hit);
  }
  cudaEvent_t done = nullptr;
  err = cudaEventCreateWithFlags(&done, cudaEventDisableTiming);
  if (err != cudaSuccess) return fail(NVFP4_ERROR_CUDA, "workspace: cudaEventCreate: %s", cudaGetErrorString(err));
  err = cudaMallocAsync(&p, bytes, stream);
  if (err != cudaSuccess) {
    (void)cudaEventDestroy(done);
    return fail(NVFP4_ERROR_CUDA, "workspace: cudaMallocAsync of %zu bytes: %s", bytes, cudaGetErrorString(err));
  }
  if (entries.size() >= kMaxEntries) {  // give back the least recently used buffer
    size_t victim = 0;
    for (size_t i = 1; i < entries.size(); ++i)
      if (entries[i].last_use < entries[victim].last_use) victim = i;
    free_entry(entries[victim], device, stream, true);
    entries.erase(entries.begin() + static_cast<std::ptrdiff_t>(victim));
  }
  entries.push_back(Entry{device, stream_id, p, bytes, done, 0});
  return lend(entries.back());
}

ScratchLease::~ScratchLease() {
  if (graph_owned_) {
    if (ptr_ && cudaFreeAsync(ptr_, stream_) != cudaSuccess) (void)cudaGetLastError();
  } else if (done_ && cudaEventRecord(done_, stream_) != cudaSuccess) {
    (void)cudaGetLastError();  // (the launches' own errors were reported by the op)
  }
}

}  // namespace nvfp4
