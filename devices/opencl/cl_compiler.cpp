#include "devices/opencl/cl_compiler.h"

#include <kiln/error.h>

namespace kiln::opencl {
namespace {

std::string build_log(cl_program program, cl_device_id device) {
  size_t size = 0;
  if (clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &size) !=
      CL_SUCCESS) {
    return "(no build log)";
  }
  std::string log(size, '\0');
  if (clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, size, log.data(), nullptr) !=
      CL_SUCCESS) {
    return "(no build log)";
  }
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  return log;
}

// The program's binary for its one device, as the driver reports it.
std::vector<uint8_t> program_binary(cl_program program) {
  size_t size = 0;
  KILN_CL_CHECK(clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, sizeof(size), &size, nullptr));
  if (size == 0)
    throw DeviceError("[cl] clGetProgramInfo(CL_PROGRAM_BINARY_SIZES) reported an empty binary");
  std::vector<uint8_t> binary(size);
  unsigned char* destination = binary.data();
  KILN_CL_CHECK(
      clGetProgramInfo(program, CL_PROGRAM_BINARIES, sizeof(destination), &destination, nullptr));
  return binary;
}

class ClCompiler : public Compiler {
 public:
  ClCompiler(cl_context context, cl_device_id device, std::string identity, std::string options)
      : context_(context),
        device_(device),
        identity_(std::move(identity)),
        options_(std::move(options)) {}

  std::string identity() const override { return identity_; }

  std::vector<uint8_t> compile(const std::string& source, const std::string& kernel_name) override {
    const char* text = source.c_str();
    const size_t length = source.size();
    ClProgram program(KILN_CL_CREATE(clCreateProgramWithSource, context_, 1, &text, &length));
    const cl_int status =
        clBuildProgram(program.get(), 1, &device_, options_.c_str(), nullptr, nullptr);
    if (status != CL_SUCCESS) {
      throw CompileError("[cl] compiling kernel " + kernel_name + ": " +
                             cl_failure("clBuildProgram(program, 1, &device, options)", status),
                         build_log(program.get(), device_), source);
    }
    return program_binary(program.get());
  }

 private:
  cl_context context_;
  cl_device_id device_;
  std::string identity_;
  std::string options_;
};

}  // namespace

std::unique_ptr<Compiler> make_cl_compiler(cl_context context, cl_device_id device,
                                           const std::string& identity,
                                           const std::string& options) {
  return std::make_unique<ClCompiler>(context, device, identity, options);
}

ClProgram load_binary(cl_context context, cl_device_id device, const std::vector<uint8_t>& binary,
                      const std::string& options, const std::string& kernel_name) {
  const unsigned char* bytes = binary.data();
  const size_t size = binary.size();
  cl_int binary_status = CL_SUCCESS;
  ClProgram program(KILN_CL_CREATE(clCreateProgramWithBinary, context, 1, &device, &size, &bytes,
                                   &binary_status));
  check_cl(binary_status, "clCreateProgramWithBinary(binary_status)");
  // Building a program from a binary finishes it for the device (no source compile).
  const cl_int status =
      clBuildProgram(program.get(), 1, &device, options.c_str(), nullptr, nullptr);
  if (status != CL_SUCCESS) {
    throw DeviceError(cl_failure("clBuildProgram(program from binary)", status) + " for kernel " +
                      kernel_name + ": " + build_log(program.get(), device));
  }
  return program;
}

}  // namespace kiln::opencl
