// How a GROUP's work items walk their reduction: an UPCAST listed before the GROUP gives each work
// item neighbouring elements (one vector load per step), one listed after gives it parts a
// workgroup apart. The heuristics' choices for GPUs, and the results on every device with
// workgroups against double-precision references.

#include <catch2/catch.hpp>

#include <kiln/kiln.h>

#include <cmath>
#include <limits>

#include "codegen/render.h"
#include "codegen/row_fusion.h"
#include "codegen/vectorize.h"
#include "runtime/device_context.h"
#include "runtime/opt_policy.h"
#include "runtime/registry.h"
#include "tests/codegen_helpers.h"
#include "tests/device_launch.h"
#include "tests/test_support.h"

using namespace kiln;
using namespace kiln::testing;

namespace {

std::vector<const LinInstr*> global_loads(const LinearProgram& program) {
  std::vector<const LinInstr*> loads;
  for (const LinInstr& instr : program.instrs) {
    if (instr.op == LinOp::Load && !instr.local) loads.push_back(&instr);
  }
  return loads;
}

// The constant distance from the first global load's index to each later one's.
std::vector<int64_t> load_offsets(const LinearProgram& program) {
  const std::vector<const LinInstr*> loads = global_loads(program);
  std::vector<int64_t> offsets;
  for (const LinInstr* load : loads) {
    const Sym offset = load->index - loads.front()->index;
    REQUIRE(offset.is_const());
    offsets.push_back(offset.const_value());
  }
  return offsets;
}

// The widest vector load inside the program's loops (its reductions) once vectorized for CUDA.
int widest_cuda_load(const LinearProgram& program) {
  int widest = 1, depth = 0;
  for (const LinInstr& instr : vectorize_loads(program, cuda_dialect()).instrs) {
    depth += instr.op == LinOp::LoopBegin ? 1 : instr.op == LinOp::LoopEnd ? -1 : 0;
    if (instr.op == LinOp::Load && depth > 0) widest = std::max(widest, instr.vector_width);
  }
  return widest;
}

bool has_opt(const std::vector<Opt>& opts, Opt wanted) {
  return std::any_of(opts.begin(), opts.end(), [&](const Opt& opt) {
    return opt.kind == wanted.kind && opt.axis == wanted.axis && opt.amount == wanted.amount;
  });
}

}  // namespace

TEST_CASE("an UPCAST before a GROUP reads neighbours per work item, after it a workgroup apart",
          "[opts][reduce_layout]") {
  const ScheduleItem sum = only_kernel(input({4096}, 1).sum());
  const OptTarget gpu = gpu_target();
  CHECK(load_offsets(lower_with(sum, {{OptKind::Upcast, 0, 4}, {OptKind::Group, 0, 64}}, gpu)) ==
        std::vector<int64_t>{0, 1, 2, 3});
  CHECK(load_offsets(lower_with(sum, {{OptKind::Group, 0, 64}, {OptKind::Upcast, 0, 4}}, gpu)) ==
        std::vector<int64_t>{0, 64, 128, 192});
  // Both: pairs of neighbours, the pairs 2 x 64 elements apart.
  CHECK(load_offsets(lower_with(
            sum, {{OptKind::Upcast, 0, 2}, {OptKind::Group, 0, 64}, {OptKind::Upcast, 0, 2}},
            gpu)) == std::vector<int64_t>{0, 1, 128, 129});
  // Without a GROUP the order is the same either way: neighbours.
  CHECK(load_offsets(lower_with(sum, {{OptKind::Upcast, 0, 4}}, gpu)) ==
        std::vector<int64_t>{0, 1, 2, 3});

  const KernelAxes axes = kernel_axes(sum.ast);
  CHECK_NOTHROW(
      plan_opts(axes, {{OptKind::Upcast, 0, 4}, {OptKind::Group, 0, 64}, {OptKind::Upcast, 0, 2}},
                gpu, "test"));
  auto refused = [&](const ScheduleItem& item, const std::vector<Opt>& opts,
                     const std::string& reason) {
    try {
      plan_opts(kernel_axes(item.ast), opts, gpu, "test");
      FAIL("accepted " << opts_to_string(opts));
    } catch (const OptError& error) {
      CHECK_THAT(error.what(), Catch::Contains(reason));
    }
  };
  refused(sum, {{OptKind::Upcast, 0, 4}, {OptKind::Upcast, 0, 2}, {OptKind::Group, 0, 64}},
          "already has a UPCAST on that axis");
  refused(sum, {{OptKind::Group, 0, 64}, {OptKind::Upcast, 0, 2}, {OptKind::Upcast, 0, 2}},
          "already has a UPCAST on that axis after its GROUP");
  // 4100 = 4 x 1025: UPCASTs of 4 and 2 each divide it, together they do not.
  refused(only_kernel(input({4100}, 2).sum()),
          {{OptKind::Upcast, 0, 4}, {OptKind::Group, 0, 64}, {OptKind::Upcast, 0, 2}},
          "times the UPCAST before the GROUP must divide the axis' size 4100");
}

