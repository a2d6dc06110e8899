#pragma once
// The GLSL dialect's math library (exp, exp2, log, log2, sin, cos, tan, tanh, pow, erf as
// kiln_<name>, for float and double), accurate to a few ulp; see glsl_math.cpp for how and why.

#include <string>

namespace kiln {

extern const char* const kGlslFloatMath;
// The float64 library, the same functions for double; it uses kiln_double_bits and
// kiln_bits_double, which the dialect's prelude defines before it.
extern const char* const kGlslDoubleMath;
// asin, acos, atan, atan2, sinh, cosh, asinh, acosh, atanh, log10, log1p, expm1, hypot and
// copysign for both (glsl_math_inverse.cpp), after the two libraries: only kernels that call one
// include it.
const std::string& glsl_inverse_math();

}  // namespace kiln
