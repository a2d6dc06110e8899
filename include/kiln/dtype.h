#pragma once
// Element types of kiln tensors and the rules that combine them.
//
// Promotion (used whenever two operands of different dtypes meet):
//   * bool < every integer < every float.
//   * Two signed or two unsigned integers: the wider one.
//   * Signed with unsigned: the smallest signed type that holds both (uint8+int8 -> int16,
//     uint32+int32 -> int64); uint64 with any signed type gives int64 (values wrap).
//   * float16 with bfloat16 gives float32; otherwise the wider float.
//   * A host scalar (double) combined with a tensor keeps the tensor's dtype, as in PyTorch and
//     NumPy 2 (an int32 tensor times 2 stays int32), except that a non-integral scalar with an
//     integer or bool tensor gives float32.

#include <cstdint>
#include <string>

namespace kiln {

enum class ScalarType : uint8_t {
  Bool,
  Int8,
  Int16,
  Int32,
  Int64,
  UInt8,
  UInt16,
  UInt32,
  UInt64,
  Float16,
  BFloat16,
  Float32,
  Float64,
};

class DType {
 public:
  constexpr DType() : type_(ScalarType::Float32) {}
  constexpr explicit DType(ScalarType type) : type_(type) {}

  constexpr ScalarType type() const { return type_; }
  // Bytes per element.
  int itemsize() const;
  // Canonical lower-case name: "float32", "bool", ...
  const char* name() const;
  // Short name for tables: "f32", "i64", "bf16", "bool", ...
  const char* short_name() const;

  bool is_bool() const { return type_ == ScalarType::Bool; }
  bool is_float() const;
  bool is_int() const;  // signed or unsigned integer, not bool
  bool is_unsigned() const;
  bool is_signed_int() const { return is_int() && !is_unsigned(); }
  // Half types are stored in 16 bits and computed in float32 inside kernels.
  bool is_half() const { return type_ == ScalarType::Float16 || type_ == ScalarType::BFloat16; }

  // Smallest and largest finite values (for integers: the representable range).
  double min_value() const;
  double max_value() const;

  constexpr bool operator==(const DType& other) const { return type_ == other.type_; }
  constexpr bool operator!=(const DType& other) const { return type_ != other.type_; }

 private:
  ScalarType type_;
};

namespace dtypes {
inline constexpr DType bool_{ScalarType::Bool};
inline constexpr DType int8{ScalarType::Int8};
inline constexpr DType int16{ScalarType::Int16};
inline constexpr DType int32{ScalarType::Int32};
inline constexpr DType int64{ScalarType::Int64};
inline constexpr DType uint8{ScalarType::UInt8};
inline constexpr DType uint16{ScalarType::UInt16};
inline constexpr DType uint32{ScalarType::UInt32};
inline constexpr DType uint64{ScalarType::UInt64};
inline constexpr DType float16{ScalarType::Float16};
inline constexpr DType bfloat16{ScalarType::BFloat16};
inline constexpr DType float32{ScalarType::Float32};
inline constexpr DType float64{ScalarType::Float64};

// Every dtype, in ScalarType order.
inline constexpr DType all[] = {bool_,  int8,   int16,   int32,    int64,   uint8,  uint16,
                                uint32, uint64, float16, bfloat16, float32, float64};
}  // namespace dtypes

// The dtype that two operands of dtypes `a` and `b` are computed in (see the rules above).
DType promote_types(DType a, DType b);

// Parses a canonical name ("float32", "int8", "bool"); throws DTypeError for anything else.
DType dtype_from_name(const std::string& name);

// IEEE half and bfloat16 conversions on the host, round-to-nearest-even, NaN and inf preserved.
uint16_t float_to_half_bits(float value);
float half_bits_to_float(uint16_t bits);
uint16_t float_to_bfloat16_bits(float value);
float bfloat16_bits_to_float(uint16_t bits);

// Host-side element types for the 16-bit floats, so that `from_vector` and `to_vector` have a type
// to name. They only store bits and convert to and from float.
struct half {
  uint16_t bits = 0;
  half() = default;
  explicit half(float value) : bits(float_to_half_bits(value)) {}
  explicit operator float() const { return half_bits_to_float(bits); }
};
struct bfloat16 {
  uint16_t bits = 0;
  bfloat16() = default;
  explicit bfloat16(float value) : bits(float_to_bfloat16_bits(value)) {}
  explicit operator float() const { return bfloat16_bits_to_float(bits); }
};

// The dtype that corresponds to a host element type: dtype_of<float>() == dtypes::float32.
template <typename T>
constexpr DType dtype_of();
template <>
constexpr DType dtype_of<bool>() {
  return dtypes::bool_;
}
template <>
constexpr DType dtype_of<int8_t>() {
  return dtypes::int8;
}
template <>
constexpr DType dtype_of<int16_t>() {
  return dtypes::int16;
}
template <>
constexpr DType dtype_of<int32_t>() {
  return dtypes::int32;
}
template <>
constexpr DType dtype_of<int64_t>() {
  return dtypes::int64;
}
template <>
constexpr DType dtype_of<uint8_t>() {
  return dtypes::uint8;
}
template <>
constexpr DType dtype_of<uint16_t>() {
  return dtypes::uint16;
}
template <>
constexpr DType dtype_of<uint32_t>() {
  return dtypes::uint32;
}
template <>
constexpr DType dtype_of<uint64_t>() {
  return dtypes::uint64;
}
template <>
constexpr DType dtype_of<half>() {
  return dtypes::float16;
}
template <>
constexpr DType dtype_of<bfloat16>() {
  return dtypes::bfloat16;
}
template <>
constexpr DType dtype_of<float>() {
  return dtypes::float32;
}
template <>
constexpr DType dtype_of<double>() {
  return dtypes::float64;
}

}  // namespace kiln
