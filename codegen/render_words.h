#pragma once
// Vectors of 16-bit elements (the half types, int16, uint16), which the renderer reads and writes
// as 32-bit words, two elements a word, the first in the low half (Dialect::word_buffer): what a
// GPU needs to move 8 or 16 bytes per access where each element is 2.

#include <string>
#include <vector>

#include "codegen/dialect.h"
#include "core/symbolic.h"

namespace kiln {

// The type of `width` packed elements: a uint32, or a vector of them.
std::string packed_vector_type(const Dialect& dialect, int width);

// The expression reading `width` elements of `dtype` from `buffer` (a parameter's name) at
// `index`, a multiple of `width`, as a packed_vector_type value.
std::string packed_vector_load(const Dialect& dialect, int width, const std::string& buffer,
                               const Sym& index);

// Element `lane` of such a vector, as its compute type (a half type's float, int16's short).
std::string packed_lane(const Dialect& dialect, DType dtype, int width, const std::string& vector,
                        int lane);

// The statement writing `values` (compute-type names, one per element) to `buffer` at `index`,
// a multiple of their number.
std::string packed_vector_store(const Dialect& dialect, DType dtype, const std::string& buffer,
                                const Sym& index, const std::vector<std::string>& values);

}  // namespace kiln
