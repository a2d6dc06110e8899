#include "devices/cpu/thread_pool.h"

namespace kiln::cpu {

ThreadPool::ThreadPool(int threads) {
  for (int index = 1; index < threads; ++index) workers_.emplace_back([this] { work_loop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (std::thread& worker : workers_) worker.join();
}

void ThreadPool::run_chunks() {
  for (int chunk = next_chunk_++; chunk < chunks_; chunk = next_chunk_++) {
    const int64_t begin = total_ * chunk / chunks_;
    const int64_t end = total_ * (chunk + 1) / chunks_;
    (*body_)(begin, end);
    if (++finished_chunks_ == chunks_) {
      std::lock_guard<std::mutex> lock(mutex_);
      done_.notify_all();
    }
  }
}

void ThreadPool::work_loop() {
  uint64_t seen = 0;
  while (true) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
      if (stopping_) return;
      seen = generation_;
      ++active_workers_;
    }
    run_chunks();
    std::lock_guard<std::mutex> lock(mutex_);
    if (--active_workers_ == 0) done_.notify_all();
  }
}

void ThreadPool::parallel_for(int64_t total, int chunks,
                              const std::function<void(int64_t, int64_t)>& body) {
  if (chunks <= 1 || workers_.empty()) {
    body(0, total);
    return;
  }
  std::lock_guard<std::mutex> launch(launch_mutex_);
  {
    std::unique_lock<std::mutex> lock(mutex_);
    // A worker that woke late for the last job may still be leaving it.
    done_.wait(lock, [&] { return active_workers_ == 0; });
    body_ = &body;
    total_ = total;
    chunks_ = chunks;
    next_chunk_ = 0;
    finished_chunks_ = 0;
    ++generation_;
  }
  wake_.notify_all();
  run_chunks();
  std::unique_lock<std::mutex> lock(mutex_);
  // Also wait for every worker to leave run_chunks, so none touches the next job's fields early.
  done_.wait(lock, [&] { return finished_chunks_ == chunks_ && active_workers_ == 0; });
}

}  // namespace kiln::cpu
