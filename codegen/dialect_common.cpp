// What every dialect shares: operand classes, parameter names, plain element access and the half
// type conversions.

#include "codegen/dialect.h"

#include <kiln/error.h>

namespace kiln {

OperandClass operand_class(DType dtype) {
  if (dtype.is_bool()) return OperandClass::Bool;
  if (dtype.is_float()) return OperandClass::Float;
  return dtype.is_unsigned() ? OperandClass::Unsigned : OperandClass::Signed;
}

std::string param_name(size_t index) {
  return "data" + std::to_string(index);
}

void use_plain_element_access(Dialect& dialect) {
  const std::string half_to_float = dialect.half_to_float, float_to_half = dialect.float_to_half;
  const std::string bf16_to_float = dialect.bfloat16_to_float;
  const std::string float_to_bf16 = dialect.float_to_bfloat16;
  dialect.load = [=](DType dtype, const std::string& buffer, const std::string& index) {
    const std::string element = buffer + "[" + index + "]";
    if (!dtype.is_half()) return element;
    return (dtype == dtypes::float16 ? half_to_float : bf16_to_float) + "(" + element + ")";
  };
  dialect.store = [=](DType dtype, const std::string& buffer, const std::string& index,
                      const std::string& value) {
    const std::string element = buffer + "[" + index + "]";
    if (!dtype.is_half()) return element + " = " + value;
    return element + " = " + (dtype == dtypes::float16 ? float_to_half : float_to_bf16) + "(" +
           value + ")";
  };
}

// Round to nearest even, NaN and inf kept, integer operations only (no header, no half type in
// the target needed). Subnormal halves are exact in float.
const char* const kHalfConversionSource = R"(KILN_FN float kiln_half_to_float(kiln_u16 h) {
  kiln_u32 sign = (KILN_U32(h) & 0x8000u) << 16, exponent = (KILN_U32(h) >> 10) & 0x1fu, mantissa = KILN_U32(h) & 0x3ffu;
  if (exponent == 0u) {
    float magnitude = KILN_FLOAT(mantissa) * 5.9604644775390625e-8f;
    return sign != 0u ? -magnitude : magnitude;
  }
  if (exponent == 31u) return KILN_AS_FLOAT(sign | 0x7f800000u | (mantissa << 13));
  return KILN_AS_FLOAT(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}
KILN_FN kiln_u16 kiln_float_to_half(float value) {
  kiln_u32 bits = KILN_AS_BITS(value), sign = (bits >> 16) & 0x8000u, magnitude = bits & 0x7fffffffu;
  if (magnitude >= 0x7f800000u) return KILN_U16(sign | 0x7c00u | (magnitude > 0x7f800000u ? 0x200u : 0u));
  if (magnitude >= 0x477ff000u) return KILN_U16(sign | 0x7c00u);
  if (magnitude < 0x38800000u) {
    if (magnitude < 0x33000000u) return KILN_U16(sign);
    kiln_u32 exponent = magnitude >> 23, mantissa = (magnitude & 0x7fffffu) | 0x800000u, shift = 126u - exponent;
    kiln_u32 result = mantissa >> shift, dropped = mantissa & ((1u << shift) - 1u), halfway = 1u << (shift - 1u);
    if (dropped > halfway || (dropped == halfway && (result & 1u) != 0u)) result += 1u;
    return KILN_U16(sign | result);
  }
  kiln_u32 result = (magnitude - 0x38000000u) >> 13, dropped = magnitude & 0x1fffu;
  if (dropped > 0x1000u || (dropped == 0x1000u && (result & 1u) != 0u)) result += 1u;
  return KILN_U16(sign | result);
}
KILN_FN float kiln_bf16_to_float(kiln_u16 b) { return KILN_AS_FLOAT(KILN_U32(b) << 16); }
KILN_FN kiln_u16 kiln_float_to_bf16(float value) {
  kiln_u32 bits = KILN_AS_BITS(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return KILN_U16((bits >> 16) | 0x40u);
  return KILN_U16((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}
)";

std::string vector_element_name(DType dtype) {
  if (dtype == dtypes::float32) return "float";
  if (dtype == dtypes::int32) return "int";
  if (dtype == dtypes::uint32) return "uint";
  throw InternalError(std::string("[render] no vector type for ") + dtype.name());
}

}  // namespace kiln
