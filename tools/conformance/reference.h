#pragma once
// The independent reference: every op of the Tensor API on host tensors, by explicit index math,
// floats in double precision, integers in exact 64-bit wrapping arithmetic, following the
// semantics documented in include/kiln/tensor.h and include/kiln/dtype.h:
//   * integer + - * wrap; / truncates toward zero, % takes the dividend's sign (C); x / 0 == 0 and
//     x % 0 == 0; INT_MIN / -1 == INT_MIN; INT_MIN % -1 == 0. bool + is or, * is and.
//   * float % is fmod (the dividend's sign); maximum / minimum and max / min propagate NaN.
//   * float-only math (exp, sqrt, mean, softmax, ...) on integer or bool inputs computes in
//     float32: the input is first converted to float32.
//   * sum / prod / cumsum of bool and signed integers accumulate in int64, unsigned in uint64.
//   * argmax / argmin give the first index of the extreme (a NaN is the extreme), as int32.
//   * round is half to even; gelu is the exact erf form.
// Float results are returned unrounded (the comparison rounds them into the output dtype).

#include <functional>
#include <optional>
#include <vector>

#include "tools/conformance/case.h"

namespace kiln::conformance::ref {

// ---- elementwise ----
enum class Unary {
  Neg,
  Abs,
  Sign,
  Relu,
  Reciprocal,
  Exp,
  Log,
  Exp2,
  Log2,
  Sqrt,
  Rsqrt,
  Sin,
  Cos,
  Tan,
  Tanh,
  Sigmoid,
  Gelu,
  Silu,
  Erf,
  Floor,
  Ceil,
  Round,
  Trunc,
  LogicalNot,
  IsNan,
  IsInf,
  IsFinite,
  // reference_math.cpp
  Asin,
  Acos,
  Atan,
  Sinh,
  Cosh,
  Asinh,
  Acosh,
  Atanh,
  Log10,
  Log1p,
  Expm1,
  Square,
  // kiln/activations.h (defaults, and celu with alpha = 2)
  LeakyRelu,
  Elu,
  Selu,
  Celu,
  Softplus,
  Softsign,
  Mish,
  Hardswish,
  Hardsigmoid,
  Hardtanh,
  Relu6,
  LogSigmoid,
  GeluTanh,
};
enum class Binary {
  Add,
  Sub,
  Mul,
  Div,
  Mod,
  Max,
  Min,
  Pow,
  Lt,
  Le,
  Gt,
  Ge,
  Eq,
  Ne,
  And,
  Or,
  Xor,
  // reference_math.cpp
  Atan2,
  Hypot,
  Copysign,
  FloorDivide,
  Remainder,
  ShiftLeft,
  ShiftRight,
};

DType unary_dtype(Unary op, DType input);
DType binary_dtype(Binary op, DType compute);
bool is_comparison(Binary op);

Scalar unary_value(Unary op, DType compute, const Scalar& x);
Scalar binary_value(Binary op, DType compute, const Scalar& a, const Scalar& b);
// The ops of reference_math.cpp (nullopt for the others): the C library's inverse and hyperbolic
// functions, log10, log1p, expm1 and square; atan2, hypot, copysign, Python's floor division and
// remainder, and shifts with their out-of-range results.
std::optional<Scalar> math_unary_value(Unary op, DType compute, const Scalar& x);
std::optional<Scalar> math_binary_value(Binary op, DType compute, const Scalar& a, const Scalar& b);
// The dtype a binary op computes in: the promoted one, float for the float-only functions, int32
// for bool arithmetic, the shifted value's for shifts.
DType binary_compute_dtype(Binary op, DType a, DType b);

Shape broadcast_shape(const Shape& a, const Shape& b);
HostTensor broadcast_to(const HostTensor& tensor, const Shape& shape);

Expected unary(Unary op, const HostTensor& x);
Expected binary(Binary op, const HostTensor& a, const HostTensor& b);
// A tensor-scalar op (`scalar_first`: scalar op tensor).
Expected binary_scalar(Binary op, const HostTensor& a, double scalar, bool scalar_first);
Expected where(const HostTensor& condition, const HostTensor& a, const HostTensor& b);
// min(max(x, low), high) in double (PyTorch's clamp): NaN anywhere gives NaN; whole bounds keep an
// integer dtype, others give float32.
Expected clamp(const HostTensor& x, double low, double high);

// ---- reductions ----
enum class Reduce { Sum, Prod, Max, Min, Mean, Var, Std };
Expected reduce(Reduce op, const HostTensor& x, std::vector<int64_t> axes, bool keepdim,
                int64_t correction = 1);
Expected arg_extreme(bool is_max, const HostTensor& x, int64_t axis, bool keepdim);
// Whether any / every element over the axes is non-zero (NaN is), as bool.
Expected any_all(bool is_any, const HostTensor& x, std::vector<int64_t> axes, bool keepdim);
enum class Softmax { Softmax, LogSoftmax, LogSumExp };
Expected softmax(Softmax kind, const HostTensor& x, int64_t axis, bool keepdim = false);
Expected cumsum(const HostTensor& x, int64_t axis);
Expected matmul(const HostTensor& a, const HostTensor& b);

// ---- movement ----
HostTensor reshape(const HostTensor& x, const Shape& shape);
HostTensor permute(const HostTensor& x, const std::vector<int64_t>& axes);
HostTensor pad(const HostTensor& x, const std::vector<std::pair<int64_t, int64_t>>& before_after,
               double value);
HostTensor shrink(const HostTensor& x, const std::vector<std::pair<int64_t, int64_t>>& start_end);
HostTensor flip(const HostTensor& x, const std::vector<int64_t>& axes);
// Positions first, first + step, ... (count of them) along `axis`: a slice, resolved.
HostTensor strided(const HostTensor& x, int64_t axis, int64_t first, int64_t step, int64_t count);
HostTensor cat(const std::vector<HostTensor>& xs, int64_t axis);
HostTensor stack(const std::vector<HostTensor>& xs, int64_t axis);
// Shape helpers (kiln/shape_ops.h), by coordinates.
HostTensor repeat(const HostTensor& x, const Shape& repeats);
HostTensor repeat_interleave(const HostTensor& x, int64_t repeats, int64_t axis);
HostTensor roll(const HostTensor& x, const std::vector<int64_t>& shifts,
                const std::vector<int64_t>& axes);
// The triangle of the last two axes (j - i <= diagonal, or >= for the upper), zero elsewhere.
HostTensor triangle(const HostTensor& x, int64_t diagonal, bool lower);
// Axes axis1 and axis2 removed, a last axis of their elements (i, i + offset) appended.
HostTensor diagonal(const HostTensor& x, int64_t offset, int64_t axis1, int64_t axis2);
// The square matrix with the vector on the offset diagonal.
HostTensor diag_matrix(const HostTensor& x, int64_t offset);
// The position an index names along an axis of `size` (a negative signed index counts from the
// end); std::out_of_range where it names none (kiln raises IndexError there).
int64_t index_position(int64_t index, int64_t size, DType dtype);
// out[c] = x[c with c[axis] = index_position(index[c])] over index's shape.
HostTensor gather(const HostTensor& x, int64_t axis, const HostTensor& index);
// The slices of x along `axis` at the positions of the 1-D `index`.
HostTensor index_select(const HostTensor& x, int64_t axis, const HostTensor& index);
// PyTorch's scatter (no `combine`) and scatter_reduce: for each position c of index's shape in
// row-major order, element c with c[axis] = index_position(index[c]) of a copy of x takes
// src[c], or `combine` of it and src[c]; without include_self, an element's first write combines
// with the identity instead. (Mean is a sum and a count, divided by the caller.)
HostTensor scatter(const HostTensor& x, int64_t axis, const HostTensor& index,
                   const HostTensor& src, std::optional<Binary> combine, bool include_self);

// ---- helpers ----
// A negative axis counts from the end; throws std::invalid_argument when out of range.
int normalize_axis(int64_t axis, size_t ndim);
int64_t ravel(const std::vector<int64_t>& coords, const Shape& shape);
// Calls `line(offsets, line_index)` for each line along `axis`: `offsets` are the flat indices
// of the line's elements, in order.
void for_each_line(const Shape& shape, int axis,
                   const std::function<void(const std::vector<int64_t>&, int64_t)>& line);
// What sums and products of `dtype` accumulate in: int64 for bool and signed, uint64 for unsigned.
DType accumulate_dtype(DType dtype);
// a < b for integer elements of `dtype` (unsigned compares as unsigned).
bool int_less(DType dtype, int64_t a, int64_t b);
// Flat index -> coordinates in `shape`.
std::vector<int64_t> unravel(int64_t index, const Shape& shape);
std::string coordinates_text(int64_t index, const Shape& shape);  // "(3, 4)"

}  // namespace kiln::conformance::ref
