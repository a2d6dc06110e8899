#include "devices/vulkan/vk_queue.h"

#include <kiln/error.h>

#include <chrono>
#include <cstdlib>
#include <set>
#include <thread>

namespace kiln::vulkan {
namespace {

// Kernels and copies: everything a submission does, as seen by the next one.
constexpr VkPipelineStageFlags kWorkStages =
    VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
constexpr VkAccessFlags kWorkWrites = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
constexpr VkAccessFlags kWorkAccess = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                                      VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;

void memory_barrier(VkCommandBuffer commands, VkPipelineStageFlags source_stages,
                    VkAccessFlags source_access, VkPipelineStageFlags destination_stages,
                    VkAccessFlags destination_access) {
  VkMemoryBarrier barrier{};
  barrier.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
  barrier.srcAccessMask = source_access;
  barrier.dstAccessMask = destination_access;
  vkCmdPipelineBarrier(commands, source_stages, destination_stages, 0, 1, &barrier, 0, nullptr, 0,
                       nullptr);
}

// Waits for `fence`, polling it for a short while first: a blocking wait sleeps in the kernel
// and its wake-up comes late (on an H100 a small Vulkan realize took 74.7 us against CUDA's 24.6).
// A longer wait blocks, and leaves the cores to the work.
void wait_for_fence(VkDevice device, VkFence fence) {
  constexpr auto kPolling = std::chrono::microseconds(100);
  const auto until = std::chrono::steady_clock::now() + kPolling;
  do {
    const VkResult status = vkGetFenceStatus(device, fence);
    if (status != VK_NOT_READY) {
      check_vk(status, "vkGetFenceStatus");  // VK_ERROR_DEVICE_LOST
      return;
    }
    std::this_thread::yield();
  } while (std::chrono::steady_clock::now() < until);
  KILN_VK_CHECK(vkWaitForFences(device, 1, &fence, VK_TRUE, UINT64_MAX));
}

}  // namespace

namespace {

// Never destroyed: devices are destroyed at exit after this plugin's static objects (the
// registry that owns them was made first), and their queues still leave this set then.
std::mutex& live_queues_mutex() {
  static std::mutex* const mutex = new std::mutex;
  return *mutex;
}

std::set<CommandQueue*>& live_queues() {
  static std::set<CommandQueue*>* const queues = new std::set<CommandQueue*>;
  return *queues;
}

void finish_live_queues() {
  std::lock_guard<std::mutex> lock(live_queues_mutex());
  for (CommandQueue* queue : live_queues()) {
    try {
      queue->wait_idle();
    } catch (const Error&) {  // no one to report to at exit
    }
  }
}

}  // namespace

void CommandQueue::finish_all_at_exit() {
  static std::once_flag once;
  std::call_once(once, [] { std::atexit(finish_live_queues); });
}

CommandQueue::CommandQueue(VkDevice device, uint32_t family, uint32_t max_bindings,
                           uint32_t timestamp_bits, float timestamp_period)
    : device_(device), timestamp_period_(timestamp_period) {
  vkGetDeviceQueue(device_, family, 0, &queue_);
  VkCommandPoolCreateInfo pool_info{};
  pool_info.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO;
  pool_info.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pool_info.queueFamilyIndex = family;
  VkCommandPool pool = VK_NULL_HANDLE;
  KILN_VK_CHECK(vkCreateCommandPool(device_, &pool_info, nullptr, &pool));
  pool_ = OwnedCommandPool(pool, device_);

  if (timestamp_bits > 0) {
    VkQueryPoolCreateInfo query_info{};
    query_info.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO;
    query_info.queryType = VK_QUERY_TYPE_TIMESTAMP;
    query_info.queryCount = 2 * kSlots;
    VkQueryPool queries = VK_NULL_HANDLE;
    KILN_VK_CHECK(vkCreateQueryPool(device_, &query_info, nullptr, &queries));
    timestamps_ = OwnedQueryPool(queries, device_);
  }

  for (Slot& slot : slots_) {
    VkCommandBufferAllocateInfo allocate{};
    allocate.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
    allocate.commandPool = pool_.get();
    allocate.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    allocate.commandBufferCount = 1;
    KILN_VK_CHECK(vkAllocateCommandBuffers(device_, &allocate, &slot.commands));

    VkFenceCreateInfo fence_info{};
    fence_info.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO;
    VkFence fence = VK_NULL_HANDLE;
    KILN_VK_CHECK(vkCreateFence(device_, &fence_info, nullptr, &fence));
    slot.fence = OwnedFence(fence, device_);

    VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, max_bindings * kBatchCommands};
    VkDescriptorPoolCreateInfo descriptor_info{};
    descriptor_info.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO;
    descriptor_info.maxSets = kBatchCommands;
    descriptor_info.poolSizeCount = 1;
    descriptor_info.pPoolSizes = &size;
    VkDescriptorPool descriptors = VK_NULL_HANDLE;
    KILN_VK_CHECK(vkCreateDescriptorPool(device_, &descriptor_info, nullptr, &descriptors));
    slot.descriptors = OwnedDescriptorPool(descriptors, device_);
  }
  std::lock_guard<std::mutex> lock(live_queues_mutex());
  live_queues().insert(this);
}

