#pragma once
// A fixed set of worker threads that split one range of work at a time. The calling thread
// works too, so a pool of N threads keeps N - 1 workers.

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace kiln::cpu {

class ThreadPool {
 public:
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }
  // Calls body(begin, end) over `chunks` contiguous pieces of [0, total); returns when all ran.
  void parallel_for(int64_t total, int chunks, const std::function<void(int64_t, int64_t)>& body);

 private:
  void work_loop();
  void run_chunks();

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::mutex launch_mutex_;  // one parallel_for at a time
  std::condition_variable wake_;
  std::condition_variable done_;
  uint64_t generation_ = 0;
  bool stopping_ = false;
  // The job in flight.
  const std::function<void(int64_t, int64_t)>* body_ = nullptr;
  int64_t total_ = 0;
  int chunks_ = 0;
  std::atomic<int> next_chunk_{0};
  std::atomic<int> finished_chunks_{0};
  int active_workers_ = 0;  // workers inside run_chunks; guarded by mutex_
};

}  // namespace kiln::cpu
