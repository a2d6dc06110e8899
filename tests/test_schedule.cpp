// The scheduler's fusion decisions, counted in kernels, and the lowering's choices.

#include <catch2/catch.hpp>

#include <kiln/kiln.h>

#include <algorithm>
#include <cmath>

#include "codegen/decompose.h"
#include "codegen/heuristics.h"
#include "codegen/lower.h"
#include "codegen/render.h"
#include "codegen/schedule.h"
#include "core/uop.h"
#include "runtime/opt_policy.h"
#include "tests/codegen_helpers.h"
#include "tests/scoped_settings.h"
#include "tests/test_support.h"

using namespace kiln;
using namespace kiln::testing;

namespace {

size_t kernel_count(const Tensor& tensor) {
  return schedule_of(tensor).items.size();
}

}  // namespace

TEST_CASE("an elementwise chain into a reduce is one kernel", "[schedule]") {
  const Tensor a = input({64, 32}, 1), b = input({64, 32}, 2), c = input({64, 32}, 3);
  CHECK(kernel_count(((a * b + c).relu().exp()).sum({1})) == 1);
  CHECK(kernel_count((a * b + c).relu()) == 1);
}

TEST_CASE("a reduce fuses into the elementwise work after it", "[schedule]") {
  const Tensor a = input({64, 32}, 1);
  CHECK(kernel_count(a.sum({1}) * 2 + 1) == 1);
  CHECK(kernel_count(a.sum({1}, true).sqrt()) == 1);
}

TEST_CASE("softmax is at most three kernels", "[schedule]") {
  const Tensor a = input({64, 32}, 1);
  CHECK(kernel_count(a.softmax(-1)) <= 3);
  CHECK(kernel_count(a.log_softmax(0)) <= 3);
}

TEST_CASE("a broadcast reduce is realized once, not recomputed", "[schedule]") {
  const Tensor a = input({64, 32}, 1);
  const Tensor centered = a - a.mean({1}, true);
  CHECK(kernel_count(centered) == 2);
}

TEST_CASE("movement ops do not make kernels", "[schedule]") {
  const Tensor a = input({8, 6}, 1);
  CHECK(kernel_count(a.transpose().reshape({48}).flip({0})) == 0);
  CHECK(kernel_count(a.permute({1, 0}).pad({{1, 1}, {0, 2}}) + 1) == 1);
  CHECK(kernel_count(cat({a, a * 2, a + 1}, 1)) == 1);
}

TEST_CASE("a matmul is one kernel", "[schedule]") {
  const Tensor a = input({16, 8}, 1), b = input({8, 24}, 2);
  CHECK(kernel_count(matmul(a, b)) == 1);
  CHECK(kernel_count(matmul(a, b).relu() + 1) == 1);
}

// A slice's gradient is a pad: attention's in-projection weight gradient is three padded
// matmuls summed. Fused behind the pads, all three would be computed in one untiled kernel per
// output element (two of them masked off); each is its own kernel, and the cat one more.
TEST_CASE("a reduction read through a pad is its own kernel", "[schedule]") {
  const Tensor a = input({16, 8}, 1), b = input({8, 24}, 2), c = input({8, 24}, 3);
  const Tensor stacked = cat({matmul(a, b), matmul(a, c)}, 0);
  CHECK(kernel_count(stacked) == 3);
  CHECK(kernel_count(matmul(a, b).pad({{2, 2}, {0, 0}})) == 2);
  // Elementwise work behind a pad still fuses, and so does a reduction that is not padded.
  CHECK(kernel_count((a * 2).pad({{1, 1}, {0, 0}}).sum({1})) == 1);
  CHECK(kernel_count(matmul(a, b).relu() + 1) == 1);
}

