#pragma once
// Checkpoints in the safetensors format (https://github.com/huggingface/safetensors, what
// PyTorch, JAX and MLX models are shipped in): an 8-byte little-endian header length, a JSON
// header naming each tensor's dtype, shape and byte range, then the data, little-endian and
// row-major. Files kiln writes are read by Python's `safetensors` package and files it writes
// are read here.
//
//   kiln::save_safetensors("model.safetensors", model.state_dict());
//   model.load_state_dict(kiln::load_safetensors("model.safetensors"));

#include <string>
#include <utility>
#include <vector>

#include <kiln/tensor.h>

namespace kiln {

// Named tensors in a fixed order: a module's parameters, buffers or whole state, a checkpoint.
using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

// Writes `tensors` (realized together first; names unique and not empty) with every kiln dtype
// under safetensors' name (BOOL, U8..U64, I8..I64, F16, BF16, F32, F64); `metadata` becomes the
// header's "__metadata__" (strings). The file is written beside `path` and renamed over it, so a
// failure leaves an existing file as it was. A repeated name is a ValueError, a file that cannot
// be written an Error naming it.
void save_safetensors(const std::string& path, const NamedTensors& tensors,
                      const std::vector<std::pair<std::string, std::string>>& metadata = {});

// The tensors of a safetensors file, in the order of their data, on `device` ("" for the
// default). A file that cannot be opened or is not the format (a header length past the file,
// JSON that does not parse or lacks a field, a byte range that is not the tensor's size, runs
// past the data or overlaps another) is an Error naming the file and the tensor; a dtype kiln
// does not have (F8_E4M3, ...) is a DTypeError naming the tensor.
NamedTensors load_safetensors(const std::string& path, const std::string& device = "");

// The header's "__metadata__" (empty when it has none).
std::vector<std::pair<std::string, std::string>> safetensors_metadata(const std::string& path);

}  // namespace kiln
