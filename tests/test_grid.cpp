// GRID: one kernel for a full reduction, its workgroups combined by the last to finish. Checked
// against double-precision references on every device with workgroups here (OpenCL, Vulkan, and
// CUDA where a GPU is), compiled for the H100 with NVRTC, and chosen by the heuristics for GPUs.

#include <catch2/catch.hpp>

#include <kiln/kiln.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>

#include "codegen/decompose.h"
#include "codegen/render.h"
#include "runtime/device_context.h"
#include "runtime/opt_policy.h"
#include "runtime/registry.h"
#include "tests/codegen_helpers.h"
#include "tests/device_launch.h"
#include "tests/test_support.h"

using namespace kiln;
using namespace kiln::testing;

namespace {

// A device where a large full reduction stays one kernel.
const ScheduleTargetOf grid_limits = scheduled_on(128, 0, true);

ScheduleItem one_kernel(const Tensor& tensor) {
  const Schedule schedule = schedule_of(tensor, grid_limits);
  REQUIRE(schedule.items.size() == 1);
  return schedule.items[0];
}

OptTarget grid_target(OptTarget target) {
  target.grid = true;
  return target;
}

template <typename T>
T value_of(const std::vector<uint8_t>& bytes) {
  return values_of<T>(bytes).at(0);
}

struct GridCase {
  std::string what;
  Tensor tensor;  // the reduction, over one CPU input
  std::vector<uint8_t> input;
  std::vector<Opt> opts;
  std::function<void(const std::vector<uint8_t>&)> check;
};

std::vector<GridCase> grid_cases(bool float64) {
  std::vector<GridCase> cases;
  const int64_t odd = 100003;  // no multiple of any group or grid
  std::vector<float> floats(odd);
  double float_sum = 0;
  for (int64_t i = 0; i < odd; ++i) {
    floats[i] = static_cast<float>((i * 7919) % 1000) / 1000.0f - 0.25f;
    float_sum += floats[i];
  }
  const Tensor x = Tensor::from_vector(floats, {odd}, "CPU");
  // A full reduction's kernel has no output axes: axis 0 is the reduction's.
  cases.push_back({"float32 sum, 7 workgroups of 64",
                   x.sum(),
                   bytes_of(floats),
                   {{OptKind::Group, 0, 64}, {OptKind::Grid, 0, 7}},
                   [float_sum](const std::vector<uint8_t>& out) {
                     CHECK(value_of<float>(out) == Approx(float_sum).epsilon(1e-5));
                   }});
  // 3 x 5 x 59 x 113: UPCASTs of 3 and 5 divide it, their steps with the grid's lanes do not.
  const int64_t fifteens = 100005;
  std::vector<float> more_floats(fifteens);
  double more_sum = 0;
  for (int64_t i = 0; i < fifteens; ++i) {
    more_floats[i] = static_cast<float>((i * 104729) % 2001) / 1000.0f - 1.0f;
    more_sum += more_floats[i];
  }
  cases.push_back({"float32 sum, 3 neighbours per work item and 5 parts a workgroup apart",
                   Tensor::from_vector(more_floats, {fifteens}, "CPU").sum(),
                   bytes_of(more_floats),
                   {{OptKind::Upcast, 0, 3},
                    {OptKind::Group, 0, 32},
                    {OptKind::Grid, 0, 6},
                    {OptKind::Upcast, 0, 5}},
                   [more_sum](const std::vector<uint8_t>& out) {
                     CHECK(value_of<float>(out) == Approx(more_sum).epsilon(1e-5).margin(1e-3));
                   }});
  cases.push_back({"float32 sum, 100 workgroups of 16 (more partials than lanes)",
                   x.sum(),
                   bytes_of(floats),
                   {{OptKind::Group, 0, 16}, {OptKind::Grid, 0, 100}},
                   [float_sum](const std::vector<uint8_t>& out) {
                     CHECK(value_of<float>(out) == Approx(float_sum).epsilon(1e-5));
                   }});
  std::vector<float> with_nan = floats;
  with_nan[odd - 2] = std::numeric_limits<float>::quiet_NaN();
  cases.push_back(
      {"float32 max with a NaN in the last workgroup's share",
       Tensor::from_vector(with_nan, {odd}, "CPU").max(),
       bytes_of(with_nan),
       {{OptKind::Group, 0, 32}, {OptKind::Grid, 0, 5}},
       [](const std::vector<uint8_t>& out) { CHECK(std::isnan(value_of<float>(out))); }});
  std::vector<float> with_inf = floats;
  with_inf[12345] = -std::numeric_limits<float>::infinity();
  cases.push_back({"float32 min with -inf",
                   Tensor::from_vector(with_inf, {odd}, "CPU").min(),
                   bytes_of(with_inf),
                   {{OptKind::Group, 0, 64}, {OptKind::Grid, 0, 3}},
                   [](const std::vector<uint8_t>& out) {
                     CHECK(value_of<float>(out) == -std::numeric_limits<float>::infinity());
                   }});
  const int64_t even = 1 << 17;
  std::vector<int32_t> ints(even);
  int64_t int_sum = 0;
  for (int64_t i = 0; i < even; ++i) {
    ints[i] = static_cast<int32_t>((i * 2654435761u) % 20001) - 10000;
    int_sum += ints[i];
  }
  cases.push_back({"int32 sum with UPCAST 4 after the GROUP, 16 workgroups of 32",
                   Tensor::from_vector(ints, {even}, "CPU").sum(),
                   bytes_of(ints),
                   {{OptKind::Group, 0, 32}, {OptKind::Grid, 0, 16}, {OptKind::Upcast, 0, 4}},
                   [int_sum](const std::vector<uint8_t>& out) {
                     CHECK(value_of<int32_t>(out) == static_cast<int32_t>(int_sum));
                   }});
  cases.push_back({"int32 sum with UPCAST 4 before the GROUP, 16 workgroups of 32",
                   Tensor::from_vector(ints, {even}, "CPU").sum(),
                   bytes_of(ints),
                   {{OptKind::Upcast, 0, 4}, {OptKind::Group, 0, 32}, {OptKind::Grid, 0, 16}},
                   [int_sum](const std::vector<uint8_t>& out) {
                     CHECK(value_of<int32_t>(out) == static_cast<int32_t>(int_sum));
                   }});
  std::vector<int64_t> longs(odd);
  int64_t long_sum = 0;
  for (int64_t i = 0; i < odd; ++i) {
    longs[i] = (i % 3 == 0 ? -1 : 1) * (i << 20);
    long_sum += longs[i];
  }
  cases.push_back(
      {"int64 sum",
       Tensor::from_vector(longs, {odd}, "CPU").sum(),
       bytes_of(longs),
       {{OptKind::Group, 0, 64}, {OptKind::Grid, 0, 9}},
       [long_sum](const std::vector<uint8_t>& out) { CHECK(value_of<int64_t>(out) == long_sum); }});
  if (float64) {
    std::vector<double> doubles(odd);
    double double_sum = 0;
    for (int64_t i = 0; i < odd; ++i) double_sum += doubles[i] = 1.0 / static_cast<double>(i + 1);
    cases.push_back({"float64 sum",
                     Tensor::from_vector(doubles, {odd}, "CPU").sum(),
                     bytes_of(doubles),
                     {{OptKind::Group, 0, 64}, {OptKind::Grid, 0, 11}},
                     [double_sum](const std::vector<uint8_t>& out) {
                       CHECK(value_of<double>(out) == Approx(double_sum).epsilon(1e-12));
                     }});
  }
  return cases;
}

}  // namespace

