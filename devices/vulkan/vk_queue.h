#pragma once
// The device's one queue. Every submission is one command buffer that the caller records; it
// starts with a memory barrier on everything submitted before it (so kernels and copies run in
// the order they were issued and see each other's writes) and ends with one that makes its
// writes visible to the host. Submissions are numbered (serials, from 1), so that memory can be
// reused or freed once the last submission that touched it has finished.

#include <vulkan/vulkan.h>

#include <array>
#include <cstdint>
#include <functional>
#include <mutex>

#include "devices/vulkan/vk_check.h"

namespace kiln::vulkan {

class CommandQueue {
 public:
  // `max_bindings`: storage buffers one submission's descriptor set may hold. `timestamp_bits`
  // and `timestamp_period` (ns per tick) come from the queue family and the device; 0 bits:
  // timed submissions are timed on the host.
  CommandQueue(VkDevice device, uint32_t family, uint32_t max_bindings, uint32_t timestamp_bits,
               float timestamp_period);
  ~CommandQueue();  // waits for everything submitted
  CommandQueue(const CommandQueue&) = delete;
  CommandQueue& operator=(const CommandQueue&) = delete;

  // What `record` gets: the command buffer, and a descriptor pool that is its own until the
  // submission has finished (room for one set of `max_bindings` storage buffers).
  using Recorder = std::function<void(VkCommandBuffer, VkDescriptorPool)>;

  // Records and submits one command buffer; returns its serial. With `timed`, the recorded
  // commands are bracketed by timestamps: wait_timed(serial) gives their time.
  uint64_t submit(const Recorder& record, bool timed = false);
  // Returns once submission `serial` (and every one before it) has finished; 0 returns at once.
  void wait(uint64_t serial);
  // wait(serial), then the seconds between the timestamps of a timed submission.
  double wait_timed(uint64_t serial);
  void wait_idle();
  // Whether submission `serial` has finished, without waiting.
  bool finished(uint64_t serial);

  // Makes every live queue finish its work at exit, before the driver's own static objects go:
  // lavapipe compiles a shader when it first runs, in its own thread, and crashed when the process
  // exited with one still compiling (LLVM's objects destroyed under it). Called once a kernel has
  // run to the end (the compiler's static objects exist by then), so that the handler it
  // registers runs before their destructors.
  static void finish_all_at_exit();

 private:
  struct Slot {
    VkCommandBuffer commands = VK_NULL_HANDLE;
    OwnedFence fence;
    OwnedDescriptorPool descriptors;
    uint64_t serial = 0;  // the submission using the slot; 0: free
    bool timed = false;
    double host_seconds = 0;  // where the queue has no timestamps
  };
  static constexpr size_t kSlots = 8;

  // Waits for the slot's submission, if any, and marks it done. Holds mutex_.
  void retire(Slot& slot);
  Slot* slot_of(uint64_t serial);

  VkDevice device_;
  VkQueue queue_ = VK_NULL_HANDLE;
  OwnedCommandPool pool_;
  OwnedQueryPool timestamps_;  // two per slot
  float timestamp_period_;
  std::array<Slot, kSlots> slots_;
  uint64_t submitted_ = 0;  // the last serial handed out
  uint64_t completed_ = 0;  // every serial up to this one has finished
  std::mutex mutex_;
};

}  // namespace kiln::vulkan