// nn::Linear computes x @ W^T. W^T read down its columns leaves a CPU's column tile no
// neighbouring loads: W^T is copied row-major first (codegen/row_major_operand.h), a small
// kernel, and the product is tiled. Not for a small product, nor an operand already row-major.
TEST_CASE("a CPU copies a matmul's transposed operand row-major first", "[schedule]") {
  const Tensor x = input({256, 64}, 1), w = input({128, 64}, 2);
  const Schedule schedule = schedule_of(matmul(x, w.transpose()));
  REQUIRE(schedule.items.size() == 2);
  CHECK(schedule.buffers[schedule.items[0].buffers[0]].numel == 128 * 64);
  CHECK(kernel_count(matmul(x, input({64, 128}, 3))) == 1);
  CHECK(kernel_count(matmul(input({16, 8}, 4), input({24, 8}, 5).transpose())) == 1);
  // A computed operand is computed in the copy; a matmul in it is its own tiled kernel first.
  CHECK(kernel_count(matmul(x, (w * 2 + 1).transpose())) == 2);
  CHECK(kernel_count(matmul(x, matmul(w, input({64, 64}, 6)).transpose())) == 3);

  const std::vector<float> xs = x.to_vector<float>(), ws = w.to_vector<float>();
  const std::vector<float> got = matmul(x, w.transpose()).relu().to_vector<float>();
  double worst = 0;
  for (int64_t row = 0; row < 256; ++row) {
    for (int64_t column = 0; column < 128; ++column) {
      double expected = 0;
      for (int64_t k = 0; k < 64; ++k)
        expected += static_cast<double>(xs[row * 64 + k]) * ws[column * 64 + k];
      worst = std::max(worst, std::abs(std::max(expected, 0.0) - got[row * 128 + column]));
    }
  }
  CHECK(worst < 1e-4);
}

TEST_CASE("large full reductions are split in two kernels", "[schedule]") {
  const Tensor big = input({1 << 17}, 1);
  CHECK(kernel_count(big.sum()) == 2);
  const Tensor small = input({1000}, 1);
  CHECK(kernel_count(small.sum()) == 1);
  CHECK(big.sum().item<float>() == Approx(static_cast<double>(1 << 16)).epsilon(0.01));
}

TEST_CASE("reduction kernels are upcast where a load is contiguous across outputs", "[schedule]") {
  const Tensor a = input({64, 32}, 1), b = input({32, 64}, 2);
  Schedule schedule = schedule_of(matmul(a, b));
  REQUIRE(schedule.items.size() == 1);
  const LinearProgram program = lowered(schedule.items[0], cpu_target());
  CHECK(program.global_size.const_value() < 64 * 64);  // several outputs per work item
  // A row sum reads rows with a stride: no upcast.
  schedule = schedule_of(a.sum({1}));
  CHECK(lowered(schedule.items[0], cpu_target()).global_size == Sym(64));
}

TEST_CASE("index arithmetic is simplified in rendered kernels", "[schedule]") {
  const Tensor a = input({64, 32}, 1), b = input({64, 32}, 2);
  Schedule schedule = schedule_of(a + b);
  const std::string source = render_kernel(
      decompose_semantics(lowered(schedule.items[0], cpu_target()), c_dialect()), c_dialect());
  const std::string body = source.substr(source.find("void e_"));
  // Contiguous operands are read at gid itself: no division or modulo survives.
  CHECK(contains(body, "data1[gidx0]"));
  CHECK_FALSE(contains(body, "%"));
  CHECK_FALSE(contains(body, "/"));
}