TEST_CASE("GRID: the checks refuse what one kernel cannot combine", "[opts][grid]") {
  const OptTarget gpu = grid_target(gpu_target());
  const ScheduleItem sum = one_kernel(input({1 << 16}, 1).sum());
  CHECK_NOTHROW(lower_with(sum, {{OptKind::Group, 0, 64}, {OptKind::Grid, 0, 8}}, gpu));
  check_refused(sum, {{OptKind::Grid, 0, 8}}, gpu, "no GROUP on the axis");
  check_refused(sum, {{OptKind::Group, 0, 64}, {OptKind::Grid, 0, 8}}, gpu_target(),
                "no global atomics");
  const ScheduleItem rows = schedule_of(input({8, 4096}, 2).sum({1})).items.at(0);
  check_refused(rows, {{OptKind::Grid, 0, 8}}, gpu, "reduce axis");
  check_refused(sum, {{OptKind::Group, 0, 64}, {OptKind::Grid, 0, 8}}, grid_target(cpu_target()),
                "no workgroups");
  check_refused(rows, {{OptKind::Group, 1, 64}, {OptKind::Grid, 1, 8}}, gpu, "the kernel has 8");
  const ScheduleItem half = one_kernel(input({1 << 12}, 3).cast(dtypes::float16).sum());
  check_refused(half, {{OptKind::Group, 0, 64}, {OptKind::Grid, 0, 8}}, gpu, "float16 stores");
  OptTarget few_buffers = gpu;
  few_buffers.max_kernel_buffers = 4;
  const ScheduleItem pair = one_kernel((input({1 << 16}, 4) * input({1 << 16}, 5)).sum());
  check_refused(pair, {{OptKind::Group, 0, 64}, {OptKind::Grid, 0, 8}}, few_buffers,
                "binds at most 4");
}

