#pragma once
// Host-side values for the conformance battery: tensors of exact element values, the dtype rules
// restated independently of kiln's own implementation (rounding into float16 / bfloat16 / float32,
// integer wraparound, casts, promotion), and the byte encoding a device buffer uses.
//
// Nothing here calls into kiln's kernels or kiln's host conversions: the battery's expected values
// must come from an independent reference.

#include <kiln/dtype.h>
#include <kiln/tensor.h>

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::conformance {

// One element. Integers and bool live in `i` (uint64 as its two's complement bit pattern, bool as
// 0 / 1); floating-point values live in `f` (exactly the value the dtype holds).
struct Scalar {
  double f = 0;
  int64_t i = 0;
};

struct HostTensor {
  DType dtype;
  Shape shape;
  std::vector<Scalar> data;  // row-major

  HostTensor() = default;
  HostTensor(DType dtype_, Shape shape_);
  int64_t numel() const { return static_cast<int64_t>(data.size()); }
};

int64_t numel_of(const Shape& shape);
// "7x13", "scalar" for (), "0" for (0,).
std::string shape_text(const Shape& shape);
// Row-major strides (in elements).
std::vector<int64_t> strides_of(const Shape& shape);

// ---- float formats ----
// Rounds to the nearest value of a float dtype, ties to even; overflow gives +-inf, NaN stays NaN.
// For float64 it is the identity.
double round_to(DType dtype, double value);
// Bits of an exactly representable value, and back (float16 / bfloat16 / float32 / float64 only).
uint64_t float_bits(DType dtype, double exact);
double float_from_bits(DType dtype, uint64_t bits);
// Distance in units in the last place of `dtype` between two values of it (+0 and -0 are one
// point; the largest finite value and infinity are one apart). NaN gives a huge distance.
double ulp_distance(DType dtype, double a, double b);
// Machine epsilon, smallest normal, smallest subnormal and largest finite value of a float dtype.
double epsilon_of(DType dtype);
double min_normal_of(DType dtype);
double min_subnormal_of(DType dtype);
double max_finite_of(DType dtype);

// ---- integers ----
int bits_of(DType dtype);  // 1 for bool, 8..64 for integers
// Truncates to the dtype's width: sign-extends for signed types, zero-extends for unsigned.
int64_t wrap(DType dtype, uint64_t value);
int64_t int_min_of(DType dtype);  // as a stored value (uint: 0)
int64_t int_max_of(DType dtype);  // as a stored value (uint64: all bits set)
// The exact value of an integer element as a double (may round for 64-bit values).
double int_as_double(DType dtype, int64_t stored);

// ---- values ----
// The element of `dtype` nearest to a double (ints: truncated then wrapped; bool: != 0).
Scalar make_scalar(DType dtype, double value);
// The value of an element as a double.
double to_double(DType dtype, const Scalar& value);
// kiln's cast semantics (see include/kiln/tensor.h): float to int truncates toward zero and
// saturates, NaN gives 0; int to int wraps; anything to bool is != 0 (NaN is true); to a float
// dtype rounds to nearest even.
Scalar convert(DType from, DType to, const Scalar& value);
HostTensor cast(const HostTensor& tensor, DType to);

// ---- dtype rules, restated from include/kiln/dtype.h ----
DType promote(DType a, DType b);
// The dtype float-only math computes in: floats keep theirs, everything else float32.
DType float_for(DType dtype);
// The dtype pow computes in: integers keep theirs (an exact, wrapping power), bool becomes int32.
DType pow_dtype_for(DType dtype);
// The dtype a tensor-scalar op computes in (a host scalar keeps the tensor's dtype, except that a
// non-integral scalar with an integer or bool tensor gives float32, and bool arithmetic int32).
DType scalar_op_dtype(DType tensor, double scalar, bool arithmetic);

// ---- bytes ----
std::vector<uint8_t> encode(const HostTensor& tensor);
HostTensor decode(DType dtype, const Shape& shape, const uint8_t* bytes);

// ---- kiln tensors ----
Tensor upload(const HostTensor& tensor, const std::string& device);

// Text of one element, e.g. "-0", "nan", "-2147483648", "1.5 (0x3e00)".
std::string format_value(DType dtype, const Scalar& value);

}  // namespace kiln::conformance
