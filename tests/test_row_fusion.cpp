// Row fusion: reductions over a row, read back broadcast along it, move into the kernel after
// them, whose workgroup per row computes each once, together. Softmax becomes one kernel on a
// GPU. Checked against double-precision references on the devices with workgroups here.

#include <catch2/catch.hpp>

#include <kiln/kiln.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>

#include "codegen/decompose.h"
#include "codegen/render.h"
#include "codegen/row_fusion.h"
#include "codegen/vectorize.h"
#include "runtime/buffer.h"
#include "runtime/device_context.h"
#include "runtime/opt_policy.h"
#include "runtime/registry.h"
#include "tests/codegen_helpers.h"
#include "tests/device_launch.h"
#include "tests/test_support.h"

using namespace kiln;
using namespace kiln::testing;

namespace {

Schedule fused(const Tensor& tensor, int64_t max_lanes = 256) {
  Schedule schedule = schedule_of(tensor);
  fuse_row_reductions(schedule, max_lanes, 128);
  return schedule;
}

int count(const LinearProgram& program, LinOp op) {
  return static_cast<int>(std::count_if(program.instrs.begin(), program.instrs.end(),
                                        [&](const LinInstr& instr) { return instr.op == op; }));
}

std::vector<float> row_values(int64_t rows, int64_t columns, uint64_t seed) {
  std::vector<float> values(rows * columns);
  uint64_t state = seed * 0x9e3779b97f4a7c15ull + 1;
  for (float& value : values) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    value = static_cast<float>(static_cast<int64_t>(state >> 40) % 2001 - 1000) / 125.0f;
  }
  return values;
}

void check_close(const std::vector<float>& got, const std::vector<double>& want, double relative) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i);
    if (std::isnan(want[i])) {
      CHECK(std::isnan(got[i]));
    } else {
      CHECK(got[i] == Approx(want[i]).epsilon(relative).margin(1e-6));
    }
  }
}

}  // namespace

TEST_CASE("row fusion: softmax's kernels become one, with a workgroup per row", "[row_fusion]") {
  const Tensor x = input({64, 4096}, 1);
  CHECK(schedule_of(x.softmax(-1)).items.size() == 3);
  const Schedule schedule = fused(x.softmax(-1));
  REQUIRE(schedule.items.size() == 1);
  const ScheduleItem& item = schedule.items[0];
  CHECK(item.inputs.size() == 1);
  CHECK(reads_row_reductions(item.ast));
  const OptChoice choice = heuristic_choice(item, gpu_target());
  INFO(opts_to_string(choice.opts));
  CHECK(choice.opts == std::vector<Opt>{{OptKind::Upcast, 1, 16}, {OptKind::Local, 1, 256}});
  const LinearProgram program = lower_with(item, choice.opts, gpu_target());
  // The max and the sum each once, shared through local memory (a tree of 8 steps after the
  // partials are stored); no work item loops over a row.
  CHECK(count(program, LinOp::DefineLocal) == 2);
  CHECK(count(program, LinOp::Barrier) == 2 * (1 + 8));
  CHECK(loop_iterations(program) < 1024);
  int64_t global[3], local[3];
  dispatch_sizes(program, {}, global, local);
  CHECK(local[0] == 256);
  CHECK(global[0] * global[1] * global[2] == 64 * 256);
  // NVRTC compiles it for the H100.
  if (const std::shared_ptr<DeviceContext> cuda =
          device_or_skip_part("CUDA@sm_90", "the fused kernel compiled by NVRTC")) {
    const Dialect& dialect = cuda_dialect();
    const std::string source = render_kernel(
        decompose_semantics(vectorize_stores(vectorize_loads(program, dialect), dialect), dialect),
        dialect);
    CHECK_FALSE(cuda->device().compiler().compile(source, program.name).empty());
  }
  // log_softmax and a normalization (the mean inside the variance) fuse as well.
  CHECK(fused(x.log_softmax(-1)).items.size() == 1);
  const Tensor centred = x - x.mean({1}, true);
  CHECK(fused(centred / (centred * centred).mean({1}, true).sqrt()).items.size() == 1);
}

TEST_CASE("row fusion leaves what a row's workgroup cannot compute", "[row_fusion]") {
  const Tensor x = input({64, 512}, 2);
  // A reduction over another axis, or read through a transpose (also of a square, whose shape
  // the transpose keeps), a flip, or a shrink and pad (whose mask would switch off some work
  // items' shares of the row).
  CHECK(fused(x - x.max({0}, true)).items.size() == 2);
  CHECK(fused((x - x.max({1}, true)).transpose()).items.size() == 2);
  const Tensor square = input({128, 128}, 6);
  CHECK(fused((square - square.max({1}, true)).transpose()).items.size() == 2);
  CHECK(fused((x - x.max({1}, true)).flip({1})).items.size() == 2);
  CHECK(fused((x - x.max({1}, true)).shrink({{0, 64}, {0, 511}}).pad({{0, 0}, {0, 1}}))
            .items.size() == 2);
  CHECK(fused((x / x.sum({1}, true)).shrink({{0, 64}, {0, 508}}).pad({{0, 0}, {0, 4}}))
            .items.size() == 2);
  // A row too long for 256 work items of at most 16 outputs, or with no divisor that fits.
  CHECK(fused(input({4, 8192}, 3).softmax(-1)).items.size() == 3);
  CHECK(fused(input({4, 4099}, 4).softmax(-1)).items.size() == 3);
  CHECK(fused(input({4, 4096}, 4).softmax(-1), 128).items.size() == 3);
  // A kernel with a reduction of its own keeps its opts (a square matmul of normalized rows).
  CHECK(fused((x / x.sum({1}, true)).matmul(input({512, 512}, 5))).items.size() == 2);
  // A float product's partials would round differently.
  CHECK(fused(x / x.prod({1}, true)).items.size() == 2);
  // A reduction that is also a result stays a kernel of its own.
  const Tensor maximum = x.max({1}, true);
  Schedule two_roots = create_schedule({(x - maximum).node(), maximum.node()}, "CPU");
  fuse_row_reductions(two_roots, 256, 128);
  CHECK(two_roots.items.size() == 2);
}

