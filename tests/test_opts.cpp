// The optimiser: opts print readably, invalid lists are refused with the opt, the kernel and the
// limit named, and every valid list computes what no opts compute (on the device under test:
// KILN_DEVICE=CL runs these on OpenCL too).

#include <catch2/catch.hpp>

#include <kiln/error.h>
#include <kiln/kiln.h>

#include <cmath>
#include <limits>
#include <map>
#include <vector>

#include "codegen/decompose.h"
#include "codegen/render.h"
#include "runtime/device_context.h"
#include "runtime/opt_policy.h"
#include "runtime/registry.h"
#include "tests/codegen_helpers.h"
#include "tests/scoped_settings.h"
#include "tests/test_support.h"

using namespace kiln;
using namespace kiln::testing;

namespace {

std::string refusal(const ScheduleItem& item, const std::vector<Opt>& opts,
                    const OptTarget& target) {
  try {
    lower_with(item, opts, target);
  } catch (const OptError& error) {
    return error.what();
  }
  return "";
}

// Restores the default opt policy when a test ends.
struct PolicyScope {
  ~PolicyScope() { set_opt_settings({}); }
};

}  // namespace

TEST_CASE("opts print as kind, axis and amount", "[opts]") {
  CHECK(Opt{OptKind::Upcast, 1, 4}.to_string() == "UPCAST(axis 1, 4)");
  CHECK(Opt{OptKind::Local, Opt::kFlatAxis, 64}.to_string() == "LOCAL(flat, 64)");
  CHECK(opts_to_string({{OptKind::Group, 2, 256}, {OptKind::Unroll, 2, 4}}) ==
        "GROUP(axis 2, 256) UNROLL(axis 2, 4)");
  CHECK(opts_to_string({}) == "none");
  const ScheduleItem item = only_kernel(input({64, 32}, 1).sum({1}));
  CHECK(kernel_axes(item.ast).to_string() == "[64 | SUM float32 32]");
}