TEST_CASE("an elementwise kernel reading a row broadcast loops over rows and columns",
          "[schedule]") {
  const Tensor a = input({64, 32}, 1), row_max = input({64, 1}, 2);
  Schedule schedule = schedule_of(a - row_max);
  REQUIRE(schedule.items.size() == 1);
  const LinearProgram program = lowered(schedule.items[0], cpu_target());
  CHECK(program.row_length == 32);
  const std::string source = render_kernel(decompose_semantics(program, c_dialect()), c_dialect());
  const std::string body = source.substr(source.find("void e_"));
  // The broadcast operand is read per row; no division is left in the column loop.
  CHECK(contains(body, "data2[gid_row]"));
  CHECK(contains(body, "gid_col + gid_row * 32"));
  CHECK_FALSE(contains(body, "%"));
  // ROWS is for loop-style devices; OpenCL kernels stay flat (PoCL vectorizes contiguous flat
  // indices better), and asking for it there is refused.
  CHECK(lowered(schedule.items[0], cl_target()).row_length == 0);
  CHECK_THROWS_AS(lower_with(schedule.items[0], {{OptKind::Rows, 1, 32}}, cl_target()), OptError);
  // A contiguous kernel stays one flat loop.
  CHECK(lowered(schedule_of(a + a).items[0], cpu_target()).row_length == 0);
}

TEST_CASE("float sum, max and min reduction loops may be reassociated on the CPU", "[schedule]") {
  const Tensor a = input({8, 1000}, 1);
  for (const auto& [reduced, clause] :
       {std::pair{a.sum({1}), "(+:"}, {a.max({1}), "(kiln_max:"}, {a.min({1}), "(kiln_min:"}}) {
    Schedule schedule = schedule_of(reduced);
    REQUIRE(schedule.items.size() == 1);
    const std::string source = render_kernel(
        decompose_semantics(lowered(schedule.items[0], cpu_target()), c_dialect()), c_dialect());
    CHECK(contains(source, std::string("#pragma omp simd reduction") + clause));
  }
  // OpenCL C has no such pragma: a max gets 8 partial maxes (an UPCAST of its reduce axis),
  // combined NaN-safely.
  Schedule max_schedule = schedule_of(a.max({1}));
  const LinearProgram max_program = lowered(max_schedule.items[0], cl_target());
  INFO(opts_to_string(max_program.opts));
  CHECK(max_program.opts ==
        std::vector<Opt>{{OptKind::Upcast, 1, 8}, {OptKind::Local, Opt::kFlatAxis, 4}});
  const std::string max_source =
      render_kernel(decompose_semantics(max_program, opencl_dialect(false)), opencl_dialect(false));
  CHECK(contains(max_source, " != "));
  // A product is not reassociated.
  Schedule schedule = schedule_of(a.prod({1}));
  const std::string source = render_kernel(
      decompose_semantics(lowered(schedule.items[0], cpu_target()), c_dialect()), c_dialect());
  CHECK_FALSE(contains(source, "#pragma omp simd reduction"));
}

namespace {

// The elements each kernel's reductions reduce per output, at most.
int64_t longest_reduction(const Schedule& schedule) {
  int64_t longest = 0;
  for (const ScheduleItem& item : schedule.items) {
    if (item.kind != ScheduleItem::Kind::Kernel) continue;
    for (const UOpRef& node : toposort({item.ast})) {
      if (node->op() != Op::Reduce) continue;
      int64_t length = 1;
      for (int axis : node->reduce_arg().axes) length *= node->src()->shape()[axis];
      longest = std::max(longest, length);
    }
  }
  return longest;
}

}  // namespace

TEST_CASE("a kernel binds no more buffers than the device allows", "[schedule]") {
  // A chain of 60 sums and a balanced tree over 60 inputs, on a device that binds 8 buffers.
  std::vector<Tensor> inputs;
  for (int index = 0; index < 60; ++index) inputs.push_back(input({4, 4}, 100 + index));
  Tensor chain = inputs[0];
  for (int index = 1; index < 60; ++index) chain = chain + inputs[index];
  std::vector<Tensor> level = inputs;
  while (level.size() > 1) {
    std::vector<Tensor> next;
    for (size_t at = 0; at + 1 < level.size(); at += 2) next.push_back(level[at] + level[at + 1]);
    if (level.size() % 2) next.push_back(level.back());
    level = next;
  }
  for (const Tensor& sum : {chain, level[0]}) {
    const Schedule schedule = schedule_of(sum, scheduled_on(8, 0));
    CHECK(schedule.items.size() > 1);
    for (const ScheduleItem& item : schedule.items) CHECK(item.inputs.size() + 1 <= 8);
    // The default limit (128) fuses all 60 into one kernel.
    CHECK(schedule_of(sum).items.size() == 1);
  }
}

