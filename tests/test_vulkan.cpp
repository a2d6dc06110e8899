// The Vulkan device: what it reports without a driver, the limits it reads from the driver and
// the scheduler honours (lavapipe's: 65535 workgroups per dimension, 32 buffers per kernel, a
// work item's loops stopped after 65535 iterations, 128 MiB per buffer binding), glslang's errors,
// and kiln's float semantics where Mesa's shader compiler folds them away. The conformance battery
// and the rest of the suite run on VULKAN too (scripts/setup.sh test).

#include <unistd.h>
#include <catch2/catch.hpp>

#include <kiln/capture.h>
#include <kiln/error.h>
#include <kiln/kiln.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "codegen/lower.h"
#include "runtime/device_context.h"
#include "runtime/opt_policy.h"
#include "runtime/registry.h"
#include "tests/child_process.h"
#include "tests/codegen_helpers.h"
#include "tests/test_support.h"
#include "tools/conformance/runner.h"

using namespace kiln;
using testing::contains;

namespace {

// The VULKAN device; skips the test case where the plugin was not built or finds no device here.
std::shared_ptr<DeviceContext> vulkan() {
  return testing::device_or_skip("VULKAN");
}

std::vector<double> values_of(const Tensor& tensor) {
  const std::vector<double> values = tensor.cast(dtypes::float64).to_vector<double>();
  return values;
}

// Runs `body` with every kernel's opts from `policy`, restoring the settings after.
template <typename Body>
void with_opts(OptPolicy policy, Body&& body) {
  const OptSettings before = opt_settings();
  OptSettings settings = before;
  settings.policy = policy;
  set_opt_settings(settings);
  try {
    body();
  } catch (...) {
    set_opt_settings(before);
    throw;
  }
  set_opt_settings(before);
}

}  // namespace

#ifdef KILN_TOOL_PATH
TEST_CASE("without a Vulkan driver, VULKAN is unavailable and says why", "[vulkan]") {
  testing::plugin_or_skip("VULKAN");
  // The loader then finds no driver manifest at all.
  const test::ChildResult listed = test::run_child(
      "VK_ICD_FILENAMES=/nonexistent/icd.json VK_DRIVER_FILES=/nonexistent/icd.json",
      std::string(KILN_TOOL_PATH) + " devices");
  INFO(listed.output);
  CHECK(contains(listed.output, "VULKAN  unavailable"));
  CHECK((contains(listed.output, "no Vulkan driver") ||
         contains(listed.output, "no Vulkan 1.2 device")));
  const test::ChildResult opened = test::run_child(
      "VK_ICD_FILENAMES=/nonexistent/icd.json VK_DRIVER_FILES=/nonexistent/icd.json "
      "KILN_DEVICE=VULKAN",
      std::string(KILN_TOOL_PATH) + " devices");
  CHECK(opened.exit_code == 1);
  CHECK(contains(opened.output, "VULKAN"));
}
#endif

TEST_CASE("the Vulkan device reports the driver's limits", "[vulkan]") {
  std::shared_ptr<DeviceContext> context = vulkan();
  const DeviceProperties& properties = context->device().properties();
  CHECK(properties.max_kernel_buffers >= 8);
  CHECK(properties.max_workgroups[0] >= 65535);
  CHECK(properties.local_memory_bytes >= 16384);
  CHECK(properties.max_allocation_bytes > 0);
  CHECK_FALSE(properties.max_allocation_limit.empty());
  CHECK_FALSE(properties.hardware_id.empty());
  CHECK(context->device().supports(dtypes::float32));
  if (contains(properties.driver, "llvmpipe")) {
    CHECK(properties.max_loop_iterations == 65535);
    CHECK(properties.max_kernel_buffers == 32);
    CHECK(properties.max_allocation_bytes == (uint64_t{128} << 20));
    CHECK(context->device().supports(dtypes::float64));
    CHECK(context->device().supports(dtypes::int8));
  }
  const std::string identity = context->device().compiler().identity();
  CHECK(contains(identity, "glslang"));
  CHECK(contains(identity, "pipeline cache"));
}

