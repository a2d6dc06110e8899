#pragma once
// A renderer dialect: the data and hooks that turn the one C-style renderer into C, OpenCL C,
// CUDA C++ or GLSL. Each device hands the renderer its dialect; the renderer holds no target
// knowledge. Spellings that are plain text are data; what needs structure is a hook.
//
// kiln's semantics (division by zero gives 0, float max propagates NaN, float-to-int conversion
// saturates, signed arithmetic wraps) are instructions by the time the renderer sees a program
// (decompose_semantics, codegen/decompose.h): it prints each as one statement of primitive
// operations that the dialect spells: a cast, a literal, an operator (`op_spellings`), a select,
// a math function, a buffer element's load and store, the kernel's signature.

#include <array>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <kiln/dtype.h>

#include "core/uop.h"

namespace kiln {

struct LinearProgram;

// The kinds of operand an operator spelling applies to.
enum class OperandClass : uint8_t { Bool, Signed, Unsigned, Float };
OperandClass operand_class(DType dtype);

// The ids a work item has along one hardware launch dimension: its global id, its id within the
// workgroup, and its workgroup's id.
enum class LaunchId : uint8_t { Global, Local, Group };

// The name of kernel parameter `index` (a buffer) in rendered source: data0, data1, ...
std::string param_name(size_t index);

struct Dialect {
  std::string name;  // "C", "OpenCL", "CUDA", "GLSL"
  // Code placed before every kernel: type definitions and helper functions.
  std::string prelude;
  // How kernels get their work: kCpuLoop renders a function that loops one flat launch dimension
  // over [begin, end) (the CPU kernel ABI, codegen/cpu_abi.h); kGlobalId renders one work item per
  // id, from `launch_id`.
  enum class LaunchStyle { kCpuLoop, kGlobalId } launch_style = LaunchStyle::kCpuLoop;
  // The kernel's signature and parameter declarations, up to and including the `{` that opens
  // its body; buffers are named param_name(i). GLSL declares its buffers as blocks before it.
  std::function<std::string(const LinearProgram&, const Dialect&)> signature;
  // kGlobalId: the expression of a work item's `kind` of id along hardware launch dimension `dim`
  // (0 is x), as an index_type value.
  std::function<std::string(LaunchId kind, int dim)> launch_id;
  // Workgroup-shared memory: the qualifier of its arrays, whether they are declared outside the
  // kernel function (GLSL's `shared`) rather than at its top, and the statement that waits for
  // every work item of the group and makes their local memory writes visible.
  std::string local_qualifier;  // e.g. "__local "
  bool local_arrays_outside_kernel = false;
  std::string barrier;  // e.g. "barrier(CLK_LOCAL_MEM_FENCE);"
  // GRID (LinOp::GridTicket): the statement after which this work item's global memory stores
  // are visible to every workgroup, and the expression that adds 1 to element 0 of the uint32
  // buffer `counter` atomically and gives its value before. Empty where the dialect has no GRID.
  std::string global_fence;
  std::function<std::string(const std::string& counter)> atomic_increment;
  std::string index_type = "long long";
  // Where index_type is 32 bits: the 64-bit type an index expression is computed in when some
  // step of it would pass index_type's range (index_text.h); empty where index_type is 64 bits.
  std::string wide_index_type;
  // Qualifier of a named value computed once (C's "const "; GLSL's const wants a constant
  // expression, so it has none).
  std::string value_qualifier = "const ";
  // Qualifier of every value and accumulator a kernel declares that keeps the compiler from
  // changing how it rounds: no contraction into an FMA, no rewrite such as x * 0 -> 0 (GLSL's
  // "precise "; lavapipe made NaN * 0 zero without it). Empty where compiler flags see to it
  // (C's -ffp-contract=off, NVRTC's --fmad=false, OpenCL C's default).
  std::string exact_qualifier;
  // Whether the compiler makes signed integer overflow wrap (C with -fwrapv). Where it does not
  // (OpenCL C), decompose_semantics does signed + - * << and negation in unsigned types.
  bool signed_overflow_wraps = true;
  // Literals: suffixes of 64-bit integers (C's `long long` is OpenCL C's `long`), of 32-bit
  // unsigned integers, and of floats; the bool constants; the float specials.
  std::string int64_literal_suffix = "LL";
  std::string uint64_literal_suffix = "ULL";
  std::string uint32_literal_suffix = "u";
  std::string float32_literal_suffix = "f";
  std::string float64_literal_suffix;
  std::string true_literal = "1", false_literal = "0";
  std::string float32_infinity, float32_nan, float64_infinity, float64_nan;
  // Where set, +0.0 is this expression (-0.0 its negation) rather than a literal: a value the
  // compiler cannot see, for compilers that fold arithmetic with a literal zero the IEEE way does
  // not (lavapipe turned x * 0.0 into 0 for a NaN x, and dropped the store of x / 0.0).
  std::string float32_zero, float64_zero;
  // `value` converted to the type named `type`; C's `((type)value)`, GLSL's `type(value)`.
  std::function<std::string(const std::string& type, const std::string& value)> cast =
      [](const std::string& type, const std::string& value) {
        return "((" + type + ")" + value + ")";
      };
  // Type names by ScalarType; for half types this is the storage type. `bool_type` is the type a
  // bool is computed in where that differs from its storage (GLSL stores bools as bytes).
  std::array<std::string, 13> type_names;
  std::string bool_type;
  // Spellings of primitive operations that differ from C's, with $0, $1 for the operands (value
  // names, free to repeat), for the operators decomposed programs hold: Add, Sub, Mul, Div, Mod
  // (an integer's divisor never 0 nor -1), And, Or, Xor, Shl, Shr, Not and the comparisons.
  // Example: GLSL's {Or, Bool} is "($0 || $1)".
  std::map<std::pair<Op, OperandClass>, std::string> op_spellings;
  // Buffer elements of `dtype`: the expression loading buffer[index] as its compute type, and the
  // statement storing a compute-type `value` there (half types round to even).
  std::function<std::string(DType, const std::string& buffer, const std::string& index)> load;
  std::function<std::string(DType, const std::string& buffer, const std::string& index,
                            const std::string& value)>
      store;
  // Vector loads, where the target has vector types: `vector_load(dtype, width, buffer, index)`
  // reads buffer[index .. index + width) as one value of `vector_type(dtype, width)`, whose lanes
  // are `vector_lane(value, lane)`. `vector_widths` lists the widths, largest first (empty: no
  // vectors); with `vector_loads_aligned` the first index must be a multiple of the width.
  // For 32-bit dtypes (stored as they are computed); 16-bit ones go through `word_buffer`.
  std::vector<int> vector_widths;
  bool vector_loads_aligned = false;
  std::function<std::string(DType, int width, const std::string& buffer, const std::string& index)>
      vector_load;
  std::function<std::string(DType, int width)> vector_type;
  std::function<std::string(const std::string& value, int lane)> vector_lane;
  // The statement storing `values` (one per lane, compute-type names) to buffer[index ..
  // index + width) as one vector; null where the dialect has no vector stores. The same widths
  // and alignment rule as loads.
  std::function<std::string(DType, const std::string& buffer, const std::string& index,
                            const std::vector<std::string>& values)>
      vector_store;
  // Matrix fragments (TC's LinOp::FragmentLoad, Mma and FragmentStore; see codegen/linear.h),
  // where the target has matrix units; without `mma` the renderer emulates them, each work item
  // computing its share of every 16x16 result itself (correct on any device, not fast).
  // `fragment_load(dtype, matrix_b, name, address, stride)` declares fragment `name` and loads
  // it from the packed 16-bit tile at `address` (an expression pointing into a local array),
  // A column-major and B row-major; `mma(dtype, accumulator, a, b)` is the statement
  // accumulator += a * b, the accumulator an array of 8 floats; `fragment_store(address,
  // accumulator, stride)` stores it row-major at `address` (into a float array).
  // `fragment_alignment` qualifies the local arrays fragments read and write.
  std::function<std::string(DType, bool matrix_b, const std::string& name,
                            const std::string& address, int64_t stride)>
      fragment_load;
  std::function<std::string(DType, const std::string& accumulator, const std::string& a,
                            const std::string& b)>
      mma;
  std::function<std::string(const std::string& address, const std::string& accumulator,
                            int64_t stride)>
      fragment_store;
  std::string fragment_alignment;
  // 16-bit elements (the half types, int16, uint16) join into vectors of 32-bit words, two
  // elements a word, the first in its low half: `word_buffer(buffer, writable)` is the buffer as
  // an array of uint32 (for vector_load, vector_store and subscripts in words). Null: 16-bit
  // accesses stay scalar. Such a vector's first element is always at an index that is a
  // multiple of its width.
  std::function<std::string(const std::string& buffer, bool writable)> word_buffer;
  // Functions converting between float and the half types' bits (computed values are rounded
  // through them where they are compared or converted).
  std::string half_to_float = "kiln_half_to_float";
  std::string float_to_half = "kiln_float_to_half";
  std::string bfloat16_to_float = "kiln_bf16_to_float";
  std::string float_to_bfloat16 = "kiln_float_to_bf16";
  // Math functions, named as in C for double ("exp", "fabs", "rint", "fmod", "pow", "erf"): the
  // target's name is math_prefix + name (+ float32_math_suffix for float32), or `math_names`'
  // spelling of it; a function the target lacks, or gets wrong, is in `math_helpers` and is then
  // kiln_<name> (+ suffix), which the prelude defines. A float64 function the target cannot do
  // at all is in `missing_float64_math`: rendering it is a DTypeError.
  std::string math_prefix;
  std::string float32_math_suffix = "f";
  std::map<std::string, std::string> math_names;
  std::set<std::string> math_helpers;
  std::set<std::string> missing_float64_math;
  // Helpers whose source is emitted after the prelude only when a kernel calls one of them
  // (by its name in math_helpers): a library every kernel parsed would slow every compile.
  struct MathLibrary {
    std::set<std::string> functions;
    std::string source;
  };
  std::vector<MathLibrary> math_libraries;
  // Pragma placed before a reduction loop over floats (may be empty), followed by
  // `(<operator>:<accumulator>)`: "+" for sums, and these names, declared by the prelude, for the
  // NaN-propagating max and min (empty: such loops get no pragma).
  std::string reduce_loop_pragma;
  std::string max_reduction_name, min_reduction_name;
  // kCpuLoop: pragma before the loop over work items of a kernel without inner loops, promising
  // the iterations are independent so that it vectorizes (calls included); empty: none.
  std::string work_item_loop_pragma;