TEST_CASE("an opt that does not fit the kernel or the device is refused by name", "[opts]") {
  const ScheduleItem row_sum = only_kernel(input({64, 30}, 1).sum({1}));
  // axes: 0 is the output's 64 rows, 1 the reduced 30 columns.
  std::string message = refusal(row_sum, {{OptKind::Upcast, 1, 4}}, cpu_target());
  CHECK(contains(message, "UPCAST(axis 1, 4)"));
  CHECK(contains(message, "divide the axis' size 30"));
  CHECK(contains(message, "[64 | SUM float32 30]"));
  message = refusal(row_sum, {{OptKind::Local, 0, 16}}, cpu_target());
  CHECK(contains(message, "has no workgroups"));
  CHECK(contains(message, "CPU (test)"));
  CHECK(contains(refusal(row_sum, {{OptKind::Upcast, 7, 2}}, cpu_target()), "axes 0..1"));
  CHECK(contains(refusal(row_sum, {{OptKind::Unroll, 0, 2}}, cpu_target()), "reduce axis"));
  CHECK(contains(refusal(row_sum, {{OptKind::Upcast, 1, 1}}, cpu_target()), "at least 2"));

  OptTarget small = cl_target();
  small.max_workgroup_size = 128;
  small.local_memory_bytes = 256;
  CHECK(contains(refusal(row_sum, {{OptKind::Group, 1, 256}}, small), "at most 128"));
  CHECK(contains(refusal(row_sum, {{OptKind::Group, 1, 128}}, small),
                 "need 512 bytes of local memory"));
  CHECK(contains(
      refusal(row_sum, {{OptKind::Group, 1, 16}, {OptKind::Local, Opt::kFlatAxis, 4}}, cl_target()),
      "no LOCAL beside it"));
  // Partial products would change a float product's rounding.
  const ScheduleItem row_prod = only_kernel(input({64, 32}, 1).prod({1}));
  CHECK(contains(refusal(row_prod, {{OptKind::Upcast, 1, 4}}, cl_target()), "float product"));
  // Four launch dimensions do not exist.
  const ScheduleItem cube = only_kernel(input({4, 4, 4, 8}, 1).sum({3}));
  CHECK(contains(refusal(cube,
                         {{OptKind::Group, 3, 4},
                          {OptKind::Local, 0, 2},
                          {OptKind::Local, 1, 2},
                          {OptKind::Local, 2, 2}},
                         cl_target()),
                 "at most 3 dimensions"));
  // A launch dimension with more workgroups than the device allows along it (CUDA's grid: 65535
  // along y) is spread over a hardware dimension left free, and refused where none is.
  OptTarget grid = cl_target();
  grid.max_workgroups[1] = 65535;
  const ScheduleItem tall = only_kernel(input({70000, 16}, 1) * 2.0f);
  CHECK(refusal(tall, {{OptKind::Local, 1, 16}}, grid).empty());
  const LinearProgram spread = lower_with(tall, {{OptKind::Local, 1, 16}}, grid);
  REQUIRE(spread.launch.size() == 2);
  CHECK(spread.launch[1].hardware == std::vector<int>{1, 2});
  CHECK(spread.launch[1].hardware_groups == std::vector<int64_t>{35000, 2});
  grid.max_workgroups[2] = 1;
  CHECK(contains(refusal(tall, {{OptKind::Local, 1, 16}}, grid),
                 "would have 1, 70000 workgroups along its dimensions"));
  CHECK(refusal(tall, {{OptKind::Local, 1, 16}}, cl_target()).empty());
  CHECK(refusal(tall, {{OptKind::Local, 0, 2}, {OptKind::Local, 1, 16}}, grid).empty());
  // ROWS is for loop-style devices.
  const ScheduleItem broadcast = only_kernel(input({64, 32}, 1) - input({64, 1}, 2));
  CHECK(contains(refusal(broadcast, {{OptKind::Rows, 1, 32}}, cl_target()), "as a loop"));
  // The refusal is an Error; a broken invariant is a distinct type that says it is kiln's bug.
  CHECK_THROWS_AS(lower_with(row_sum, {{OptKind::Upcast, 1, 4}}, cpu_target()), Error);
  const InternalError internal("[test] broken");
  CHECK(contains(internal.what(), "a kiln bug"));
}

TEST_CASE("the heuristics' choice fits the kernel on a GPU", "[opts]") {
  // A GROUP shortens what each work item reduces; an UNROLL or UPCAST beside it must still
  // divide the whole axis (262147 = 256 * 1024 + 3 once chose UNROLL 4).
  for (int64_t size : {262147, 262144, 4096 * 3 + 1, 5000, 70001}) {
    for (DType dtype : {dtypes::float32, dtypes::int32, dtypes::float16}) {
      const Tensor values = input({size}, 1).cast(dtype);
      for (const Tensor& reduced :
           {values.sum(), values.max(), values.reshape({1, size}).sum({1})}) {
        for (const ScheduleItem& item : schedule_of(reduced).items) {
          const OptChoice choice = heuristic_choice(item, gpu_target());
          INFO(size << " " << dtype.name() << " " << opts_to_string(choice.opts));
          CHECK_NOTHROW(lower_with(item, choice.opts, gpu_target()));
        }
      }
    }
  }
}

