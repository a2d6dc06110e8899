// The CUDA device where the machine has no GPU: the reason it is unavailable (no driver, or the
// toolkit's stub driver), and its compile-only device ("CUDA@sm_90"), which renders and compiles
// real programs with NVRTC. On a machine with a GPU the whole suite runs with KILN_DEVICE=CUDA
// (scripts/gpu-check.sh); the last test here compares a few programs with the CPU when one is
// present.

#include <catch2/catch.hpp>

#include <kiln/error.h>
#include <kiln/kiln.h>

#include <filesystem>

#include "runtime/opt_policy.h"
#include "runtime/registry.h"
#include "tests/child_process.h"
#include "tests/test_support.h"

using namespace kiln;
using testing::contains;

namespace {

// The compile-only device; skips the test case where the plugin was not built (no CUDA toolkit
// headers).
std::shared_ptr<DeviceContext> compile_only_device() {
  testing::plugin_or_skip("CUDA");
  return open_device("CUDA@sm_90");
}

}  // namespace

TEST_CASE("an unavailable CUDA device says why", "[cuda]") {
  const DeviceRecord& record = testing::plugin_or_skip("CUDA");
  if (record.available) testing::skip("a CUDA GPU is here: no reason to check");
  CHECK_FALSE(record.reason.empty());
  try {
    open_device("CUDA");
    FAIL("opening CUDA without a driver succeeded");
  } catch (const DeviceError& error) {
    CHECK(contains(error.what(), "CUDA is unavailable: " + record.reason));
  }
}

#ifdef KILN_TOOL_PATH
TEST_CASE("the CUDA toolkit's stub driver is reported as no driver", "[cuda]") {
  const std::string stub = "/usr/local/cuda/lib64/stubs/libcuda.so";
  testing::plugin_or_skip("CUDA");
  if (!std::filesystem::exists(stub)) testing::skip("no CUDA stub driver at " + stub);
  const test::ChildResult listed =
      test::run_child("KILN_CUDA_DRIVER=" + stub, std::string(KILN_TOOL_PATH) + " devices");
  INFO(listed.output);
  CHECK(contains(listed.output, "CUDA_ERROR_STUB_LIBRARY"));
  CHECK(contains(listed.output, "no NVIDIA driver is installed"));
}
#endif

TEST_CASE("the compile-only CUDA device compiles programs and runs none", "[cuda]") {
  std::shared_ptr<DeviceContext> context = compile_only_device();
  CHECK(context->name() == "CUDA@sm_90");
  CHECK(open_device("cuda@SM_90") == context);
  CHECK(context->device().properties().compile_only);
  // The architecture reaches the optimiser, and its messages.
  CHECK(context->device().properties().architecture == "sm_90");
  CHECK(opt_target(context->device()).architecture == "sm_90");
  CHECK(opt_target(open_device("CUDA@sm_80")->device()).architecture == "sm_80");
  const int64_t compiles = context->stats().compiles + context->stats().disk_hits;

  const std::string device = context->name();
  Tensor a = Tensor::rand({37, 64}, 1, device).cast(dtypes::float16);
  Tensor b = Tensor::rand({64, 29}, 2, device).cast(dtypes::float16);
  Tensor product = a.matmul(b).softmax(-1);
  Tensor total = (Tensor::arange(1000, device).cast(dtypes::float32) * 2.5f).sum();
  Tensor bits = Tensor::full({7, 3}, -5, dtypes::int64, device).max({0}) % 3;
  product.realize();
  total.realize();
  bits.realize();
  CHECK(context->stats().compiles + context->stats().disk_hits - compiles >= 3);

  // The values were never computed: reading them says so instead of returning garbage.
  try {
    total.item<float>();
    FAIL("a compile-only device returned a value");
  } catch (const CompileOnlyError& error) {
    CHECK(contains(error.what(), "only compiles kernels"));
  }
}

TEST_CASE("NVRTC's errors carry its log and the source", "[cuda]") {
  std::shared_ptr<DeviceContext> context = compile_only_device();
  const std::string source =
      "extern \"C\" __global__ void broken(float* out) { out[0] = undeclared_name; }\n";
  try {
    context->device().compiler().compile(source, "broken");
    FAIL("NVRTC accepted a broken kernel");
  } catch (const CompileError& error) {
    CHECK(contains(error.what(), "broken"));
    CHECK(contains(error.log(), "undeclared_name"));
    CHECK(error.source() == source);
  }
}

TEST_CASE("an architecture NVRTC does not know is refused with the ones it knows", "[cuda]") {
  testing::plugin_or_skip("CUDA");
  try {
    open_device("CUDA@sm_12");
    FAIL("sm_12 was accepted");
  } catch (const DeviceError& error) {
    CHECK(contains(error.what(), "'sm_12' is not a GPU architecture"));
    CHECK(contains(error.what(), "sm_90"));
  }
  CHECK_THROWS_AS(open_device("CL@sm_90"), DeviceError);  // no compile-only CL device
}

TEST_CASE("the cache key of a CUDA kernel names NVRTC and the architecture", "[cuda]") {
  std::shared_ptr<DeviceContext> context = compile_only_device();
  const std::string identity = context->device().compiler().identity();
  CHECK(contains(identity, "NVRTC"));
  CHECK(contains(identity, "sm_90"));
  CHECK(contains(identity, "--fmad=false"));
  CHECK(open_device("CUDA@sm_80")->device().compiler().identity() != identity);
  // The library file that was loaded, resolved to its real path with its size and time (an
  // update in place keeps NVRTC's version), and the builtins library it compiles with.
  CHECK(contains(identity, "(/"));
  CHECK(contains(identity, " bytes @"));
  CHECK(contains(identity, "libnvrtc-builtins.so"));
}

TEST_CASE("CUDA computes what the CPU computes", "[cuda]") {
  // scripts/gpu-check.sh runs everything on a GPU.
  testing::device_or_skip("CUDA");
  auto same = [](const Tensor& on_gpu, const Tensor& on_cpu) {
    const std::vector<float> want = on_cpu.cast(dtypes::float32).to_vector<float>();
    const std::vector<float> got =
        on_gpu.cast(dtypes::float32).to(std::string("CPU")).to_vector<float>();
    REQUIRE(got.size() == want.size());
    for (size_t index = 0; index < want.size(); ++index)
      CHECK(got[index] == Approx(want[index]).epsilon(1e-5).margin(1e-6));
  };
  Tensor a = Tensor::rand({129, 257}, 1, "CPU");
  Tensor b = Tensor::rand({257, 65}, 2, "CPU");
  same(a.to(std::string("CUDA")).matmul(b.to(std::string("CUDA"))), a.matmul(b));
  same(a.to(std::string("CUDA")).softmax(-1), a.softmax(-1));
  same(a.to(std::string("CUDA")).sum(), a.sum());
}
