#pragma once
// Reading and editing the SPIR-V modules glslang makes: the storage buffer bindings a module
// declares (its pipeline's layout), and the float controls execution modes GLSL cannot state.
// kiln's float semantics (NaN, infinities and -0 kept through every operation, subnormals where
// the device can) need SPIR-V 1.4's float controls; GLSL declares them only through
// GL_EXT_spirv_intrinsics, where glslang keeps one width per mode. So the compiler adds them to
// the module it made.

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::vulkan {

// The storage buffer bindings the module of kernel `kernel` declares (one past the largest
// binding number). Throws DeviceError naming the kernel when `spirv` is not a SPIR-V module.
uint32_t spirv_binding_count(const std::vector<uint8_t>& spirv, const std::string& kernel);

// The float controls a device supports (VkPhysicalDeviceFloatControlsProperties), per width.
struct FloatControls {
  bool preserve_inf_nan_32 = false, preserve_inf_nan_64 = false;
  bool preserve_denorm_32 = false, preserve_denorm_64 = false;
};

// The module with SignedZeroInfNanPreserve (and DenormPreserve) on its entry points for 32-bit
// floats, and for 64-bit ones where it uses them, as far as `supported` allows. Throws
// DeviceError naming the kernel when `spirv` is not a SPIR-V module.
std::vector<uint8_t> with_float_controls(const std::vector<uint8_t>& spirv,
                                         const FloatControls& supported, const std::string& kernel);

}  // namespace kiln::vulkan