CommandQueue::~CommandQueue() {
  {
    std::lock_guard<std::mutex> lock(live_queues_mutex());
    live_queues().erase(this);
  }
  // Nothing may be destroyed while the queue still runs it, and recorded work still runs;
  // errors have no one to go to here.
  try {
    std::lock_guard<std::mutex> lock(mutex_);
    submit_open();
  } catch (const Error&) {
  }
  if (queue_ != VK_NULL_HANDLE) vkQueueWaitIdle(queue_);
}

void CommandQueue::retire(Slot& slot) {
  if (slot.serial == 0) return;
  wait_for_fence(device_, slot.fence.get());
  if (slot.serial > completed_) {
    // Submissions finish in order (each waits for the one before at its first barrier).
    completed_ = slot.serial;
  }
  slot.serial = 0;
}

CommandQueue::Slot& CommandQueue::open_batch(bool timed) {
  if (open_) return *open_;
  const uint64_t serial = submitted_ + 1;
  const size_t index = static_cast<size_t>(serial % kSlots);
  Slot& slot = slots_[index];
  retire(slot);
  const VkFence fence = slot.fence.get();
  KILN_VK_CHECK(vkResetFences(device_, 1, &fence));
  KILN_VK_CHECK(vkResetCommandBuffer(slot.commands, 0));
  KILN_VK_CHECK(vkResetDescriptorPool(device_, slot.descriptors.get(), 0));
  VkCommandBufferBeginInfo begin{};
  begin.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
  begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  KILN_VK_CHECK(vkBeginCommandBuffer(slot.commands, &begin));
  submitted_ = serial;
  slot.serial = serial;
  slot.commands_recorded = 0;
  slot.timed = timed;
  slot.timed_serial = timed ? serial : 0;
  open_ = &slot;
  if (timed && timestamps_) {
    const uint32_t first_query = static_cast<uint32_t>(2 * index);
    vkCmdResetQueryPool(slot.commands, timestamps_.get(), first_query, 2);
    vkCmdWriteTimestamp(slot.commands, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, timestamps_.get(),
                        first_query);
  }
  return slot;
}

void CommandQueue::submit_open() {
  if (!open_) return;
  Slot& slot = *open_;
  open_ = nullptr;
  const bool device_timed = slot.timed && timestamps_;
  if (device_timed) {
    const uint32_t first_query = static_cast<uint32_t>(2 * (&slot - slots_.data()));
    vkCmdWriteTimestamp(slot.commands, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, timestamps_.get(),
                        first_query + 1);
  }
  memory_barrier(slot.commands, kWorkStages, kWorkWrites, VK_PIPELINE_STAGE_HOST_BIT,
                 VK_ACCESS_HOST_READ_BIT);
  VkSubmitInfo submit_info{};
  submit_info.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
  submit_info.commandBufferCount = 1;
  submit_info.pCommandBuffers = &slot.commands;
  const VkFence fence = slot.fence.get();
  const auto started = std::chrono::steady_clock::now();
  try {
    KILN_VK_CHECK(vkEndCommandBuffer(slot.commands));
    KILN_VK_CHECK(vkQueueSubmit(queue_, 1, &submit_info, fence));
  } catch (const Error& error) {
    // Never submitted, so its fence never signals: nothing may wait for the slot. The batch's
    // commands were recorded by callers that have returned; whoever waits for them learns that
    // they never ran.
    slot.serial = 0;
    lost_ = error.what();
    throw DeviceLostError(std::string(error.what()) +
                          ": the commands recorded into the batch did not run; the Vulkan "
                          "device can run nothing more in this process");
  }
  if (slot.timed && !device_timed) {
    // No timestamps on this queue: the host's clock around the whole submission.
    wait_for_fence(device_, fence);
    slot.host_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  }
}

