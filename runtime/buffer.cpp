#include "runtime/buffer.h"

#include <kiln/error.h>

#include <limits>

namespace kiln {
namespace {

// Zero-sized tensors still get a real (tiny) allocation so every kernel argument is valid.
size_t allocation_size(size_t nbytes) {
  return nbytes == 0 ? 1 : nbytes;
}

// The buffer's size in bytes. Throws OutOfMemoryError when it is more than the device can
// allocate at once. Buffers are made when a realize is scheduled, so this fails before any of
// its kernels runs, instead of midway when the buffer is first used.
size_t checked_size(DeviceContext& device, DType dtype, int64_t numel) {
  const uint64_t limit = device.device().properties().max_allocation_bytes;
  const uint64_t itemsize = static_cast<uint64_t>(dtype.itemsize());
  const uint64_t elements = static_cast<uint64_t>(numel);
  const bool representable = elements <= std::numeric_limits<size_t>::max() / itemsize;
  if (representable && (limit == 0 || elements * itemsize <= limit))
    return static_cast<size_t>(elements * itemsize);
  const std::string what = std::string("[allocate] a ") + dtype.name() + " buffer of " +
                           std::to_string(numel) + " elements (";
  if (!representable) {
    throw OutOfMemoryError(what + "more than 2^64 bytes) cannot be allocated on any device");
  }
  const std::string& why = device.device().properties().max_allocation_limit;
  throw OutOfMemoryError(what + std::to_string(elements * itemsize) + " bytes) does not fit on " +
                         device.name() + ": the largest allocation it can make is " +
                         std::to_string(limit) + " bytes" + (why.empty() ? "" : " (" + why + ")"));
}

std::atomic<uint64_t> next_buffer_serial{1};

}  // namespace

uint64_t Buffer::take_serial() {
  return next_buffer_serial.fetch_add(1, std::memory_order_relaxed);
}

uint64_t Buffer::next_serial() {
  return next_buffer_serial.load(std::memory_order_relaxed);
}

Buffer::Buffer(std::shared_ptr<DeviceContext> device, DType dtype, int64_t numel, bool cached)
    : device_(std::move(device)),
      dtype_(dtype),
      numel_(numel),
      nbytes_(checked_size(*device_, dtype, numel)),
      cached_(cached) {}

Buffer::Buffer(std::shared_ptr<DeviceContext> device, DType dtype, int64_t numel,
               DeviceMemory memory, std::function<void(DeviceMemory)> release)
    : device_(std::move(device)),
      dtype_(dtype),
      numel_(numel),
      nbytes_(checked_size(*device_, dtype, numel)),
      memory_(memory),
      release_(std::move(release)) {}

Buffer::~Buffer() {
  DeviceMemory memory = memory_.load(std::memory_order_acquire);
  if (!memory || owner_) return;  // an alias's memory goes with its owner
  if (release_) {
    // Kernels queued before may still read or write it. A device that fails here has lost the
    // memory anyway: a destructor has nothing to throw to.
    try {
      device_->device().synchronize();
    } catch (...) {
    }
    release_(memory);
    return;
  }
  if (cached_) {
    device_->allocator().free(memory, allocation_size(nbytes_));
  } else {
    device_->allocator().driver().free(memory, allocation_size(nbytes_));
  }
}

DeviceMemory Buffer::memory() {
  if (DeviceMemory memory = memory_.load(std::memory_order_acquire)) return memory;
  // Realizes in several threads may reach one buffer first at once: one allocates. An allocation
  // that throws (out of memory) leaves it null, and a later call tries again.
  std::lock_guard<std::mutex> lock(allocation_mutex_);
  if (DeviceMemory memory = memory_.load(std::memory_order_relaxed)) return memory;
  DeviceMemory memory = cached_ ? device_->allocator().alloc(allocation_size(nbytes_))
                                : device_->allocator().driver().alloc(allocation_size(nbytes_));
  memory_.store(memory, std::memory_order_release);
  return memory;
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

std::shared_ptr<Buffer> Buffer::alias_of(const std::shared_ptr<Buffer>& buffer) {
  const std::shared_ptr<Buffer>& owner = buffer->owner_ ? buffer->owner_ : buffer;
  auto alias = std::make_shared<Buffer>(owner->device_, owner->dtype_, owner->numel_,
                                        owner->memory(), nullptr);
  alias->owner_ = owner;
  return alias;
}

Buffer& buffer_of(const UOp& node) {
  auto* buffer = dynamic_cast<Buffer*>(node.storage().get());
  if (!buffer) throw InternalError("[buffer_of] a Buffer node without runtime storage");
  return *buffer;
}

}  // namespace kiln
