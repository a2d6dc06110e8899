#pragma once
// Compiles OpenCL C with the driver's compiler (clBuildProgram) and loads the binaries back.

#include <CL/cl.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "devices/opencl/cl_check.h"
#include "runtime/device.h"

namespace kiln::opencl {

// `context` and `device` belong to the caller and must outlive the compiler. `identity` names
// the platform, device and driver (it keys the disk cache); `options` are clBuildProgram's.
std::unique_ptr<Compiler> make_cl_compiler(cl_context context, cl_device_id device,
                                           const std::string& identity, const std::string& options);

// A program built for `device` from the bytes `compile` returned. Throws DeviceError when the
// driver rejects the binary.
ClProgram load_binary(cl_context context, cl_device_id device, const std::vector<uint8_t>& binary,
                      const std::string& options, const std::string& kernel_name);

}  // namespace kiln::opencl
