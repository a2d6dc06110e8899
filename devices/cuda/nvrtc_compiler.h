#pragma once
// CUDA C++ compiled by NVRTC for one GPU architecture: a cubin where NVRTC knows the architecture,
// else PTX for the newest one it knows, which the driver finishes when it loads the module.

#include <memory>
#include <string>
#include <vector>

#include "runtime/device.h"

namespace kiln::cuda {

// The architectures NVRTC compiles for, as compute capabilities times ten (75, 80, ..., 120).
// Throws DeviceError when NVRTC is not on this machine.
std::vector<int> nvrtc_architectures();

// "sm_90" -> 90; throws DeviceError naming the architectures NVRTC knows when `text` is not one.
int parse_architecture(const std::string& text);

// A compiler for compute capability `architecture` (90 for sm_90). `driver_version` is the driver's
// (cuDriverGetVersion), part of the cache key where the binary is PTX that the driver compiles;
// 0 for a device that only compiles.
std::unique_ptr<Compiler> make_nvrtc_compiler(int architecture, int driver_version);

}  // namespace kiln::cuda
