#pragma once
// A renderer dialect: the data and hooks that turn the one C-style renderer into C, OpenCL C,
// CUDA C++ or GLSL. Each device hands the renderer its dialect; the renderer holds no target
// knowledge. Spellings that are plain text are data; what needs structure is a hook.

#include <array>
#include <functional>
#include <map>
#include <string>

#include <kiln/dtype.h>

namespace kiln {

struct Dialect {
  std::string name;  // "C", "OpenCL", ...
  // Code placed before every kernel: type definitions and helper functions.
  std::string prelude;
  // How kernels get their work: kCpuLoop renders `void name(void** buffers, const long long*
  // variables, long long begin, long long end)` looping one flat launch dimension over
  // [begin, end); kGlobalId renders one work item per id, from `launch_id`.
  enum class LaunchStyle { kCpuLoop, kGlobalId } launch_style = LaunchStyle::kCpuLoop;
  std::string kernel_prefix;     // e.g. "__kernel void", "extern \"C\" __global__ void"
  std::string buffer_qualifier;  // e.g. "__global "
  // kGlobalId: the expression of a work item's global id (local_id false) or its id within the
  // workgroup (true) along launch dimension `dim` (0 is x), as a signed index.
  std::function<std::string(bool local_id, int dim)> launch_id;
  // Workgroup-shared memory: the qualifier of its arrays, and the statement that waits for every
  // work item of the group and makes their local memory writes visible.
  std::string local_qualifier;  // e.g. "__local "
  std::string barrier;          // e.g. "barrier(CLK_LOCAL_MEM_FENCE);"
  std::string index_type = "long long";
  // Whether the compiler makes signed integer overflow wrap (C with -fwrapv). Where it does not
  // (OpenCL C), the renderer does signed + - * << and negation in unsigned types.
  bool signed_overflow_wraps = true;
  // Suffixes of 64-bit integer literals: C's `long long` is OpenCL C's `long`.
  std::string int64_literal_suffix = "LL";
  std::string uint64_literal_suffix = "ULL";
  // Type names by ScalarType; for half types this is the storage type.
  std::array<std::string, 13> type_names;
  // Half-typed buffer elements (stored in 16 bits, computed in float): the expression loading
  // buffer[index] as a float, and the statement storing a float `value` there, rounded to even.
  std::function<std::string(DType, const std::string& buffer, const std::string& index)> load_half;
  std::function<std::string(DType, const std::string& buffer, const std::string& index,
                            const std::string& value)>
      store_half;
  // Functions converting between float and the half types' bits (computed values are rounded
  // through them where they are compared or converted).
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
  // kCpuLoop: pragma before the loop over work items of a kernel without inner loops, promising
  // the iterations are independent so that it vectorizes (calls included); empty: none.
  std::string work_item_loop_pragma;
  std::string restrict_keyword = "restrict";
  // Spellings of the float specials.
  std::string float32_infinity, float32_nan, float64_infinity, float64_nan;

  const std::string& type_name(DType dtype) const {
    return type_names[static_cast<int>(dtype.type())];
  }
};

// Half-typed buffer access through the dialect's conversion functions on 16-bit elements.
void use_half_conversion_functions(Dialect& dialect);

// The C dialect, used by the CPU device.
const Dialect& c_dialect();

// The OpenCL C dialect. float16 is stored through vload_half/vstore_half (core OpenCL C, no
// cl_khr_fp16 needed); float64 is usable only where the device reports cl_khr_fp64, and the
// dialect then enables the extension in its prelude.
Dialect opencl_dialect(bool has_fp64);

}  // namespace kiln
