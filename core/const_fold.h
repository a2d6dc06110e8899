#pragma once
// Host evaluation of one op on constants, with the semantics kernels have (wrapping integers,
// C division with x/0 == 0, saturating float-to-int casts, NaN-propagating max/min, half types
// computed in float32). Folding constant-only expressions here means no kernel depends on how a
// device compiler folds them (PoCL once dropped the store of `pow(1.0f, NAN)`).

#include <optional>
#include <utility>
#include <vector>

#include <kiln/dtype.h>

#include "core/uop.h"

namespace kiln {

struct TypedConst {
  DType dtype;
  ConstArg value;
};

// The value of `op` (an elementwise op: unary, binary, Where or Cast) over `operands`, as a
// constant of `result` dtype; nullopt where the value is not kiln's to decide (a shift by the
// width or more, whose result C leaves undefined).
std::optional<ConstArg> fold_constant(Op op, DType result, const std::vector<TypedConst>& operands);

// `value` at the precision a float dtype computes in: float64, or float32 (for float32 and the
// half types, which compute in float32 and round only when stored, compared or cast). Beyond the
// range it becomes +-inf: a float32 tensor times 1e39 is inf, never a compile error.
double round_to_float_dtype(double value, DType dtype);

// `value` as a float dtype stores it: float16 and bfloat16 rounded to their 16 bits (to nearest
// even, past the range +-inf), other dtypes unchanged. Where a value is stored, compared or
// converted (a cast, a read back), kernels round a half value so; the folder does the same.
double round_to_stored_dtype(double value, DType dtype);

// A constant of `dtype` holding `value`: floats rounded to the dtype, integers wrapped modulo 2^64
// as a cast would, bools 0 or 1.
ConstArg make_const(double value, DType dtype);

}  // namespace kiln