TEST_CASE("reductions longer than the device may loop are split", "[schedule]") {
  const Tensor rows = input({3, 1001}, 1);
  const Tensor columns = input({1001, 3}, 2);
  const Tensor cube = input({17, 19, 23}, 3);
  const std::vector<Tensor> reductions = {
      rows.sum({1}),    rows.max({1}), columns.min({0}),    columns.prod({0}),
      cube.sum({0, 2}), cube.sum(),    rows.sum({1}).sum(), (rows * 2).max({1}, true) + 1};
  for (const Tensor& reduction : reductions) {
    CHECK(longest_reduction(schedule_of(reduction)) > 50);
    const Schedule bounded = schedule_of(reduction, scheduled_on(128, 50));
    CHECK(longest_reduction(bounded) <= 50);
    CHECK(bounded.items.size() >= 2);
  }
}

namespace {

// The loop iterations per output a kernel's nested reductions run at most: each reduction's
// length times (one plus the loops of the reductions inside it).
int64_t nested_loop_work(const UOpRef& node) {
  int64_t inside = 0;
  for (const UOpRef& src : node->srcs()) inside += nested_loop_work(src);
  if (node->op() != Op::Reduce) return inside;
  int64_t length = 1;
  for (int axis : node->reduce_arg().axes) length *= node->src()->shape()[axis];
  return length * (inside + 1);
}

}  // namespace

TEST_CASE("fused nested reductions stay inside the device's loop limit together", "[schedule]") {
  // lavapipe stops a work item's loops after 65535 iterations in all: x.sum(1).sum() of (255, 256)
  // fused is 255 * 257 iterations, each reduction alone far fewer. Past the limit the inner
  // reduction is realized; within it the two stay one kernel.
  const Tensor big = input({255, 256}, 1), small = input({16, 16}, 2);
  const std::vector<Tensor> nested = {big.sum({1}).sum(), big.sum({0}).sum(), big.max({1}).sum(),
                                      (big * big).sum({1}).sqrt().sum(),
                                      input({1, 256}, 3).matmul(input({256, 255}, 4)).sum()};
  for (const Tensor& reduction : nested) {
    CHECK(schedule_of(reduction).items.size() == 1);
    const Schedule bounded = schedule_of(reduction, scheduled_on(128, 16383));
    CHECK(bounded.items.size() == 2);
    for (const ScheduleItem& item : bounded.items) CHECK(nested_loop_work(item.ast) <= 16383);
  }
  CHECK(schedule_of(small.sum({1}).sum(), scheduled_on(128, 16383)).items.size() == 1);
}

namespace {

bool computes(const Schedule& schedule, Op op) {
  for (const ScheduleItem& item : schedule.items) {
    if (item.kind != ScheduleItem::Kind::Kernel) continue;
    for (const UOpRef& node : toposort({item.ast})) {
      if (node->op() == op) return true;
    }
  }
  return false;
}

}  // namespace

TEST_CASE("a realized value is read by every graph built on it, while it lives", "[schedule]") {
  const Tensor a = input({64, 32}, 1);
  Tensor x = (a + 1).exp();
  const Tensor y = x * 2;
  CHECK(computes(schedule_of(y), Op::Exp));
  x.realize();
  // y was built on x's graph before x was realized: it now reads x's buffer.
  const Schedule after = schedule_of(y);
  REQUIRE(after.items.size() == 1);
  CHECK_FALSE(computes(after, Op::Exp));
  REQUIRE(after.items[0].inputs.size() == 1);
  const ScheduleBuffer& read = after.buffers[after.items[0].buffers[1]];
  CHECK(read.is_leaf);
  CHECK(read.node == x.node());
  const std::vector<float> values = y.to_vector<float>();
  const std::vector<float> inputs = a.to_vector<float>();
  for (size_t index = 0; index < values.size(); ++index)
    CHECK(values[index] == Approx(std::exp(inputs[index] + 1.0) * 2).epsilon(1e-6));

  // Once the tensor that holds the value is gone, the graph computes it again.
  Tensor w = a * 0;
  {
    Tensor z = (a + 2).exp();
    w = z * 3;
    z.realize();
    CHECK_FALSE(computes(schedule_of(w), Op::Exp));
  }
  CHECK(computes(schedule_of(w), Op::Exp));
}

