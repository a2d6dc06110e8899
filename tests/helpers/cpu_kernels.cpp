// A child process for the tests of settings a process reads once (KILN_CC, KILN_CACHE_DIR). On
// the CPU device it prints the disk cache key its compiler gives one fixed source, then computes
// max({1, NaN, 7}) (NaN, unless the kernel was compiled with -ffast-math) and `count` (argument,
// default 3) distinct kernels, and says how many kernels it compiled.
// Exit status: 0 computed, 3 CompileError, 4 any other kiln error, 5 anything else.

#include <kiln/kiln.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "runtime/kernel_cache.h"
#include "runtime/registry.h"

int main(int argc, char** argv) {
  try {
    const int count = argc > 1 ? std::atoi(argv[1]) : 3;
    std::shared_ptr<kiln::DeviceContext> cpu = kiln::open_device("CPU");
    std::printf("key: %s\n",
                kiln::kernel_cache_key(cpu->device().compiler().identity(), "source").c_str());
    const auto values = kiln::Tensor::from_vector<float>({1, NAN, 7}, {3}, "CPU");
    const float maximum = values.max().item<float>();
    if (std::isnan(maximum)) {
      std::printf("max: nan\n");
    } else {
      std::printf("max: %g\n", static_cast<double>(maximum));
    }
    const auto ones = kiln::Tensor::from_vector<float>({1, 1, 1}, {3}, "CPU");
    bool correct = true;
    for (int index = 0; index < count; ++index) {
      correct =
          correct && (ones + static_cast<double>(index)).sum().item<float>() == 3.0f * (index + 1);
    }
    std::printf("sums: %s\n", correct ? "right" : "wrong");
    std::printf("compiles: %lld\n", static_cast<long long>(cpu->stats().compiles));
    return 0;
  } catch (const kiln::CompileError& error) {
    std::printf("CompileError: %s\n", error.what());
    return 3;
  } catch (const kiln::Error& error) {
    std::printf("Error: %s\n", error.what());
    return 4;
  } catch (const std::exception& error) {
    std::printf("other error: %s\n", error.what());
    return 5;
  }
}
