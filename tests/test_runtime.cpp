// The runtime's parts: compile errors, the disk cache, the caching allocator, the registry.

#include <catch2/catch.hpp>

#include <kiln/kiln.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "codegen/decompose.h"
#include "runtime/caching_allocator.h"
#include "runtime/device_context.h"
#include "runtime/kernel_cache.h"
#include "runtime/opt_policy.h"
#include "runtime/registry.h"
#include "tests/child_process.h"
#include "tests/codegen_helpers.h"
#include "tests/device_launch.h"
#include "tests/test_support.h"

using namespace kiln;
using Catch::Matchers::Contains;
using kiln::test::ChildResult;
using kiln::test::run_child;
using kiln::test::ScratchFolder;

namespace {

std::string temporary_folder(const std::string& name) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("kiln-test-" + name + "-" + std::to_string(::getpid())))
                               .string();
  std::filesystem::remove_all(path);
  std::filesystem::create_directories(path);
  return path;
}

// The largest resident set this process has had, in KiB.
long peak_resident_kilobytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

// Counts driver calls, so a test can see what the cache saved.
class CountingAllocator : public Allocator {
 public:
  DeviceMemory alloc(size_t nbytes) override {
    ++allocations;
    if (fail_next || fail_always) {
      fail_next = false;
      throw OutOfMemoryError("out of memory (simulated)");
    }
    return std::malloc(nbytes);
  }
  void free(DeviceMemory memory, size_t) override {
    ++frees;
    std::free(memory);
  }
  void copy_in(DeviceMemory, const void*, size_t) override {}
  void copy_out(void*, DeviceMemory, size_t) override {}
  int allocations = 0;
  int frees = 0;
  bool fail_next = false;
  bool fail_always = false;
};

}  // namespace

TEST_CASE("a compile failure carries the compiler's log and the source", "[runtime][errors]") {
  Compiler& compiler = open_device("CPU")->device().compiler();
  const std::string source = "void broken(void) { this is not C; }\n";
  try {
    compiler.compile(source, "broken");
    FAIL("a broken kernel compiled");
  } catch (const CompileError& error) {
    CHECK_THAT(std::string(error.what()), Contains("broken") && Contains("this is not C"));
    CHECK_THAT(error.log(), Contains("error"));
    CHECK(error.source() == source);
  }
}

TEST_CASE("a compiler that exits 0 without a shared object is a CompileError",
          "[runtime][errors]") {
  ScratchFolder scratch("cc-silent");
  const std::string folder = "KILN_CACHE_DIR='" + (scratch.path() / "cache").string() + "' ";
  SECTION("no object at all (KILN_CC=true)") {
    const ChildResult result = run_child(folder + "KILN_CC=true", KILN_TEST_CPU_KERNELS);
    INFO(result.output);
    CHECK(result.exit_code == 3);  // a CompileError
    CHECK_THAT(result.output, Contains("produced no valid shared object") &&
                                  Contains("no file was written") && Contains("command: true -O2"));
  }
  SECTION("a file that is not a shared object") {
    // A "compiler" that writes text to its -o argument.
    const std::string script = (scratch.path() / "fake-cc").string();
    std::ofstream(script) << "#!/bin/sh\nwhile [ $# -gt 0 ]; do\n"
                             "  if [ \"$1\" = -o ]; then echo 'not an object' > \"$2\"; fi; shift\n"
                             "done\n";
    std::filesystem::permissions(script, std::filesystem::perms::owner_all);
    const ChildResult result =
        run_child(folder + "KILN_CC='" + script + "'", KILN_TEST_CPU_KERNELS);
    INFO(result.output);
    CHECK(result.exit_code == 3);
    CHECK_THAT(result.output, Contains("produced no valid shared object") &&
                                  Contains("14 bytes without an ELF header") &&
                                  Contains("command: " + script + " -O2"));
  }
}

