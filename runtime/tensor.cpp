// The Tensor handle: creation, properties, realization and host data.

#include <kiln/tensor.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "core/const_fold.h"
#include "runtime/autograd.h"
#include "runtime/buffer.h"
#include "runtime/realize.h"
#include "runtime/registry.h"
#include "runtime/tensor_internal.h"

namespace kiln {

std::string resolve_device(const std::string& device) {
  if (device.empty()) return default_device();
  const std::string name = canonical_device_name(device);
  open_device(name);  // throws DeviceError with what is available
  return name;
}

namespace {

void check_shape(const Shape& shape, const char* op) {
  check_numel(shape, op);
}

int64_t numel_of(const Shape& shape) {
  int64_t total = 1;
  for (int64_t size : shape) total *= size;
  return total;
}

bool is_buffer_view(const UOp& node) {
  return node.op() == Op::Buffer || (node.op() == Op::View && node.src()->op() == Op::Buffer);
}

}  // namespace

Tensor make_tensor(UOpRef node, const std::string& device) {
  check_numel(node->shape(), "tensor");
  if (node->is_symbolic()) check_symbolic_numel(node->sym_shape(), "tensor");
  return Tensor(std::make_shared<TensorState>(std::move(node), device));
}

// Every use of a handle reaches its state through here, so an empty (default-constructed) tensor
// is caught at its first use, whichever op that is, rather than dereferencing null.
TensorState& Tensor::state(const char* use) const {
  if (!state_) {
    throw Error(std::string("[Tensor] the tensor is empty (default-constructed); assign it a "
                            "value first (it was used for its ") +
                use + ")");
  }
  return *state_;
}

std::shared_ptr<const UOp> Tensor::node() const {
  return state("graph").node();
}
const Shape& Tensor::shape() const {
  return state("shape").shape();
}
DimShape Tensor::dims() const {
  const TensorState& held = state("dims");
  DimShape dims;
  if (const SymShape* symbolic = held.sym_shape()) {
    for (const Sym& size : *symbolic) dims.emplace_back(size);
  } else {
    for (int64_t size : held.shape()) dims.emplace_back(size);
  }
  return dims;
}

std::string Tensor::shape_string() const {
  const TensorState& held = state("shape");
  if (const SymShape* symbolic = held.sym_shape()) return kiln::shape_string(*symbolic);
  return kiln::shape_string(held.shape());
}

DType Tensor::dtype() const {
  return state("dtype").dtype();
}
const std::string& Tensor::device() const {
  return state("device").device();
}
int64_t Tensor::numel() const {
  return numel_of(state("shape").shape());
}
int64_t Tensor::ndim() const {
  return static_cast<int64_t>(state("shape").shape().size());
}

Tensor Tensor::from_bytes(const void* data, size_t nbytes, DType dtype, Shape shape,
                          const std::string& device) {
  check_shape(shape, "from_vector");
  const int64_t numel = numel_of(shape);
  if (static_cast<size_t>(numel) * dtype.itemsize() != nbytes) {
    throw ShapeError("[from_vector] " + std::to_string(nbytes / dtype.itemsize()) +
                     " values cannot fill shape " + kiln::shape_string(shape) + " (" +
                     std::to_string(numel) + " elements)");
  }
  const std::string name = resolve_device(device);
  auto buffer = std::make_shared<Buffer>(open_device(name), dtype, numel);
  buffer->copy_in(data);
  UOpRef node = UOp::make(Op::Buffer, dtype, {}, std::shared_ptr<Storage>(buffer), shape);
  return make_tensor(node, name);
}

template <typename T>
Tensor Tensor::from_vector(const std::vector<T>& data, Shape shape, const std::string& device) {
  if constexpr (std::is_same_v<T, bool>) {
    std::vector<uint8_t> bytes(data.begin(), data.end());
    return from_bytes(bytes.data(), bytes.size(), dtypes::bool_, std::move(shape), device);
  } else {
    return from_bytes(data.data(), data.size() * sizeof(T), dtype_of<T>(), std::move(shape),
                      device);
  }
}

Tensor Tensor::scalar(double value, DType dtype, const std::string& device) {
  if (dtype == dtypes::float64) return from_vector(std::vector<double>{value}, {}, device);
  if (dtype.is_float()) {
    // float32 holds every float16 and bfloat16 value: the cast (fused into the kernels that read
    // it) rounds the float32 (what the header says: through float32).
    const Tensor single = from_vector(std::vector<float>{static_cast<float>(value)}, {}, device);
    return dtype == dtypes::float32 ? single : single.cast(dtype);
  }
  if (dtype.is_bool()) return from_vector(std::vector<bool>{value != 0}, {}, device);
  const double low = dtype.is_unsigned() ? 0.0 : -std::ldexp(1.0, 8 * dtype.itemsize() - 1);
  const double high = std::ldexp(1.0, 8 * dtype.itemsize() - (dtype.is_unsigned() ? 0 : 1));
  if (!(value >= low && value < high) || std::trunc(value) != value) {
    char range[96];
    std::snprintf(range, sizeof range, "integers from %.0f to %.0f", low, high - 1);
    throw DTypeError("[scalar] " + std::to_string(value) + " is not a " + dtype.name() +
                         " value: it holds " + range,
                     dtype);
  }
  // Stored in its own dtype: no cast in the kernels that read it (and no int64 where the device
  // has none).
  auto held = [&](auto typed) {
    using Integer = decltype(typed);
    return from_vector(std::vector<Integer>{static_cast<Integer>(value)}, {}, device);
  };
  switch (dtype.type()) {
    case ScalarType::Int8:
      return held(int8_t{});
    case ScalarType::Int16:
      return held(int16_t{});
    case ScalarType::Int32:
      return held(int32_t{});
    case ScalarType::UInt8:
      return held(uint8_t{});
    case ScalarType::UInt16:
      return held(uint16_t{});
    case ScalarType::UInt32:
      return held(uint32_t{});
    case ScalarType::UInt64:
      return held(uint64_t{});
    default:
      return held(int64_t{});
  }
}

Tensor Tensor::full(Shape shape, double value, DType dtype, const std::string& device) {
  check_shape(shape, "full");
  // A tensor's elements are stored values: a half type's are its 16 bits (70000 is float16's inf).
  return make_tensor(const_node(round_to_stored_dtype(value, dtype), dtype, shape),
                     resolve_device(device));
}

Tensor Tensor::full(const DimShape& shape, double value, DType dtype, const std::string& device) {
  Shape values;
  bool symbolic = false;
  for (const Dim& size : shape) {
    values.push_back(size.value());
    symbolic |= size.is_symbolic();
  }
  if (!symbolic) return full(std::move(values), value, dtype, device);
  check_shape(values, "full");
  SymShape sizes;
  for (const Dim& size : shape) sizes.push_back(size.sym());
  check_symbolic_numel(sizes, "full");
  return make_tensor(symbolic_const_node(round_to_stored_dtype(value, dtype), dtype, sizes),
                     resolve_device(device));
}

Tensor Tensor::zeros(const DimShape& shape, DType dtype, const std::string& device) {
  return full(shape, 0, dtype, device);
}
Tensor Tensor::ones(const DimShape& shape, DType dtype, const std::string& device) {
  return full(shape, 1, dtype, device);
}

Tensor Tensor::zeros(Shape shape, DType dtype, const std::string& device) {
  return full(std::move(shape), 0, dtype, device);
}
Tensor Tensor::ones(Shape shape, DType dtype, const std::string& device) {
  return full(std::move(shape), 1, dtype, device);
}

Tensor Tensor::arange(int64_t stop, const std::string& device) {
  return arange(0, stop, 1, device);
}

Tensor Tensor::arange(int64_t start, int64_t stop, int64_t step, const std::string& device) {
  return arange(start, stop, step, dtypes::int32, device);
}

Tensor Tensor::arange(int64_t start, int64_t stop, int64_t step, DType dtype,
                      const std::string& device) {
  const std::string range = "start " + std::to_string(start) + ", stop " + std::to_string(stop) +
                            ", step " + std::to_string(step);
  if (step == 0) throw ShapeError("[arange] step must not be 0 (" + range + ")");
  if (dtype.is_bool())
    throw DTypeError("[arange] cannot count in bool (" + range +
                     "); use an integer or float dtype");
  // In 128 bits: stop - start may overflow int64.
  const __int128 span = static_cast<__int128>(stop) - start;
  const __int128 count128 =
      (span > 0) == (step > 0) && span != 0 ? (span + step + (step > 0 ? -1 : 1)) / step : 0;
  if (count128 > kMaxElements)
    throw ShapeError("[arange] " + range + " gives more than the 2^60 elements a tensor may hold");
  const int64_t count = static_cast<int64_t>(count128);
  if (count > 0 && dtype.is_int()) {
    const __int128 last = start + static_cast<__int128>(step) * (count - 1);
    const __int128 low = std::min<__int128>(start, last), high = std::max<__int128>(start, last);
    const bool fits =
        dtype == dtypes::uint64
            ? low >= 0
            : low >= static_cast<__int128>(dtype.min_value()) &&
                  (dtype == dtypes::int64 || high <= static_cast<__int128>(dtype.max_value()));
    if (!fits) {
      throw DTypeError("[arange] " + range + " reaches " +
                       std::to_string(static_cast<int64_t>(low == start ? last : start)) +
                       ", outside the range of " + dtype.name() +
                       "; pass a wider dtype, e.g. Tensor::arange(start, stop, step, "
                       "dtypes::int64)");
    }
  }
  const std::string name = resolve_device(device);
  // Integer arithmetic wraps, so index * step + start is exact whenever the result fits, even
  // where the index alone would not.
  // Integer constants from their int64 value: a double would round those above 2^53.
  auto constant = [&](int64_t value) {
    ConstArg arg = make_const(static_cast<double>(value), dtype);
    if (dtype.is_int()) arg.int_value = value;
    return UOp::make(Op::Const, dtype, {}, arg, Shape{count});
  };
  UOpRef index = UOp::make(Op::Iota, dtype, {}, {}, {count});
  UOpRef scaled = alu_node(Op::Mul, dtype, {index, constant(step)});
  return make_tensor(alu_node(Op::Add, dtype, {scaled, constant(start)}), name);
}

Tensor Tensor::arange(const Dim& stop, DType dtype, const std::string& device) {
  if (!stop.is_symbolic()) return arange(0, stop.value(), 1, dtype, device);
  // The checks at the largest size the variables allow: every value must fit the dtype.
  const Sym size = stop.sym();
  arange(0, size.vmax(), 1, dtype, device);
  return make_tensor(UOp::make_symbolic(Op::Iota, dtype, {}, {}, SymShape{size}),
                     resolve_device(device));
}

Tensor Tensor::eye(int64_t n, DType dtype, const std::string& device) {
  if (n < 0) throw ShapeError("[eye] size must be non-negative, got " + std::to_string(n));
  check_numel({n, n}, "eye");
  Tensor index = arange(n, device);
  return (index.reshape({n, 1}) == index.reshape({1, n})).cast(dtype);
}

const Tensor& Tensor::realize() const {
  TensorState& held = state("value");
  const UOpRef node = held.node();
  if (is_buffer_view(*node)) return *this;
  std::vector<UOpRef> results = realize_nodes({node}, held.device());
  held.set_node(results[0]);
  return *this;
}

void realize(const std::vector<Tensor>& tensors) {
  for (size_t index = 0; index < tensors.size(); ++index) {
    if (!tensors[index].state_) {
      throw Error("[realize] tensor " + std::to_string(index) + " of the " +
                  std::to_string(tensors.size()) +
                  " given is empty (default-constructed); assign it a value first");
    }
  }
  std::vector<std::string> devices;
  for (const Tensor& tensor : tensors) {
    const std::string& device = tensor.state_->device();
    if (std::find(devices.begin(), devices.end(), device) == devices.end())
      devices.push_back(device);
  }
  for (const std::string& device : devices) {
    std::vector<UOpRef> roots;
    std::vector<TensorState*> owners;
    for (const Tensor& tensor : tensors) {
      if (tensor.state_->device() != device) continue;
      UOpRef node = tensor.state_->node();
      if (is_buffer_view(*node)) continue;
      roots.push_back(std::move(node));
      owners.push_back(tensor.state_.get());
    }
    if (roots.empty()) continue;
    const std::vector<UOpRef> results = realize_nodes(roots, device);
    for (size_t index = 0; index < owners.size(); ++index) owners[index]->set_node(results[index]);
  }
}

void Tensor::copy_to_host(void* out, DType dtype) const {
  Tensor source = this->dtype() == dtype ? *this : cast(dtype);
  source.realize();
  UOpRef node = source.node();
  const bool readable = node->op() == Op::Buffer ||
                        (node->tracker().is_contiguous() && node->numel() == node->src()->numel());
  if (!readable) {
    source = source.contiguous();
    source.realize();
    node = source.node();
  }
  Buffer& buffer = buffer_of(node->op() == Op::Buffer ? *node : *node->src());
  buffer.copy_out(out);
}

template <typename T>
std::vector<T> Tensor::to_vector() const {
  if constexpr (std::is_same_v<T, bool>) {
    std::vector<uint8_t> bytes(static_cast<size_t>(numel()));
    copy_to_host(bytes.data(), dtypes::bool_);
    return std::vector<bool>(bytes.begin(), bytes.end());
  } else {
    std::vector<T> values(static_cast<size_t>(numel()));
    copy_to_host(values.data(), dtype_of<T>());
    return values;
  }
}

template <typename T>
T Tensor::item() const {
  if (numel() != 1) {
    throw ShapeError("[item] needs a one-element tensor, got " + describe(*this) +
                     "; reshape or index it first");
  }
  return to_vector<T>()[0];
}

Tensor Tensor::to(const std::string& device) const {
  const std::string name = resolve_device(device);
  if (name == state("device").device()) return *this;
  const Tensor& x = *this;
  return recorded(
      make_tensor(UOp::make(Op::Copy, dtype(), {node()}, name, shape()), name), "to",
      [x](const Tensor& gradient) { return std::vector<Tensor>{gradient.to(x.device())}; }, x);
}

Tensor Tensor::contiguous() const {
  return recorded(
      make_tensor(UOp::make(Op::Contiguous, dtype(), {node()}, {}, shape()), device()),
      "contiguous", [](const Tensor& gradient) { return std::vector<Tensor>{gradient}; }, *this);
}

std::string Tensor::graph() const {
  return graph_to_string({node()});
}
std::string Tensor::graph_dot() const {
  return graph_to_dot({node()});
}

#define KILN_INSTANTIATE(T)                                                                 \
  template Tensor Tensor::from_vector<T>(const std::vector<T>&, Shape, const std::string&); \
  template std::vector<T> Tensor::to_vector<T>() const;                                     \
  template T Tensor::item<T>() const;
KILN_TENSOR_HOST_TYPES(KILN_INSTANTIATE)
#undef KILN_INSTANTIATE

}  // namespace kiln
