#include "devices/vulkan/vk_program.h"

#include <kiln/error.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstring>
#include <vector>

#include "codegen/dialect.h"
#include "devices/vulkan/spirv_module.h"
#include "devices/vulkan/vk_memory.h"

namespace kiln::vulkan {
namespace {

// The GLSL dialect's push constant block: two 32-bit zeros, then one int64 per kernel variable
// up to kGlslPushVariables. The layout declares the 128 bytes every Vulkan device has.
constexpr uint32_t kPushConstantBytes = 128;
constexpr uint32_t kPushHeaderBytes = 8;
static_assert(kPushHeaderBytes + 8 * kGlslPushVariables <= kPushConstantBytes);

}  // namespace

VkKernelProgram::VkKernelProgram(VkDevice device, CommandQueue& queue, VkPipelineCache cache,
                                 const std::vector<uint8_t>& spirv, std::string name,
                                 const DispatchLimits& limits, VkAllocator& allocator)
    : device_(device),
      queue_(queue),
      cache_(cache),
      name_(std::move(name)),
      limits_(limits),
      allocator_(allocator) {
  bindings_ = spirv_binding_count(spirv, name_);
  VkShaderModuleCreateInfo module_info{};
  module_info.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO;
  module_info.codeSize = spirv.size();
  module_info.pCode = reinterpret_cast<const uint32_t*>(spirv.data());
  VkShaderModule module = VK_NULL_HANDLE;
  KILN_VK_CHECK(vkCreateShaderModule(device_, &module_info, nullptr, &module));
  module_ = OwnedShaderModule(module, device_);

  std::vector<VkDescriptorSetLayoutBinding> bindings(bindings_);
  for (uint32_t binding = 0; binding < bindings_; ++binding) {
    bindings[binding].binding = binding;
    bindings[binding].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    bindings[binding].descriptorCount = 1;
    bindings[binding].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
  }
  VkDescriptorSetLayoutCreateInfo set_info{};
  set_info.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO;
  set_info.bindingCount = bindings_;
  set_info.pBindings = bindings.data();
  VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
  KILN_VK_CHECK(vkCreateDescriptorSetLayout(device_, &set_info, nullptr, &set_layout));
  set_layout_ = OwnedDescriptorSetLayout(set_layout, device_);

  // The GLSL dialect's push constants: zeros the shader compiler cannot fold, and variables.
  const VkPushConstantRange push_range{VK_SHADER_STAGE_COMPUTE_BIT, 0, kPushConstantBytes};
  VkPipelineLayoutCreateInfo layout_info{};
  layout_info.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO;
  layout_info.setLayoutCount = 1;
  layout_info.pSetLayouts = &set_layout;
  layout_info.pushConstantRangeCount = 1;
  layout_info.pPushConstantRanges = &push_range;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  KILN_VK_CHECK(vkCreatePipelineLayout(device_, &layout_info, nullptr, &layout));
  layout_ = OwnedPipelineLayout(layout, device_);
}

VkKernelProgram::~VkKernelProgram() {
  // The pipelines must outlive the launches queued with them; no one to report errors to here.
  try {
    queue_.wait(last_use_);
  } catch (const Error&) {
  }
}

VkPipeline VkKernelProgram::pipeline_for(const std::array<uint32_t, 3>& local) {
  auto found = pipelines_.find(local);
  if (found != pipelines_.end()) return found->second.get();
  const VkSpecializationMapEntry entries[3] = {{0, 0, 4}, {1, 4, 4}, {2, 8, 4}};
  VkSpecializationInfo specialization{};
  specialization.mapEntryCount = 3;
  specialization.pMapEntries = entries;
  specialization.dataSize = sizeof(local);
  specialization.pData = local.data();
  VkComputePipelineCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO;
  info.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  info.stage.module = module_.get();
  info.stage.pName = "main";
  info.stage.pSpecializationInfo = &specialization;
  info.layout = layout_.get();
  VkPipeline pipeline = VK_NULL_HANDLE;
  const VkResult result = vkCreateComputePipelines(device_, cache_, 1, &info, nullptr, &pipeline);
  if (result != VK_SUCCESS)
    throw DeviceError(vk_failure("vkCreateComputePipelines", result) + " for kernel " + name_);
  return pipelines_.emplace(local, OwnedPipeline(pipeline, device_)).first->second.get();
}

double VkKernelProgram::launch(const LaunchRequest& request) {
  const int64_t global[3] = {request.global.x, request.global.y, request.global.z};
  const int64_t local[3] = {request.local.x, request.local.y, request.local.z};
  if (global[0] * global[1] * global[2] == 0) return 0;
  // The variables past the push constants, in a buffer bound after the kernel's (see
  // kGlslPushVariables); it goes back to the allocator once this launch has run.
  std::vector<DeviceMemory> buffers = request.buffers;
  const std::vector<int64_t>& values = request.variables;
  const size_t pushed = std::min<size_t>(values.size(), kGlslPushVariables);
  OwnedDeviceMemory overflow;
  const size_t overflow_bytes = 8 * (values.size() - pushed);
  if (overflow_bytes > 0) {
    overflow = allocate_owned(allocator_, overflow_bytes);
    allocator_.copy_in(overflow.get(), values.data() + pushed, overflow_bytes);
    buffers.push_back(overflow.get());
  }
  // glslang may drop a buffer the shader never reads: bindings_ can be fewer than the buffers.
  if (buffers.size() < bindings_)
    throw InternalError("[vulkan launch] kernel " + name_ + " binds " + std::to_string(bindings_) +
                        " buffers; the launch passed " + std::to_string(buffers.size()));
  // The kernel's geometry is its own (its opts were checked against these limits): a launch
  // beyond them is a kiln bug, reported before the driver sees it.
  std::array<uint32_t, 3> local_size{};
  uint32_t groups[3];
  for (int dim = 0; dim < 3; ++dim) {
    // GLSL's work-item ids and subscripts are 32-bit: a kernel compiled for a variable bounded
    // past 2^31 computes its ids in 64 bits but holds them as ints.
    if (global[dim] > INT32_MAX)
      throw DeviceError("[vulkan launch] kernel " + name_ + " needs " +
                        std::to_string(global[dim]) + " work items along dimension " +
                        std::to_string(dim) + "; VULKAN indexes work items with 32-bit integers, " +
                        "at most 2147483647 (2^31 - 1): use smaller sizes or another device");
    const int64_t count = (global[dim] + local[dim] - 1) / local[dim];
    if (count > limits_.max_groups[dim] || local[dim] > limits_.max_local[dim])
      throw DeviceError("[vulkan launch] kernel " + name_ + " needs " + std::to_string(count) +
                        " workgroups of " + std::to_string(local[dim]) + " along dimension " +
                        std::to_string(dim) + "; the device allows " +
                        std::to_string(limits_.max_groups[dim]) + " workgroups of at most " +
                        std::to_string(limits_.max_local[dim]) +
                        " (maxComputeWorkGroupCount, maxComputeWorkGroupSize)");
    groups[dim] = static_cast<uint32_t>(count);
    local_size[static_cast<size_t>(dim)] = static_cast<uint32_t>(local[dim]);
  }
  if (local[0] * local[1] * local[2] > limits_.max_invocations)
    throw DeviceError("[vulkan launch] kernel " + name_ + " asks for workgroups of " +
                      std::to_string(local[0] * local[1] * local[2]) +
                      " invocations; the device allows " + std::to_string(limits_.max_invocations) +
                      " (maxComputeWorkGroupInvocations)");
  // Push constants: the zeros (all bits 0), then the first variables as int64s.
  std::vector<uint8_t> push(kPushHeaderBytes + 8 * pushed, 0);
  if (pushed > 0) std::memcpy(push.data() + kPushHeaderBytes, values.data(), 8 * pushed);

  std::lock_guard<std::mutex> lock(mutex_);
  const VkPipeline pipeline = pipeline_for(local_size);
  std::vector<VkDescriptorBufferInfo> buffer_infos(bindings_);
  // Each binding reaches from its block to the end of the allocation: a kernel that wrote past
  // its output would land in the next bytes, as on other devices (where kiln conformance's guard
  // bytes catch it), not be dropped by a driver that checks bounds (lavapipe does).
  for (uint32_t binding = 0; binding < bindings_; ++binding) {
    const VkBlock& block = block_of(buffers[binding]);
    // An application's buffer ends where kiln does not know: bound over its bytes.
    const VkDeviceSize range = block.foreign && block.size > 0 ? block.size : VK_WHOLE_SIZE;
    buffer_infos[binding] = {block.buffer, block.offset, range};
  }
  const uint64_t serial = queue_.record(
      [&](VkCommandBuffer commands, VkDescriptorPool pool) {
        VkDescriptorSetLayout set_layout = set_layout_.get();
        VkDescriptorSetAllocateInfo allocate{};
        allocate.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO;
        allocate.descriptorPool = pool;
        allocate.descriptorSetCount = 1;
        allocate.pSetLayouts = &set_layout;
        VkDescriptorSet set = VK_NULL_HANDLE;
        const VkResult allocated = vkAllocateDescriptorSets(device_, &allocate, &set);
        if (allocated != VK_SUCCESS)
          throw DeviceError(vk_failure("vkAllocateDescriptorSets", allocated) + " for kernel " +
                            name_ + " (" + std::to_string(bindings_) + " buffers)");
        std::vector<VkWriteDescriptorSet> writes(bindings_);
        for (uint32_t binding = 0; binding < bindings_; ++binding) {
          writes[binding].sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
          writes[binding].dstSet = set;
          writes[binding].dstBinding = binding;
          writes[binding].descriptorCount = 1;
          writes[binding].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
          writes[binding].pBufferInfo = &buffer_infos[binding];
        }
        if (bindings_ > 0) vkUpdateDescriptorSets(device_, bindings_, writes.data(), 0, nullptr);
        vkCmdBindPipeline(commands, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline);
        vkCmdBindDescriptorSets(commands, VK_PIPELINE_BIND_POINT_COMPUTE, layout_.get(), 0, 1, &set,
                                0, nullptr);
        vkCmdPushConstants(commands, layout_.get(), VK_SHADER_STAGE_COMPUTE_BIT, 0,
                           static_cast<uint32_t>(push.size()), push.data());
        vkCmdDispatch(commands, groups[0], groups[1], groups[2]);
      },
      request.wait);
  for (DeviceMemory memory : buffers) block_of(memory).allocation().used_by(serial);
  last_use_ = serial;
  // A timed launch waits here; the wait retires the submission, whose time it then reads.
  const double seconds = request.wait ? queue_.wait_timed(serial) : 0;
  overflow.reset();  // kept until the launch has run
  if (!ran_) {
    // The first run compiles (see CommandQueue::finish_all_at_exit): waited for once per kernel.
    if (!request.wait) queue_.wait(serial);
    ran_ = true;
    CommandQueue::finish_all_at_exit();
  }
  return seconds;
}

}  // namespace kiln::vulkan
