// kiln's semantics as instructions (codegen/decompose.h): each semantic op of a compiled kernel
// is rewritten into comparisons, selects, conversions and operators the target defines, on every
// dialect, and the renderer prints one instruction per statement and refuses a program that was
// not decomposed.

#include <catch2/catch.hpp>

#include <kiln/error.h>

#include <algorithm>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "codegen/decompose.h"
#include "codegen/dialect.h"
#include "codegen/pipeline.h"
#include "codegen/render.h"
#include "tests/codegen_helpers.h"

namespace kiln {
namespace {

using namespace kiln::testing;

struct Target {
  const Dialect* dialect;
  OptTarget target;
};

std::vector<Target> every_dialect() {
  static const Dialect opencl = opencl_dialect(true, true);
  return {{&c_dialect(), cpu_target()},
          {&opencl, cl_target()},
          {&cuda_dialect(), gpu_target()},
          {&glsl_dialect(), gpu_target()}};
}

int count(const LinearProgram& program, const std::function<bool(const LinInstr&)>& matches) {
  int found = 0;
  for (const LinInstr& instr : program.instrs) found += matches(instr) ? 1 : 0;
  return found;
}

bool is_alu(const LinInstr& instr, Op op) {
  return instr.op == LinOp::Alu && instr.alu == op;
}

// Every instruction is one statement: no line of the kernel (after the prelude's helpers) holds
// more than one select.
void check_one_select_per_statement(const CompiledKernel& compiled) {
  const std::string& source = compiled.source;
  size_t kernel = source.find(compiled.program.name + "(");
  if (kernel == std::string::npos) kernel = source.find("void main()");
  REQUIRE(kernel != std::string::npos);
  std::istringstream lines(source.substr(kernel));
  for (std::string line; std::getline(lines, line);) {
    INFO(line);
    CHECK(std::count(line.begin(), line.end(), '?') <= 1);
  }
}

// The kernel `tensor` schedules to, compiled for each dialect; `check` sees the decomposed
// program and its source.
void for_each_dialect(const Tensor& tensor,
                      const std::function<void(const Dialect&, const CompiledKernel&)>& check) {
  const ScheduleItem item = only_kernel(tensor);
  for (const Target& each : every_dialect()) {
    INFO(each.dialect->name);
    const CompiledKernel compiled = compile_kernel(item, each.target, *each.dialect);
    for (size_t index = 0; index < compiled.program.instrs.size(); ++index)
      CHECK(!needs_decomposition(compiled.program, static_cast<int>(index), *each.dialect));
    INFO(compiled.program.to_string());
    check_one_select_per_statement(compiled);
    check(*each.dialect, compiled);
  }
}

Tensor int32_input(uint64_t seed) {
  return (input({64}, seed) * 200.0f - 100.0f).cast(dtypes::int32).realize();
}

}  // namespace

TEST_CASE("decompose: integer division divides by a safe divisor, then selects", "[decompose]") {
  const Tensor a = int32_input(1), b = int32_input(2);
  for (Op op : {Op::Div, Op::Mod}) {
    const Tensor result = op == Op::Div ? a / b : a % b;
    for_each_dialect(result, [&](const Dialect&, const CompiledKernel& compiled) {
      const LinearProgram& program = compiled.program;
      // One division, the target's own, by a select of 1 where the divisor is 0 or -1.
      REQUIRE(count(program, [&](const LinInstr& instr) { return is_alu(instr, op); }) == 1);
      for (const LinInstr& instr : program.instrs) {
        if (!is_alu(instr, op)) continue;
        CHECK(instr.primitive);
        CHECK(is_alu(program.instrs[instr.srcs[1]], Op::Where));
      }
      CHECK(count(program, [](const LinInstr& instr) { return is_alu(instr, Op::CmpEq); }) == 2);
      // Then 0 by zero (and for Div, -a by -1).
      CHECK(count(program, [](const LinInstr& instr) { return is_alu(instr, Op::Where); }) ==
            (op == Op::Div ? 3 : 2));
    });
  }
  // Unsigned: only zero is refused.
  const Tensor ua = a.cast(dtypes::uint32), ub = b.cast(dtypes::uint32);
  for_each_dialect(ua / ub, [](const Dialect&, const CompiledKernel& compiled) {
    CHECK(count(compiled.program, [](const LinInstr& instr) { return is_alu(instr, Op::CmpEq); }) ==
          1);
  });
}

TEST_CASE("decompose: max and min are compares and a select; a float NaN wins", "[decompose]") {
  const Tensor a = input({64}, 3), b = input({64}, 4);
  for_each_dialect(maximum(a, b), [](const Dialect&, const CompiledKernel& compiled) {
    const LinearProgram& program = compiled.program;
    CHECK(count(program, [](const LinInstr& instr) { return is_alu(instr, Op::Max); }) == 0);
    CHECK(count(program, [](const LinInstr& instr) { return is_alu(instr, Op::CmpNe); }) == 1);
    CHECK(count(program, [](const LinInstr& instr) { return is_alu(instr, Op::CmpGt); }) == 1);
    CHECK(count(program, [](const LinInstr& instr) { return is_alu(instr, Op::Where); }) == 1);
  });
  // A reduction's update: the new value computed before, the update stores it.
  for_each_dialect(input({64, 64}, 5).max({1}), [](const Dialect&, const CompiledKernel& compiled) {
    const LinearProgram& program = compiled.program;
    const int updates =
        count(program, [](const LinInstr& instr) { return instr.op == LinOp::AccUpdate; });
    CHECK(updates > 0);
    CHECK(count(program, [](const LinInstr& instr) {
            return instr.op == LinOp::AccUpdate && instr.primitive;
          }) == updates);
    CHECK(count(program, [](const LinInstr& instr) { return is_alu(instr, Op::Max); }) == 0);
  });
  // Integers: no NaN test.
  const Tensor ia = int32_input(6), ib = int32_input(7);
  for_each_dialect(minimum(ia, ib), [](const Dialect&, const CompiledKernel& compiled) {
    CHECK(count(compiled.program, [](const LinInstr& i) { return is_alu(i, Op::CmpNe); }) == 0);
    CHECK(count(compiled.program, [](const LinInstr& i) { return is_alu(i, Op::CmpLt); }) == 1);
  });
  // Integer abs and negation: a subtraction from 0, which wraps.
  for_each_dialect(ia.abs() + (-ib), [](const Dialect&, const CompiledKernel& compiled) {
    const LinearProgram& program = compiled.program;
    CHECK(count(program,
                [](const LinInstr& i) { return is_alu(i, Op::Abs) || is_alu(i, Op::Neg); }) == 0);
    CHECK(count(program, [](const LinInstr& i) { return is_alu(i, Op::Sub); }) == 2);
  });
}

TEST_CASE("decompose: signed arithmetic wraps through unsigned where overflow is undefined",
          "[decompose]") {
  const Tensor a = int32_input(8), b = int32_input(9);
  for_each_dialect(a * b + a, [](const Dialect& dialect, const CompiledKernel& compiled) {
    const LinearProgram& program = compiled.program;
    const auto unsigned_alu = [](const LinInstr& instr) {
      return instr.op == LinOp::Alu && instr.dtype == dtypes::uint32;
    };
    const auto signed_alu = [](const LinInstr& instr) {
      return instr.op == LinOp::Alu && instr.dtype == dtypes::int32 &&
             (instr.alu == Op::Mul || instr.alu == Op::Add);
    };
    if (dialect.signed_overflow_wraps) {  // C (-fwrapv) and GLSL
      CHECK(count(program, unsigned_alu) == 0);
      CHECK(count(program, signed_alu) == 2);
    } else {  // OpenCL C and CUDA
      CHECK(count(program, unsigned_alu) == 2);
      CHECK(count(program, signed_alu) == 0);
      CHECK(count(program, [](const LinInstr& instr) {
              return instr.op == LinOp::Cast && instr.dtype == dtypes::int32 && instr.primitive;
            }) >= 2);
    }
  });
}

TEST_CASE("decompose: a float converted to an integer saturates through compares and selects",
          "[decompose]") {
  for (DType to : {dtypes::int8, dtypes::int32, dtypes::uint32, dtypes::int64, dtypes::uint64}) {
    INFO(to.name());
    for_each_dialect((input({64}, 10) * 1e10f).cast(to), [&](const Dialect& dialect,
                                                             const CompiledKernel& compiled) {
      const LinearProgram& program = compiled.program;
      CHECK(count(program, [](const LinInstr& i) { return is_alu(i, Op::CmpNe); }) == 1);
      CHECK(count(program, [](const LinInstr& i) { return is_alu(i, Op::CmpLt); }) == 1);
      CHECK(count(program, [](const LinInstr& i) { return is_alu(i, Op::CmpGe); }) == 1);
      CHECK(count(program, [](const LinInstr& i) { return is_alu(i, Op::Where); }) == 3);
      CHECK(count(program, [&](const LinInstr& i) {
              return i.op == LinOp::Cast && i.dtype == to && i.primitive;
            }) == 1);
      // The renderer's conversion is the dialect's cast of a value, alone.
      std::string converted = dialect.cast(dialect.type_name(to), "v");
      converted.pop_back();
      CHECK_THAT(compiled.source, Catch::Contains(" = " + converted));
    });
  }
  // An integer that was a float, converted back to float, keeps a zero positive.
  for_each_dialect(
      (input({64}, 11) - 0.5f).cast(dtypes::int32).cast(dtypes::float32),
      [](const Dialect&, const CompiledKernel& compiled) {
        CHECK(count(compiled.program, [](const LinInstr& i) { return is_alu(i, Op::CmpEq); }) == 1);
        CHECK(count(compiled.program, [](const LinInstr& i) { return is_alu(i, Op::Where); }) == 4);
      });
}

TEST_CASE("decompose: a computed half value is rounded through its 16 bits before a compare",
          "[decompose]") {
  for (DType half : {dtypes::float16, dtypes::bfloat16}) {
    INFO(half.name());
    const Tensor a = input({64}, 14).cast(half).realize(), b = input({64}, 15).cast(half).realize();
    // a * b is computed in float: rounded (to bits and back) before the compare; b, loaded, is
    // exact.
    for_each_dialect(a * b < b, [&](const Dialect& dialect, const CompiledKernel& compiled) {
      const LinearProgram& program = compiled.program;
      REQUIRE(count(program, [](const LinInstr& i) { return is_alu(i, Op::CmpLt); }) == 1);
      for (const LinInstr& instr : program.instrs) {
        if (!is_alu(instr, Op::CmpLt)) continue;
        const LinInstr& rounded = program.instrs[instr.srcs[0]];
        CHECK(rounded.op == LinOp::Bitcast);
        CHECK(rounded.dtype == half);
        CHECK(program.instrs[rounded.srcs[0]].op == LinOp::Bitcast);
        CHECK(program.instrs[rounded.srcs[0]].dtype == dtypes::uint16);
        CHECK(program.instrs[instr.srcs[1]].op == LinOp::Load);
      }
      // One conversion per statement: none nested in another.
      const std::string& to_float =
          half == dtypes::float16 ? dialect.half_to_float : dialect.bfloat16_to_float;
      CHECK_THAT(compiled.source, !Catch::Contains(to_float + "(" + dialect.float_to_half));
      CHECK_THAT(compiled.source, !Catch::Contains(to_float + "(" + dialect.float_to_bfloat16));
    });
    // A conversion into a half type rounds after the target's conversion.
    for_each_dialect(input({64}, 16).exp().cast(half), [&](const Dialect&,
                                                           const CompiledKernel& compiled) {
      CHECK(count(compiled.program, [](const LinInstr& i) { return i.op == LinOp::Bitcast; }) == 2);
    });
  }
}

TEST_CASE("decompose: render refuses kiln's semantics; decomposing twice changes nothing",
          "[decompose]") {
  const ScheduleItem item = only_kernel(int32_input(12) / int32_input(13));
  for (const Target& each : every_dialect()) {
    INFO(each.dialect->name);
    const LinearProgram program = lowered(item, each.target);
    try {
      render_kernel(program, *each.dialect);
      FAIL("rendered an undecomposed division");
    } catch (const InternalError& error) {
      CHECK_THAT(error.what(), Catch::Contains("needs decompose_semantics"));
    }
    const LinearProgram once = decompose_semantics(program, *each.dialect);
    CHECK(once.instrs.size() > program.instrs.size());
    const LinearProgram twice = decompose_semantics(once, *each.dialect);
    CHECK(twice.to_string() == once.to_string());
    CHECK(render_kernel(twice, *each.dialect) == render_kernel(once, *each.dialect));
  }
}

}  // namespace kiln
