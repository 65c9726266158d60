// A small lock for the allocator's short critical sections. Unlocking is a plain release
// store (std::mutex pays a second atomic read-modify-write there), which matters when a
// whole malloc+free pair costs tens of nanoseconds. Waiters spin briefly, then yield, so a
// holder preempted on a busy machine does not leave others burning a core.
#pragma once

#include <atomic>
#include <thread>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace frugal::alloc {

class SpinMutex {
 public:
  void lock() {
    for (int spins = 0; locked_.exchange(true, std::memory_order_acquire); ++spins) {
      while (locked_.load(std::memory_order_relaxed)) {
        if (spins < 64) {
          pause();
          ++spins;
        } else {
          std::this_thread::yield();
        }
      }
    }
  }
  bool try_lock() { return !locked_.exchange(true, std::memory_order_acquire); }
  void unlock() { locked_.store(false, std::memory_order_release); }

 private:
  static void pause() {
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#endif
  }
  std::atomic<bool> locked_{false};
};

}  // namespace frugal::alloc
