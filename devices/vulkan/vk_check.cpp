#include "devices/vulkan/vk_check.h"

#include <kiln/error.h>

namespace kiln::vulkan {
namespace {

struct ResultName {
  VkResult result;
  const char* name;
};

#define KILN_VK_RESULT(name) \
  { name, #name }
constexpr ResultName kResultNames[] = {
    KILN_VK_RESULT(VK_SUCCESS),
    KILN_VK_RESULT(VK_NOT_READY),
    KILN_VK_RESULT(VK_TIMEOUT),
    KILN_VK_RESULT(VK_EVENT_SET),
    KILN_VK_RESULT(VK_EVENT_RESET),
    KILN_VK_RESULT(VK_INCOMPLETE),
    KILN_VK_RESULT(VK_ERROR_OUT_OF_HOST_MEMORY),
    KILN_VK_RESULT(VK_ERROR_OUT_OF_DEVICE_MEMORY),
    KILN_VK_RESULT(VK_ERROR_INITIALIZATION_FAILED),
    KILN_VK_RESULT(VK_ERROR_DEVICE_LOST),
    KILN_VK_RESULT(VK_ERROR_MEMORY_MAP_FAILED),
    KILN_VK_RESULT(VK_ERROR_LAYER_NOT_PRESENT),
    KILN_VK_RESULT(VK_ERROR_EXTENSION_NOT_PRESENT),
    KILN_VK_RESULT(VK_ERROR_FEATURE_NOT_PRESENT),
    KILN_VK_RESULT(VK_ERROR_INCOMPATIBLE_DRIVER),
    KILN_VK_RESULT(VK_ERROR_TOO_MANY_OBJECTS),
    KILN_VK_RESULT(VK_ERROR_FORMAT_NOT_SUPPORTED),
    KILN_VK_RESULT(VK_ERROR_FRAGMENTED_POOL),
    KILN_VK_RESULT(VK_ERROR_UNKNOWN),
    KILN_VK_RESULT(VK_ERROR_OUT_OF_POOL_MEMORY),
    KILN_VK_RESULT(VK_ERROR_INVALID_EXTERNAL_HANDLE),
    KILN_VK_RESULT(VK_ERROR_FRAGMENTATION),
    KILN_VK_RESULT(VK_ERROR_INVALID_OPAQUE_CAPTURE_ADDRESS),
    KILN_VK_RESULT(VK_PIPELINE_COMPILE_REQUIRED),
    KILN_VK_RESULT(VK_ERROR_VALIDATION_FAILED_EXT),
    KILN_VK_RESULT(VK_ERROR_INVALID_SHADER_NV),
};
#undef KILN_VK_RESULT

}  // namespace

const char* vk_result_name(VkResult result) {
  for (const ResultName& entry : kResultNames) {
    if (entry.result == result) return entry.name;
  }
  return "unknown VkResult";
}

std::string vk_failure(const char* call_text, VkResult result) {
  return std::string("[vulkan] ") + call_text + " failed: " + vk_result_name(result) + " (" +
         std::to_string(static_cast<int>(result)) + ")";
}

void check_vk(VkResult result, const char* call_text) {
  // Positive results (VK_INCOMPLETE, VK_TIMEOUT, ...) are statuses, not failures; callers that
  // care about one test for it themselves.
  if (result >= VK_SUCCESS) return;
  if (result == VK_ERROR_OUT_OF_DEVICE_MEMORY || result == VK_ERROR_OUT_OF_HOST_MEMORY)
    throw OutOfMemoryError(vk_failure(call_text, result));
  if (result == VK_ERROR_DEVICE_LOST)
    throw DeviceLostError(vk_failure(call_text, result) +
                          ": the device can run nothing more in this process");
  throw DeviceError(vk_failure(call_text, result));
}

}  // namespace kiln::vulkan
