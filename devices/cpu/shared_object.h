#pragma once
// A kernel's shared object, loaded from memory with dlopen and unloaded when the object goes.
// Once loaded it holds no file descriptor, so a process can load as many kernels as it likes
// whatever its descriptor limit (ulimit -n).

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::cpu {

class SharedObject {
 public:
  // Throws DeviceError naming the kernel when the object cannot be written or loaded.
  SharedObject(const std::vector<uint8_t>& binary, const std::string& kernel_name);
  ~SharedObject();
  SharedObject(const SharedObject&) = delete;
  SharedObject& operator=(const SharedObject&) = delete;

  // The address of `name` in the object, or nullptr.
  void* symbol(const std::string& name) const;

 private:
  void* handle_ = nullptr;
};

}  // namespace kiln::cpu
