#pragma once
// A renderer dialect: the data that turns the one C-style renderer into C, OpenCL C, CUDA C++
// or GLSL. Each device hands the renderer its dialect; the renderer holds no target knowledge.

#include <array>
#include <map>
#include <string>

#include <kiln/dtype.h>

namespace kiln {

struct Dialect {
  std::string name;  // "C", "OpenCL", ...
  // Code placed before every kernel: type definitions and helper functions.
  std::string prelude;
  // How kernels get their work: kCpuLoop renders `void name(void** buffers, const long long*
  // variables, long long begin, long long end)` looping the flat index over [begin, end);
  // kGlobalId renders one work item per flat index from `global_index_expression`.
  enum class LaunchStyle { kCpuLoop, kGlobalId } launch_style = LaunchStyle::kCpuLoop;
  std::string kernel_prefix;            // e.g. "__kernel void", "extern \"C\" __global__ void"
  std::string buffer_qualifier;         // e.g. "__global "
  std::string global_index_expression;  // e.g. "get_global_id(0)"
  // kGlobalId: a kernel whose work-item count is a multiple of this (a power of two) is rendered
  // without the `if (gid >= N) return;` bounds check, which keeps some compilers (PoCL's) from
  // vectorizing across work items; the device must then launch exactly that many items. 0: the
  // check is always rendered and the device may round the launch up.
  int64_t unguarded_multiple = 0;
  std::string index_type = "long long";
  // Whether the compiler makes signed integer overflow wrap (C with -fwrapv). Where it does not
  // (OpenCL C), the renderer does signed + - * << and negation in unsigned types.
  bool signed_overflow_wraps = true;
  // Suffixes of 64-bit integer literals: C's `long long` is OpenCL C's `long`.
  std::string int64_literal_suffix = "LL";
  std::string uint64_literal_suffix = "ULL";
  // Type names by ScalarType; for half types this is the storage type.
  std::array<std::string, 13> type_names;
  // Half types: render loads and stores through these functions (float <-> 16-bit storage).
  std::string half_to_float = "kiln_half_to_float";
  std::string float_to_half = "kiln_float_to_half";
  std::string bfloat16_to_float = "kiln_bf16_to_float";
  std::string float_to_bfloat16 = "kiln_float_to_bf16";
  // Math function suffix for float32 (C's "f": expf) and prefix (C: "__builtin_").
  std::string float32_math_suffix = "f";
  std::string math_prefix;
  // Spellings that replace prefix + name + suffix for particular functions ("pow" -> "kiln_pow").
  std::map<std::string, std::string> math_overrides;
  // Pragma placed before a reduction loop over floats (may be empty), followed by
  // `(<operator>:<accumulator>)`: "+" for sums, and these names, declared by the prelude, for the
  // NaN-propagating max and min (empty: such loops get no pragma).
  std::string reduce_loop_pragma;
  std::string max_reduction_name, min_reduction_name;
  // Pragma asking to unroll a loop, followed by the factor (e.g. "#pragma GCC unroll"); empty:
  // none.
  std::string unroll_pragma;
  // kCpuLoop: pragma before the loop over work items of a kernel without inner loops, promising
  // the iterations are independent so that it vectorizes (calls included); empty: none.
  std::string work_item_loop_pragma;
  // Above 1: such a loop is rendered as this many interleaved partial sums, for compilers that
  // have no pragma to reassociate it (a float sum is otherwise one add latency per element).
  int reduction_lanes = 1;
  std::string restrict_keyword = "restrict";
  // Spellings of the float specials.
  std::string float32_infinity, float32_nan, float64_infinity, float64_nan;

  const std::string& type_name(DType dtype) const {
    return type_names[static_cast<int>(dtype.type())];
  }
};

// The C dialect, used by the CPU device.
const Dialect& c_dialect();

// The OpenCL C dialect. float16 and float64 are usable only where the device reports
// cl_khr_fp16 / cl_khr_fp64: the dialect then enables the extension in its prelude.
Dialect opencl_dialect(bool has_fp16, bool has_fp64);

}  // namespace kiln
