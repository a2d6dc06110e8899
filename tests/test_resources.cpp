// Resources a long-running process must not leak or hoard: file descriptors held by loaded
// kernels, device memory kept by the caching allocator.

#include <catch2/catch.hpp>

#include <kiln/kiln.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "runtime/caching_allocator.h"
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

// Hands out malloc'ed blocks and records which ones come back, in order.
class RecordingAllocator : public Allocator {
 public:
  DeviceMemory alloc(size_t nbytes) override {
    ++allocations;
    return std::malloc(nbytes);
  }
  void free(DeviceMemory memory, size_t) override {
    freed.push_back(memory);
    std::free(memory);
  }
  void copy_in(DeviceMemory destination, const void* host, size_t nbytes) override {
    std::memcpy(destination, host, nbytes);
  }
  void copy_out(void* host, DeviceMemory source, size_t nbytes) override {
    std::memcpy(host, source, nbytes);
  }
  int allocations = 0;
  std::vector<DeviceMemory> freed;
};

// Restores a device's cache limit when the test ends, however it ends.
class CacheLimitGuard {
 public:
  explicit CacheLimitGuard(std::string device)
      : device_(std::move(device)), limit_(cache_limit(device_)) {}
  ~CacheLimitGuard() { set_cache_limit(limit_, device_); }
  CacheLimitGuard(const CacheLimitGuard&) = delete;
  CacheLimitGuard& operator=(const CacheLimitGuard&) = delete;

 private:
  std::string device_;
  size_t limit_;
};

// Restores the kernel cache limit when the test ends, however it ends.
class KernelCacheLimitGuard {
 public:
  KernelCacheLimitGuard() : limit_(kernel_cache_limit()) {}
  ~KernelCacheLimitGuard() { set_kernel_cache_limit(limit_); }
  KernelCacheLimitGuard(const KernelCacheLimitGuard&) = delete;
  KernelCacheLimitGuard& operator=(const KernelCacheLimitGuard&) = delete;

 private:
  size_t limit_;
};

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
    const auto kernels_run = [&] { return context->stats().launches.load(); };
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

TEST_CASE("the caching allocator keeps at most its limit, evicting the least recently freed",
          "[resources][memory]") {
  RecordingAllocator driver;
  {
    CachingAllocator cache(driver, 1000);
    DeviceMemory a = cache.alloc(300), b = cache.alloc(400), c = cache.alloc(500);
    CHECK(cache.active_bytes() == 1200);
    cache.free(a, 300);
    cache.free(b, 400);
    CHECK(cache.cached_bytes() == 700);
    CHECK(driver.freed.empty());
    cache.free(c, 500);  // 1200 cached: the least recently freed (a) goes
    CHECK(cache.cached_bytes() == 900);
    CHECK(cache.active_bytes() == 0);
    REQUIRE(driver.freed == std::vector<DeviceMemory>{a});

    // A cached block is reused for the same size, and still works.
    const int allocations = driver.allocations;
    DeviceMemory again = cache.alloc(400);
    CHECK(again == b);
    CHECK(driver.allocations == allocations);
    const std::vector<uint8_t> pattern(400, 0x5a);
    std::vector<uint8_t> read(400);
    driver.copy_in(again, pattern.data(), pattern.size());
    driver.copy_out(read.data(), again, read.size());
    CHECK(read == pattern);
    cache.free(again, 400);

    // A block larger than the limit is not cached at all.
    DeviceMemory big = cache.alloc(2000);
    cache.free(big, 2000);
    CHECK(driver.freed.back() == big);
    CHECK(cache.cached_bytes() == 900);

    // Lowering the limit evicts now, oldest first (c was freed before b's second free).
    CHECK(cache.set_cache_limit(400) == 1000);
    CHECK(cache.cache_limit() == 400);
    CHECK(cache.cached_bytes() == 400);
    CHECK(driver.freed.back() == c);
    cache.release_cached();
    CHECK(cache.cached_bytes() == 0);
    CHECK(driver.freed.back() == b);
  }
  CHECK(driver.freed.size() == static_cast<size_t>(driver.allocations));  // nothing leaked
}

