#pragma once
// Devices: which ones can run here, and the one a tensor goes to when none is named.
//
// Devices come from plugins that kiln loads on first use (README.md: "Devices"). A device is
// named "NAME" or "NAME:N" (the plugin's device N, counted from 0; "NAME:0" is "NAME"), in any
// case: "CPU", "CL", "CL:1", "CUDA", "VULKAN:1"; "NAME@TARGET" ("CUDA@sm_90") is a device that
// compiles for TARGET and runs nothing.
//
// The default device is chosen once per process, on the first call of default_device() (or of
// anything that uses it: a tensor or memory call given no device). KILN_DEVICE, when set and not
// empty, names it; a name that is unknown, malformed or unavailable here throws DeviceError
// saying why and listing the devices that are available. Unset, it is the first available GPU in
// the order devices() lists them, else "CPU". Every function is safe to call from any thread.

#include <string>
#include <vector>

namespace kiln {

// Names of the devices that can run here ("CPU", "CL", "CL:1", ...).
std::vector<std::string> devices();
// KILN_DEVICE when set (an unknown or unavailable name throws DeviceError), else the first GPU,
// else "CPU".
std::string default_device();
// Waits until every kernel kiln queued on `device` (empty: the default device) has finished. A
// realize returns once its kernels are queued; reading a value (to_vector, item) waits for them
// itself. Memory the application shares with kiln (Tensor::from_blob, native_memory) holds their
// results only once this returns, and may be changed by the application only then.
void synchronize(const std::string& device = "");

// The device API's own objects behind a device, for an application that works beside kiln with
// that API: allocations it makes there can become tensors without a copy (Tensor::from_native),
// and work it queues there can be ordered with kiln's. Each is as that API names it, null where
// the device has none:
//   CPU     nothing
//   CL      platform: cl_platform_id, device: cl_device_id, context: cl_context, queue: the
//           cl_command_queue (in order) kiln's kernels and copies go to
//   VULKAN  instance: VkInstance, physical_device: VkPhysicalDevice, device: VkDevice, queue:
//           VkQueue of family queue_family (kiln submits to it from its own threads: call
//           synchronize first, and submit nothing while kiln works)
//   CUDA    device: the CUdevice (an int, as an integer in the pointer), context: the device's
//           primary context (as the CUDA runtime's), queue: the CUstream kiln's work goes to
// They live as long as the process. Throws DeviceError for an unknown or unavailable device.
struct NativeDevice {
  void* platform = nullptr;
  void* instance = nullptr;
  void* physical_device = nullptr;
  void* device = nullptr;
  void* context = nullptr;
  void* queue = nullptr;
  unsigned queue_family = 0;
};
NativeDevice native_device(const std::string& device = "");

}  // namespace kiln