TEST_CASE("GRID: a GPU's large full reduction is one kernel of many workgroups", "[opts][grid]") {
  const OptTarget gpu = grid_target(gpu_target());
  // The scheduler keeps it whole where the device takes GRID (and flattens its axes); elsewhere
  // it splits it in two kernels.
  const Tensor x = input({4096, 1024}, 6);
  CHECK(schedule_of(x.sum()).items.size() == 2);
  const ScheduleItem sum = one_kernel(x.sum());
  const OptChoice choice = heuristic_choice(sum, gpu);
  INFO(opts_to_string(choice.opts));
  CHECK(has_opt(choice.opts, OptKind::Group));
  CHECK(has_opt(choice.opts, OptKind::Grid));
  const LinearProgram program = lower_with(sum, choice.opts, gpu);
  int scratch = 0;
  for (const KernelParam& param : program.params) scratch += param.scratch;
  CHECK(scratch == kGridScratchBuffers);
  // 256 workgroups of 256: about two per compute unit, a count that divides 4096 x 1024 into
  // whole steps of every work item's 8 partial results (no load needs a bounds check).
  int64_t global[3], local[3];
  dispatch_sizes(program, {}, global, local);
  CHECK(global[0] == 256 * 256);
  CHECK(local[0] == 256);
  for (const LinInstr& instr : program.instrs) {
    if (instr.op == LinOp::Load && !instr.local && instr.buffer == 1) CHECK(instr.valid == Sym(1));
  }
  // Where no count from one to two per compute unit divides it: two per compute unit.
  const LinearProgram odd = lowered(one_kernel(input({4095, 1025}, 9).sum()), gpu);
  dispatch_sizes(odd, {}, global, local);
  CHECK(global[0] == 264 * 256);
  // An integer sum reads 16 elements per step (4 neighbours, unrolled 4 times): 35 workgroups
  // divide 430080 so, where 42 would divide it into steps of 8 only.
  const ScheduleItem ints = one_kernel(input({430080}, 10).cast(dtypes::int32).realize().sum());
  const OptChoice int_choice = heuristic_choice(ints, gpu);
  INFO(opts_to_string(int_choice.opts));
  CHECK(std::any_of(int_choice.opts.begin(), int_choice.opts.end(),
                    [](const Opt& opt) { return opt.kind == OptKind::Grid && opt.amount == 35; }));
  for (const LinInstr& instr : lower_with(ints, int_choice.opts, gpu).instrs) {
    if (instr.op == LinOp::Load && !instr.local && instr.buffer == 1) CHECK(instr.valid == Sym(1));
  }
  // Not for a device without GRID, nor for a small reduction or one of several outputs.
  CHECK_FALSE(has_opt(heuristic_choice(sum, gpu_target()).opts, OptKind::Grid));
  CHECK_FALSE(
      has_opt(heuristic_choice(one_kernel(input({5000}, 7).sum()), gpu).opts, OptKind::Grid));
  CHECK_FALSE(
      has_opt(heuristic_choice(schedule_of(x.sum({1})).items.at(0), gpu).opts, OptKind::Grid));
  // A float16 or float product reduction is still split (GRID cannot take it).
  CHECK(schedule_of(x.cast(dtypes::float16).sum(), grid_limits).items.size() == 2);
  CHECK(schedule_of(x.prod(), grid_limits).items.size() == 2);
}

