// Realizes in several threads at once (include/kiln/tensor.h, "Threads"): independent graphs run
// side by side rather than one at a time, each gets its own values, and the caches they share
// (schedules, prepared kernels, programs, memory) stay consistent while other threads change
// their limits. Checked against values computed on the host in double precision.

#include <catch2/catch.hpp>

#include <kiln/kiln.h>

#include <atomic>
#include <cmath>
#include <string>
#include <thread>
#include <vector>

using namespace kiln;

namespace {

std::vector<float> ramp(int64_t count, float start) {
  std::vector<float> values(static_cast<size_t>(count));
  for (int64_t index = 0; index < count; ++index)
    values[static_cast<size_t>(index)] = start + 0.05f * static_cast<float>(index % 13);
  return values;
}

// The host's value of one step of the threads' work: exp(x * 0.5 + bias) - 1, in double. From
// the starting values (below 1) it converges, so that float rounding does not grow.
double step_reference(double x, double bias) {
  return std::exp(x * 0.5 + bias) - 1;
}

bool close_to(float value, double expected) {
  return std::fabs(value - expected) <= 1e-5 * (std::fabs(expected) + 1);
}

}  // namespace

TEST_CASE("threads realize independent graphs with their own values", "[threads][runtime]") {
  const std::string device = default_device();
  constexpr int kThreads = 4, kSteps = 60;
  constexpr int64_t kCount = 17;  // odd: kernels take their tails
  const Variable length("length", 1, 64);
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int thread = 0; thread < kThreads; ++thread) {
    threads.emplace_back([&, thread] {
      try {
        const float bias = 0.01f * static_cast<float>(thread);
        std::vector<double> expected(kCount);
        const std::vector<float> start = ramp(kCount, -0.5f + 0.1f * static_cast<float>(thread));
        for (int64_t index = 0; index < kCount; ++index) expected[index] = start[index];
        Tensor x = Tensor::from_vector(start, {kCount}, device);
        for (int step = 0; step < kSteps; ++step) {
          // The same graph shape in every thread (one cached schedule, one prepared kernel),
          // with each thread's own buffers.
          x = ((x * 0.5f + bias).exp() - 1).contiguous();
          x.realize();
          for (double& value : expected) value = step_reference(value, bias);
          // A graph over a Variable too: rebound per realize, concurrently.
          const int64_t prefix = 1 + (step + thread) % kCount;
          const Dim bound = length.bind(prefix);
          const float partial = x.shrink({{Dim(0), bound}}).sum().item<float>();
          double partial_expected = 0;
          for (int64_t index = 0; index < prefix; ++index) partial_expected += expected[index];
          if (!close_to(partial, partial_expected)) ++wrong;
        }
        const std::vector<float> got = x.to_vector<float>();
        for (int64_t index = 0; index < kCount; ++index) {
          if (!close_to(got[index], expected[index])) ++wrong;
        }
      } catch (...) {
        ++wrong;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  CHECK(wrong == 0);
}

TEST_CASE("threads that realize one shared graph at once each read its value",
          "[threads][runtime]") {
  const std::string device = default_device();
  for (int round = 0; round < 40; ++round) {
    // Unrealized and shared: each thread may compute it, and every reader gets the same sum.
    const Tensor shared =
        Tensor::from_vector(ramp(33, static_cast<float>(round)), {33}, device).reshape({3, 11}) *
            2 +
        1;
    double expected = 0;
    for (float value : ramp(33, static_cast<float>(round))) expected += 2.0 * value + 1;
    std::atomic<int> wrong{0};
    std::vector<std::thread> threads;
    for (int thread = 0; thread < 3; ++thread) {
      threads.emplace_back([&, thread] {
        try {
          if (thread == 0) shared.realize();
          const float total =
              thread == 2 ? shared.transpose().sum().item<float>() : shared.sum().item<float>();
          if (!close_to(total, expected)) ++wrong;
        } catch (...) {
          ++wrong;
        }
      });
    }
    for (std::thread& thread : threads) thread.join();
    CHECK(wrong == 0);
    CHECK(close_to(shared.sum().item<float>(), expected));
  }
}

TEST_CASE("realizes go on while another thread clears and trims the caches",
          "[threads][resources]") {
  const std::string device = default_device();
  const size_t kernel_limit = kernel_cache_limit();
  std::atomic<bool> done{false};
  std::atomic<int> wrong{0};
  std::thread clearer([&] {
    int round = 0;
    while (!done) {
      if (round % 3 == 0) clear_cache(device);
      set_kernel_cache_limit(round % 2 == 0 ? 2 : kernel_limit);
      ++round;
      std::this_thread::yield();
    }
  });
  std::vector<std::thread> workers;
  for (int thread = 0; thread < 2; ++thread) {
    workers.emplace_back([&, thread] {
      try {
        for (int step = 0; step < 40; ++step) {
          const float scale = static_cast<float>(1 + (step + thread) % 3);
          const Tensor values = Tensor::from_vector(ramp(29, scale), {29}, device);
          // Three graph shapes in turn, so that trimmed schedules and programs are needed again.
          Tensor result = step % 3 == 0   ? values * scale
                          : step % 3 == 1 ? values + scale
                                          : (values - scale) * 2;
          const std::vector<float> got = result.to_vector<float>();
          const std::vector<float> start = ramp(29, scale);
          for (size_t index = 0; index < got.size(); ++index) {
            const double x = start[index];
            const double expected = step % 3 == 0   ? x * scale
                                    : step % 3 == 1 ? x + scale
                                                    : (x - scale) * 2;
            if (!close_to(got[index], expected)) ++wrong;
          }
        }
      } catch (...) {
        ++wrong;
      }
    });
  }
  for (std::thread& worker : workers) worker.join();
  done = true;
  clearer.join();
  set_kernel_cache_limit(kernel_limit);
  CHECK(wrong == 0);
}

TEST_CASE("a kernel loaded again while its last copy is released runs, on every device",
          "[threads][resources]") {
  // With the kernel cache held to one program and cleared all the time, each realize loads its
  // kernel again from the disk cache while a dropped copy of the same binary may still be on
  // its way out in another thread. (PoCL keeps a program's files in a directory named by the
  // binary and removes it on release: two live programs of one binary lost their files.)
  const size_t kernel_limit = kernel_cache_limit();
  for (const std::string& device : devices()) {
    INFO(device);
    std::atomic<bool> done{false};
    std::atomic<int> wrong{0};
    std::thread clearer([&] {
      while (!done) {
        clear_cache(device);
        set_kernel_cache_limit(1);
        std::this_thread::yield();
      }
    });
    std::vector<std::thread> workers;
    for (int thread = 0; thread < 3; ++thread) {
      workers.emplace_back([&, thread] {
        try {
          for (int step = 0; step < 150; ++step) {
            const float start = 1.0f + static_cast<float>(thread);
            const Tensor values = Tensor::from_vector(std::vector<float>(29, start), {29}, device);
            const Tensor result = step % 2 ? values * 3.0f : values + 2.0f;
            const double expected = step % 2 ? start * 3.0 : start + 2.0;
            for (const float got : result.to_vector<float>())
              if (!close_to(got, expected)) ++wrong;
          }
        } catch (...) {
          ++wrong;
        }
      });
    }
    for (std::thread& worker : workers) worker.join();
    done = true;
    clearer.join();
    set_kernel_cache_limit(kernel_limit);
    CHECK(wrong == 0);
  }
}

TEST_CASE("a realize in one thread runs while another thread's realize is under way",
          "[threads][runtime]") {
  // Under one process-wide realize lock, the small realizes could finish only between the large
  // ones: at most one or two within any large realize. Side by side, many finish within one.
  // (This counts completions, not time: once the small graph's kernel is built, a large realize
  // takes the time of hundreds of small ones on any machine. The large thread starts after that.)
  const std::string device = default_device();
  std::atomic<bool> small_built{false}, stop{false};
  std::atomic<int64_t> small_done{0};
  std::atomic<int> wrong{0};
  int64_t most_within_one = 0;
  std::thread large([&] {
    const Tensor a = Tensor::rand({512, 512}, 3, "CPU").contiguous();
    const Tensor b = Tensor::rand({512, 512}, 4, "CPU").contiguous();
    a.realize();
    b.realize();
    while (!small_built) std::this_thread::yield();
    for (int round = 0; round < 20 && most_within_one < 10; ++round) {
      // A new constant each round: a new kernel, built (or loaded) and run within the realize.
      const Tensor product = (a.matmul(b) * static_cast<float>(round + 2)).sum();
      const int64_t before = small_done.load();
      product.realize();
      most_within_one = std::max(most_within_one, small_done.load() - before);
    }
    stop = true;
  });
  std::thread small([&] {
    const Tensor values = Tensor::from_vector(ramp(16, 1), {16}, device);
    Tensor running = values;
    while (!stop) {
      running = (running * 0.5f + values).contiguous();
      running.realize();
      ++small_done;
      small_built = true;
    }
    // A fixed point: running = running / 2 + values gives 2 * values.
    const std::vector<float> got = running.to_vector<float>();
    const std::vector<float> start = ramp(16, 1);
    for (size_t index = 0; index < got.size(); ++index) {
      if (small_done > 60 && !close_to(got[index], 2.0 * start[index])) ++wrong;
    }
  });
  large.join();
  small.join();
  CHECK(wrong == 0);
  INFO("small realizes finished within one large realize: " << most_within_one);
  CHECK(most_within_one >= 10);
}

TEST_CASE("a capture records none of another thread's unrelated realizes", "[threads][capture]") {
  const std::string device = default_device();
  std::atomic<bool> stop{false};
  std::atomic<int> wrong{0};
  std::thread unrelated([&] {
    const Tensor values = Tensor::from_vector(ramp(8, 2), {8}, device);
    while (!stop) {
      if (!close_to((values * 3).contiguous().sum().item<float>(), 3 * (8 * 2 + 0.05 * 28)))
        ++wrong;
    }
  });
  // Two kernels: each step's own, whatever the other thread realizes meanwhile.
  CapturedStep step([](const std::vector<Tensor>& in) {
    const Tensor doubled = (in[0] * 2).contiguous();
    return std::vector<Tensor>{(doubled + 1).contiguous()};
  });
  for (int call = 0; call < 6; ++call) {
    const std::vector<float> start = ramp(5, static_cast<float>(call));
    const std::vector<float> got =
        step({Tensor::from_vector(start, {5}, device)})[0].to_vector<float>();
    for (size_t index = 0; index < got.size(); ++index) {
      if (!close_to(got[index], 2.0 * start[index] + 1)) ++wrong;
    }
  }
  stop = true;
  unrelated.join();
  CHECK(step.captured());
  CHECK(step.kernels() == 2);
  CHECK(wrong == 0);
}

TEST_CASE("threads replaying one step at once each get their own results", "[threads][capture]") {
  // The step's kernels pass values through buffers of the capture that every replay shares: two
  // replays side by side once wrote each other's intermediates.
  const std::string device = default_device();
  CapturedStep step([](const std::vector<Tensor>& in) {
    const Tensor doubled = (in[0] * 2).contiguous();
    const Tensor shifted = (doubled + 1).contiguous();
    return std::vector<Tensor>{(shifted * shifted).contiguous()};
  });
  const std::vector<float> first = ramp(257, 0);
  for (int call = 0; call < 3; ++call) step({Tensor::from_vector(first, {257}, device)});
  REQUIRE(step.captured());
  REQUIRE(step.kernels() == 3);
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int thread = 0; thread < 4; ++thread) {
    threads.emplace_back([&, thread] {
      try {
        for (int call = 0; call < 30; ++call) {
          const std::vector<float> start = ramp(257, static_cast<float>(thread * 100 + call));
          const std::vector<float> got =
              step({Tensor::from_vector(start, {257}, device)})[0].to_vector<float>();
          for (size_t index = 0; index < got.size(); ++index) {
            const double shifted = 2.0 * start[index] + 1;
            if (!close_to(got[index], shifted * shifted)) ++wrong;
          }
        }
      } catch (...) {
        ++wrong;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  CHECK(wrong == 0);
}

TEST_CASE("threads summing long vectors at once each get their own sums", "[threads][runtime]") {
  // One kernel for every thread: on a GPU it may be a GRID reduction, whose scratch buffers all
  // launches of the kernel share (each device runs the launches it is given in order).
  const std::string device = default_device();
  constexpr int64_t kLength = int64_t{1} << 18;
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int thread = 0; thread < 3; ++thread) {
    threads.emplace_back([&, thread] {
      try {
        const Tensor values = Tensor::from_vector(
            std::vector<float>(kLength, static_cast<float>(thread + 1)), {kLength}, device);
        for (int round = 0; round < 5; ++round) {
          // Whole numbers below 2^24: every order of adding gives the exact sum.
          const float total = (values * static_cast<float>(round + 1)).sum().item<float>();
          if (total != static_cast<float>(kLength * (thread + 1) * (round + 1))) ++wrong;
        }
      } catch (...) {
        ++wrong;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  CHECK(wrong == 0);
}
