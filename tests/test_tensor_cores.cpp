// TC: half-precision matmuls through matrix fragments. The lowering (chunks, warps' tiles,
// results through local memory) is checked against double-precision references on every device
// with workgroups here, where the dialects emulate the fragments (and on CUDA's tensor cores
// where a GPU is); the CUDA source is compiled for the H100 with NVRTC; the heuristics choose TC
// only where a device has the units.

#include <catch2/catch.hpp>

#include <kiln/kiln.h>

#include <cmath>
#include <cstring>

#include "codegen/decompose.h"
#include "codegen/render.h"
#include "codegen/tensor_cores.h"
#include "codegen/vectorize.h"
#include "runtime/device_context.h"
#include "runtime/opt_policy.h"
#include "runtime/registry.h"
#include "tests/codegen_helpers.h"
#include "tests/device_launch.h"
#include "tests/scoped_settings.h"
#include "tests/test_support.h"

using namespace kiln;
using namespace kiln::testing;

namespace {

OptTarget tensor_core_target(bool native) {
  OptTarget target = gpu_target();
  target.tensor_cores = true;
  target.native_tensor_cores = native;
  return target;
}

// The kernel of an m x k by k x n product of random `dtype` matrices.
ScheduleItem half_matmul(int64_t m, int64_t k, int64_t n, uint64_t seed,
                         DType dtype = dtypes::bfloat16) {
  return only_kernel(input({m, k}, seed)
                         .cast(dtype)
                         .realize()
                         .matmul(input({k, n}, seed + 1).cast(dtype).realize()));
}

// Values exact in float16 and bfloat16 alike (multiples of 1/8 up to 1), some zero.
std::vector<float> small_values(int64_t count, int64_t seed) {
  std::vector<float> values(count);
  for (int64_t i = 0; i < count; ++i)
    values[i] = static_cast<float>((i * 7 + seed * 13) % 17 - 8) / 8.0f;
  return values;
}

// The 16-bit patterns of such values.
std::vector<uint16_t> half_bits(const std::vector<float>& values, DType dtype) {
  std::vector<uint16_t> bits;
  for (float value : values) {
    uint32_t word;
    std::memcpy(&word, &value, sizeof(word));
    if (dtype == dtypes::bfloat16) {
      bits.push_back(static_cast<uint16_t>(word >> 16));
      continue;
    }
    const uint16_t sign = static_cast<uint16_t>((word >> 16) & 0x8000);
    if ((word & 0x7fffffff) == 0) {
      bits.push_back(sign);
      continue;
    }
    const int exponent = static_cast<int>((word >> 23) & 0xff) - 127 + 15;
    bits.push_back(static_cast<uint16_t>(sign | (exponent << 10) | ((word >> 13) & 0x3ff)));
  }
  return bits;
}

// A matrix of `shape` as a realized CPU tensor of `dtype`, with its bytes.
struct Operand {
  Tensor tensor;
  std::vector<float> values;
  std::vector<uint8_t> bytes;
};

Operand operand(Shape shape, DType dtype, int64_t seed) {
  int64_t count = 1;
  for (int64_t size : shape) count *= size;
  std::vector<float> values = small_values(count, seed);
  Tensor tensor = Tensor::from_vector(values, shape, "CPU").cast(dtype).realize();
  std::vector<uint8_t> bytes = bytes_of(half_bits(values, dtype));
  return {std::move(tensor), std::move(values), std::move(bytes)};
}

// a @ b in double precision (batched over a leading axis where there is one), b given as
// [k][n], or as [n][k] where `b_transposed`.
std::vector<double> reference(const Operand& a, const Operand& b, int64_t batch, int64_t m,
                              int64_t k, int64_t n, bool b_transposed) {
  std::vector<double> out(batch * m * n);
  for (int64_t at = 0; at < batch; ++at) {
    for (int64_t row = 0; row < m; ++row) {
      for (int64_t column = 0; column < n; ++column) {
        double sum = 0;
        for (int64_t step = 0; step < k; ++step) {
          const double b_value = b_transposed ? b.values[(at * n + column) * k + step]
                                              : b.values[(at * k + step) * n + column];
          sum += a.values[(at * m + row) * k + step] * b_value;
        }
        out[(at * m + row) * n + column] = sum;
      }
    }
  }
  return out;
}

// Each output is within a rounding of its 16-bit dtype of the reference.
void check_close(const std::vector<uint8_t>& bytes, DType dtype, const std::vector<double>& want,
                 const std::string& what) {
  const std::vector<uint16_t> bits = values_of<uint16_t>(bytes);
  REQUIRE(bits.size() == want.size());
  int wrong = 0;
  for (size_t at = 0; at < want.size(); ++at) {
    float got;
    if (dtype == dtypes::bfloat16) {
      const uint32_t word = static_cast<uint32_t>(bits[at]) << 16;
      std::memcpy(&got, &word, sizeof(got));
    } else {
      const int exponent = (bits[at] >> 10) & 0x1f;
      const double mantissa = bits[at] & 0x3ff;
      const double magnitude =
          exponent == 0 ? std::ldexp(mantissa, -24) : std::ldexp(1024 + mantissa, exponent - 25);
      got = static_cast<float>((bits[at] & 0x8000) ? -magnitude : magnitude);
    }
    const double tolerance =
        (dtype == dtypes::bfloat16 ? 1.0 / 128 : 1.0 / 1024) * (std::fabs(want[at]) + 1.0 / 64);
    if (!(std::fabs(got - want[at]) <= tolerance) && wrong++ < 5)
      UNSCOPED_INFO(what << ": output " << at << " is " << got << ", want " << want[at]);
  }
  CHECK(wrong == 0);
}

// The output of `result`'s one kernel under TC in `layout` on the context's device, its inputs
// the operands' bytes.
std::vector<uint8_t> run_with_tensor_cores(DeviceContext& context, const OptTarget& target,
                                           const Tensor& result, const TensorCoreLayout& layout,
                                           const std::vector<const Operand*>& operands) {
  const Schedule schedule = schedule_of(result);
  REQUIRE(schedule.items.size() == 1);
  const ScheduleItem& item = schedule.items[0];
  const std::vector<Opt> opts = tensor_core_opts(kernel_axes(item.ast), layout);
  INFO(opts_to_string(opts));
  const LinearProgram program = lower_with(item, opts, target);
  std::vector<std::vector<uint8_t>> inputs;
  for (const UOpRef& input : bound_inputs(schedule, item)) {
    const Operand* match = nullptr;
    for (const Operand* operand : operands) {
      if (input == operand->tensor.node()) match = operand;
    }
    REQUIRE(match != nullptr);
    inputs.push_back(match->bytes);
  }
  return launch_program(context, program, inputs).at(0);
}

}  // namespace

