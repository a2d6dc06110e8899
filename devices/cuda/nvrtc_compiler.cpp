#include "devices/cuda/nvrtc_compiler.h"

#include <kiln/error.h>

#include <dlfcn.h>

#include <algorithm>
#include <filesystem>
#include <utility>
#include <vector>

#include "devices/cuda/cuda_api.h"

namespace kiln::cuda {
namespace {

OwnedNvrtcProgram create_program(const std::string& source, const std::string& file_name) {
  nvrtcProgram program = nullptr;
  KILN_NVRTC_CHECK(
      nvrtc().nvrtcCreateProgram(&program, source.c_str(), file_name.c_str(), 0, nullptr, nullptr));
  return OwnedNvrtcProgram(program);
}

// NVRTC's log of compiling `program`, for a CompileError; "(no log)" where it has none or cannot
// give it (the compile error is what matters then).
std::string program_log(nvrtcProgram program) {
  size_t size = 0;
  if (nvrtc().nvrtcGetProgramLogSize(program, &size) != NVRTC_SUCCESS || size == 0)
    return "(no log)";
  std::string text(size, '\0');
  if (nvrtc().nvrtcGetProgramLog(program, text.data()) != NVRTC_SUCCESS) return "(no log)";
  while (!text.empty() && (text.back() == '\0' || text.back() == '\n')) text.pop_back();
  return text;
}

const NvrtcApi& loaded_nvrtc() {
  const NvrtcApi& api = nvrtc();
  if (!api.error.empty()) throw DeviceError("[cuda] " + api.error);
  return api;
}

// A file resolved to its real path, with its size and modification time: a toolkit updated in
// place (13.0 Update 1 to Update 2 keeps NVRTC's version) gives another key.
std::string file_identity(const std::filesystem::path& file) {
  std::error_code error;
  const std::filesystem::path path = std::filesystem::canonical(file, error);
  if (error) return file.string();
  std::string identity = path.string();
  const auto size = std::filesystem::file_size(path, error);
  if (!error) identity += " " + std::to_string(size) + " bytes";
  const auto written = std::filesystem::last_write_time(path, error);
  if (!error) identity += " @" + std::to_string(written.time_since_epoch().count());
  return identity;
}

// The NVRTC library that was loaded (found through one of its functions, as the loader resolved
// the name), and the builtins library beside it that NVRTC loads when it compiles.
std::string library_identity(const NvrtcApi& api) {
  Dl_info info{};
  std::filesystem::path library = api.library;
  if (dladdr(reinterpret_cast<const void*>(api.nvrtcVersion), &info) != 0 && info.dli_fname)
    library = info.dli_fname;
  std::string identity = file_identity(library);
  std::error_code error;
  const std::filesystem::path folder = std::filesystem::canonical(library, error).parent_path();
  if (error) return identity;
  std::vector<std::string> builtins;
  for (const auto& entry : std::filesystem::directory_iterator(folder, error)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("libnvrtc-builtins.so", 0) == 0 && !entry.is_symlink(error))
      builtins.push_back(file_identity(entry.path()));
  }
  std::sort(builtins.begin(), builtins.end());
  for (const std::string& builtin : builtins) identity += "; " + builtin;
  return identity;
}

class NvrtcCompiler : public Compiler {
 public:
  NvrtcCompiler(int architecture, int driver_version) {
    const NvrtcApi& api = loaded_nvrtc();
    const std::vector<int> known = nvrtc_architectures();
    // An architecture NVRTC lacks (a GPU newer than it): PTX for the newest one it knows below
    // the GPU's, which the driver compiles for the GPU at load.
    ptx_ = std::find(known.begin(), known.end(), architecture) == known.end();
    int target = architecture;
    if (ptx_) {
      if (architecture < known.front()) {
        throw DeviceError("[cuda] the GPU's architecture sm_" + std::to_string(architecture) +
                          " is older than any NVRTC " + std::to_string(api.major) + "." +
                          std::to_string(api.minor) + " compiles for (sm_" +
                          std::to_string(known.front()) + " and newer)");
      }
      target = *std::prev(std::upper_bound(known.begin(), known.end(), architecture));
      // A cubin runs on any driver of NVRTC's major version; PTX needs the driver to know its
      // ISA version, which NVRTC's minor version sets.
      const int needed = api.major * 1000 + api.minor * 10;
      if (driver_version > 0 && driver_version < needed) {
        throw DeviceError(
            "[cuda] NVRTC " + std::to_string(api.major) + "." + std::to_string(api.minor) +
            " knows no architecture as new as the GPU's"
            " (sm_" +
            std::to_string(architecture) +
            "), so kiln would give the driver PTX, which needs a driver for CUDA " +
            std::to_string(api.major) + "." + std::to_string(api.minor) +
            " or newer; this one is for CUDA " + std::to_string(driver_version / 1000) + "." +
            std::to_string(driver_version % 1000 / 10) +
            ": install a newer driver, or name an older NVRTC in KILN_NVRTC");
      }
    }
    options_ = {
        (ptx_ ? "--gpu-architecture=compute_" : "--gpu-architecture=sm_") + std::to_string(target),
        // a * b + c rounds twice, as on the CPU (-ffp-contract=off) and OpenCL devices.
        "--fmad=false", "--std=c++17"};
    identity_ = "CUDA | NVRTC " + std::to_string(api.major) + "." + std::to_string(api.minor) +
                " (" + library_identity(api) + ") |";
    for (const std::string& option : options_) identity_ += " " + option;
    // PTX is compiled by the driver at load: its version changes the binary that runs.
    if (ptx_) identity_ += " | driver " + std::to_string(driver_version);
  }