TEST_CASE("GPU reductions read 16 bytes per load where their input is in order",
          "[opts][reduce_layout]") {
  const OptTarget gpu = gpu_target();
  struct Case {
    std::string what;
    Tensor tensor;
    int group_axis;
  };
  const Tensor matrix = input({1024, 4096}, 3);
  const std::vector<Case> cases = {
      {"a long full sum (one kernel, as where the device takes GRID)", input({1 << 20}, 4).sum(),
       0},
      {"row sums", matrix.sum({1}), 1},
      {"row maxima", matrix.max({1}), 1},
      // Not matmul tiles: the rows share nothing, so a workgroup per row (bench's "fused").
      {"a fused row reduction of three matrices",
       (matrix * input({1024, 4096}, 5) + input({1024, 4096}, 6)).relu().exp().sum({1}), 1},
      // Every row reads the whole vector: a workgroup per row still reads its row in order.
      {"a matrix times a vector", (matrix * input({4096}, 7)).sum({1}), 1},
  };
  for (const Case& reduction : cases) {
    DYNAMIC_SECTION(reduction.what) {
      const Schedule schedule = schedule_of(reduction.tensor, scheduled_on(128, 0, true));
      REQUIRE(schedule.items.size() == 1);
      const ScheduleItem& item = schedule.items[0];
      const std::vector<Opt> opts = heuristic_choice(item, gpu).opts;
      INFO(opts_to_string(opts));
      REQUIRE(opts.size() >= 2);
      CHECK(opts[0].kind == OptKind::Upcast);
      CHECK(opts[0].amount == 4);
      CHECK(opts[1].kind == OptKind::Group);
      CHECK(opts[1].axis == reduction.group_axis);
      const LinearProgram program = lower_with(item, opts, gpu);
      for (const LinInstr* load : global_loads(program)) CHECK(load->valid == Sym(1));
      CHECK(widest_cuda_load(program) == 4);
    }
  }

  SECTION("not where the dialect has no vectors") {
    OptTarget without_vectors = gpu;
    without_vectors.vector_loads = false;
    const ScheduleItem rows = only_kernel(matrix.sum({1}));
    const std::vector<Opt> opts = heuristic_choice(rows, without_vectors).opts;
    INFO(opts_to_string(opts));
    CHECK(opts.at(0).kind == OptKind::Group);
  }

  SECTION("16-bit elements: 4 neighbours, one 8-byte load of two 32-bit words") {
    for (DType dtype : {dtypes::float16, dtypes::bfloat16}) {
      const ScheduleItem rows = only_kernel(matrix.cast(dtype).realize().sum({1}));
      const std::vector<Opt> half = heuristic_choice(rows, gpu).opts;
      INFO(opts_to_string(half));
      CHECK(half.at(0) == Opt{OptKind::Upcast, 1, 4});
      CHECK(widest_cuda_load(lower_with(rows, half, gpu)) == 4);
    }
    // Rows that start one element into a word cannot be read as words: no neighbours then.
    const Tensor shifted = input({1024, 4097}, 13).cast(dtypes::float16).realize();
    const std::vector<Opt> odd =
        heuristic_choice(only_kernel(shifted.shrink({{0, 1024}, {1, 4097}}).sum({1})), gpu).opts;
    INFO(opts_to_string(odd));
    CHECK(odd.at(0).kind == OptKind::Group);
  }

  SECTION("a matmul keeps its tiles of outputs through local memory") {
    const Tensor a = input({256, 256}, 8), b = input({256, 256}, 9);
    const std::vector<Opt> opts = heuristic_choice(only_kernel(a.matmul(b)), gpu).opts;
    INFO(opts_to_string(opts));
    CHECK(std::any_of(opts.begin(), opts.end(),
                      [](const Opt& opt) { return opt.kind == OptKind::Tile; }));
  }

  SECTION("a matmul no tile fits gets no workgroup per output: it would read B down columns") {
    const Tensor a = input({64, 512}, 11), b = input({512, 1001}, 12);
    const std::vector<Opt> opts = heuristic_choice(only_kernel(a.matmul(b)), gpu).opts;
    INFO(opts_to_string(opts));
    CHECK_FALSE(std::any_of(opts.begin(), opts.end(),
                            [](const Opt& opt) { return opt.kind == OptKind::Group; }));
  }

  SECTION("a fused softmax row shares its reductions 4 neighbours at a time") {
    Schedule schedule = schedule_of(input({64, 4096}, 10).softmax(-1));
    fuse_row_reductions(schedule, max_row_lanes(gpu), 128);
    REQUIRE(schedule.items.size() == 1);
    const ScheduleItem& item = schedule.items[0];
    const std::vector<Opt> opts = heuristic_choice(item, gpu).opts;
    INFO(opts_to_string(opts));
    CHECK(has_opt(opts, {OptKind::Local, 1, 256}));
    CHECK(widest_cuda_load(lower_with(item, opts, gpu)) == 4);
    // Where the target has no vector loads (GLSL), every 256th element, as before.
    OptTarget without_vectors = gpu;
    without_vectors.vector_loads = false;
    CHECK(widest_cuda_load(lower_with(item, opts, without_vectors)) == 1);
  }
}