TEST_CASE("fused row kernels compute what the reference computes on devices with workgroups",
          "[row_fusion][devices]") {
  const int64_t rows = 5;
  int devices_run = 0;
  // 384 columns: 192 work items of 2 outputs per row. 1024: 256 of 4, whose shared reductions
  // read 4 neighbouring elements at a time (vector loads).
  for (const int64_t columns : {int64_t{384}, int64_t{1024}}) {
    std::vector<float> values = row_values(rows, columns, 5);
    values[2 * columns + 17] = 1e30f;                                     // a row with a huge value
    values[3 * columns + 100] = std::numeric_limits<float>::quiet_NaN();  // a NaN row
    values[4 * columns + 5] = -std::numeric_limits<float>::infinity();
    const Tensor x = Tensor::from_vector(values, {rows, columns}, "CPU");
    auto at = [&](int64_t row, int64_t column) {
      return static_cast<double>(values[row * columns + column]);
    };
    auto row_max = [&](int64_t row) {
      double best = -INFINITY;
      for (int64_t column = 0; column < columns; ++column) {
        if (std::isnan(at(row, column))) return static_cast<double>(NAN);
        best = std::max(best, at(row, column));
      }
      return best;
    };
    auto row_sum = [&](int64_t row, const std::function<double(double)>& term) {
      double total = 0;
      for (int64_t column = 0; column < columns; ++column) total += term(at(row, column));
      return total;
    };
    struct RowCase {
      std::string what;
      Tensor tensor;
      std::function<double(int64_t, int64_t)> expected;
    };
    const std::vector<RowCase> cases = {
        {"softmax", x.softmax(-1),
         [&](int64_t row, int64_t column) {
           const double top = row_max(row);
           return std::exp(at(row, column) - top) /
                  row_sum(row, [&](double value) { return std::exp(value - top); });
         }},
        {"log_softmax", x.log_softmax(-1),
         [&](int64_t row, int64_t column) {
           const double top = row_max(row);
           return at(row, column) - top -
                  std::log(row_sum(row, [&](double value) { return std::exp(value - top); }));
         }},
        {"x / row sum", x / x.sum({1}, true),
         [&](int64_t row, int64_t column) {
           return at(row, column) / row_sum(row, [](double value) { return value; });
         }},
    };
    for (const std::string& name : devices()) {
      std::shared_ptr<DeviceContext> context = open_device(name);
      OptTarget target = opt_target(context->device());
      if (target.loop_launch || target.local_memory_bytes <= 0 ||
          context->device().properties().compile_only)
        continue;
      ++devices_run;
      OptTarget as_gpu = target;
      as_gpu.is_gpu = true;  // the heuristics give a GPU's row workgroups
      // Lowered as for a GPU with vector loads too (its rows' reads 4 neighbours at a time), and
      // rendered in the device's own dialect.
      OptTarget lowering = target;
      lowering.vector_loads = true;
      for (const RowCase& row_case : cases) {
        DYNAMIC_SECTION(name << ", " << columns << " columns: " << row_case.what) {
          const Schedule schedule = fused(row_case.tensor, max_row_lanes(as_gpu));
          REQUIRE(schedule.items.size() == 1);
          const ScheduleItem& item = schedule.items[0];
          const std::vector<Opt> opts = heuristic_choice(item, as_gpu).opts;
          INFO(opts_to_string(opts));
          const LinearProgram program = lower_with(item, opts, lowering);
          REQUIRE(item.inputs.size() == 1);  // x
          std::vector<double> want;
          for (int64_t row = 0; row < rows; ++row)
            for (int64_t column = 0; column < columns; ++column)
              want.push_back(row_case.expected(row, column));
          check_close(values_of<float>(launch_program(*context, program, {bytes_of(values)}).at(0)),
                      want, 1e-5);
        }
      }
    }
  }
  if (devices_run == 0) skip("no device with workgroups and local memory here");
}

TEST_CASE("row fusion through realize: what a GPU would run, every opt policy",
          "[row_fusion][runtime]") {
  // On this machine's devices (no GPU) realize does not fuse; the values are the same either way.
  const Tensor x = Tensor::from_vector(row_values(7, 96, 9), {7, 96}, "CPU");
  const std::vector<float> reference = x.softmax(-1).to_vector<float>();
  for (const std::string& name : devices()) {
    const std::vector<float> got = x.to(name).softmax(-1).to(std::string("CPU")).to_vector<float>();
    REQUIRE(got.size() == reference.size());
    for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == Approx(reference[i]).epsilon(1e-5));
  }
}