  std::string identity() const override { return identity_; }

  std::vector<uint8_t> compile(const std::string& source, const std::string& kernel_name) override {
    const NvrtcApi& api = loaded_nvrtc();
    const OwnedNvrtcProgram program = create_program(source, kernel_name + ".cu");
    std::vector<const char*> options;
    for (const std::string& option : options_) options.push_back(option.c_str());
    // A failed compile is the kernel's error, with NVRTC's log and the source.
    const auto compiled = [&](nvrtcResult status, const char* call) {
      if (status != NVRTC_SUCCESS)
        throw CompileError("[cuda] compiling kernel " + kernel_name + ": " + call_name(call) +
                               " failed: " + api.nvrtcGetErrorString(status),
                           program_log(program.get()), source);
    };
    KILN_CU_CHECK_WITH(
        compiled,
        api.nvrtcCompileProgram(program.get(), static_cast<int>(options.size()), options.data()));
    size_t size = 0;
    std::vector<uint8_t> binary;
    if (ptx_) {
      KILN_NVRTC_CHECK(api.nvrtcGetPTXSize(program.get(), &size));
      binary.resize(size);  // with its terminating NUL, as cuModuleLoadData reads PTX
      KILN_NVRTC_CHECK(api.nvrtcGetPTX(program.get(), reinterpret_cast<char*>(binary.data())));
    } else {
      KILN_NVRTC_CHECK(api.nvrtcGetCUBINSize(program.get(), &size));
      binary.resize(size);
      KILN_NVRTC_CHECK(api.nvrtcGetCUBIN(program.get(), reinterpret_cast<char*>(binary.data())));
    }
    if (binary.empty())
      throw DeviceError("[cuda] NVRTC returned an empty binary for kernel " + kernel_name);
    return binary;
  }

 private:
  bool ptx_ = false;
  std::vector<std::string> options_;
  std::string identity_;
};

}  // namespace

std::vector<int> nvrtc_architectures() {
  const NvrtcApi& api = loaded_nvrtc();
  int count = 0;
  KILN_NVRTC_CHECK(api.nvrtcGetNumSupportedArchs(&count));
  std::vector<int> architectures(static_cast<size_t>(std::max(count, 0)));
  if (count > 0) KILN_NVRTC_CHECK(api.nvrtcGetSupportedArchs(architectures.data()));
  std::sort(architectures.begin(), architectures.end());
  if (architectures.empty()) throw DeviceError("[cuda] NVRTC reports no supported architecture");
  return architectures;
}

int parse_architecture(const std::string& text) {
  std::string digits = text;
  for (const char* prefix : {"sm_", "compute_", "SM_", "COMPUTE_"}) {
    if (digits.rfind(prefix, 0) == 0) digits = digits.substr(std::string(prefix).size());
  }
  const std::vector<int> known = nvrtc_architectures();
  std::string list;
  for (int architecture : known)
    list += (list.empty() ? "" : ", ") + ("sm_" + std::to_string(architecture));
  const bool numeric = !digits.empty() && digits.size() <= 4 &&
                       std::all_of(digits.begin(), digits.end(),
                                   [](unsigned char c) { return std::isdigit(c) != 0; });
  if (!numeric || std::find(known.begin(), known.end(), std::stoi(digits)) == known.end()) {
    throw DeviceError("[cuda] '" + text + "' is not a GPU architecture NVRTC " +
                      std::to_string(nvrtc().major) + "." + std::to_string(nvrtc().minor) +
                      " compiles for; it knows " + list);
  }
  return std::stoi(digits);
}

std::unique_ptr<Compiler> make_nvrtc_compiler(int architecture, int driver_version) {
  return std::make_unique<NvrtcCompiler>(architecture, driver_version);
}

}  // namespace kiln::cuda
