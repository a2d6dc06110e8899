#pragma once
// Edits to a SPIR-V module that GLSL cannot express. kiln's float semantics (NaN, infinities and
// -0 kept through every operation, subnormals where the device can) need SPIR-V 1.4's float
// controls execution modes; GLSL declares them only through GL_EXT_spirv_intrinsics, where
// glslang keeps one width per mode. So the compiler adds them to the module it made.

#include <cstdint>
#include <vector>

namespace kiln::vulkan {

// The float controls a device supports (VkPhysicalDeviceFloatControlsProperties), per width.
struct FloatControls {
  bool preserve_inf_nan_32 = false, preserve_inf_nan_64 = false;
  bool preserve_denorm_32 = false, preserve_denorm_64 = false;
};

// The module with SignedZeroInfNanPreserve (and DenormPreserve) on its entry points for 32-bit
// floats, and for 64-bit ones where it uses them, as far as `supported` allows. Throws
// DeviceError when `spirv` is not a SPIR-V module.
std::vector<uint8_t> with_float_controls(const std::vector<uint8_t>& spirv,
                                         const FloatControls& supported);

}  // namespace kiln::vulkan