TEST_CASE("a grouped reduction renders local memory and a barrier", "[opts]") {
  const ScheduleItem full_sum = only_kernel(input({4000}, 1).sum());
  const LinearProgram program = lower_with(full_sum, {{OptKind::Group, 0, 64}}, cl_target());
  REQUIRE(program.launch.size() == 1);  // a full sum has no output axis
  CHECK(program.launch[0].local_id);
  CHECK(program.launch[0].local == 64);
  const std::string source =
      render_kernel(decompose_semantics(program, opencl_dialect(false)), opencl_dialect(false));
  CHECK(contains(source, "__local float local"));
  CHECK(contains(source, "barrier(CLK_LOCAL_MEM_FENCE);"));
  CHECK(contains(source, "get_local_id(0)"));
  CHECK(contains(source, "if ((lidx0 < 1))"));
  CHECK_FALSE(contains(source, "return;"));  // every work item reaches the barrier
  // Random lists for this kernel include a GROUP for some seeds on a device with workgroups.
  bool grouped = false;
  for (uint64_t seed = 1; seed <= 40 && !grouped; ++seed) {
    for (const Opt& opt : random_choice(full_sum, cl_target(), seed))
      grouped |= opt.kind == OptKind::Group;
  }
  CHECK(grouped);
  // The CPU never gets workgroup opts.
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    for (const Opt& opt : random_choice(full_sum, cpu_target(), seed)) {
      CHECK(opt.kind != OptKind::Group);
      CHECK(opt.kind != OptKind::Local);
    }
  }
}

TEST_CASE("TILE stages a matmul's inputs through local memory, or says why it cannot", "[opts]") {
  const ScheduleItem product = only_kernel(matmul(input({64, 48}, 1), input({48, 32}, 2)));
  const KernelAxes axes = kernel_axes(product.ast);
  // axes: 0 and 1 the output's rows and columns, 2 the 48 reduce steps.
  REQUIRE(axes.source_axis.size() == 2);
  REQUIRE(axes.reduce_inputs.size() == 2);
  CHECK(axes.reduce_inputs[0].output_axes.size() == 1);  // a row of A: the output's row only
  const std::vector<Opt> tiled{{OptKind::Upcast, 1, 2},
                               {OptKind::Local, 1, 8},
                               {OptKind::Local, 0, 4},
                               {OptKind::Tile, 2, 16}};
  const LinearProgram program = lower_with(product, tiled, cl_target());
  int locals = 0, barriers = 0;
  for (const LinInstr& instr : program.instrs) {
    locals += instr.op == LinOp::DefineLocal;
    barriers += instr.op == LinOp::Barrier;
  }
  CHECK(locals == 2);    // one chunk per input
  CHECK(barriers == 2);  // after the copy, and before the next chunk overwrites it
  const std::string source =
      render_kernel(decompose_semantics(program, opencl_dialect(false)), opencl_dialect(false));
  CHECK(contains(source, "__local float local"));
  CHECK_FALSE(contains(source, "return;"));  // every work item reaches the barriers

  CHECK(contains(refusal(product, {{OptKind::Tile, 0, 16}}, cl_target()), "reduce axis"));
  CHECK(contains(refusal(product, {{OptKind::Tile, 2, 16}}, cl_target()), "TILE needs a LOCAL"));
  CHECK(contains(refusal(product, {{OptKind::Local, 1, 8}, {OptKind::Tile, 2, 7}}, cl_target()),
                 "divide the axis' size 48"));
  CHECK(contains(refusal(product, {{OptKind::Local, 1, 12}, {OptKind::Tile, 2, 16}}, cl_target()),
                 "every work item reaches the barriers"));
  CHECK(contains(
      refusal(product, {{OptKind::Local, Opt::kFlatAxis, 8}, {OptKind::Tile, 2, 16}}, cl_target()),
      "not the flat index"));
  CHECK(contains(
      refusal(product, {{OptKind::Local, 1, 8}, {OptKind::Unroll, 2, 2}, {OptKind::Tile, 2, 16}},
              cl_target()),
      "no other opt beside TILE"));
  OptTarget small = cl_target();
  small.local_memory_bytes = 512;
  CHECK(contains(refusal(product, {{OptKind::Local, 1, 8}, {OptKind::Tile, 2, 16}}, small),
                 "need 576 bytes of local memory"));
  CHECK(contains(refusal(product, {{OptKind::Tile, 2, 16}}, cpu_target()), "no workgroups"));
  // Two reduce axes that do not merge: not matmul-shaped.
  const ScheduleItem two_axes = only_kernel(input({8, 6, 4}, 3).sum({0, 2}));
  CHECK(contains(refusal(two_axes, {{OptKind::Local, 0, 2}, {OptKind::Tile, 1, 4}}, cl_target()),
                 "matmul-shaped"));
  const ScheduleItem long_product = only_kernel(matmul(input({8, 8192}, 1), input({8192, 8}, 2)));
  CHECK(
      contains(refusal(long_product, {{OptKind::Local, 1, 8}, {OptKind::Tile, 2, 16}}, cl_target()),
               "added in blocks"));
  // Random lists include TILE for some seeds.
  bool tiles = false;
  for (uint64_t seed = 1; seed <= 40 && !tiles; ++seed) {
    for (const Opt& opt : random_choice(product, cl_target(), seed))
      tiles |= opt.kind == OptKind::Tile;
  }
  CHECK(tiles);
}

