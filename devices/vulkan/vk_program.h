#pragma once
// A compiled kernel on the Vulkan device: its SPIR-V module, and one compute pipeline per
// workgroup size it is launched with (the size is a specialization constant, ids 0, 1 and 2).

#include <vulkan/vulkan.h>

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "devices/vulkan/vk_check.h"
#include "devices/vulkan/vk_queue.h"
#include "runtime/device.h"

namespace kiln::vulkan {

class VkAllocator;

struct DispatchLimits {
  uint32_t max_groups[3];    // maxComputeWorkGroupCount
  uint32_t max_local[3];     // maxComputeWorkGroupSize
  uint32_t max_invocations;  // maxComputeWorkGroupInvocations
};

class VkKernelProgram : public Program {
 public:
  VkKernelProgram(VkDevice device, CommandQueue& queue, VkPipelineCache cache,
                  const std::vector<uint8_t>& spirv, std::string name, const DispatchLimits& limits,
                  VkAllocator& allocator);
  ~VkKernelProgram() override;
  VkKernelProgram(const VkKernelProgram&) = delete;
  VkKernelProgram& operator=(const VkKernelProgram&) = delete;

  double launch(const LaunchRequest& request) override;

 private:
  VkPipeline pipeline_for(const std::array<uint32_t, 3>& local);

  VkDevice device_;
  CommandQueue& queue_;
  VkPipelineCache cache_;
  std::string name_;
  DispatchLimits limits_;
  VkAllocator& allocator_;  // for the variables past the push constants
  uint32_t bindings_ = 0;
  uint64_t last_use_ = 0;  // the last submission that ran this kernel
  bool ran_ = false;       // launched and waited for once
  OwnedShaderModule module_;
  OwnedDescriptorSetLayout set_layout_;
  OwnedPipelineLayout layout_;
  std::map<std::array<uint32_t, 3>, OwnedPipeline> pipelines_;
  std::mutex mutex_;
};

}  // namespace kiln::vulkan
