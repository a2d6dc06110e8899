// Resources a long-running process must not leak or hoard: file descriptors held by loaded
// kernels, device memory kept by the caching allocator.

#include <catch2/catch.hpp>

#include <kiln/kiln.h>

#include <cstdint>
#include <filesystem>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "runtime/registry.h"

using namespace kiln;
using Catch::Matchers::Contains;

namespace {

size_t open_descriptors() {
  size_t count = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/fd"))
    ++count;
  return count;
}

// A CPU kernel that stores `value` in the first float of its buffer.
std::string constant_kernel(const std::string& name, int value) {
  return "void " + name +
         "(void** buffers, const long long* variables, long long begin, long long end) {\n"
         "  (void)variables; (void)begin; (void)end;\n"
         "  ((float*)buffers[0])[0] = " +
         std::to_string(value) + ".0f;\n}\n";
}

}  // namespace

TEST_CASE("loaded CPU kernels hold no file descriptor", "[resources]") {
  Device& cpu = open_device("CPU")->device();
  // Three different kernels, loaded over and over: the process runs out of descriptors (ulimit
  // -n) if each load keeps one, and a loader that reuses a descriptor's path for a new object
  // would hand back an earlier kernel.
  constexpr int kKernels = 3;
  constexpr int kLoads = 300;
  std::vector<std::vector<uint8_t>> binaries;
  for (int kernel = 0; kernel < kKernels; ++kernel) {
    const std::string name = "k_descriptor_" + std::to_string(kernel);
    binaries.push_back(cpu.compiler().compile(constant_kernel(name, kernel), name));
  }
  const size_t before = open_descriptors();
  std::vector<std::unique_ptr<Program>> programs;
  for (int load = 0; load < kLoads; ++load) {
    const int kernel = load % kKernels;
    programs.push_back(
        cpu.load_program(binaries[kernel], "k_descriptor_" + std::to_string(kernel)));
  }
  CHECK(open_descriptors() <= before + 4);

  DeviceMemory output = cpu.allocator().alloc(sizeof(float));
  for (int load = 0; load < kLoads; ++load) {
    LaunchRequest request;
    request.buffers = {output};
    request.wait = true;
    programs[load]->launch(request);
    float value = -1;
    cpu.allocator().copy_out(&value, output, sizeof(value));
    INFO("program " << load);
    REQUIRE(value == static_cast<float>(load % kKernels));
  }
  cpu.allocator().free(output, sizeof(float));
  programs.clear();
  CHECK(open_descriptors() <= before + 4);
}

TEST_CASE("realizing many distinct kernels holds no file descriptor", "[resources]") {
  const Tensor x = Tensor::from_vector<float>({1, 2, 3}, {3}, "CPU");
  CHECK((x + 1000.0).sum().item<float>() == 3006.0f);  // the thread pool and caches are up
  const size_t before = open_descriptors();
  // Distinct constants give distinct kernels (compiled, or loaded from the disk cache).
  for (int index = 0; index < 16; ++index) {
    INFO("kernel " << index);
    REQUIRE((x + (1001.0 + index)).sum().item<float>() == 6.0f + 3 * (1001.0f + index));
  }
  CHECK(open_descriptors() <= before + 4);
}

TEST_CASE("a buffer larger than the device can allocate fails before any kernel runs",
          "[resources][errors]") {
  for (const std::string& name : devices()) {
    std::shared_ptr<DeviceContext> context = open_device(name);
    const uint64_t limit = context->device().properties().max_allocation_bytes;
    INFO(name);
    REQUIRE(limit > 0);
    const Tensor small = (Tensor::from_vector<float>({1, 2, 3}, {3}, name) * 2).contiguous();
    // 2^22 x 2^22 float32 is 64 TiB, more than any device here can hold. Its schedule runs the
    // kernel of `small` first: that kernel must not run either.
    const int64_t side = int64_t{1} << 22;
    const Tensor huge = (Tensor::rand({side, side}, 1, name) + small.sum()).contiguous();
    const auto kernels_run = [&] {
      const KernelStats& stats = context->stats();
      return stats.compiles + stats.disk_hits + stats.memory_hits;
    };
    const int64_t before = kernels_run();
    try {
      huge.realize();
      FAIL("a 64 TiB buffer was allocated on " << name);
    } catch (const OutOfMemoryError& error) {
      CHECK_THAT(std::string(error.what()),
                 Contains("float32 buffer of " + std::to_string(side * side) + " elements") &&
                     Contains(std::to_string(uint64_t{1} << 46) + " bytes") &&
                     Contains("largest allocation it can make is " + std::to_string(limit)));
    }
    CHECK(kernels_run() == before);
    CHECK(small.sum().item<float>() == 12.0f);  // the operands stay usable
  }
}

TEST_CASE("a host allocation beyond RAM and swap is an OutOfMemoryError", "[resources][errors]") {
  std::shared_ptr<DeviceContext> cpu = open_device("CPU");
  const uint64_t limit = cpu->device().properties().max_allocation_bytes;
  REQUIRE(limit > 0);
  CHECK_THROWS_WITH(
      cpu->device().allocator().alloc(limit + 1),
      Contains(std::to_string(limit + 1) + " bytes") && Contains("physical memory and swap"));
  // Sizes near the top of size_t must not wrap around when rounded up to the alignment.
  CHECK_THROWS_AS(cpu->device().allocator().alloc(std::numeric_limits<size_t>::max() - 8),
                  OutOfMemoryError);
  CHECK_THROWS_AS(cpu->allocator().alloc(std::numeric_limits<size_t>::max() - 8), OutOfMemoryError);
}