TEST_CASE("the disk cache detects a corrupt entry", "[runtime][cache]") {
  const DiskCache cache(temporary_folder("cache"));
  const std::vector<uint8_t> binary{1, 2, 3, 4, 5, 6, 7, 8, 9};
  const std::string key = kernel_cache_key("compiler 1.0", "kernel source");
  CHECK_FALSE(cache.load(key).has_value());
  cache.store(key, binary);
  REQUIRE(cache.load(key) == binary);

  SECTION("a flipped payload byte fails the checksum") {
    std::fstream file(cache.path_of(key), std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(-3, std::ios::end);
    file.put(static_cast<char>(0x7f));
    file.close();
    CHECK_FALSE(cache.load(key).has_value());
    cache.store(key, binary);  // what the runtime does next: rebuild and rewrite
    CHECK(cache.load(key) == binary);
  }
  SECTION("a truncated file is rejected") {
    std::filesystem::resize_file(cache.path_of(key), 12);
    CHECK_FALSE(cache.load(key).has_value());
  }
  SECTION("a header that claims more than the file holds is rejected before allocating") {
    // 4 GiB claimed, 9 bytes there: loading must not allocate (and zero) the claim first.
    std::fstream file(cache.path_of(key), std::ios::in | std::ios::out | std::ios::binary);
    const uint64_t claimed = uint64_t{1} << 32;
    file.seekp(16);  // the payload size, after the magic and the key hash
    file.write(reinterpret_cast<const char*>(&claimed), sizeof(claimed));
    file.close();
    const long peak_before = peak_resident_kilobytes();
    CHECK_FALSE(cache.load(key).has_value());
    CHECK(peak_resident_kilobytes() - peak_before < 256 * 1024);
    cache.store(key, binary);  // rebuilt
    CHECK(cache.load(key) == binary);
  }
  SECTION("garbage is rejected") {
    std::ofstream(cache.path_of(key), std::ios::binary | std::ios::trunc)
        << "not a cache entry at all";
    CHECK_FALSE(cache.load(key).has_value());
  }
  std::filesystem::remove_all(cache.directory());
}

TEST_CASE("a cached binary the driver refuses is compiled again", "[runtime][cache]") {
  std::shared_ptr<DeviceContext> context = open_device("CPU");
  // A kernel no other test builds, so its cache entry is this test's own.
  const std::string name = "k_refused_" + std::to_string(::getpid());
  const std::string source = "void " + name +
                             "(void** buffers, const long long* variables, long long begin, "
                             "long long end) { (void)buffers; (void)variables; (void)begin; "
                             "(void)end; }\n";
  const std::string key = kernel_cache_key(context->device().compiler().identity(), source);
  const std::vector<uint8_t> garbage = {'n', 'o', 't', ' ', 'a', 'n', ' ', 'o', 'b', 'j'};
  DiskCache::instance().store(key, garbage);  // intact, checksummed, and useless
  const int64_t compiles_before = context->stats().compiles;
  CHECK_NOTHROW(context->program(source, name));
  CHECK(context->stats().compiles == compiles_before + 1);
  const std::optional<std::vector<uint8_t>> rewritten = DiskCache::instance().load(key);
  REQUIRE(rewritten);
  CHECK(*rewritten != garbage);
  std::filesystem::remove(DiskCache::instance().path_of(key));
}

TEST_CASE("a cache entry holding another kernel's entry is rebuilt", "[runtime][cache]") {
  // Two kernels with constants no other run uses, so that both are compiled afresh here: x * c
  // and x + c. Then the first one's valid entry is copied over the second one's file, as a stray
  // copy or rename would leave it: the second kernel must still compute x + c (Vulkan's entry
  // points are all `main`, so it once ran x * c), and its file must be rewritten with its own
  // binary.
  const double constant = 1000 + ::getpid() % 100000;
  const Tensor x = testing::input({64}, 7);
  const std::vector<float> values = x.to_vector<float>();
  int devices_run = 0;
  for (const std::string& name : devices()) {
    std::shared_ptr<DeviceContext> context = open_device(name);
    if (context->device().properties().compile_only) continue;
    ++devices_run;
    DYNAMIC_SECTION(name) {
      const Dialect& dialect = context->device().dialect();
      const OptTarget target = opt_target(context->device());
      auto render = [&](const LinearProgram& program) {
        return render_kernel(
            decompose_semantics(vectorize_stores(vectorize_loads(program, dialect), dialect),
                                dialect),
            dialect);
      };
      const LinearProgram times =
          testing::lower_with(testing::only_kernel(x * constant), {}, target);
      const LinearProgram plus =
          testing::lower_with(testing::only_kernel(x + constant), {}, target);
      const std::string identity = context->device().compiler().identity();
      const std::string times_key = kernel_cache_key(identity, render(times));
      const std::string plus_key = kernel_cache_key(identity, render(plus));
      REQUIRE(times_key != plus_key);
      context->compile(render(times), times.name);  // on disk only, not in the process
      context->compile(render(plus), plus.name);
      const DiskCache& cache = DiskCache::instance();
      const std::optional<std::vector<uint8_t>> times_binary = cache.load(times_key);
      REQUIRE(times_binary);
      std::filesystem::copy_file(cache.path_of(times_key), cache.path_of(plus_key),
                                 std::filesystem::copy_options::overwrite_existing);
      CHECK_FALSE(cache.load(plus_key).has_value());  // another key's entry is no entry

      const std::vector<float> got = testing::values_of<float>(
          testing::launch_program(*context, plus, {testing::bytes_of(values)}).at(0));
      std::vector<float> want;
      for (float value : values) want.push_back(static_cast<float>(value + constant));
      CHECK(got == want);
      const std::optional<std::vector<uint8_t>> rewritten = cache.load(plus_key);
      REQUIRE(rewritten);
      CHECK(*rewritten != *times_binary);
      std::filesystem::remove(cache.path_of(times_key));
      std::filesystem::remove(cache.path_of(plus_key));
    }
  }
  CHECK(devices_run > 0);
}

namespace {

// The CPU device, except that its next `failing_loads` program loads run out of memory, as a
// GPU's module load does when its memory is used up (kiln's cache included).
class LoadFailingDevice : public Device {
 public:
  explicit LoadFailingDevice(std::shared_ptr<DeviceContext> cpu) : cpu_(std::move(cpu)) {}
  const std::string& name() const override { return cpu_->device().name(); }
  const DeviceProperties& properties() const override { return cpu_->device().properties(); }
  const Dialect& dialect() const override { return cpu_->device().dialect(); }
  Allocator& allocator() override { return allocator_; }
  Compiler& compiler() override { return cpu_->device().compiler(); }
  std::unique_ptr<Program> load_program(const std::vector<uint8_t>& binary,
                                        const std::string& kernel_name) override {
    ++loads;
    if (failing_loads > 0) {
      --failing_loads;
      throw OutOfMemoryError("cuModuleLoadData: out of memory (simulated)");
    }
    return cpu_->device().load_program(binary, kernel_name);
  }
  void synchronize() override {}

  int failing_loads = 0;
  int loads = 0;
  CountingAllocator allocator_;

 private:
  std::shared_ptr<DeviceContext> cpu_;
};

}  // namespace

TEST_CASE("a program load out of memory gives back kiln's cache and tries once more",
          "[runtime][cache][errors]") {
  auto owned = std::make_unique<LoadFailingDevice>(open_device("CPU"));
  LoadFailingDevice& device = *owned;
  DeviceContext context(std::move(owned));
  const std::string name = "k_load_oom_" + std::to_string(::getpid());
  const std::string source = "void " + name +
                             "(void** buffers, const long long* variables, long long begin, "
                             "long long end) { (void)buffers; (void)variables; (void)begin; "
                             "(void)end; }\n";
  context.compile(source, name);  // in the disk cache: the loads below read it
  const std::string key = kernel_cache_key(device.compiler().identity(), source);
  if (!DiskCache::instance().load(key)) testing::skip("the disk cache is not writable here");
  const int64_t compiles = context.stats().compiles;
  // A freed block waits in kiln's cache.
  context.allocator().free(context.allocator().alloc(4096), 4096);
  REQUIRE(context.allocator().cached_bytes() == 4096);

  SECTION("a second load succeeds once the cache is given back, without compiling again") {
    device.failing_loads = 1;
    CHECK_NOTHROW(context.program(source, name));
    CHECK(device.loads == 2);
    CHECK(context.allocator().cached_bytes() == 0);
    CHECK(device.allocator_.frees == 1);
    CHECK(context.stats().compiles == compiles);
  }
  SECTION("still out of memory: the error says what kiln held, and nothing is recompiled") {
    device.failing_loads = 2;
    try {
      context.program(source, name);
      FAIL("loaded");
    } catch (const OutOfMemoryError& error) {
      CHECK_THAT(std::string(error.what()),
                 Contains("cuModuleLoadData: out of memory (simulated)") &&
                     Contains("its cache of freed blocks (4096 bytes) was given back"));
    }
    CHECK(device.loads == 2);
    CHECK(context.stats().compiles == compiles);
    // The next request loads it (the device has memory again).
    CHECK_NOTHROW(context.program(source, name));
  }
  std::filesystem::remove(DiskCache::instance().path_of(key));
}

TEST_CASE("an unwritable KILN_CACHE_DIR is warned about once and kernels still run",
          "[runtime][cache]") {
  // A folder below a plain file cannot be made, whoever runs the test (root included).
  ScratchFolder scratch("cache-unwritable");
  const std::string blocker = (scratch.path() / "a-file").string();
  std::ofstream(blocker) << "not a folder\n";
  const std::string folder = blocker + "/cache";
  const ChildResult result =
      run_child("-u KILN_DEBUG KILN_CACHE_DIR='" + folder + "'", KILN_TEST_CPU_KERNELS " 3");
  INFO(result.output);
  CHECK(result.exit_code == 0);
  CHECK_THAT(result.output, Contains("sums: right"));
  const std::string warning = "cannot write the kernel cache in " + folder;
  CHECK_THAT(result.output, Contains(warning + " (creating the folder: Not a directory)"));
  size_t warnings = 0;
  for (size_t at = result.output.find(warning); at != std::string::npos;
       at = result.output.find(warning, at + 1))
    ++warnings;
  CHECK(warnings == 1);  // four kernels were compiled, each failing to store
}

TEST_CASE("the disk cache is safe for concurrent writers", "[runtime][cache]") {
  const std::string folder = temporary_folder("cache-race");
  const std::string key = kernel_cache_key("compiler", "shared kernel");
  std::vector<uint8_t> binary(1 << 16);
  for (size_t index = 0; index < binary.size(); ++index)
    binary[index] = static_cast<uint8_t>(index * 7);
  std::vector<std::thread> writers;
  std::atomic<int> partial_entries{0};  // counted, not CHECKed: Catch2 asserts on one thread only
  for (int writer = 0; writer < 4; ++writer) {
    writers.emplace_back([&] {
      const DiskCache cache(folder);
      for (int round = 0; round < 20; ++round) {
        cache.store(key, binary);
        auto loaded = cache.load(key);
        if (loaded && *loaded != binary) ++partial_entries;
      }
    });
  }
  for (std::thread& writer : writers) writer.join();
  CHECK(partial_entries == 0);
  CHECK(DiskCache(folder).load(key) == binary);
  // No temporary files are left behind.
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(folder))
    files += entry.is_regular_file();
  CHECK(files == 1);
  std::filesystem::remove_all(folder);
}

