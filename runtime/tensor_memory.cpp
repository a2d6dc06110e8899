// Memory shared with the application: host memory wrapped without a copy (from_blob), and the
// device's own allocation behind a tensor (native_memory).

#include <kiln/error.h>
#include <kiln/tensor.h>

#include <cstdint>

#include "runtime/buffer.h"
#include "runtime/registry.h"
#include "runtime/tensor_internal.h"

namespace kiln {

Tensor Tensor::from_blob(void* data, Shape shape, DType dtype, std::function<void(void*)> deleter,
                         const std::string& device) {
  const std::string what = "[from_blob] " + std::string(dtype.name()) + kiln::shape_string(shape);
  if (!data) throw Error(what + ": the pointer is null");
  if (reinterpret_cast<uintptr_t>(data) % static_cast<uintptr_t>(dtype.itemsize()) != 0)
    throw Error(what + ": the pointer is not aligned to the dtype's " +
                std::to_string(dtype.itemsize()) + " bytes");
  const int64_t numel = check_numel(shape, "from_blob");
  const std::string name = resolve_device(device);
  std::shared_ptr<DeviceContext> context = open_device(name);
  Allocator& driver = context->allocator().driver();
  const size_t nbytes = static_cast<size_t>(numel) * dtype.itemsize();
  DeviceMemory wrapped = driver.wrap_host(data, nbytes);
  if (!wrapped)
    throw DeviceError(what + ": " + name +
                      " cannot use host memory in place; Tensor::from_vector copies it there");
  auto buffer = std::make_shared<Buffer>(
      context, dtype, numel, wrapped, [&driver, data, deleter](DeviceMemory memory) {
        driver.release_host(memory);
        if (deleter) deleter(data);
      });
  UOpRef node = UOp::make(Op::Buffer, dtype, {}, std::shared_ptr<Storage>(buffer), shape);
  return make_tensor(node, name);
}

Tensor::NativeMemory Tensor::native_memory() const {
  check_defined(*this, "native_memory");
  realize();
  const UOpRef value = node();
  if (value->op() != Op::Buffer)
    throw Error("[native_memory] " + describe(*this) +
                " is a view, not a whole buffer: take contiguous(), realize it and keep that "
                "tensor while the memory is used");
  Buffer& buffer = buffer_of(*value);
  DeviceContext& context = buffer.context();
  context.device().synchronize();
  const auto [handle, offset] = context.allocator().driver().native_handle(buffer.memory());
  return {handle, offset, buffer.nbytes()};
}

}  // namespace kiln