TEST_CASE("the Vulkan copy limit is the faster of vkCmdCopyBuffer and a checked shader copy",
          "[vulkan]") {
  std::shared_ptr<DeviceContext> context = vulkan();
  // Not a multiple of the shader's workgroup: its loop must still reach the last bytes, which
  // measure_limits checks (it throws where they were not copied).
  const DeviceLimits limits = context->device().measure_limits((size_t{3} << 20) + 48, 0);
  CHECK(limits.copy_bytes_per_second > 0);
  CHECK(contains(limits.notes, "no vendor GEMM"));
}

TEST_CASE("glslang's errors carry its log and the source", "[vulkan]") {
  std::shared_ptr<DeviceContext> context = vulkan();
  const std::string source =
      "#version 450\nlayout(local_size_x = 1) in;\nvoid main() { undeclared_name = 1; }\n";
  try {
    context->device().compiler().compile(source, "broken");
    FAIL("glslang accepted a broken shader");
  } catch (const CompileError& error) {
    CHECK(contains(error.what(), "broken"));
    CHECK(contains(error.log(), "undeclared_name"));
    CHECK(error.source() == source);
  }
}

TEST_CASE("a launch of more workgroups than one dimension allows is spread", "[vulkan]") {
  std::shared_ptr<DeviceContext> context = vulkan();
  const int64_t per_dimension = context->device().properties().max_workgroups[0];
  if (per_dimension > (int64_t{1} << 20))
    testing::skip("this device takes " + std::to_string(per_dimension) +
                  " workgroups in one dimension: nothing to spread");
  // One work item per workgroup (no opts): 3 * per_dimension + 5 workgroups along x.
  const int64_t count = 3 * per_dimension + 5;
  with_opts(OptPolicy::None, [&] {
    const Tensor x = Tensor::arange(0, count, 1, dtypes::int32, "VULKAN");
    const std::vector<int32_t> doubled = (x * 2).to_vector<int32_t>();
    REQUIRE(doubled.size() == static_cast<size_t>(count));
    for (int64_t at :
         {int64_t{0}, per_dimension - 1, per_dimension, 2 * per_dimension + 7, count - 1})
      CHECK(doubled[static_cast<size_t>(at)] == 2 * at);
  });
  const ScheduleItem item = testing::only_kernel(testing::input({count}, 1) + 1.0f);
  const LinearProgram program = testing::lower_with(item, {}, opt_target(context->device()));
  REQUIRE(program.launch.size() == 1);
  CHECK(program.launch[0].spread());
}

TEST_CASE("long reductions stay inside lavapipe's loop limit", "[vulkan]") {
  std::shared_ptr<DeviceContext> context = vulkan();
  if (context->device().properties().max_loop_iterations <= 0)
    testing::skip("this Vulkan device does not limit a work item's loops");
  // Rows far longer than 65535, reduced along either axis, with every policy: each is split.
  const int64_t length = 200003;
  const Tensor values = Tensor::arange(0, 2 * length, 1, dtypes::float32, "VULKAN") % 7.0f;
  const Tensor rows = values.reshape({2, length});
  const Tensor columns = values.reshape({length, 2});
  for (OptPolicy policy : {OptPolicy::Default, OptPolicy::None}) {
    with_opts(policy, [&] {
      const std::vector<double> row_sums = values_of(rows.sum({1}));
      const std::vector<double> column_max = values_of(columns.max({0}));
      const std::vector<double> column_min = values_of(columns.min({0}));
      double expected[2] = {0, 0};
      for (int64_t at = 0; at < 2 * length; ++at) expected[at / length] += at % 7;
      CHECK(row_sums[0] == Approx(expected[0]).epsilon(1e-6));
      CHECK(row_sums[1] == Approx(expected[1]).epsilon(1e-6));
      CHECK(column_max == std::vector<double>{6, 6});
      CHECK(column_min == std::vector<double>{0, 0});
    });
  }
}