TEST_CASE("reductions with neighbours per work item compute what the reference computes",
          "[reduce_layout][devices]") {
  const int64_t rows = 6, columns = 4096;
  std::vector<float> values(rows * columns);
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = static_cast<float>((i * 7919) % 1999) / 1000.0f - 1.0f;
  values[1 * columns + 4095] = std::numeric_limits<float>::quiet_NaN();  // a NaN, last
  values[2 * columns + 1] = -std::numeric_limits<float>::infinity();
  values[3 * columns + 2] = std::numeric_limits<float>::infinity();
  values[3 * columns + 3000] = -std::numeric_limits<float>::infinity();  // +inf and -inf: NaN
  for (int64_t column = 0; column < columns; ++column)
    values[4 * columns + column] = -0.0f;  // a row of -0: its maximum is a zero
  values[5 * columns + 7] = 3e38f;
  values[5 * columns + 8] = 3e38f;  // a sum past the largest float: +inf
  const Tensor x = Tensor::from_vector(values, {rows, columns}, "CPU");
  auto reference = [&](int64_t row, bool sum) {
    double result = sum ? 0.0 : -INFINITY;
    for (int64_t column = 0; column < columns; ++column) {
      const double value = values[row * columns + column];
      if (std::isnan(value)) return static_cast<double>(NAN);
      result = sum ? result + value : std::max(result, value);
    }
    // Computed in float32: past its largest value is infinite.
    if (std::abs(result) > std::numeric_limits<float>::max())
      return std::copysign(INFINITY, result);
    return result;
  };
  struct Case {
    std::string what;
    Tensor tensor;
    bool sum;
    std::vector<Opt> opts;
  };
  const std::vector<Case> cases = {
      {"sum: 4 neighbours, 64 work items, 2 parts apart",
       x.sum({1}),
       true,
       {{OptKind::Upcast, 1, 4}, {OptKind::Group, 1, 64}, {OptKind::Upcast, 1, 2}}},
      {"sum: 8 neighbours, 16 work items",
       x.sum({1}),
       true,
       {{OptKind::Upcast, 1, 8}, {OptKind::Group, 1, 16}}},
      {"max: 4 neighbours, 32 work items, unrolled",
       x.max({1}),
       false,
       {{OptKind::Upcast, 1, 4}, {OptKind::Group, 1, 32}, {OptKind::Unroll, 1, 2}}},
      {"max: the heuristics' choice for a GPU", x.max({1}), false, {}},
  };
  int devices_run = 0;
  for (const std::string& name : devices()) {
    std::shared_ptr<DeviceContext> context = open_device(name);
    const OptTarget target = opt_target(context->device());
    if (target.loop_launch || context->device().properties().compile_only) continue;
    ++devices_run;
    OptTarget as_gpu = target;
    as_gpu.is_gpu = true;
    for (const Case& reduction : cases) {
      DYNAMIC_SECTION(name << ": " << reduction.what) {
        const ScheduleItem item = only_kernel(reduction.tensor);
        const std::vector<Opt> opts =
            reduction.opts.empty() ? heuristic_choice(item, as_gpu).opts : reduction.opts;
        INFO(opts_to_string(opts));
        const LinearProgram program = lower_with(item, opts, target);
        const std::vector<float> got =
            values_of<float>(launch_program(*context, program, {bytes_of(values)}).at(0));
        REQUIRE(got.size() == static_cast<size_t>(rows));
        for (int64_t row = 0; row < rows; ++row) {
          const double want = reference(row, reduction.sum);
          INFO("row " << row << ": " << got[row] << ", want " << want);
          if (std::isnan(want)) {
            CHECK(std::isnan(got[row]));
          } else if (std::isinf(want)) {
            CHECK(static_cast<double>(got[row]) == want);
          } else {
            CHECK(got[row] == Approx(want).epsilon(1e-5).margin(1e-4));
          }
        }
      }
    }
  }
  if (devices_run == 0) skip("no device with workgroups here");
}
