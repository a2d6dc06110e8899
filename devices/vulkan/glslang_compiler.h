#pragma once
// Compiles GLSL compute shaders to SPIR-V with glslang, in process (linked into this plugin only).

#include <memory>
#include <string>

#include "devices/vulkan/spirv_module.h"
#include "runtime/device.h"

namespace kiln::vulkan {

// glslang's version, as "12.0.0".
std::string glslang_version();

// `device_identity` names what else decides the binary the driver makes of the SPIR-V (device,
// driver version, pipeline-cache UUID); it goes into the compiler's identity, the disk-cache key.
// The modules get the float controls `float_controls` allows (spirv_module.h). glslang checks
// workgroup sizes against `max_workgroup_size` (the device's maxComputeWorkGroupSize), not its own
// defaults (z at most 64).
std::unique_ptr<Compiler> make_glslang_compiler(const std::string& device_identity,
                                                const FloatControls& float_controls,
                                                const uint32_t max_workgroup_size[3]);

}  // namespace kiln::vulkan