TEST_CASE("TC: the checks refuse what fragments cannot compute", "[opts][tensor_cores]") {
  const OptTarget gpu = tensor_core_target(true);
  const ScheduleItem matmul = half_matmul(64, 64, 64, 1);
  const KernelAxes axes = kernel_axes(matmul.ast);
  CHECK(axes.products_of_halves);
  const std::vector<Opt> opts = tensor_core_opts(axes, {32, 32, 64, 32});
  INFO(opts_to_string(opts));
  CHECK_NOTHROW(lower_with(matmul, opts, gpu));
  // float32 products; a matmul of computed halves that are not the product's own inputs.
  const ScheduleItem floats = only_kernel(input({64, 64}, 3).matmul(input({64, 64}, 4)));
  check_refused(floats, opts, gpu, "two float16 or two bfloat16");
  // No TILE; a chunk of 8; a workgroup of 48 work items; tiles that do not split over the warps.
  std::vector<Opt> no_tile = opts;
  no_tile.erase(no_tile.end() - 2);
  check_refused(matmul, no_tile, gpu, "needs a TILE");
  check_refused(matmul, tensor_core_opts(axes, {32, 32, 64, 8}), gpu, "whole fragments of 16");
  const ScheduleItem odd = half_matmul(48, 32, 48, 7);
  const std::vector<Opt> twelve_by_four = tensor_core_opts(kernel_axes(odd.ast), {48, 16, 48, 16});
  REQUIRE_FALSE(twelve_by_four.empty());
  check_refused(odd, twelve_by_four, gpu, "whole warps of 32");
  check_refused(matmul, tensor_core_opts(axes, {16, 16, 64, 16}), gpu, "split evenly");
  const ScheduleItem narrow = half_matmul(64, 32, 48, 9);
  check_refused(narrow, tensor_core_opts(kernel_axes(narrow.ast), {32, 48, 96, 16}), gpu,
                "part of one row");
  // Outputs that are not whole 16x16 tiles.
  check_refused(matmul, tensor_core_opts(axes, {8, 64, 128, 16}), gpu, "whole 16x16 tiles");
  // Devices without fragments; the CPU.
  check_refused(matmul, opts, gpu_target(), "no matrix fragments");
  check_refused(matmul, opts, cpu_target(), "no workgroups");
  // Local memory: 64x64 outputs in chunks of 64 need 2 * 64 * (72 + 72) + 4 * 64 * 68 bytes.
  OptTarget small = gpu;
  small.local_memory_bytes = 32 * 1024;
  check_refused(matmul, tensor_core_opts(axes, {64, 64, 256, 64}), small, "bytes of local memory");
}