TEST_CASE("cache keys depend on the compiler and the source", "[runtime][cache]") {
  CHECK(kernel_cache_key("gcc 12", "a") != kernel_cache_key("gcc 13", "a"));
  CHECK(kernel_cache_key("gcc 12", "a") != kernel_cache_key("gcc 12", "b"));
  CHECK(kernel_cache_key("gcc 12", "a") == kernel_cache_key("gcc 12", "a"));
}

TEST_CASE("the disk cache key covers every word of KILN_CC", "[runtime][cache]") {
  // Two processes share one cache folder; the first compiles with -ffast-math, which turns the
  // NaN-propagating max into a plain comparison. The second must not load its binaries.
  ScratchFolder cache("cc-flags");
  const std::string folder = "KILN_CACHE_DIR='" + cache.string() + "' ";
  const ChildResult fast = run_child(folder + "KILN_CC='cc -ffast-math'", KILN_TEST_CPU_KERNELS);
  const ChildResult plain = run_child(folder + "KILN_CC=cc", KILN_TEST_CPU_KERNELS);
  const ChildResult unset = run_child("-u KILN_CC " + folder, KILN_TEST_CPU_KERNELS);
  INFO("-ffast-math:\n" << fast.output << "plain:\n" << plain.output << "unset:\n" << unset.output);
  REQUIRE(fast.exit_code == 0);
  REQUIRE(plain.exit_code == 0);
  REQUIRE(unset.exit_code == 0);
  const auto key = [](const std::string& output) { return output.substr(0, output.find('\n')); };
  CHECK(key(fast.output) != key(plain.output));
  CHECK(key(unset.output) == key(plain.output));  // the default command is `cc`
  CHECK_THAT(plain.output, Contains("max: nan") && Contains("sums: right"));
  CHECK_THAT(plain.output, !Contains("compiles: 0"));
  CHECK_THAT(unset.output, Contains("compiles: 0"));  // plain's binaries, from the disk cache
}

