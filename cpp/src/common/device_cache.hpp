// Per-device host-side facts (occupancy, function attributes, device attributes, one-time
// kernel setup) computed on a device's first call and read on every later one, so that a
// launch pays a load instead of a CUDA query. Per device, not per process: two GPUs of
// different kinds in one process get their own values.
#pragma once

#include <atomic>
#include <mutex>

#include "nvfp4/nvfp4.h"

namespace nvfp4 {

constexpr int kMaxCachedDevices = 64;

template <class T>
class PerDeviceCache {
 public:
  // The value of `device`: computed by make(T&) -> nvfp4_status_t on first use (the caller
  // has made `device` current), then cached. A failed make is not cached: the next call
  // tries again. Ordinals beyond kMaxCachedDevices are computed on every call.
  template <class Make>
  nvfp4_status_t get(int device, Make&& make, T* out) {
    if (device < 0 || device >= kMaxCachedDevices) return make(*out);
    Slot& s = slots_[device];
    if (!s.ready.load(std::memory_order_acquire)) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!s.ready.load(std::memory_order_relaxed)) {
        T v{};
        const nvfp4_status_t st = make(v);
        if (st != NVFP4_SUCCESS) return st;
        s.value = v;
        s.ready.store(true, std::memory_order_release);
      }
    }
    *out = s.value;
    return NVFP4_SUCCESS;
  }

 private:
  struct Slot {
    std::atomic<bool> ready{false};
    T value{};
  };
  Slot slots_[kMaxCachedDevices];
  std::mutex mutex_;
};

}  // namespace nvfp4