TEST_CASE("on a GPU, large elementwise kernels move 16 bytes per access and matmul tiles coalesce",
          "[opts]") {
  // A large add: 4 outputs per work item; a small one, or a transpose, keeps one.
  const int64_t large = int64_t{1} << 22;
  const OptChoice add =
      heuristic_choice(only_kernel(input({large}, 1) + input({large}, 2)), gpu_target());
  REQUIRE_FALSE(add.opts.empty());
  CHECK(add.opts[0] == Opt{OptKind::Upcast, 0, 4});
  for (const Opt& opt :
       heuristic_choice(only_kernel(input({1024}, 1) + input({1024}, 2)), gpu_target()).opts)
    CHECK(opt.kind != OptKind::Upcast);
  const ScheduleItem transpose = only_kernel(input({2048, 2048}, 3).permute({1, 0}).contiguous());
  for (const Opt& opt : heuristic_choice(transpose, gpu_target()).opts)
    CHECK(opt.kind != OptKind::Upcast);

  // A 256^3 matmul: 8x8 outputs per work item in 16x16 workgroups, chunks of 16 steps.
  const ScheduleItem product = only_kernel(matmul(input({256, 256}, 1), input({256, 256}, 2)));
  const OptChoice tiled = heuristic_choice(product, gpu_target());
  CHECK(opts_to_string(tiled.opts) ==
        "UPCAST(axis 1, 8) UPCAST(axis 0, 8) LOCAL(axis 1, 16) LOCAL(axis 0, 16) TILE(axis 2, 16)");
  // Its chunk copies: neighbouring work items (the launch's first dimension, the last axis)
  // load neighbouring elements of both inputs, A along its rows (the reduce steps) and B along
  // its columns.
  const LinearProgram program = lower_with(product, tiled.opts, gpu_target());
  std::vector<const LinInstr*> copies;
  for (const LinInstr& instr : program.instrs) {
    if (instr.op == LinOp::Load && !instr.local) copies.push_back(&instr);
  }
  REQUIRE(copies.size() >= 2);
  // Every launch variable at 0 but the first dimension's, which is 0 and then 1.
  std::map<std::string, int64_t> first, second;
  for (const LaunchDim& dim : program.launch) first[dim.var] = second[dim.var] = 0;
  second[program.launch[0].var] = 1;
  bool coalesced[2] = {false, false};  // A (param 1), B (param 2)
  for (const LinInstr* load : copies) {
    if (load->buffer < 1 || load->buffer > 2) continue;
    std::map<std::string, int64_t> at_first = first, at_second = second;
    for (const LinInstr& instr : program.instrs) {  // the chunk loop at its first trip
      if (instr.op == LinOp::LoopBegin) at_first[instr.loop_var] = at_second[instr.loop_var] = 0;
    }
    INFO(load->index.key());
    coalesced[load->buffer - 1] |= load->index.eval(at_second) - load->index.eval(at_first) == 1;
  }
  CHECK(coalesced[0]);
  CHECK(coalesced[1]);
}