TEST_CASE("the caching allocator reuses freed blocks and retries after out-of-memory",
          "[runtime]") {
  CountingAllocator driver;
  {
    CachingAllocator allocator(driver, 1 << 20);
    DeviceMemory first = allocator.alloc(256);
    allocator.free(first, 256);
    DeviceMemory second = allocator.alloc(256);
    CHECK(second == first);
    CHECK(driver.allocations == 1);
    DeviceMemory other = allocator.alloc(512);
    allocator.free(other, 512);
    CHECK(allocator.cached_bytes() == 512);
    driver.fail_next =
        true;  // the next driver allocation fails once: the cache is emptied and it retries
    DeviceMemory third = allocator.alloc(1024);
    CHECK(third != nullptr);
    CHECK(allocator.cached_bytes() == 0);
    allocator.free(second, 256);
    // Out of memory again after the retry: the error says what kiln held and gave back.
    driver.fail_always = true;
    try {
      allocator.alloc(4096);
      FAIL("the allocation succeeded");
    } catch (const OutOfMemoryError& error) {
      CHECK_THAT(std::string(error.what()),
                 Contains("out of memory (simulated)") && Contains("in use hold 1024 bytes") &&
                     Contains("freed blocks (256 bytes) was given back"));
    }
    driver.fail_always = false;
    allocator.free(third, 1024);
  }
  CHECK(driver.frees ==
        driver.allocations - 3);  // every block went back (three allocations failed)
}

