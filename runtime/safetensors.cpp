// Reading and writing the safetensors format (include/kiln/safetensors.h). The header is JSON
// (nlohmann-json); the data is each tensor's bytes as kiln stores them, little-endian.

#include <kiln/error.h>
#include <kiln/safetensors.h>

#include <unistd.h>
#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>

#include "runtime/tensor_internal.h"

namespace kiln {
namespace {

static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian: a big-endian host would swap bytes");

// The format's own limit: a longer header is refused as a likely corrupt or hostile file.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

struct DTypeName {
  DType dtype;
  const char* name;
};
constexpr DTypeName kNames[] = {
    {dtypes::bool_, "BOOL"},    {dtypes::uint8, "U8"},    {dtypes::int8, "I8"},
    {dtypes::int16, "I16"},     {dtypes::uint16, "U16"},  {dtypes::float16, "F16"},
    {dtypes::bfloat16, "BF16"}, {dtypes::int32, "I32"},   {dtypes::uint32, "U32"},
    {dtypes::float32, "F32"},   {dtypes::float64, "F64"}, {dtypes::int64, "I64"},
    {dtypes::uint64, "U64"},
};

// Elements of `shape`, or nothing when the count overflows (a corrupt or hostile header).
std::optional<uint64_t> element_count(const Shape& shape) {
  uint64_t count = 1;
  for (int64_t size : shape) {
    if (size < 0 || __builtin_mul_overflow(count, static_cast<uint64_t>(size), &count)) return {};
  }
  return count;
}

const char* safetensors_name(DType dtype) {
  for (const DTypeName& entry : kNames)
    if (entry.dtype == dtype) return entry.name;
  throw InternalError(std::string("[save_safetensors] no safetensors name for ") + dtype.name());
}

// Calls `visit` with a value of the host type of `dtype` (uint8_t for bool: one byte each).
template <typename Visit>
void with_host_type(DType dtype, Visit&& visit) {
  switch (dtype.type()) {
    case ScalarType::Bool:
      return visit(uint8_t{});
    case ScalarType::Int8:
      return visit(int8_t{});
    case ScalarType::Int16:
      return visit(int16_t{});
    case ScalarType::Int32:
      return visit(int32_t{});
    case ScalarType::Int64:
      return visit(int64_t{});
    case ScalarType::UInt8:
      return visit(uint8_t{});
    case ScalarType::UInt16:
      return visit(uint16_t{});
    case ScalarType::UInt32:
      return visit(uint32_t{});
    case ScalarType::UInt64:
      return visit(uint64_t{});
    case ScalarType::Float16:
      return visit(half{});
    case ScalarType::BFloat16:
      return visit(bfloat16{});
    case ScalarType::Float32:
      return visit(float{});
    case ScalarType::Float64:
      return visit(double{});
  }
}

std::string tensor_bytes(const Tensor& tensor) {
  std::string bytes(static_cast<size_t>(tensor.numel()) * tensor.dtype().itemsize(), '\0');
  if (tensor.dtype().is_bool()) {
    std::vector<bool> values = tensor.to_vector<bool>();
    for (size_t index = 0; index < values.size(); ++index) bytes[index] = values[index] ? 1 : 0;
    return bytes;
  }
  with_host_type(tensor.dtype(), [&](auto type) {
    const auto values = tensor.to_vector<decltype(type)>();
    if (!values.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  });
  return bytes;
}

Tensor tensor_from_bytes(const char* data, DType dtype, const Shape& shape,
                         const std::string& device) {
  const size_t count = static_cast<size_t>(*element_count(shape));
  if (dtype.is_bool()) {
    std::vector<bool> values(count);
    for (size_t index = 0; index < count; ++index) values[index] = data[index] != 0;
    return Tensor::from_vector(values, shape, device);
  }
  Tensor result;
  with_host_type(dtype, [&](auto type) {
    std::vector<decltype(type)> values(count);
    if (count) std::memcpy(values.data(), data, count * sizeof(decltype(type)));
    result = Tensor::from_vector(values, shape, device);
  });
  return result;
}

std::string read_file(const std::string& path, const char* op) {
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    throw Error(std::string("[") + op + "] cannot open '" + path + "': " + std::strerror(errno));
  }
  std::string contents((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  if (file.bad()) throw Error(std::string("[") + op + "] cannot read '" + path + "'");
  return contents;
}

// The parsed header and where the data starts.
struct Header {
  nlohmann::json json;
  size_t data_start = 0;
};

Header read_header(const std::string& contents, const std::string& path, const char* op) {
  const std::string where = std::string("[") + op + "] '" + path + "' is not a safetensors file: ";
  if (contents.size() < 8) throw Error(where + "shorter than its 8-byte header length");
  uint64_t length = 0;
  std::memcpy(&length, contents.data(), 8);
  if (length > kMaxHeaderBytes || length > contents.size() - 8) {
    throw Error(where + "the header length " + std::to_string(length) + " runs past the file (" +
                std::to_string(contents.size()) + " bytes) or the format's 100 MB limit");
  }
  Header header;
  header.data_start = 8 + static_cast<size_t>(length);
  try {
    header.json = nlohmann::json::parse(contents.begin() + 8, contents.begin() + 8 + length);
  } catch (const nlohmann::json::exception& error) {
    throw Error(where + "the header is not JSON (" + error.what() + ")");
  }
  if (!header.json.is_object()) throw Error(where + "the header is not a JSON object");
  return header;
}

}  // namespace

void save_safetensors(const std::string& path, const NamedTensors& tensors,
                      const std::vector<std::pair<std::string, std::string>>& metadata) {
  std::set<std::string> names;
  std::vector<Tensor> values;
  for (const auto& [name, tensor] : tensors) {
    if (name.empty() || name == "__metadata__") {
      throw ValueError("[save_safetensors] a tensor's name must not be empty or '__metadata__'");
    }
    if (!names.insert(name).second) {
      throw ValueError("[save_safetensors] tensor '" + name + "' is given twice");
    }
    check_defined(tensor, "save_safetensors");
    values.push_back(tensor);
  }
  realize(values);

  nlohmann::json header = nlohmann::json::object();
  std::vector<std::string> data;
  size_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    data.push_back(tensor_bytes(tensor));
    header[name] = {{"dtype", safetensors_name(tensor.dtype())},
                    {"shape", tensor.shape()},
                    {"data_offsets", {offset, offset + data.back().size()}}};
    offset += data.back().size();
  }
  if (!metadata.empty()) {
    nlohmann::json entries = nlohmann::json::object();
    for (const auto& [key, value] : metadata) entries[key] = value;
    header["__metadata__"] = entries;
  }
  std::string header_text;
  try {
    header_text = header.dump();
  } catch (const nlohmann::json::exception& error) {
    throw ValueError(std::string("[save_safetensors] a tensor name or metadata entry is not "
                                 "UTF-8 text (") +
                     error.what() + ")");
  }
  // Padded with spaces to 8 bytes, as the reference writer does, so the data is aligned.
  header_text.append((8 - header_text.size() % 8) % 8, ' ');

  const std::string partial = path + ".partial-" + std::to_string(::getpid());
  {
    std::ofstream file(partial, std::ios::binary | std::ios::trunc);
    if (!file) {
      throw Error("[save_safetensors] cannot write '" + partial + "': " + std::strerror(errno));
    }
    const uint64_t length = header_text.size();
    file.write(reinterpret_cast<const char*>(&length), 8);
    file.write(header_text.data(), static_cast<std::streamsize>(header_text.size()));
    for (const std::string& bytes : data)
      file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    file.close();
    if (!file) {
      std::remove(partial.c_str());
      throw Error("[save_safetensors] writing '" + partial + "' failed (disk full?)");
    }
  }
  std::error_code error;
  std::filesystem::rename(partial, path, error);
  if (error) {
    std::remove(partial.c_str());
    throw Error("[save_safetensors] cannot move the written file to '" + path +
                "': " + error.message());
  }
}

NamedTensors load_safetensors(const std::string& path, const std::string& device) {
  const char* op = "load_safetensors";
  const std::string contents = read_file(path, op);
  const Header header = read_header(contents, path, op);
  const size_t data_size = contents.size() - header.data_start;

  struct Entry {
    std::string name;
    DType dtype;
    Shape shape;
    uint64_t begin = 0, end = 0;
  };
  std::vector<Entry> entries;
  for (const auto& [name, field] : header.json.items()) {
    if (name == "__metadata__") continue;
    const std::string where = "[load_safetensors] '" + path + "': tensor '" + name + "' ";
    Entry entry;
    entry.name = name;
    try {
      const std::string dtype_name = field.at("dtype").get<std::string>();
      bool known = false;
      for (const DTypeName& candidate : kNames) {
        if (dtype_name == candidate.name) {
          entry.dtype = candidate.dtype;
          known = true;
        }
      }
      if (!known) {
        throw DTypeError(where + "has dtype " + dtype_name +
                         ", which kiln does not have (it reads BOOL, U8-U64, I8-I64, F16, BF16, "
                         "F32 and F64)");
      }
      if (!field.at("shape").is_array()) throw Error(where + "has a shape that is not a list");
      for (const auto& size : field.at("shape")) {
        if (!size.is_number_unsigned()) throw Error(where + "has a size that is not a number >= 0");
        entry.shape.push_back(size.get<int64_t>());
      }
      const auto& offsets = field.at("data_offsets");
      if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
          !offsets[1].is_number_unsigned()) {
        throw Error(where + "has data_offsets that are not two numbers >= 0");
      }
      entry.begin = offsets[0].get<uint64_t>();
      entry.end = offsets[1].get<uint64_t>();
    } catch (const nlohmann::json::exception& error) {
      throw Error(where + "lacks a field or has one of the wrong type (" + error.what() + ")");
    }
    if (entry.end < entry.begin || entry.end > data_size) {
      throw Error(where + "has bytes [" + std::to_string(entry.begin) + ", " +
                  std::to_string(entry.end) + "), outside the data (" + std::to_string(data_size) +
                  " bytes)");
    }
    const std::optional<uint64_t> count = element_count(entry.shape);
    uint64_t expected = 0;
    if (!count ||
        __builtin_mul_overflow(*count, static_cast<uint64_t>(entry.dtype.itemsize()), &expected) ||
        entry.end - entry.begin != expected) {
      throw Error(where + "has " + std::to_string(entry.end - entry.begin) + " bytes, but shape " +
                  shape_string(entry.shape) + " of " + entry.dtype.name() + " needs " +
                  (count ? std::to_string(expected) : std::string("more than 2^64")));
    }
    entries.push_back(std::move(entry));
  }
  std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  // Each non-empty range against the furthest end before it (an empty one between two that
  // overlap hides nothing).
  const Entry* furthest = nullptr;
  for (const Entry& entry : entries) {
    if (entry.begin == entry.end) continue;
    if (furthest && entry.begin < furthest->end) {
      throw Error("[load_safetensors] '" + path + "': tensors '" + furthest->name + "' and '" +
                  entry.name + "' overlap in the data");
    }
    if (!furthest || entry.end > furthest->end) furthest = &entry;
  }

  NamedTensors tensors;
  for (const Entry& entry : entries) {
    tensors.emplace_back(entry.name,
                         tensor_from_bytes(contents.data() + header.data_start + entry.begin,
                                           entry.dtype, entry.shape, device));
  }
  return tensors;
}

std::vector<std::pair<std::string, std::string>> safetensors_metadata(const std::string& path) {
  const char* op = "safetensors_metadata";
  const Header header = read_header(read_file(path, op), path, op);
  std::vector<std::pair<std::string, std::string>> metadata;
  auto found = header.json.find("__metadata__");
  if (found == header.json.end()) return metadata;
  if (!found->is_object()) {
    throw Error("[safetensors_metadata] '" + path + "': __metadata__ is not an object");
  }
  for (const auto& [key, value] : found->items()) {
    if (!value.is_string()) {
      throw Error("[safetensors_metadata] '" + path + "': __metadata__ entry '" + key +
                  "' is not a string");
    }
    metadata.emplace_back(key, value.get<std::string>());
  }
  return metadata;
}

}  // namespace kiln