TEST_CASE("every valid opts list computes what no opts compute", "[opts]") {
  PolicyScope restore;
  const Tensor a = Tensor::rand({24, 40}, 3), b = Tensor::rand({40, 36}, 4);
  const Tensor long_row = Tensor::rand({3, 5000}, 5), odd = Tensor::rand({7, 9, 11}, 6);
  auto programs = [&] {
    return std::vector<Tensor>{
        matmul(a, b),
        matmul(a.cast(dtypes::float16), b.cast(dtypes::float16)),
        matmul(a.reshape({2, 12, 40}), b.reshape({1, 40, 36}).expand({2, 40, 36})),
        matmul(a, b) + b.sum({0}),
        long_row.sum({1}),
        long_row.max({1}),
        long_row.sum(),
        odd.sum({0, 2}),
        (odd * 2).min({1}),
        odd.cast(dtypes::int32).sum({2}),
        a.softmax(1),
        a - a.max({1}, true),
        odd.cast(dtypes::float16).sum({1})};
  };
  set_opt_settings({OptPolicy::None, 0});
  std::vector<std::vector<float>> expected;
  for (Tensor& result : programs())
    expected.push_back(result.cast(dtypes::float32).to_vector<float>());
  for (uint64_t seed = 1; seed <= 16; ++seed) {
    set_opt_settings({OptPolicy::Random, seed});
    std::vector<Tensor> results = programs();
    for (size_t index = 0; index < results.size(); ++index) {
      const std::vector<float> got = results[index].cast(dtypes::float32).to_vector<float>();
      REQUIRE(got.size() == expected[index].size());
      for (size_t at = 0; at < got.size(); ++at) {
        INFO("program " << index << " seed " << seed << " element " << at);
        CHECK(got[at] == Approx(expected[index][at]).epsilon(1e-3).margin(1e-3));
      }
    }
  }
}

TEST_CASE("the gpu opt policy runs a GPU's kernels on devices with workgroups",
          "[opts][runtime][devices]") {
  // A softmax (fused into one kernel on a GPU) and a long sum (one GRID kernel on a GPU).
  const int64_t rows = 16, columns = 1024, count = 1 << 18;
  std::vector<float> matrix(rows * columns), vector(count);
  for (size_t i = 0; i < matrix.size(); ++i)
    matrix[i] = static_cast<float>((i * 7919) % 2001) / 250.0f - 4.0f;
  matrix[3 * columns + 5] = std::numeric_limits<float>::quiet_NaN();
  double total = 0;
  for (int64_t i = 0; i < count; ++i) total += vector[i] = static_cast<float>(i % 13) - 6.0f;
  auto softmax_at = [&](int64_t row, int64_t column) {
    double top = -INFINITY, sum = 0;
    for (int64_t at = 0; at < columns; ++at) {
      const double value = matrix[row * columns + at];
      if (std::isnan(value)) return static_cast<double>(NAN);
      top = std::max(top, value);
    }
    for (int64_t at = 0; at < columns; ++at) sum += std::exp(matrix[row * columns + at] - top);
    return std::exp(matrix[row * columns + column] - top) / sum;
  };
  const OptSettings before = opt_settings();
  int devices_run = 0;
  for (const std::string& name : devices()) {
    std::shared_ptr<DeviceContext> context = open_device(name);
    if (opt_target(context->device()).loop_launch || context->device().properties().compile_only)
      continue;
    ++devices_run;
    for (const OptPolicy policy : {OptPolicy::Gpu, OptPolicy::Default}) {
      set_opt_settings({policy, 0});
      INFO(name << " under " << opt_settings_to_string(opt_settings()));
      CapturedStep step([](const std::vector<Tensor>& inputs) {
        return std::vector<Tensor>{inputs[0].softmax(-1), inputs[1].sum()};
      });
      const std::vector<Tensor> inputs = {Tensor::from_vector(matrix, {rows, columns}, name),
                                          Tensor::from_vector(vector, {count}, name)};
      for (int call = 0; call < 3; ++call) {  // as written, captured, replayed
        const std::vector<Tensor> outputs = step(inputs);
        const std::vector<float> softmax = outputs[0].to_vector<float>();
        for (int64_t row = 0; row < rows; ++row) {
          for (int64_t column = 0; column < columns; column += 97) {
            const double want = softmax_at(row, column);
            const float got = softmax[row * columns + column];
            INFO("call " << call << ", row " << row << ", column " << column);
            if (std::isnan(want)) {
              CHECK(std::isnan(got));
            } else {
              CHECK(got == Approx(want).epsilon(1e-5).margin(1e-9));
            }
          }
        }
        CHECK(outputs[1].item<float>() == Approx(total));
      }
      // A GPU's kernels: the softmax's one and the sum's one (two where the device limits a
      // work item's loops: lavapipe's 65535 split a reduction this long). By default a device
      // that is not a GPU runs more (three for the softmax, two for the sum); a GPU's default is
      // the gpu policy.
      if (policy == OptPolicy::Gpu || opt_target(context->device()).is_gpu) {
        const bool loops_limited = context->device().properties().max_loop_iterations > 0 &&
                                   count > context->device().properties().max_loop_iterations / 4;
        CHECK(step.kernels() == (loops_limited ? 3 : 2));
      } else {
        CHECK(step.kernels() > 2);
      }
    }
  }
  set_opt_settings(before);
  if (devices_run == 0) skip("no device with workgroups here");
}

