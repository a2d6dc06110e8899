#include "devices/cpu/shared_object.h"

#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <kiln/error.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <utility>

#include "devices/cpu/temporary_directory.h"

namespace kiln::cpu {
namespace {

// A file descriptor, closed when it goes.
class FileDescriptor {
 public:
  explicit FileDescriptor(int descriptor) : descriptor_(descriptor) {}
  ~FileDescriptor() {
    if (descriptor_ >= 0) ::close(descriptor_);
  }
  FileDescriptor(FileDescriptor&& other) noexcept
      : descriptor_(std::exchange(other.descriptor_, -1)) {}
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  FileDescriptor& operator=(FileDescriptor&&) = delete;
  int get() const { return descriptor_; }

 private:
  int descriptor_;
};

// `code`: errno, read right after the call that failed.
std::string system_error(int code, const std::string& what, const std::string& kernel_name) {
  return "[cpu] " + what + " for kernel " + kernel_name + " failed: " + std::strerror(code);
}

// A memfd holding `binary`: the object never touches a file system (which may be mounted noexec).
FileDescriptor memory_file(const std::vector<uint8_t>& binary, const std::string& kernel_name) {
  FileDescriptor file(memfd_create(kernel_name.c_str(), MFD_CLOEXEC));
  if (file.get() < 0) {
    const int code = errno;
    throw DeviceError(system_error(code, "memfd_create", kernel_name));
  }
  size_t written = 0;
  while (written < binary.size()) {
    const ssize_t count = ::write(file.get(), binary.data() + written, binary.size() - written);
    if (count < 0 && errno == EINTR) continue;
    if (count <= 0) {
      const int code = count < 0 ? errno : ENOSPC;
      throw DeviceError(system_error(code, "writing the kernel object", kernel_name));
    }
    written += static_cast<size_t>(count);
  }
  return file;
}

// Numbers the links below: a link name is never used twice in a process.
std::atomic<uint64_t> next_link_number{0};

}  // namespace

// dlopen knows a loaded object by the path it was opened with and hands back that object when
// asked for the same path again. Opening "/proc/self/fd/N" directly would tie the kernel to
// descriptor N for its whole life (N is reused once closed, and would then name the old kernel).
// Instead each object is opened through a symbolic link to the memfd whose name is unique in the
// process; dlopen maps the object, after which the link, its folder and the memfd's descriptor
// all go (the mapping keeps the memory alive until dlclose).
SharedObject::SharedObject(const std::vector<uint8_t>& binary, const std::string& kernel_name) {
  const FileDescriptor file = memory_file(binary, kernel_name);
  const TemporaryDirectory folder("so");
  const std::string link =
      folder.path() + "/" + std::to_string(next_link_number++) + "-" + kernel_name + ".so";
  const std::string target = "/proc/self/fd/" + std::to_string(file.get());
  if (::symlink(target.c_str(), link.c_str()) != 0) {
    const int code = errno;
    throw DeviceError(system_error(code, "symlink " + link + " -> " + target, kernel_name));
  }
  handle_ = dlopen(link.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle_) {
    throw DeviceError("[cpu] dlopen of kernel " + kernel_name + " failed: " + dlerror());
  }
}

SharedObject::~SharedObject() {
  if (handle_) dlclose(handle_);
}

void* SharedObject::symbol(const std::string& name) const {
  return dlsym(handle_, name.c_str());
}

}  // namespace kiln::cpu