TEST_CASE("a kernel binds no more buffers than the Vulkan device allows", "[vulkan]") {
  std::shared_ptr<DeviceContext> context = vulkan();
  const int64_t inputs = 2 * context->device().properties().max_kernel_buffers + 3;
  Tensor total = Tensor::full({5}, 0, dtypes::int32, "VULKAN");
  for (int64_t index = 0; index < inputs; ++index)
    total = total + Tensor::full({5}, static_cast<double>(index), dtypes::int32, "VULKAN")
                        .contiguous()
                        .realize();
  const std::vector<int32_t> sums = total.to_vector<int32_t>();
  for (int32_t sum : sums) CHECK(sum == inputs * (inputs - 1) / 2);
}

TEST_CASE("a buffer past the device's binding range is refused naming the limit", "[vulkan]") {
  std::shared_ptr<DeviceContext> context = vulkan();
  const uint64_t limit = context->device().properties().max_allocation_bytes;
  if (limit > (uint64_t{1} << 31))
    testing::skip("the binding range (" + std::to_string(limit) + " bytes) is too large to try");
  const int64_t elements = static_cast<int64_t>(limit / 4) + 1;
  try {
    Tensor::full({elements}, 1, dtypes::float32, "VULKAN").contiguous().realize();
    FAIL("a buffer past the device's limit was made");
  } catch (const OutOfMemoryError& error) {
    CHECK(contains(error.what(), std::to_string(limit)));
    CHECK(contains(error.what(), context->device().properties().max_allocation_limit));
  }
}

TEST_CASE("Vulkan divides within 1 ulp over the whole float range", "[vulkan]") {
  std::shared_ptr<DeviceContext> context = vulkan();
  // Huge divisors (NVIDIA's reciprocal underflowed), quotients a rounding apart, subnormal
  // divisors (a correction step through their overflowing reciprocal would give NaN), and the
  // special values.
  const float tiny = std::numeric_limits<float>::denorm_min();
  const std::vector<float> a = {6.0f, 1.0f, 1.0f, 2.0f, tiny, 3e-38f, INFINITY, 5.0f, 0.0f};
  const std::vector<float> b = {3e38f, 3.0f, 10.0f, 7.0f, tiny, tiny * 4, 3e38f, INFINITY, 0.0f};
  const std::vector<float> got =
      (Tensor::from_vector<float>(a, {9}, "VULKAN") / Tensor::from_vector<float>(b, {9}, "VULKAN"))
          .to_vector<float>();
  const bool flushes = conformance::device_flushes_subnormals("VULKAN");
  for (size_t index = 0; index < a.size(); ++index) {
    const float want = a[index] / b[index];
    INFO(a[index] << " / " << b[index] << " = " << got[index] << ", expected " << want);
    if (std::isnan(want)) {
      CHECK(std::isnan(got[index]));
    } else if (std::isinf(want)) {
      CHECK(got[index] == want);
    } else if (flushes && (std::fpclassify(a[index]) == FP_SUBNORMAL ||
                           std::fpclassify(b[index]) == FP_SUBNORMAL)) {
      continue;  // what such a device computes is checked by kiln conformance
    } else {
      CHECK(std::fabs(got[index] - want) <= std::fabs(std::nextafter(want, INFINITY) - want));
    }
  }
}

TEST_CASE("Vulkan keeps IEEE results the shader compiler would fold", "[vulkan]") {
  std::shared_ptr<DeviceContext> context = vulkan();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const Tensor x =
      Tensor::from_vector<float>({0.0f, 1.0f, -1.0f, NAN, INFINITY, -0.0f}, {6}, "VULKAN");
  // x * 0 (sign), x / 0 and comparisons of widened integers against constants: lavapipe folded
  // each wrongly when the constant was a literal in the shader.
  const std::vector<double> sign = values_of(x.sign());
  CHECK(std::isnan(sign[3]));
  CHECK(std::signbit(sign[5]));
  const std::vector<double> quotient = values_of(x / 0.0);
  CHECK(std::isnan(quotient[0]));
  CHECK(quotient[1] == inf);
  CHECK(quotient[2] == -inf);
  CHECK(std::isnan(quotient[3]));
  CHECK(std::isnan(values_of((x.sum() / 0.0).sqrt())[0]));
  const Tensor wide =
      Tensor::from_vector<int32_t>({28, -335464312, -45, 7}, {4}, "VULKAN").cast(dtypes::int64);
  CHECK(wide.abs().to_vector<int64_t>() == std::vector<int64_t>{28, 335464312, 45, 7});
  CHECK((wide < 5).to_vector<bool>() == std::vector<bool>{false, true, true, false});
  (void)nan;
}