TEST_CASE("TC: long half sums stay in order while float32 keeps them within a half's rounding",
          "[opts][tensor_cores]") {
  // TILE (and so TC) adds in order: float32 results past 4096 terms keep their blocked sums,
  // float16 ones up to 2^13 terms and bfloat16 ones up to 2^16 do not need them.
  const OptTarget gpu = tensor_core_target(true);
  auto takes_tensor_cores = [&](int64_t k, DType dtype) {
    return has_opt(heuristic_choice(half_matmul(128, k, 64, 20, dtype), gpu).opts,
                   OptKind::TensorCore);
  };
  CHECK(takes_tensor_cores(8192, dtypes::float16));
  CHECK_FALSE(takes_tensor_cores(16384, dtypes::float16));
  CHECK(takes_tensor_cores(16384, dtypes::bfloat16));
  const ScheduleItem floats = only_kernel(input({64, 8192}, 21).matmul(input({8192, 64}, 22)));
  try {
    lower_with(floats, {{OptKind::Local, 1, 16}, {OptKind::Tile, 2, 16}}, gpu);
    FAIL("TILE took a float32 sum of 8192 terms");
  } catch (const OptError& error) {
    CHECK_THAT(error.what(), Catch::Contains("float32 sum of more than 4096 terms"));
  }
}

TEST_CASE("TC: a GPU with tensor cores takes it for half matmuls", "[opts][tensor_cores]") {
  const Tensor a = input({512, 256}, 5);
  const Tensor b = input({256, 384}, 6);
  for (DType dtype : {dtypes::bfloat16, dtypes::float16}) {
    const ScheduleItem halves =
        only_kernel(a.cast(dtype).realize().matmul(b.cast(dtype).realize()));
    const OptChoice choice = heuristic_choice(halves, tensor_core_target(true));
    INFO(opts_to_string(choice.opts));
    CHECK(has_opt(choice.opts, OptKind::TensorCore));
    const LinearProgram program = lower_with(halves, choice.opts, tensor_core_target(true));
    const std::string cuda =
        render_kernel(decompose_semantics(program, cuda_dialect()), cuda_dialect());
    const std::string builtin = dtype == dtypes::bfloat16 ? "__mma_bf16_m16n16k16_mma_f32("
                                                          : "__hmma_m16n16k16_mma_f32f32(";
    CHECK_THAT(cuda, Catch::Contains(builtin) && Catch::Contains("__align__(32) unsigned short"));
    // Emulated fragments are for tests, not for speed; nor do float32 products take them.
    CHECK_FALSE(
        has_opt(heuristic_choice(halves, tensor_core_target(false)).opts, OptKind::TensorCore));
  }
  CHECK_FALSE(has_opt(heuristic_choice(only_kernel(a.matmul(b)), tensor_core_target(true)).opts,
                      OptKind::TensorCore));
}