TEST_CASE("a value realized on one device is not read on another", "[schedule]") {
  // full and arange build the same node for every device: realized on the CPU, it must still be
  // computed on another device, into that device's memory.
  for (const std::string& other : kiln::devices()) {
    if (other == "CPU") continue;
    const Tensor on_cpu = (Tensor::arange(0, 33, 1, dtypes::float32, "CPU") * 0.25).sin();
    on_cpu.realize();
    const Tensor elsewhere = (Tensor::arange(0, 33, 1, dtypes::float32, other) * 0.25).sin();
    const Tensor sum = elsewhere + Tensor::full({33}, 1, dtypes::float32, other);
    CHECK(sum.to(std::string("CPU")).to_vector<float>() == (on_cpu + 1).to_vector<float>());
    elsewhere.realize();
    CHECK(elsewhere.node()->storage()->device() == other);
  }
}

// Issue 26 item 16: on VULKAN, whose loop limit splits a reduction into pieces of 16,383, the sum
// of 2^40 ones needed 2^26 partial sums, a buffer larger than the device binds (an
// OutOfMemoryError); the CPU computed it, 22 s. A reduction of a constant is a constant.
TEST_CASE("a sum, max or min of a constant is folded, however long, on every device and policy",
          "[schedule][fold]") {
  const int64_t huge = int64_t{1} << 40;
  for (const std::string& device : devices()) {
    for (const OptPolicy policy : {OptPolicy::Default, OptPolicy::Gpu}) {
      INFO(device << ", policy " << static_cast<int>(policy));
      ScopedOptSettings settings({policy, 0});
      const Tensor ones = Tensor::ones({huge}, dtypes::float32, device);
      CHECK(kernel_count(ones.sum()) == 1);  // storing the constant
      CHECK(ones.sum().item<float>() == static_cast<float>(huge));
      const Tensor twos = Tensor::full({3, int64_t{1} << 38}, 2.0, dtypes::float32, device);
      CHECK(twos.sum(1).to_vector<float>() ==
            std::vector<float>(3, static_cast<float>(int64_t{1} << 39)));
      CHECK(twos.max().item<float>() == 2.0f);
      CHECK(Tensor::full({huge}, -3.0, dtypes::float32, device).min().item<float>() == -3.0f);
      // Integers wrap as a computed sum does: 2^40 * 3 modulo 2^32 is 0 in int32.
      CHECK(Tensor::full({huge}, 3, dtypes::int32, device).sum().item<int32_t>() == 0);
      CHECK(Tensor::full({7}, 3, dtypes::int32, device).sum().item<int32_t>() == 21);
    }
  }
}

