#pragma once
// Argument checks shared by the nn functions (kiln/nn.h): typed errors that name the function.

#include <kiln/error.h>
#include <kiln/tensor.h>

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::nn::detail {

// A DTypeError unless `tensor` is a float tensor.
void check_float(const Tensor& tensor, const char* op, const char* role);
// A DTypeError unless `tensor` has an integer dtype (not bool, not float).
void check_integer(const Tensor& tensor, const char* op, const char* role);
// A ShapeError: "[op] what; got <shapes>".
[[noreturn]] void shape_error(const char* op, const std::string& what);
// The last `count` axes, as negative positions (-count .. -1).
std::vector<int64_t> last_axes(size_t count);
// x as its computing dtype: the 16-bit floats normalize in float32, as PyTorch does.
Tensor widened(const Tensor& x);

}  // namespace kiln::nn::detail