TEST_CASE("TC kernels multiply correctly on every device with workgroups",
          "[opts][tensor_cores][devices]") {
  // One warp with one tile; warps sharing A's fragment, or B's; 8 warps of 2 tiles each.
  const std::vector<TensorCoreLayout> layouts = {
      {16, 16, 32, 16}, {16, 64, 64, 32}, {64, 16, 64, 16}, {64, 64, 256, 32}};
  int devices_run = 0;
  for (const std::string& name : devices()) {
    std::shared_ptr<DeviceContext> context = open_device(name);
    const OptTarget target = opt_target(context->device());
    if (!target.tensor_cores || context->device().properties().compile_only) continue;
    ++devices_run;
    for (DType dtype : {dtypes::bfloat16, dtypes::float16}) {
      const int64_t m = 64, k = 96, n = 128;
      const Operand a = operand({m, k}, dtype, 1), b = operand({k, n}, dtype, 2);
      const Operand b_rows = operand({n, k}, dtype, 3);  // B read through a transpose
      const std::vector<double> want = reference(a, b, 1, m, k, n, false);
      const std::vector<double> want_transposed = reference(a, b_rows, 1, m, k, n, true);
      for (const TensorCoreLayout& layout : layouts) {
        DYNAMIC_SECTION(name << " " << dtype.name() << " " << layout.rows << "x" << layout.columns
                             << " per " << layout.workgroup << ", chunks of " << layout.chunk) {
          check_close(
              run_with_tensor_cores(*context, target, a.tensor.matmul(b.tensor), layout, {&a, &b}),
              dtype, want, "a @ b");
          check_close(run_with_tensor_cores(*context, target,
                                            a.tensor.matmul(b_rows.tensor.transpose(0, 1)), layout,
                                            {&a, &b_rows}),
                      dtype, want_transposed, "a @ b.T");
        }
      }
    }
  }
  if (devices_run == 0) skip("no device here runs tensor core (TC) kernels");
}

TEST_CASE("TC kernels finish a batched product with what follows it",
          "[opts][tensor_cores][devices]") {
  int devices_run = 0;
  for (const std::string& name : devices()) {
    std::shared_ptr<DeviceContext> context = open_device(name);
    const OptTarget target = opt_target(context->device());
    if (!target.tensor_cores || context->device().properties().compile_only) continue;
    ++devices_run;
    for (DType dtype : {dtypes::bfloat16, dtypes::float16}) {
      DYNAMIC_SECTION(name << " " << dtype.name()) {
        const int64_t batch = 3, m = 32, k = 48, n = 64;
        const Operand a = operand({batch, m, k}, dtype, 4), b = operand({batch, k, n}, dtype, 5);
        const Operand bias = operand({n}, dtype, 6);
        std::vector<double> want = reference(a, b, batch, m, k, n, false);
        for (size_t at = 0; at < want.size(); ++at)
          want[at] = std::max(0.0, want[at] + bias.values[at % n]);
        check_close(run_with_tensor_cores(*context, target,
                                          (a.tensor.matmul(b.tensor) + bias.tensor).relu(),
                                          {32, 32, 128, 16}, {&a, &b, &bias}),
                    dtype, want, "relu(a @ b + bias)");
      }
    }
  }
  if (devices_run == 0) skip("no device here runs tensor core (TC) kernels");
}

TEST_CASE("TC renders for CUDA's tensor cores, and NVRTC compiles it", "[dialects][tensor_cores]") {
  const std::shared_ptr<DeviceContext> context = device_or_skip("CUDA@sm_90");
  const OptTarget target = opt_target(context->device());
  CHECK(target.native_tensor_cores);
  // Before sm_80 there are no bfloat16 fragments: TC is refused there, not emulated.
  const OptTarget turing = opt_target(open_device("CUDA@sm_75")->device());
  CHECK_FALSE(turing.tensor_cores);
  for (DType dtype : {dtypes::bfloat16, dtypes::float16}) {
    // A batched product with a bias and a relu after it: the results pass through local memory
    // to the work items that finish the kernel.
    const Tensor a = input({2, 256, 128}, 11).cast(dtype).realize();
    const Tensor b = input({2, 128, 192}, 12).cast(dtype).realize();
    const Tensor bias = input({192}, 13).cast(dtype).realize();
    const ScheduleItem item = only_kernel((a.matmul(b) + bias).relu());
    const OptChoice choice = heuristic_choice(item, target);
    INFO(opts_to_string(choice.opts));
    REQUIRE(has_opt(choice.opts, OptKind::TensorCore));
    const LinearProgram program = lower_with(item, choice.opts, target);
    const Dialect& dialect = context->device().dialect();
    const std::string source = render_kernel(
        decompose_semantics(vectorize_stores(vectorize_loads(program, dialect), dialect), dialect),
        dialect);
    try {
      CHECK_FALSE(context->device().compiler().compile(source, program.name).empty());
    } catch (const CompileError& error) {
      FAIL(error.what() << "\n" << error.log() << "\n" << source);
    }
  }
}

