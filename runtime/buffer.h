#pragma once
// A Buffer: device memory behind a Buffer UOp. Memory is taken from the device's caching
// allocator on first use and given back when the last reference goes.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include <kiln/dtype.h>

#include "core/uop.h"
#include "runtime/device_context.h"

namespace kiln {

class Buffer : public Storage {
 public:
  // With `cached` false the memory comes from the driver itself rather than the caching
  // allocator: for buffers that live as long as a kernel (GRID's scratch), which must not keep a
  // block the cache would otherwise hand out again.
  Buffer(std::shared_ptr<DeviceContext> device, DType dtype, int64_t numel, bool cached = true);
  // Memory that is not the allocator's (Tensor::from_blob): `release` runs when the buffer goes,
  // once the device has finished every kernel it queued.
  Buffer(std::shared_ptr<DeviceContext> device, DType dtype, int64_t numel, DeviceMemory memory,
         std::function<void(DeviceMemory)> release);
  ~Buffer() override;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  const std::string& device() const override { return device_->name(); }
  size_t nbytes() const override { return nbytes_; }
  DType dtype() const { return dtype_; }
  int64_t numel() const { return numel_; }
  DeviceContext& context() { return *device_; }
  const std::shared_ptr<DeviceContext>& shared_context() const { return device_; }

  // The device memory, allocated on first use (once where realizes in several threads reach the
  // buffer at the same time).
  DeviceMemory memory();
  void copy_in(const void* host);  // nbytes() bytes
  void copy_out(void* host);       // nbytes() bytes

  // Another Buffer over the same device memory, kept alive by it: a new identity for a tensor
  // whose contents are written in place while graphs built before hold its old Buffer node
  // (runtime/tensor_assign.cpp). Aliases of an alias share the first buffer's memory directly,
  // so a tensor written many times holds no chain of them.
  static std::shared_ptr<Buffer> alias_of(const std::shared_ptr<Buffer>& buffer);
  // Whether memory was taken for it yet (a buffer made and not yet written has none).
  bool has_memory() const { return memory_.load(std::memory_order_acquire) != nullptr; }
  // The buffer whose memory this is: this one, or an alias' owner.
  const Buffer* memory_owner() const { return owner_ ? owner_.get() : this; }
  // Buffers numbered in the order they are made, from 1: a CapturedStep tells the memory its
  // call made from what existed before. next_serial() is the number the next one will have.
  uint64_t serial() const { return serial_; }
  static uint64_t next_serial();

 private:
  std::shared_ptr<DeviceContext> device_;
  DType dtype_;
  int64_t numel_;
  size_t nbytes_;
  std::mutex allocation_mutex_;  // taken only while memory_ is null
  std::atomic<DeviceMemory> memory_{nullptr};
  bool cached_ = true;
  std::function<void(DeviceMemory)> release_;  // set for memory that is not the allocator's
  std::shared_ptr<Buffer> owner_;              // an alias's: the buffer whose memory it is
  const uint64_t serial_ = take_serial();

  static uint64_t take_serial();
};

// The Buffer behind a Buffer UOp.
Buffer& buffer_of(const UOp& node);

}  // namespace kiln