TEST_CASE("Vulkan computes what the CPU computes", "[vulkan]") {
  std::shared_ptr<DeviceContext> context = vulkan();
  auto same = [](const Tensor& on_vulkan, const Tensor& on_cpu) {
    const std::vector<double> want = values_of(on_cpu);
    const std::vector<double> got = values_of(on_vulkan.to(std::string("CPU")));
    REQUIRE(got.size() == want.size());
    for (size_t index = 0; index < want.size(); ++index)
      CHECK(got[index] == Approx(want[index]).epsilon(1e-5).margin(1e-6));
  };
  const Tensor a = Tensor::rand({129, 257}, 1, "CPU");
  const Tensor b = Tensor::rand({257, 65}, 2, "CPU");
  const Tensor a_vulkan = a.to(std::string("VULKAN")), b_vulkan = b.to(std::string("VULKAN"));
  same(a_vulkan.matmul(b_vulkan), a.matmul(b));
  same(a_vulkan.softmax(-1), a.softmax(-1));
  same(a_vulkan.sum(), a.sum());
  same(a_vulkan.cast(dtypes::float64).exp().sin(), a.cast(dtypes::float64).exp().sin());
  same(a_vulkan.cast(dtypes::float16).erf(), a.cast(dtypes::float16).erf());
}

TEST_CASE("a Vulkan kernel reads variables past its push constants from a buffer", "[vulkan]") {
  vulkan();
  // 34 variables in one kernel: the sums of 34 prefixes of one buffer, added.
  const Tensor base = Tensor::arange(200, "VULKAN");
  for (int64_t shift : {0, 7}) {
    std::vector<Variable> variables;
    Tensor total = Tensor::zeros(Shape{}, dtypes::int64, "VULKAN");
    int64_t want = 0;
    for (int index = 0; index < 34; ++index) {
      variables.emplace_back("v" + std::to_string(index), 1, 200);
      const int64_t length = 5 + index * 5 + shift;
      total = total + base.shrink({{Dim(0), variables.back().bind(length)}}).sum();
      want += length * (length - 1) / 2;
    }
    CHECK(total.item<int64_t>() == want);
  }
}

TEST_CASE("Vulkan runs more kernels than one batch holds, in order", "[vulkan]") {
  vulkan();
  // Launches are recorded into batches of CommandQueue::kBatchCommands: a chain of 100 kernels
  // spans several, reuses its intermediates' memory inside one, and takes new host inputs between
  // kernels. The reference is the same float arithmetic on the host.
  const int64_t size = 1000;
  std::vector<float> host(size);
  for (int64_t index = 0; index < size; ++index) host[size_t(index)] = float(index % 17) - 8.0f;
  std::vector<float> want = host;
  Tensor value = Tensor::from_vector(host, {size}, "VULKAN");
  std::vector<Tensor> kept;
  for (int step = 0; step < 100; ++step) {
    std::vector<float> input(size);
    for (int64_t index = 0; index < size; ++index) input[size_t(index)] = float((index + step) % 5);
    value = (value * 0.5f + Tensor::from_vector(input, {size}, "VULKAN")).contiguous();
    for (int64_t index = 0; index < size; ++index)
      want[size_t(index)] = want[size_t(index)] * 0.5f + input[size_t(index)];
    if (step % 10 == 9) {
      value = (value - value.max()).contiguous();  // a reduce, then a kernel reading it
      float largest = want[0];
      for (float element : want) largest = std::max(largest, element);
      for (float& element : want) element -= largest;
      kept.push_back(value);
    }
  }
  value.realize();
  CHECK(value.to_vector<float>() == want);
  CHECK(kept.front().to_vector<float>().size() == size_t(size));

  // The same through capture and replay: 40 kernels per replay.
  CapturedStep step([](const std::vector<Tensor>& inputs) {
    Tensor chained = inputs[0];
    for (int kernel = 0; kernel < 40; ++kernel) chained = (chained * 0.5f + 1.0f).contiguous();
    return std::vector<Tensor>{chained};
  });
  for (int call = 0; call < 4; ++call) {
    const std::vector<float> start(64, float(call));
    float expected = float(call);
    for (int kernel = 0; kernel < 40; ++kernel) expected = expected * 0.5f + 1.0f;
    const std::vector<Tensor> outputs = step({Tensor::from_vector(start, {64}, "VULKAN")});
    CHECK(outputs[0].to_vector<float>() == std::vector<float>(64, expected));
  }
  CHECK(step.captured());
}

