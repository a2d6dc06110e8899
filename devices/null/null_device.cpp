// The null device: every interface implemented, nothing done. See README.md.

#include <kiln/error.h>

#include <cstdlib>
#include <cstring>

#include "codegen/dialect.h"
#include "runtime/environment.h"
#include "runtime/plugin.h"

namespace kiln::null_device {
namespace {

[[noreturn]] void not_implemented(const char* what) {
  throw DeviceError(std::string("[null] ") + what +
                    " is not implemented: the null device is a template");
}

class NullAllocator : public Allocator {
 public:
  DeviceMemory alloc(size_t) override { not_implemented("Allocator::alloc"); }
  void free(DeviceMemory, size_t) override {}
  void copy_in(DeviceMemory, const void*, size_t) override {
    not_implemented("Allocator::copy_in");
  }
  void copy_out(void*, DeviceMemory, size_t) override { not_implemented("Allocator::copy_out"); }
};

class NullCompiler : public Compiler {
 public:
  std::string identity() const override { return "null compiler"; }
  // The "binary" is the source itself, so the caches above work unchanged.
  std::vector<uint8_t> compile(const std::string& source, const std::string&) override {
    return std::vector<uint8_t>(source.begin(), source.end());
  }
};

class NullProgram : public Program {
 public:
  double launch(const LaunchRequest&) override { not_implemented("Program::launch"); }
};

class NullDevice : public Device {
 public:
  NullDevice() {
    properties_.kind = DeviceKind::CPU;
    properties_.driver = "none";
    properties_.description = "template device that runs nothing";
    for (DType dtype : dtypes::all) properties_.dtypes.insert(dtype.type());
  }
  const std::string& name() const override { return name_; }
  const DeviceProperties& properties() const override { return properties_; }
  const Dialect& dialect() const override { return c_dialect(); }
  Allocator& allocator() override { return allocator_; }
  Compiler& compiler() override { return compiler_; }
  std::unique_ptr<Program> load_program(const std::vector<uint8_t>&, const std::string&) override {
    return std::make_unique<NullProgram>();
  }
  void synchronize() override {}

 private:
  std::string name_ = "NULL";
  DeviceProperties properties_;
  NullAllocator allocator_;
  NullCompiler compiler_;
};

ProbeResult probe() {
  ProbeResult result;
  // Junk is an Error, which the registry lists as this plugin's reason.
  if (!switch_from_environment("KILN_NULL_DEVICE", "not loaded", "loaded", /*unset=*/false)) {
    result.reason =
        "the null device is a template for new devices; set KILN_NULL_DEVICE=1 to load it";
    return result;
  }
  result.device_count = 1;
  result.reason = "template device: renders and compiles, runs nothing";
  return result;
}

std::unique_ptr<Device> create(int) {
  return std::make_unique<NullDevice>();
}

const PluginEntry kEntry = {
    kPluginAbiVersion, plugin_layout_fingerprint(), "NULL", &probe, &create, nullptr};

}  // namespace
}  // namespace kiln::null_device

extern "C" __attribute__((visibility("default"))) const kiln::PluginEntry* kiln_plugin_entry() {
  return &kiln::null_device::kEntry;
}
