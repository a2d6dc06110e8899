#pragma once
// The GLSL dialect's math library (exp, exp2, log, log2, sin, cos, tan, tanh, pow, erf as
// kiln_<name>, for float and double), accurate to a few ulp; see glsl_math.cpp for how and why.

namespace kiln {

extern const char* const kGlslFloatMath;
// The float64 library, the same functions for double; it uses kiln_double_bits and
// kiln_bits_double, which the dialect's prelude defines before it.
extern const char* const kGlslDoubleMath;

}  // namespace kiln
