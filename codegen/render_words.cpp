#include "codegen/render_words.h"

#include "codegen/index_text.h"

namespace kiln {
namespace {

std::string word_index(const Sym& index, const Dialect& dialect) {
  return sym_text(floordiv(index, Sym(2)), dialect);
}

// An element's 16 bits as its compute type.
std::string from_bits(const Dialect& dialect, DType dtype, const std::string& bits) {
  const std::string u16 = dialect.cast(dialect.type_name(dtypes::uint16), bits);
  if (dtype == dtypes::float16) return dialect.half_to_float + "(" + u16 + ")";
  if (dtype == dtypes::bfloat16) return dialect.bfloat16_to_float + "(" + u16 + ")";
  if (dtype == dtypes::int16) return dialect.cast(dialect.type_name(dtypes::int16), u16);
  return u16;
}

// A compute-type value's 16 bits, as a uint32 (half types round to even, as scalar stores do).
std::string to_bits(const Dialect& dialect, DType dtype, const std::string& value) {
  std::string bits;
  if (dtype == dtypes::float16) {
    bits = dialect.float_to_half + "(" + value + ")";
  } else if (dtype == dtypes::bfloat16) {
    bits = dialect.float_to_bfloat16 + "(" + value + ")";
  } else {
    bits = dialect.cast(dialect.type_name(dtypes::uint16), value);
  }
  return dialect.cast(dialect.type_name(dtypes::uint32), bits);
}

}  // namespace

std::string packed_vector_type(const Dialect& dialect, int width) {
  const int words = width / 2;
  return words == 1 ? dialect.type_name(dtypes::uint32)
                    : dialect.vector_type(dtypes::uint32, words);
}

std::string packed_vector_load(const Dialect& dialect, int width, const std::string& buffer,
                               const Sym& index) {
  const std::string words = dialect.word_buffer(buffer, false);
  if (width == 2) return words + "[" + word_index(index, dialect) + "]";
  return dialect.vector_load(dtypes::uint32, width / 2, words, word_index(index, dialect));
}

std::string packed_lane(const Dialect& dialect, DType dtype, int width, const std::string& vector,
                        int lane) {
  const std::string word = width == 2 ? vector : dialect.vector_lane(vector, lane / 2);
  const std::string& u = dialect.uint32_literal_suffix;
  const std::string bits =
      lane % 2 == 0 ? "(" + word + " & 0xffff" + u + ")" : "(" + word + " >> 16" + u + ")";
  return from_bits(dialect, dtype, bits);
}

std::string packed_vector_store(const Dialect& dialect, DType dtype, const std::string& buffer,
                                const Sym& index, const std::vector<std::string>& values) {
  std::vector<std::string> words;
  for (size_t lane = 0; lane + 1 < values.size(); lane += 2) {
    words.push_back("(" + to_bits(dialect, dtype, values[lane]) + " | (" +
                    to_bits(dialect, dtype, values[lane + 1]) + " << 16" +
                    dialect.uint32_literal_suffix + "))");
  }
  const std::string target = dialect.word_buffer(buffer, true);
  if (words.size() == 1) return target + "[" + word_index(index, dialect) + "] = " + words[0];
  return dialect.vector_store(dtypes::uint32, target, word_index(index, dialect), words);
}

}  // namespace kiln