TEST_CASE("kernels are over parameters, bound to the schedule's buffers", "[schedule]") {
  const Tensor a = input({64}, 1), b = input({64}, 2);
  const Schedule first = schedule_of((a + 1) * a);
  const Schedule second = schedule_of((b + 1) * b);
  REQUIRE(first.items.size() == 1);
  REQUIRE(second.items.size() == 1);
  // The same kernel over other buffers is the same node: no storage in it.
  CHECK(first.items[0].ast == second.items[0].ast);
  const ScheduleItem& kernel = first.items[0];
  REQUIRE(kernel.inputs.size() == 1);  // a read twice is one parameter
  CHECK(kernel.output->device_arg() == "param0");
  CHECK(kernel.inputs[0]->device_arg() == "param1");
  REQUIRE(kernel.buffers.size() == 2);
  const ScheduleBuffer& output = first.buffers[kernel.buffers[0]];
  const ScheduleBuffer& read = first.buffers[kernel.buffers[1]];
  CHECK_FALSE(output.is_leaf);
  CHECK(output.device == "CPU");
  CHECK(output.numel == 64);
  CHECK(read.is_leaf);
  CHECK(read.node == a.node());
  REQUIRE(first.results.size() == 1);
  CHECK(first.results[0].buffer == kernel.buffers[0]);
  // A root read as it is (a view of a leaf) is no item's.
  const Schedule view = schedule_of(a.reshape({8, 8}));
  CHECK(view.items.empty());
  REQUIRE(view.results.size() == 1);
  CHECK(view.results[0].buffer < 0);
  CHECK(view.results[0].unchanged != nullptr);
  // Two kernels: the second binds the first one's buffer.
  const Schedule two = schedule_of(a.sum() + a);
  REQUIRE(two.items.size() == 2);
  CHECK(std::find(two.items[1].buffers.begin() + 1, two.items[1].buffers.end(),
                  two.items[0].buffers[0]) != two.items[1].buffers.end());
}

TEST_CASE("costly work read through a broadcast is computed once, cheap work stays fused",
          "[schedule]") {
  const Tensor x = input({128, 512}, 1), w = input({512, 128}, 2);
  // The tanh GELU feeding a matmul would be evaluated once per output column (128 times).
  const Tensor gelu = x * 0.5 * (1 + ((x + x * x * x * 0.044715) * 0.7978845608).tanh());
  const Schedule costly = schedule_of(gelu.matmul(w));
  REQUIRE(costly.items.size() == 2);
  CHECK(costly.items[0].why.find("fusion cost rule") != std::string::npos);
  CHECK(costly.items[1].why.empty());
  // The value matches the fused one's reference (on the host, in double).
  const std::vector<float> xs = x.to_vector<float>(), ws = w.to_vector<float>();
  const std::vector<float> got = gelu.matmul(w).to_vector<float>();
  double worst = 0;
  for (int64_t row = 0; row < 128; row += 37) {
    for (int64_t column = 0; column < 128; column += 11) {
      double expected = 0;
      for (int64_t k = 0; k < 512; ++k) {
        const double value = xs[row * 512 + k];
        const double g = 0.5 * value *
                         (1 + std::tanh(0.7978845608 * (value + 0.044715 * value * value * value)));
        expected += g * ws[k * 128 + column];
      }
      worst = std::max(worst, std::fabs(got[row * 128 + column] - expected) /
                                  std::max(1.0, std::fabs(expected)));
    }
  }
  CHECK(worst < 1e-4);
  // A relu is too cheap to pay a kernel and a pass over memory; so is a small operand.
  CHECK(kernel_count(x.relu().matmul(w)) == 1);
  const Tensor small = input({4, 8}, 3), small_w = input({8, 4}, 4);
  CHECK(kernel_count((small * 0.5 * (1 + (small * 0.79).tanh())).matmul(small_w)) == 1);
  // Read once per element (no broadcast), the same work stays fused.
  CHECK(kernel_count(gelu.sum({1})) == 1);
}

TEST_CASE("a contiguous prefix of a computed value reshaped reads the right elements",
          "[schedule]") {
  const Tensor a = input({2, 3}, 1), b = input({2, 3}, 2);
  const Tensor sum = a + b;
  const Tensor prefix = sum.reshape({6}).shrink({{0, 4}}).reshape({2, 2});
  const std::vector<float> all = sum.to_vector<float>();
  const std::vector<float> got = prefix.to_vector<float>();
  REQUIRE(got.size() == 4);
  for (size_t at = 0; at < 4; ++at) CHECK(got[at] == all[at]);
}
