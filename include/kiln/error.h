#pragma once
// Errors raised by kiln. Every message names the operation, the operands' shapes and dtypes, and
// what would have been valid. An error raised by a Tensor operation leaves its operands unchanged.

#include <optional>
#include <stdexcept>
#include <string>

#include <kiln/dtype.h>

namespace kiln {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// A shape, axis or size that the operation cannot take.
class ShapeError : public Error {
 public:
  using Error::Error;
};

// An argument whose value the operation does not take (scatter_reduce's "median").
class ValueError : public Error {
 public:
  using Error::Error;
};

// An index outside the axis it indexes (gather, index_select, embedding, take_along_axis,
// scatter, scatter_reduce, index_put): raised
// at the latest when a value computed from it is read, never an out-of-bounds access or write.
class IndexError : public Error {
 public:
  using Error::Error;
};

// A dtype that the operation (or the device) does not support. dtype() is the dtype at fault,
// where the error is about one dtype.
class DTypeError : public Error {
 public:
  explicit DTypeError(const std::string& message) : Error(message) {}
  DTypeError(const std::string& message, std::optional<DType> dtype)
      : Error(message), dtype_(dtype) {}
  const std::optional<DType>& dtype() const { return dtype_; }

 private:
  std::optional<DType> dtype_;
};

// The device, or the language its kernels are written in, cannot compute dtype() (at all, or in
// one operation): the program is valid, and runs on a device that can.
class UnsupportedDTypeError : public DTypeError {
 public:
  UnsupportedDTypeError(const std::string& message, DType dtype) : DTypeError(message, dtype) {}
};

// An unknown or unavailable device, a driver call that failed, or operands on two devices.
class DeviceError : public Error {
 public:
  using Error::Error;
};

// A value read from a compile-only device ("CUDA@sm_90"): it compiles kernels and runs none, so
// it has no values.
class CompileOnlyError : public DeviceError {
 public:
  using DeviceError::DeviceError;
};

// A kernel that failed to compile. what() includes the compiler's log; source() is the kernel.
class CompileError : public Error {
 public:
  CompileError(const std::string& message, std::string log, std::string source)
      : Error(message + "\n--- compiler log ---\n" + log + "\n--- source ---\n" + source),
        log_(std::move(log)),
        source_(std::move(source)) {}
  const std::string& log() const { return log_; }
  const std::string& source() const { return source_; }

 private:
  std::string log_;
  std::string source_;
};

// An optimisation (an entry of a kernel's opts list) that does not fit the kernel or the device:
// the message names the opt, the kernel and the limit it breaks. Such a list is refused whole; no
// kernel is built from it.
class OptError : public Error {
 public:
  using Error::Error;
};

// A broken internal invariant: a bug in kiln, not in the caller's program. Please report it with
// the message (KILN_DEBUG=5 shows the kernel it was building).
class InternalError : public Error {
 public:
  explicit InternalError(const std::string& message)
      : Error("internal error (a kiln bug, please report it): " + message) {}
};

// The device ran out of memory even after its allocator released every cached block.
class OutOfMemoryError : public DeviceError {
 public:
  using DeviceError::DeviceError;
};

// The device can run nothing more in this process: a kernel faulted and left the driver's
// context unusable (CUDA), or the driver lost the device (Vulkan). Restart the process;
// KILN_DEBUG=2 waits for each kernel, so the error then names the one that failed.
class DeviceLostError : public DeviceError {
 public:
  using DeviceError::DeviceError;
};

}  // namespace kiln