TEST_CASE("set_cache_limit bounds what dead tensors leave behind, clear_cache empties it",
          "[resources][memory]") {
  for (const std::string& device : devices()) {
    INFO(device);
    CacheLimitGuard restore(device);
    const size_t limit = 1 << 20;
    set_cache_limit(limit, device);
    CHECK(cache_limit(device) == limit);
    CHECK(cached_bytes(device) <= limit);
    // Six dead 256 KiB tensors of slightly different sizes (so none reuses another's block).
    const size_t active_before = active_bytes(device);
    for (int index = 0; index < 6; ++index) {
      const int64_t numel = (256 << 10) / 4 + 16 * index;
      // Uploaded, not computed: no kernel to compile per size.
      const std::vector<float> values(static_cast<size_t>(numel), static_cast<float>(index));
      const Tensor dead = Tensor::from_vector(values, {numel}, device);
      CHECK(active_bytes(device) >= active_before + static_cast<size_t>(numel) * 4);
    }
    CHECK(cached_bytes(device) <= limit);
    CHECK(cached_bytes(device) > 0);
    CHECK(active_bytes(device) == active_before);

    // Results stay right when they reuse cached blocks.
    const Tensor x = Tensor::from_vector<float>({1, 2, 3, 4}, {4}, device);
    for (int round = 0; round < 3; ++round) CHECK((x * 2).contiguous().sum().item<float>() == 20);

    clear_cache(device);
    CHECK(cached_bytes(device) == 0);
    CHECK((x * 3).sum().item<float>() == 30);

    CHECK(set_cache_limit(0, device) == limit);  // 0: nothing is cached
    CHECK((x * 4).contiguous().sum().item<float>() == 40);
    CHECK(cached_bytes(device) == 0);
  }
}

TEST_CASE("the default cache limit is a quarter of the device's memory, at most 1 GiB",
          "[resources][memory]") {
  CHECK(default_cache_limit(0) == size_t{1} << 30);
  CHECK(default_cache_limit(uint64_t{1} << 31) == size_t{1} << 29);
  CHECK(default_cache_limit(uint64_t{80} << 30) == size_t{1} << 30);
  const uint64_t memory = open_device("CPU")->device().properties().memory_bytes;
  CHECK(memory > 0);
  CHECK(cache_limit("CPU") == default_cache_limit(memory));
  CHECK(cache_limit() == cache_limit(default_device()));
  CHECK_THROWS_AS(cache_limit("NOSUCHDEVICE"), DeviceError);
}

// Issue 26 item 17: every distinct kernel used to stay in memory for the life of the process.
TEST_CASE("the in-memory kernel caches keep kernel_cache_limit() kernels, clear_cache drops them",
          "[resources][memory][kernel_cache]") {
  KernelCacheLimitGuard restore;
  CHECK(kernel_cache_limit() == 128);  // the documented default
  for (const std::string& device : devices()) {
    INFO(device);
    const size_t bound = 4;
    set_kernel_cache_limit(bound);
    CHECK(kernel_cache_limit() == bound);
    const Tensor x = Tensor::from_vector<float>({1, 2, 3}, {3}, device);
    // A captured step records a kernel that the loop below evicts: its replays still run it.
    CapturedStep step([](const std::vector<Tensor>& inputs) {
      return std::vector<Tensor>{(inputs[0] * 7.5).sum()};
    });
    for (int call = 0; call < 3; ++call) CHECK(step({x})[0].item<float>() == 45.0f);
    REQUIRE(step.captured());
    // Distinct constants give distinct kernels, each with its own schedule.
    constexpr int kKernels = 12;
    for (int round = 0; round < 2; ++round) {
      for (int index = 0; index < kKernels; ++index) {
        INFO("round " << round << ", kernel " << index);
        REQUIRE((x + (2001.0 + index)).sum().item<float>() == 6.0f + 3 * (2001.0f + index));
        const KernelCacheSizes sizes = kernel_cache_sizes(device);
        CHECK(sizes.programs <= bound);
        CHECK(sizes.prepared_kernels <= bound);
        CHECK(sizes.schedules <= bound);
      }
    }
    CHECK(kernel_cache_sizes(device).programs > 0);
    CHECK(step({x})[0].item<float>() == 45.0f);
    const Tensor other = Tensor::from_vector<float>({2, 4, 6}, {3}, device);
    CHECK(step({other})[0].item<float>() == 90.0f);

    // A smaller limit drops what is past it now.
    CHECK(set_kernel_cache_limit(2) == bound);
    KernelCacheSizes sizes = kernel_cache_sizes(device);
    CHECK(sizes.programs <= 2);
    CHECK(sizes.prepared_kernels <= 2);
    CHECK(sizes.schedules <= 2);

    set_kernel_cache_limit(bound);
    clear_cache(device);
    sizes = kernel_cache_sizes(device);
    CHECK(sizes.programs == 0);
    CHECK(sizes.prepared_kernels == 0);
    CHECK(sizes.schedules == 0);
    CHECK(step({x})[0].item<float>() == 45.0f);
    CHECK((x + 2001.0).sum().item<float>() == 6009.0f);
    CHECK(kernel_cache_sizes(device).programs == 1);
  }
}
