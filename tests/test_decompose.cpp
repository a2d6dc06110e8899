// kiln's semantics as instructions (codegen/decompose.h): each semantic op of a compiled kernel
// is rewritten into comparisons, selects, conversions and operators the target defines, on every
// dialect, and the renderer prints one instruction per statement and refuses a program that was
// not decomposed.

#include <catch2/catch.hpp>

#include <kiln/error.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "codegen/decompose.h"
#include "codegen/dialect.h"
#include "codegen/pipeline.h"
#include "codegen/render.h"
#include "codegen/tensor_cores.h"
#include "codegen/vectorize.h"
#include "runtime/registry.h"
#include "tests/codegen_helpers.h"
#include "tests/device_launch.h"
#include "tests/test_support.h"

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

// The kernel's own source, after the prelude's helpers.
std::string kernel_body(const std::string& source, const std::string& name) {
  size_t kernel = source.find(name + "(");
  if (kernel == std::string::npos) kernel = source.find("void main()");
  REQUIRE(kernel != std::string::npos);
  return source.substr(kernel);
}

// Every instruction is one statement: no line of the kernel (after the prelude's helpers) holds
// more than one select.
void check_one_select_per_statement(const CompiledKernel& compiled) {
  std::istringstream lines(kernel_body(compiled.source, compiled.program.name));
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

// No line of the kernel's source holds more than one of the operators that pack 16-bit values
// into words (shifts, masks, ors) nor a conversion nested in another.
void check_one_word_operation_per_statement(const Dialect& dialect, const std::string& source) {
  std::istringstream lines(source);
  for (std::string line; std::getline(lines, line);) {
    INFO(line);
    int operators = 0;
    for (const char* op : {" << ", " >> ", " & ", " | "}) {
      for (size_t at = line.find(op); at != std::string::npos; at = line.find(op, at + 1))
        ++operators;
    }
    CHECK(operators <= 1);
    const std::vector<std::string> conversions = {dialect.half_to_float, dialect.bfloat16_to_float,
                                                  dialect.float_to_half, dialect.float_to_bfloat16};
    for (const std::string& outer : conversions) {
      for (const std::string& inner : conversions) CHECK(!contains(line, outer + "(" + inner));
    }
  }
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

TEST_CASE("decompose: max and min are compares and a select, a float NaN wins", "[decompose]") {
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

TEST_CASE("decompose: 16-bit vectors are 32-bit words, packed and unpacked by shifts and masks",
          "[decompose]") {
  for (DType dtype : {dtypes::float16, dtypes::bfloat16, dtypes::int16, dtypes::uint16}) {
    INFO(dtype.name());
    const Tensor a = input({1024}, 17).cast(dtype).realize();
    const Tensor b = input({1024}, 18).cast(dtype).realize();
    // Four neighbouring elements a work item: one vector each where the dialect has them.
    const Schedule schedule = schedule_of(a * b + a);
    REQUIRE(schedule.items.size() == 1);
    const ScheduleItem& item = schedule.items[0];
    for (const Target& each : every_dialect()) {
      const Dialect& dialect = *each.dialect;
      INFO(dialect.name);
      const LinearProgram lowered_program =
          lower_with(item, {{OptKind::Upcast, 0, 4}}, each.target);
      const LinearProgram program = decompose_semantics(
          vectorize_stores(vectorize_loads(lowered_program, dialect), dialect), dialect);
      INFO(program.to_string());
      for (size_t index = 0; index < program.instrs.size(); ++index)
        CHECK(!needs_decomposition(program, static_cast<int>(index), dialect));
      const std::string source = render_kernel(program, dialect);
      // No access of 16-bit elements joins a vector: vectors read and write words.
      CHECK(count(program, [](const LinInstr& instr) {
              return (instr.op == LinOp::Load || instr.op == LinOp::Store) &&
                     instr.dtype.itemsize() == 2 &&
                     (instr.vector_width > 1 || instr.vector_head >= 0);
            }) == 0);
      const int word_loads = count(program, [](const LinInstr& instr) {
        return instr.op == LinOp::Load && instr.words && instr.vector_head < 0;
      });
      const int word_stores = count(
          program, [](const LinInstr& instr) { return instr.op == LinOp::Store && instr.words; });
      if (!dialect.word_buffer) {
        CHECK(word_loads + word_stores == 0);
        continue;
      }
      // a's and b's four elements (a read once), the result's.
      CHECK(word_loads == 2);
      CHECK(word_stores == 1);
      for (const LinInstr& instr : program.instrs) {
        if (!instr.words) continue;
        CHECK(instr.dtype == dtypes::uint32);
        CHECK_FALSE(instr.local);
      }
      if (word_loads > 0) {
        // Each element: its word's low half masked, or its high half shifted down, as 16 bits,
        // then as the dtype's value.
        const int elements = count(program, [&](const LinInstr& instr) {
          return instr.op == LinOp::Load && instr.dtype.itemsize() == 2;
        });
        CHECK(elements == 0);
        CHECK(count(program, [](const LinInstr& i) { return is_alu(i, Op::Shr); }) > 0);
        CHECK(count(program, [](const LinInstr& i) { return is_alu(i, Op::And); }) > 0);
        if (dtype.is_half()) {
          CHECK(count(program, [&](const LinInstr& i) {
                  return i.op == LinOp::Bitcast && i.dtype == dtype &&
                         program.instrs[i.srcs[0]].dtype == dtypes::uint16;
                }) > 0);
        }
      }
      if (word_stores > 0) {
        // Two elements' bits a word, the second shifted up.
        for (const LinInstr& instr : program.instrs) {
          if (instr.op != LinOp::Store || !instr.words) continue;
          for (int src : instr.srcs) CHECK(is_alu(program.instrs[src], Op::Or));
        }
        CHECK(count(program, [](const LinInstr& i) { return is_alu(i, Op::Shl); }) > 0);
      }
      // The source holds one operation a statement, and no hand-written masks.
      const std::string body = kernel_body(source, program.name);
      CHECK_THAT(body, !Catch::Contains("0xffff"));
      check_one_word_operation_per_statement(dialect, body);
      // Decomposing again changes nothing.
      CHECK(decompose_semantics(program, dialect).to_string() == program.to_string());
    }
  }
}

TEST_CASE("decompose: 16-bit words carry values exactly on every device", "[decompose][devices]") {
  // Integers exact in every 16-bit dtype: a + 2 * b within [-180, 180] (0 .. 180 unsigned).
  std::vector<float> a_values(1024), b_values(1024);
  for (size_t at = 0; at < a_values.size(); ++at) {
    a_values[at] = static_cast<float>(static_cast<int>(at * 7 % 121) - 60);
    b_values[at] = static_cast<float>(static_cast<int>(at * 13 % 121) - 60);
  }
  for (const std::string& device : kiln::devices()) {
    if (open_device(device)->device().properties().compile_only) continue;
    for (DType dtype : {dtypes::float16, dtypes::bfloat16, dtypes::int16, dtypes::uint16}) {
      INFO(device << " " << dtype.name());
      const bool is_unsigned = dtype == dtypes::uint16;
      std::vector<double> want(a_values.size());
      std::vector<float> a_in = a_values, b_in = b_values;
      for (size_t at = 0; at < want.size(); ++at) {
        if (is_unsigned) a_in[at] = std::abs(a_in[at]), b_in[at] = std::abs(b_in[at]);
        want[at] = static_cast<double>(a_in[at]) + 2.0 * static_cast<double>(b_in[at]);
      }
      const Tensor a = Tensor::from_vector(a_in, {1024}, device).cast(dtype).realize();
      const Tensor b = Tensor::from_vector(b_in, {1024}, device).cast(dtype).realize();
      // The sum is stored as the 16-bit dtype, then read back by a kernel of its own.
      const Tensor sum = (a + b * 2).realize();
      const std::vector<float> got = sum.cast(dtypes::float32).to_vector<float>();
      REQUIRE(got.size() == want.size());
      int wrong = 0;
      for (size_t at = 0; at < want.size(); ++at) {
        if (static_cast<double>(got[at]) != want[at] && wrong++ < 5)
          UNSCOPED_INFO("element " << at << " is " << got[at] << ", want " << want[at]);
      }
      CHECK(wrong == 0);
    }
  }
}

// The 16 bits of a small integer `value` as `dtype` (exact in each), and back.
uint16_t small_bits(DType dtype, int value) {
  if (dtype == dtypes::int16 || dtype == dtypes::uint16) return static_cast<uint16_t>(value);
  const float number = static_cast<float>(value);
  uint32_t word;
  std::memcpy(&word, &number, sizeof(word));
  if (dtype == dtypes::bfloat16) return static_cast<uint16_t>(word >> 16);
  const uint16_t sign = static_cast<uint16_t>((word >> 16) & 0x8000);
  if ((word & 0x7fffffff) == 0) return sign;
  const int exponent = static_cast<int>((word >> 23) & 0xff) - 127 + 15;
  return static_cast<uint16_t>(sign | (exponent << 10) | ((word >> 13) & 0x3ff));
}

double small_value(DType dtype, uint16_t bits) {
  if (dtype == dtypes::int16) return static_cast<int16_t>(bits);
  if (dtype == dtypes::uint16) return bits;
  if (dtype == dtypes::bfloat16) {
    const uint32_t word = static_cast<uint32_t>(bits) << 16;
    float number;
    std::memcpy(&number, &word, sizeof(number));
    return number;
  }
  const int exponent = (bits >> 10) & 0x1f;
  const double mantissa = bits & 0x3ff;
  const double magnitude =
      exponent == 0 ? std::ldexp(mantissa, -24) : std::ldexp(1024 + mantissa, exponent - 25);
  return (bits & 0x8000) ? -magnitude : magnitude;
}

TEST_CASE("decompose: 16-bit words computed on PoCL through the GPU's OpenCL dialect",
          "[decompose][devices]") {
  // PoCL's own dialect has no vectors; the GPUs' (vloadN of words) runs on it all the same.
  const std::vector<std::string> available = kiln::devices();
  if (std::find(available.begin(), available.end(), "CL") == available.end())
    skip("no CL device here to run OpenCL kernels with 16-bit words");
  const std::shared_ptr<DeviceContext> context = open_device("CL");
  const Dialect dialect = opencl_dialect(false, /*vector_loads=*/true);
  for (DType dtype : {dtypes::float16, dtypes::bfloat16, dtypes::int16, dtypes::uint16}) {
    const Tensor a = input({1024}, 21).cast(dtype).realize();
    const Tensor b = input({1024}, 22).cast(dtype).realize();
    const Schedule schedule = schedule_of(a * b + a);
    REQUIRE(schedule.items.size() == 1);
    const ScheduleItem& item = schedule.items[0];
    std::vector<uint8_t> a_bytes, b_bytes;
    std::vector<double> want;
    for (int at = 0; at < 1024; ++at) {
      // a * b + a within [-56, 56] (0 .. 210 unsigned): exact in bfloat16 too.
      const int low = dtype == dtypes::uint16 ? 0 : -7;
      const int x = low + at * 7 % 15, y = low + at * 13 % 15;
      for (auto [bytes, value] : {std::pair{&a_bytes, x}, std::pair{&b_bytes, y}}) {
        const uint16_t bits = small_bits(dtype, value);
        bytes->push_back(static_cast<uint8_t>(bits & 0xff));
        bytes->push_back(static_cast<uint8_t>(bits >> 8));
      }
      want.push_back(static_cast<double>(x) * y + x);
    }
    std::vector<std::vector<uint8_t>> inputs;
    for (const UOpRef& input_node : bound_inputs(schedule, item))
      inputs.push_back(input_node == a.node() ? a_bytes : b_bytes);
    for (int upcast : {2, 4, 8}) {
      INFO(dtype.name() << ", " << upcast << " elements a work item");
      const LinearProgram program = lower_with(item, {{OptKind::Upcast, 0, upcast}}, cl_target());
      const LinearProgram decomposed = decompose_semantics(
          vectorize_stores(vectorize_loads(program, dialect), dialect), dialect);
      CHECK(count(decomposed, [](const LinInstr& instr) { return instr.words; }) > 0);
      const std::vector<uint8_t> out = launch_program(*context, program, inputs, 1, &dialect).at(0);
      REQUIRE(out.size() == 2 * want.size());
      int wrong = 0;
      for (size_t at = 0; at < want.size(); ++at) {
        const uint16_t bits = static_cast<uint16_t>(out[2 * at] | (out[2 * at + 1] << 8));
        const double got = small_value(dtype, bits);
        if (got != want[at] && wrong++ < 5)
          UNSCOPED_INFO("element " << at << " is " << got << ", want " << want[at]);
      }
      CHECK(wrong == 0);
    }
  }
}

TEST_CASE("decompose: emulated matrix fragments are accumulators, a loop, loads and stores",
          "[decompose]") {
  OptTarget target = gpu_target();
  target.tensor_cores = true;
  target.native_tensor_cores = false;
  static const Dialect opencl = opencl_dialect(true, true);
  for (DType dtype : {dtypes::float16, dtypes::bfloat16}) {
    const ScheduleItem item = only_kernel(input({64, 96}, 19)
                                              .cast(dtype)
                                              .realize()
                                              .matmul(input({96, 64}, 20).cast(dtype).realize()));
    const std::vector<Opt> opts = tensor_core_opts(kernel_axes(item.ast), {64, 64, 256, 32});
    const LinearProgram lowered_program = lower_with(item, opts, target);
    const auto fragment_ops = [](const LinearProgram& program, LinOp op) {
      return count(program, [&](const LinInstr& instr) { return instr.op == op; });
    };
    const int defines = fragment_ops(lowered_program, LinOp::FragmentDefine);
    const int products = fragment_ops(lowered_program, LinOp::Mma);
    const int stores = fragment_ops(lowered_program, LinOp::FragmentStore);
    REQUIRE(defines > 0);
    REQUIRE(products > 0);
    for (const Dialect* dialect : {&opencl, &glsl_dialect(), &cuda_dialect()}) {
      INFO(dialect->name << " " << dtype.name());
      const LinearProgram vectorized =
          vectorize_stores(vectorize_loads(lowered_program, *dialect), *dialect);
      const LinearProgram program = decompose_semantics(vectorized, *dialect);
      for (size_t index = 0; index < program.instrs.size(); ++index)
        CHECK(!needs_decomposition(program, static_cast<int>(index), *dialect));
      INFO(program.to_string());
      const std::string source = kernel_body(render_kernel(program, *dialect), program.name);
      if (dialect->mma) {  // matrix units: the fragment ops stay, rendered by the dialect
        CHECK(fragment_ops(program, LinOp::Mma) == products);
        continue;
      }
      for (LinOp op :
           {LinOp::FragmentDefine, LinOp::FragmentLoad, LinOp::Mma, LinOp::FragmentStore})
        CHECK(fragment_ops(program, op) == 0);
      // 8 float accumulators a fragment; a loop of 16 steps a product, 8 updates a step; 8
      // stores a fragment stored.
      CHECK(count(program, [](const LinInstr& instr) {
              return instr.op == LinOp::AccDefine && instr.dtype == dtypes::float32;
            }) >= 8 * defines);
      CHECK(count(program, [](const LinInstr& instr) {
              return instr.op == LinOp::LoopBegin && instr.loop_var.rfind("mma", 0) == 0 &&
                     instr.loop_end == Sym(kFragment);
            }) == products);
      CHECK(count(program, [](const LinInstr& instr) {
              return instr.op == LinOp::AccUpdate && instr.dtype == dtypes::float32 &&
                     instr.reduce == ReduceOp::Sum;
            }) >= 8 * products);
      CHECK(count(program, [&](const LinInstr& instr) {
              return instr.op == LinOp::Store && instr.local &&
                     program.instrs[instr.srcs[0]].op == LinOp::AccDefine;
            }) == 8 * stores);
      // A half value stored into a packed array that emulated fragments read is rounded first.
      for (const LinInstr& instr : program.instrs) {
        if (instr.op != LinOp::Store || !instr.local || !program.instrs[instr.buffer].packed)
          continue;
        CHECK(program.instrs[instr.srcs[0]].op != LinOp::Alu);
        CHECK(program.instrs[instr.srcs[0]].dtype == dtype);
      }
      // Rendered one instruction a statement: no fragment arrays, no hand-written loop.
      CHECK_THAT(source, !Catch::Contains("frag"));
      std::istringstream lines(source);
      for (std::string line; std::getline(lines, line);) {
        INFO(line);
        if (contains(line, dialect->barrier)) continue;
        CHECK(std::count(line.begin(), line.end(), ';') <= (contains(line, "for (") ? 2 : 1));
      }
      check_one_word_operation_per_statement(*dialect, source);
      // Decomposing again changes nothing.
      CHECK(decompose_semantics(program, *dialect).to_string() == program.to_string());
    }
  }
}

TEST_CASE("decompose: render refuses kiln's semantics, decomposing twice changes nothing",
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
