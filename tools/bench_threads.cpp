// The `threads` workload of `kiln bench`: realizes of small independent graphs made by several
// threads at once, beside the same realizes made by one thread.

#include <kiln/kiln.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "tools/bench.h"
#include "tools/bench_check.h"

namespace kiln::tools::bench {
namespace {

constexpr int kThreads = 4;
constexpr int64_t kElements = 16;
// The speed-up over one thread that the row asks of 4 threads on a machine of 2 cores or more.
constexpr double kTargetSpeedup = 1.5;

// Seconds for `threads` threads to make `per_thread` realizes each of (x + 1) * 2 over their own
// x, all started together.
double time_realizes(const std::vector<Tensor>& inputs, int threads, int per_thread) {
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> workers;
  for (int thread = 0; thread < threads; ++thread) {
    workers.emplace_back([&, thread] {
      const Tensor& x = inputs[static_cast<size_t>(thread)];
      ++ready;
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      for (int count = 0; count < per_thread; ++count) ((x + 1) * 2).realize();
    });
  }
  while (ready.load() < threads) std::this_thread::yield();
  const auto start = std::chrono::steady_clock::now();
  go.store(true, std::memory_order_release);
  for (std::thread& worker : workers) worker.join();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

Result bench_threads(Harness& harness) {
  Result result("threads", std::to_string(kThreads) + "x " + std::to_string(kElements) + " f32");
  result.unit = Result::Unit::Seconds;
  std::vector<std::vector<float>> values;
  std::vector<Tensor> inputs;
  for (int thread = 0; thread < kThreads; ++thread) {
    values.emplace_back(kElements);
    for (int64_t index = 0; index < kElements; ++index)
      values.back()[static_cast<size_t>(index)] = static_cast<float>(thread * 100 + index);
    inputs.push_back(Tensor::from_vector(values.back(), {kElements}, harness.device()));
  }
  // Each thread's first result, computed beside the others', against the host's.
  std::vector<std::string> problems(kThreads);
  std::vector<std::thread> checkers;
  for (int thread = 0; thread < kThreads; ++thread) {
    checkers.emplace_back([&, thread] {
      const std::vector<float> got = ((inputs[thread] + 1) * 2).to_vector<float>();
      problems[thread] = compare(
          got, [&](size_t index) { return (values[thread][index] + 1.0) * 2.0; }, 0, 0);
    });
  }
  for (std::thread& checker : checkers) checker.join();
  for (const std::string& problem : problems) {
    if (!problem.empty()) {
      result.problem = problem;
      return result;
    }
  }
  // Enough realizes that thread start-up is lost in them: a realize takes microseconds.
  const int per_thread = std::max(harness.repeat() * 200, 1000);
  time_realizes(inputs, kThreads, per_thread / 10);  // warm: every thread's allocations cached
  const Timing one = time_median(
      [&] {
        time_realizes(inputs, 1, per_thread * kThreads);
        harness.context().device().synchronize();
      },
      5, harness.sizes().budget_seconds);
  const Timing many = time_median(
      [&] {
        time_realizes(inputs, kThreads, per_thread);
        harness.context().device().synchronize();
      },
      5, harness.sizes().budget_seconds);
  // Per realize, over all threads: the figure must come below one thread's divided by the target.
  const double realizes = static_cast<double>(per_thread) * kThreads;
  result.timing = many;
  result.timing.median_seconds = many.median_seconds / realizes;
  result.figure = result.timing.median_seconds;
  const double one_thread = one.median_seconds / realizes;
  result.limit = one_thread / kTargetSpeedup;
  result.limit_name = "1 thread/1.5";
  const double speedup = one_thread / result.figure;
  char note[160];
  std::snprintf(note, sizeof note, "%.0f realizes/s in %d threads, %.0f in 1: %.2fx on %u cores%s",
                1 / result.figure, kThreads, 1 / one_thread, speedup,
                std::max(1u, std::thread::hardware_concurrency()),
                speedup >= kTargetSpeedup ? "" : ", below the 1.5x target");
  result.note = note;
  return result;
}

}  // namespace kiln::tools::bench
