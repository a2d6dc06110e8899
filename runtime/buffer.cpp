#include "runtime/buffer.h"

#include <kiln/error.h>

namespace kiln {
namespace {

// Zero-sized tensors still get a real (tiny) allocation so every kernel argument is valid.
size_t allocation_size(size_t nbytes) {
  return nbytes == 0 ? 1 : nbytes;
}

}  // namespace

Buffer::Buffer(std::shared_ptr<DeviceContext> device, DType dtype, int64_t numel)
    : device_(std::move(device)),
      dtype_(dtype),
      numel_(numel),
      nbytes_(static_cast<size_t>(numel) * dtype.itemsize()) {}

Buffer::~Buffer() {
  if (memory_) device_->allocator().free(memory_, allocation_size(nbytes_));
}

DeviceMemory Buffer::memory() {
  if (!memory_) memory_ = device_->allocator().alloc(allocation_size(nbytes_));
  return memory_;
}

void Buffer::copy_in(const void* host) {
  if (nbytes_ == 0) return;
  device_->allocator().driver().copy_in(memory(), host, nbytes_);
}

void Buffer::copy_out(void* host) {
  if (nbytes_ == 0) return;
  device_->device().synchronize();
  device_->allocator().driver().copy_out(host, memory(), nbytes_);
}

Buffer& buffer_of(const UOp& node) {
  auto* buffer = dynamic_cast<Buffer*>(node.storage().get());
  if (!buffer) throw Error("[buffer_of] internal error: a Buffer node without runtime storage");
  return *buffer;
}

}  // namespace kiln
