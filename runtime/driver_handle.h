#pragma once
// One move-only owner for every native handle a device plugin holds: an OpenCL object, a Vulkan
// object made from a VkDevice, a CUDA module, event, graph or pinned buffer, a block of device
// memory. The handle is released by `Deleter` when its owner goes, on every path out of a scope,
// so no catch block releases handles by hand.
//
//   using ClKernel = UniqueHandle<cl_kernel, CallRelease<clReleaseKernel>>;
//   ClKernel kernel(created);               // released when `kernel` goes
//
// `Deleter` is called as deleter(handle) on a handle that is not the null one (Handle{}): nullptr
// for pointer handles, 0 for integer ones such as CUdeviceptr. It may hold state (the VkDevice a
// Vulkan object was made from, the allocator a block came from), moved along with the handle. A
// deleter must not throw: it runs from destructors; one whose release can fail logs the failure.
//
// This header includes no vendor header: each device names its handles and deleters in its own
// (devices/opencl/cl_check.h, devices/vulkan/vk_check.h, devices/cuda/cuda_api.h).

#include <utility>

namespace kiln {

template <typename Handle, typename Deleter>
class UniqueHandle {
 public:
  UniqueHandle() = default;
  explicit UniqueHandle(Handle handle, Deleter deleter = Deleter())
      : handle_(handle), deleter_(std::move(deleter)) {}
  ~UniqueHandle() { reset(); }
  UniqueHandle(UniqueHandle&& other) noexcept
      : handle_(other.release()), deleter_(std::move(other.deleter_)) {}
  UniqueHandle& operator=(UniqueHandle&& other) noexcept {
    if (this != &other) {
      reset();
      handle_ = other.release();
      deleter_ = std::move(other.deleter_);
    }
    return *this;
  }
  UniqueHandle(const UniqueHandle&) = delete;
  UniqueHandle& operator=(const UniqueHandle&) = delete;

  Handle get() const { return handle_; }
  explicit operator bool() const { return handle_ != Handle{}; }
  const Deleter& deleter() const { return deleter_; }

  // Releases the handle held (if any) and holds `handle` instead.
  void reset(Handle handle = Handle{}) {
    const Handle old = std::exchange(handle_, handle);
    if (old != Handle{}) deleter_(old);
  }
  // Gives the handle up without releasing it: the caller owns it from here.
  [[nodiscard]] Handle release() { return std::exchange(handle_, Handle{}); }

 private:
  Handle handle_{};
  Deleter deleter_{};
};

// The deleter for handles released by one function of the handle alone (clReleaseKernel). Its
// status is dropped: such a release fails only on an invalid handle, which would be kiln's bug,
// and a destructor has no one to report it to.
template <auto Release>
struct CallRelease {
  template <typename Handle>
  void operator()(Handle handle) const {
    static_cast<void>(Release(handle));
  }
};

}  // namespace kiln