TEST_CASE("the registry finds the CPU plugin and canonicalizes names", "[runtime]") {
  const std::vector<std::string> names = devices();
  CHECK(std::find(names.begin(), names.end(), "CPU") != names.end());
  CHECK(canonical_device_name("cpu") == "CPU");
  CHECK(canonical_device_name("cl:0") == "CL");
  CHECK(canonical_device_name("CL:1") == "CL:1");
  CHECK(open_device("cpu").get() == open_device("CPU").get());
}

TEST_CASE("a device index out of range is a DeviceError listing the devices", "[runtime][errors]") {
  for (const std::string name : {"CPU:1", "CPU:99999999999", "cpu:99999999999999999999999999"}) {
    INFO(name);
    try {
      open_device(name);
      FAIL("opened " << name);
    } catch (const DeviceError& error) {
      CHECK_THAT(std::string(error.what()), Contains(name + " does not exist") &&
                                                Contains("available devices: ") && Contains("CPU"));
    }
  }
  CHECK_THROWS_AS(open_device("CPU:x"), DeviceError);
  CHECK_THROWS_AS(open_device("CPU:-1"), DeviceError);
}

#ifdef KILN_TOOL_PATH
TEST_CASE("kiln devices reports a KILN_DEVICE index out of range as kiln's error",
          "[runtime][errors]") {
  const ChildResult result =
      run_child("KILN_DEVICE=CPU:99999999999", std::string(KILN_TOOL_PATH) + " devices");
  INFO(result.output);
  CHECK(result.exit_code == 1);
  CHECK_THAT(result.output, Contains("CPU:99999999999 does not exist") &&
                                Contains("available devices: ") && !Contains("internal error"));
}
#endif