TEST_CASE("a kernel the driver allows smaller workgroups is planned again within them",
          "[opts][runtime][devices]") {
  // NVIDIA's OpenCL allowed some kernels 256 work items of the device's 1024: the kernel is
  // planned again within the driver's limit rather than failing at its launch. PoCL runs that
  // path under KILN_CL_KERNEL_GROUP_LIMIT. Sizes no other test uses: every kernel is new here.
  const testing::ScopedEnvironment limit("KILN_CL_KERNEL_GROUP_LIMIT", "16");
  const int64_t rows = 13, columns = 1031, count = 70001;
  std::vector<float> matrix(rows * columns), vector(count);
  for (size_t i = 0; i < matrix.size(); ++i)
    matrix[i] = static_cast<float>((i * 7919) % 2001) / 500.0f - 2.0f;
  double total = 0, first_row = 0;
  for (int64_t i = 0; i < count; ++i) total += vector[i] = static_cast<float>(i % 11) - 5.0f;
  for (int64_t column = 0; column < columns; ++column) first_row += std::exp(matrix[column]);
  int devices_run = 0;
  for (const std::string& name : devices()) {
    if (name.rfind("CL", 0) != 0) continue;
    ++devices_run;
    for (const OptSettings settings : {OptSettings{OptPolicy::Gpu, 0},
                                       {OptPolicy::Random, 5},
                                       {OptPolicy::Random, 6},
                                       {OptPolicy::Default, 0}}) {
      const testing::ScopedOptSettings scoped(settings);
      INFO(name << " under " << opt_settings_to_string(settings));
      const Tensor x = Tensor::from_vector(matrix, {rows, columns}, name);
      const Tensor v = Tensor::from_vector(vector, {count}, name);
      CHECK(v.sum().item<float>() == Approx(total));
      CHECK((v * 2.0f + 1.0f).to_vector<float>()[count - 1] == Approx(vector[count - 1] * 2 + 1));
      CHECK(x.exp().sum(-1).to_vector<float>()[0] == Approx(first_row).epsilon(1e-5));
      const std::vector<float> product = x.matmul(x.transpose(0, 1)).to_vector<float>();
      double want = 0;
      for (int64_t column = 0; column < columns; ++column)
        want += static_cast<double>(matrix[column]) * matrix[columns + column];
      CHECK(product[1] == Approx(want).epsilon(1e-4));
    }
  }
  if (devices_run == 0) skip("no OpenCL device here");
}