TEST_CASE("TC: random opts propose it, emulated where there are no matrix units",
          "[opts][tensor_cores]") {
  const ScheduleItem item = half_matmul(64, 96, 128, 14, dtypes::float16);
  const OptTarget emulated = tensor_core_target(false);
  int proposed = 0;
  for (uint64_t seed = 0; seed < 24; ++seed) {
    const std::vector<Opt> opts = random_choice(item, emulated, seed);
    INFO(opts_to_string(opts));
    CHECK_NOTHROW(lower_with(item, opts, emulated));
    proposed += has_opt(opts, OptKind::TensorCore);
  }
  CHECK(proposed >= 4);
  // Never where the dialect has neither fragments nor an emulation (no workgroups).
  for (uint64_t seed = 0; seed < 8; ++seed)
    CHECK_FALSE(has_opt(random_choice(item, cpu_target(), seed), OptKind::TensorCore));
}

TEST_CASE("TC: KILN_TENSOR_CORES=0 keeps every policy off the matrix units",
          "[opts][tensor_cores]") {
  {
    const ScopedEnvironment variable("KILN_TENSOR_CORES", nullptr);
    CHECK(tensor_cores_from_environment());
    variable.set("0");
    CHECK_FALSE(tensor_cores_from_environment());
    {
      // Settings made in code keep TC off too.
      const ScopedOptSettings in_code(OptSettings{});
      CHECK_FALSE(opt_settings().tensor_cores);
    }
    variable.set("1");
    CHECK(tensor_cores_from_environment());
    variable.set("off");
    CHECK_THROWS_WITH(tensor_cores_from_environment(), Catch::Contains("KILN_TENSOR_CORES") &&
                                                           Catch::Contains("'off'") &&
                                                           Catch::Contains("use 0"));
  }

  // Settings that differ only here are different keys of the kernel and schedule caches.
  OptSettings without;
  without.tensor_cores = false;
  CHECK_FALSE(without == OptSettings{});

  const ScheduleItem item = half_matmul(64, 96, 128, 15);
  for (OptPolicy policy : {OptPolicy::Default, OptPolicy::Gpu, OptPolicy::Random}) {
    without.policy = policy;
    for (const std::string& name : std::vector<std::string>{"CUDA@sm_90", "CL", "VULKAN"}) {
      const std::shared_ptr<DeviceContext> context =
          device_or_skip_part(name, "TC turned off on " + name);
      if (!context) continue;
      INFO(name << " under " << opt_settings_to_string(without) << " without tensor cores");
      const OptTarget target = opt_target(context->device(), without);
      CHECK_FALSE(target.tensor_cores);
      CHECK_FALSE(target.native_tensor_cores);
      CHECK_FALSE(has_opt(heuristic_choice(item, target).opts, OptKind::TensorCore));
      for (uint64_t seed = 0; seed < 8; ++seed)
        CHECK_FALSE(has_opt(random_choice(item, target, seed), OptKind::TensorCore));
    }
  }

  // End to end: under the gpu policy a half matmul still computes right without TC.
  int devices_run = 0;
  for (const std::string& name : devices()) {
    std::shared_ptr<DeviceContext> context = open_device(name);
    if (opt_target(context->device()).loop_launch || context->device().properties().compile_only)
      continue;
    ++devices_run;
    DYNAMIC_SECTION(name) {
      OptSettings gpu_without;
      gpu_without.policy = OptPolicy::Gpu;
      gpu_without.tensor_cores = false;
      const ScopedOptSettings scope(gpu_without);
      const int64_t m = 48, k = 80, n = 64;
      const Operand a = operand({m, k}, dtypes::float16, 21),
                    b = operand({k, n}, dtypes::float16, 22);
      const Tensor product = a.tensor.to(name).matmul(b.tensor.to(name)).cast(dtypes::float32);
      const std::vector<float> got = product.to_vector<float>();
      const std::vector<double> want = reference(a, b, 1, m, k, n, false);
      REQUIRE(got.size() == want.size());
      int wrong = 0;
      for (size_t at = 0; at < want.size(); ++at)
        wrong += !(std::fabs(got[at] - want[at]) <= (std::fabs(want[at]) + 1.0 / 64) / 1024);
      CHECK(wrong == 0);
    }
  }
  if (devices_run == 0)
    skip_part("a half matmul without TC end to end: no device with workgroups here");
}
