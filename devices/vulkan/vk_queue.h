#pragma once
// The device's one queue. Kernels and copies are recorded into a batch, one command buffer that
// is submitted as a whole: a vkQueueSubmit costs more than a small kernel (26 us each on lavapipe
// when every launch was its own). Each recorded command starts with a memory barrier on
// everything recorded before it, so commands run in the order they were issued and see each
// other's writes; a batch ends with a barrier that makes its writes visible to the host.
//
// A batch is submitted when it holds kBatchCommands commands, when anything waits for it, and at
// flush() (the end of every realize), so the device is never left idle with work recorded.
// Batches are numbered (serials, from 1), so that memory can be reused or freed once the last
// batch that touched it has finished.

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

  // What a recorder gets: the batch's command buffer, and a descriptor pool that is the batch's own
  // until it has finished (room for one set of `max_bindings` storage buffers per command).
  using Recorder = std::function<void(VkCommandBuffer, VkDescriptorPool)>;

  // Records one command (a dispatch or copies, with what they bind) into the open batch, opening
  // one if none is; returns the batch's serial. A `timed` command is a batch of its own, submitted
  // at once and bracketed by timestamps: wait_timed(serial) gives its time.
  uint64_t record(const Recorder& recorder, bool timed = false);
  // Submits the open batch, if any, without waiting for it.
  void flush();
  // Returns once batch `serial` (and every one before it) has finished, submitting it first if it
  // is still open; 0 returns at once.
  void wait(uint64_t serial);
  // wait(serial), then the seconds between the timestamps of a timed command.
  double wait_timed(uint64_t serial);
  void wait_idle();
  // Whether batch `serial` has finished, without waiting (an open batch has not).
  bool finished(uint64_t serial);
  // The queue submitted to (kiln::native_device).
  VkQueue handle() const { return queue_; }

  // Commands per batch at most: enough that the submission's cost is spread thin, few enough that
  // the device starts on a long sequence of kernels early.
  static constexpr uint32_t kBatchCommands = 32;

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
    uint64_t serial = 0;  // the batch using the slot; 0: free
    uint32_t commands_recorded = 0;
    bool timed = false;
    // A timed batch whose time is still to be read: it stays readable after the batch retires,
    // until the slot is used again.
    uint64_t timed_serial = 0;
    double host_seconds = 0;  // where the queue has no timestamps
  };
  static constexpr size_t kSlots = 8;

  // Holding mutex_: waits for the slot's batch, if any, and marks it done.
  void retire(Slot& slot);
  // Holding mutex_: the open batch, opening one (in the next slot, once that slot's batch has
  // finished) if none is.
  Slot& open_batch(bool timed);
  // Holding mutex_: ends and submits the open batch, if any. A failed submission loses the
  // queue (below).
  void submit_open();
  // Holding mutex_: throws DeviceLostError once a submission has failed.
  void check_usable() const;

  VkDevice device_;
  VkQueue queue_ = VK_NULL_HANDLE;
  OwnedCommandPool pool_;
  OwnedQueryPool timestamps_;  // two per slot
  float timestamp_period_;
  std::array<Slot, kSlots> slots_;
  uint64_t submitted_ = 0;  // the last serial handed out (the open batch's, while one is open)
  uint64_t completed_ = 0;  // every serial up to this one has finished
  Slot* open_ = nullptr;    // the batch being recorded, not yet submitted
  // Why the queue can run nothing more: a batch failed to submit, and the commands that callers
  // had already recorded into it never ran. Empty while the queue works.
  std::string lost_;
  std::mutex mutex_;
};

}  // namespace kiln::vulkan
