// Memory shared with the application: host memory wrapped without a copy (from_blob), and the
// device's own allocation behind a tensor (native_memory).

#include <kiln/error.h>
#include <kiln/tensor.h>

#include <cstdint>

#include "runtime/buffer.h"
#include "runtime/registry.h"
#include "runtime/tensor_internal.h"

namespace kiln {

namespace {

// A realized tensor over memory that is not the allocator's; `release` runs once kiln is done
// with it (the device synchronized).
Tensor wrapped_tensor(const std::shared_ptr<DeviceContext>& context, const std::string& device,
                      DeviceMemory memory, Shape shape, DType dtype, int64_t numel,
                      std::function<void()> release) {
  Allocator& driver = context->allocator().driver();
  std::shared_ptr<Buffer> buffer;
  try {
    buffer = std::make_shared<Buffer>(context, dtype, numel, memory,
                                      [&driver, release](DeviceMemory wrapped) {
                                        driver.release_wrapped(wrapped);
                                        if (release) release();
                                      });
  } catch (...) {
    driver.release_wrapped(memory);  // the application's memory stays its own
    throw;
  }
  UOpRef node = UOp::make(Op::Buffer, dtype, {}, std::shared_ptr<Storage>(buffer), shape);
  return make_tensor(node, device);
}

// The driver's wrap_host or wrap_native, its errors saying which call they come from.
template <typename Wrap>
DeviceMemory wrap_memory(const std::string& what, Wrap&& wrap) {
  try {
    return wrap();
  } catch (const OutOfMemoryError& error) {
    throw OutOfMemoryError(what + ": " + error.what());
  } catch (const DeviceError& error) {
    throw DeviceError(what + ": " + error.what());
  }
}

}  // namespace

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
  const size_t nbytes = static_cast<size_t>(numel) * dtype.itemsize();
  const DeviceMemory wrapped = wrap_memory(
      what + " on " + name, [&] { return context->allocator().driver().wrap_host(data, nbytes); });
  if (!wrapped)
    throw DeviceError(what + ": " + name +
                      " cannot use host memory in place; Tensor::from_vector copies it there");
  std::function<void()> release;
  if (deleter) release = [deleter, data] { deleter(data); };
  return wrapped_tensor(context, name, wrapped, std::move(shape), dtype, numel, std::move(release));
}

Tensor Tensor::from_native(NativeMemory memory, Shape shape, DType dtype,
                           std::function<void()> release, const std::string& device) {
  const std::string what = "[from_native] " + std::string(dtype.name()) + kiln::shape_string(shape);
  if (!memory.handle) throw Error(what + ": the handle is null");
  const int64_t numel = check_numel(shape, "from_native");
  const std::string name = resolve_device(device);
  std::shared_ptr<DeviceContext> context = open_device(name);
  const size_t nbytes = static_cast<size_t>(numel) * dtype.itemsize();
  if (memory.nbytes != 0 && memory.nbytes < nbytes)
    throw Error(what + " needs " + std::to_string(nbytes) + " bytes; the allocation holds " +
                std::to_string(memory.nbytes) + " from offset " + std::to_string(memory.offset));
  if (memory.offset % dtype.itemsize() != 0)
    throw Error(what + ": offset " + std::to_string(memory.offset) +
                " is not aligned to the dtype's " + std::to_string(dtype.itemsize()) + " bytes");
  const DeviceMemory wrapped = wrap_memory(what + " on " + name, [&] {
    return context->allocator().driver().wrap_native(memory.handle, memory.offset, nbytes,
                                                     dtype.itemsize());
  });
  if (!wrapped) throw DeviceError(what + ": " + name + " cannot take an allocation of its API's");
  return wrapped_tensor(context, name, wrapped, std::move(shape), dtype, numel, std::move(release));
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