// Run in a child process with KILN_VULKAN_STAGING=1 (below): copies in both directions through
// the two 8 MiB staging buffers, in chunks, interleaved with batched kernels.
TEST_CASE("Vulkan copies through staging buffers", "[.][vulkan-staging]") {
  vulkan();
  for (int64_t count : {int64_t{1}, int64_t{7}, int64_t{5'000'003}}) {
    INFO(count << " floats");
    std::vector<float> host(static_cast<size_t>(count));
    for (int64_t index = 0; index < count; ++index)
      host[static_cast<size_t>(index)] = static_cast<float>(index % 1000) * 0.5f;
    const Tensor on_device = Tensor::from_vector(host, {count}, "VULKAN");
    const std::vector<float> back = (on_device + 1.0f).to_vector<float>();
    REQUIRE(back.size() == host.size());
    bool same = true;
    for (size_t index = 0; index < host.size(); ++index) same &= back[index] == host[index] + 1.0f;
    CHECK(same);
  }
  const std::vector<int8_t> bytes = {1, -2, 3, -4, 5};
  CHECK(Tensor::from_vector(bytes, {5}, "VULKAN").to_vector<int8_t>() == bytes);
  // Uploads between the kernels of one batch.
  Tensor total = Tensor::zeros({3}, dtypes::float32, "VULKAN");
  for (int step = 0; step < 40; ++step)
    total =
        (total + Tensor::from_vector(std::vector<float>{1.0f, 2.0f, float(step)}, {3}, "VULKAN"))
            .contiguous();
  CHECK(total.to_vector<float>() == std::vector<float>{40.0f, 80.0f, 780.0f});
}

TEST_CASE("Vulkan's staging copies (a discrete GPU's path) work on this device", "[vulkan]") {
  vulkan();
  const test::ChildResult result =
      test::run_child("KILN_VULKAN_STAGING=1 KILN_DEVICE=VULKAN",
                      "/proc/" + std::to_string(getpid()) + "/exe '[vulkan-staging]'");
  INFO(result.output);
  CHECK(result.exit_code == 0);
  CHECK(contains(result.output, "All tests passed"));
}

#ifdef KILN_TOOL_PATH
TEST_CASE("timed Vulkan launches (KILN_DEBUG=2) report their times", "[vulkan]") {
  vulkan();
  // A kernel's first launch waits for its compile; a timed one then read a retired submission.
  const test::ScratchFolder cache("timed-vulkan");
  const test::ChildResult result =
      test::run_child("KILN_DEBUG=2 KILN_CACHE_DIR=" + cache.string(),
                      std::string(KILN_TOOL_PATH) +
                          " conformance --device VULKAN --jobs 1 --filter '^symbolic/sum\\(1\\)'");
  INFO(result.output);
  CHECK(result.exit_code == 0);
  CHECK(contains(result.output, "us "));
}
#endif