  const std::string& type_name(DType dtype) const {
    return type_names[static_cast<int>(dtype.type())];
  }
};

// Plain subscripted loads and stores, with half-typed elements (16 bits) converted through the
// dialect's conversion functions. Dialects start from this and override what they store
// differently.
// "float", "int" or "uint": the element of the C family's vector types (float4, int2, ...) for the
// 32-bit dtypes that vector loads are made for.
std::string vector_element_name(DType dtype);

void use_plain_element_access(Dialect& dialect);

// The float16 and bfloat16 conversions as source every dialect's prelude shares, written with
// macros the prelude defines first: KILN_FN (a helper's qualifiers), kiln_u32 and kiln_u16 (the
// unsigned types), KILN_U32(x), KILN_U16(x), KILN_FLOAT(x) (conversions), KILN_AS_FLOAT(bits) and
// KILN_AS_BITS(value) (bit casts).
extern const char* const kHalfConversionSource;

// The C dialect, used by the CPU device.
const Dialect& c_dialect();

// The OpenCL C dialect. float16 is stored through vload_half/vstore_half (core OpenCL C, no
// cl_khr_fp16 needed); float64 is usable only where the device reports cl_khr_fp64, and the
// dialect then enables the extension in its prelude.
// `vector_loads`: neighbouring loads become vloadN (for GPUs; a CPU driver such as PoCL
// vectorizes across work items itself, and explicit vectors within one got in its way: a 16M
// float sum took 5.4-6.2 ms with them, 4.3-4.7 without).
Dialect opencl_dialect(bool has_fp64, bool vector_loads = false);

// The CUDA C++ dialect, compiled by NVRTC: `extern "C" __global__` kernels, 3-D thread ids,
// `__shared__` arrays and __syncthreads().
const Dialect& cuda_dialect();

// The GLSL 4.50 compute dialect for Vulkan (glslang to SPIR-V): buffers are std430 blocks bound
// in parameter order, the workgroup size is the kernel's own (local_size_x/y/z), subscripts are
// 32-bit, bools are stored as bytes, and 8-, 16- and 64-bit types come from the
// GL_EXT_shader_explicit_arithmetic_types extensions.
const Dialect& glsl_dialect();
// The GLSL dialect's kernel variables, each an int64 (little-endian, read as an ivec2): the first
// ones are push constants after two 32-bit zeros (in the 128 bytes every Vulkan device offers),
// the rest values of a storage buffer bound after the kernel's buffers, which the device fills at
// each launch.
constexpr int kGlslPushVariables = 15;

}  // namespace kiln