TEST_CASE("GRID kernels reduce correctly on every device with workgroups, launch after launch",
          "[opts][grid][devices]") {
  int devices_run = 0;
  for (const std::string& name : devices()) {
    std::shared_ptr<DeviceContext> context = open_device(name);
    const OptTarget target = opt_target(context->device());
    if (!target.grid || context->device().properties().compile_only) continue;
    ++devices_run;
    for (const GridCase& grid_case : grid_cases(context->device().supports(dtypes::float64))) {
      DYNAMIC_SECTION(name << ": " << grid_case.what) {
        const LinearProgram program =
            lower_with(one_kernel(grid_case.tensor), grid_case.opts, target);
        // Three launches: each must find the counter at zero, as the last left it.
        for (const std::vector<uint8_t>& output :
             launch_program(*context, program, {grid_case.input}, 3))
          grid_case.check(output);
      }
    }
  }
  if (devices_run == 0) skip("no device here runs GRID kernels");
}

TEST_CASE("GRID renders for CUDA, OpenCL and GLSL, and NVRTC compiles it", "[dialects][grid]") {
  const ScheduleItem sum = one_kernel(input({1 << 16}, 8).sum());
  const LinearProgram program =
      lower_with(sum, {{OptKind::Upcast, 0, 4}, {OptKind::Group, 0, 64}, {OptKind::Grid, 0, 8}},
                 grid_target(gpu_target()));
  const std::string cuda =
      render_kernel(decompose_semantics(program, cuda_dialect()), cuda_dialect());
  CHECK_THAT(cuda, Catch::Contains("__threadfence();") && Catch::Contains("atomicAdd(") &&
                       Catch::Contains("volatile float* __restrict__"));
  CHECK_THAT(
      render_kernel(decompose_semantics(program, opencl_dialect(true)), opencl_dialect(true)),
      Catch::Contains("atomic_inc(") && Catch::Contains("__global volatile uint*"));
  CHECK_THAT(render_kernel(decompose_semantics(program, glsl_dialect()), glsl_dialect()),
             Catch::Contains("atomicAdd(data3[0], 1u)") && Catch::Contains("coherent buffer"));
  CHECK_THROWS_AS(render_kernel(decompose_semantics(program, c_dialect()), c_dialect()),
                  InternalError);
  const std::shared_ptr<DeviceContext> context =
      device_or_skip_part("CUDA@sm_90", "the CUDA source compiled by NVRTC");
  if (!context) return;
  try {
    CHECK_FALSE(context->device().compiler().compile(cuda, program.name).empty());
  } catch (const CompileError& error) {
    FAIL(error.what() << "\n" << error.log() << "\n" << cuda);
  }
}

TEST_CASE("GRID through realize: random opts give it to full reductions", "[runtime][grid]") {
  // Random opts propose GRID wherever the device takes it; every seed must compute the same.
  const std::vector<float> values = [] {
    std::vector<float> result(4099);
    for (size_t i = 0; i < result.size(); ++i) result[i] = static_cast<float>(i % 17) - 8.0f;
    return result;
  }();
  double expected = 0;
  for (float value : values) expected += value;
  const OptSettings before = opt_settings();
  int devices_run = 0;
  for (const std::string& name : devices()) {
    if (!opt_target(open_device(name)->device()).grid) continue;
    ++devices_run;
    const Tensor x = Tensor::from_vector(values, {4099}, name);
    for (uint64_t seed = 1; seed <= 12; ++seed) {
      set_opt_settings({OptPolicy::Random, seed});
      INFO(name << " seed " << seed);
      CHECK(x.sum().item<float>() == Approx(expected));
      CHECK(x.max().item<float>() == 8.0f);
    }
  }
  set_opt_settings(before);
  if (devices_run == 0) skip("no device here runs GRID kernels");
}
