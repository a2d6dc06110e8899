#pragma once
// A renderer dialect: the data that turns the one C-style renderer into C, OpenCL C, CUDA C++
// or GLSL. Each device hands the renderer its dialect; the renderer holds no target knowledge.

#include <array>
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
  std::string kernel_prefix;           // e.g. "__kernel void", "extern \"C\" __global__ void"
  std::string buffer_qualifier;        // e.g. "__global "
  std::string global_index_expression; // e.g. "get_global_id(0)"
  std::string index_type = "long long";
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
  // Pragma placed before a reduction loop over floats (may be empty).
  std::string reduce_loop_pragma;
  std::string restrict_keyword = "restrict";
  // Spellings of the float specials.
  std::string float32_infinity, float32_nan, float64_infinity, float64_nan;

  const std::string& type_name(DType dtype) const { return type_names[static_cast<int>(dtype.type())]; }
};

// The C dialect, used by the CPU device.
const Dialect& c_dialect();

}  // namespace kiln