void CommandQueue::check_usable() const {
  if (!lost_.empty())
    throw DeviceLostError(lost_ +
                          " (an earlier batch failed to submit; the Vulkan device can "
                          "run nothing more in this process)");
}

uint64_t CommandQueue::record(const Recorder& recorder, bool timed) {
  std::lock_guard<std::mutex> lock(mutex_);
  check_usable();
  // A timed command is timed alone: it neither joins the open batch nor lets another join it.
  if (timed) submit_open();
  Slot& slot = open_batch(timed);
  // Everything recorded or submitted before, kernels and copies alike, happens before this.
  memory_barrier(slot.commands, kWorkStages, kWorkWrites, kWorkStages, kWorkAccess);
  try {
    recorder(slot.commands, slot.descriptors.get());
  } catch (...) {
    // Nothing of the command was recorded but what the recorder had done when it threw (a
    // descriptor set at most); the batch goes on untimed, open to the next command.
    slot.timed = false;
    slot.timed_serial = 0;
    throw;
  }
  ++slot.commands_recorded;
  const uint64_t serial = slot.serial;
  if (timed || slot.commands_recorded == kBatchCommands) submit_open();
  return serial;
}

void CommandQueue::flush() {
  std::lock_guard<std::mutex> lock(mutex_);
  check_usable();
  submit_open();
}

void CommandQueue::wait(uint64_t serial) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (serial <= completed_) return;
  check_usable();
  if (open_ && open_->serial <= serial) submit_open();
  for (Slot& slot : slots_) {
    if (slot.serial != 0 && slot.serial <= serial) retire(slot);
  }
}

double CommandQueue::wait_timed(uint64_t serial) {
  std::lock_guard<std::mutex> lock(mutex_);
  check_usable();
  Slot* slot = nullptr;
  for (Slot& candidate : slots_) {
    if (serial != 0 && candidate.timed_serial == serial) slot = &candidate;
  }
  if (!slot)
    throw InternalError("[vulkan] wait_timed: submission " + std::to_string(serial) +
                        " was not timed or its slot was used again");
  const size_t index = static_cast<size_t>(slot - slots_.data());
  for (Slot& other : slots_) {
    if (other.serial != 0 && other.serial <= serial) retire(other);
  }
  slot->timed_serial = 0;
  if (!timestamps_) return slot->host_seconds;
  uint64_t ticks[2] = {0, 0};
  KILN_VK_CHECK(vkGetQueryPoolResults(device_, timestamps_.get(), static_cast<uint32_t>(2 * index),
                                      2, sizeof(ticks), ticks, sizeof(uint64_t),
                                      VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT));
  return static_cast<double>(ticks[1] - ticks[0]) * timestamp_period_ * 1e-9;
}

void CommandQueue::wait_idle() {
  std::lock_guard<std::mutex> lock(mutex_);
  check_usable();
  submit_open();
  for (Slot& slot : slots_) retire(slot);
}

bool CommandQueue::finished(uint64_t serial) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (serial <= completed_) return true;
  check_usable();
  for (Slot& slot : slots_) {
    if (slot.serial == 0 || slot.serial > serial) continue;
    if (&slot == open_) return false;
    const VkResult status = vkGetFenceStatus(device_, slot.fence.get());
    if (status == VK_NOT_READY) return false;
    KILN_VK_CHECK(status);  // VK_ERROR_DEVICE_LOST
    retire(slot);
  }
  return serial <= completed_;
}

}  // namespace kiln::vulkan
