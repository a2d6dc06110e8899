#pragma once
// A lock for short critical sections that many threads take at once: the caches and tables every
// realize consults (graph nodes, realized values, cached blocks and schedules). A waiter spins,
// then yields, instead of sleeping in the kernel: a futex sleep and wake-up costs more than a
// whole cached realize of a small graph (two threads on one std::mutex ran slower than one).
// Not for sections that may block (driver calls, compiles, file access).

#include <atomic>
#include <thread>

namespace kiln {

class SpinLock {
 public:
  void lock() noexcept {
    for (int tries = 0;; ++tries) {
      if (!locked_.exchange(true, std::memory_order_acquire)) return;
      // Wait on a plain read, so that waiters do not take the cache line from the holder.
      while (locked_.load(std::memory_order_relaxed)) {
        if (++tries > kSpinsBeforeYield) std::this_thread::yield();
      }
    }
  }
  bool try_lock() noexcept { return !locked_.exchange(true, std::memory_order_acquire); }
  void unlock() noexcept { locked_.store(false, std::memory_order_release); }

 private:
  static constexpr int kSpinsBeforeYield = 128;
  std::atomic<bool> locked_{false};
};

}  // namespace kiln
