#include "runtime/launch_recorder.h"

#include <algorithm>
#include <atomic>
#include <mutex>

namespace kiln {
namespace {

thread_local LaunchRecorder* current = nullptr;

// Guards active_recorders() and every recorder's contents. Recursive: a recording realize holds
// it while it asks for its recorder again.
std::unique_lock<std::recursive_mutex> lock_recorders() {
  static std::recursive_mutex mutex;
  return std::unique_lock<std::recursive_mutex>(mutex);
}

// Every recorder in use, in any thread. Changed and read under lock_recorders(), so a realize
// never meets a recorder whose capture has ended; the count lets realizes skip the graph walk
// while nothing captures.
std::vector<LaunchRecorder*>& active_recorders() {
  static std::vector<LaunchRecorder*> recorders;
  return recorders;
}
std::atomic<int> recorders_in_use{0};

}  // namespace

void LaunchRecorder::record(RecordedLaunch launch) {
  // A tensor written in place (a weight an optimizer step updates) stays the application's: a
  // realize in another thread that reads it is not the step's.
  if (!launch.in_place) step_buffers.insert(launch.buffers[launch.program ? 0 : 1].get());
  launches.push_back(std::move(launch));
}

RecorderHold recorder_for(const std::vector<UOpRef>& roots) {
  RecorderHold hold;
  // This thread's recorder lives until its scope ends, which is after this realize.
  if (current) {
    hold.lock = lock_recorders();
    hold.recorder = current;
    return hold;
  }
  if (recorders_in_use.load(std::memory_order_acquire) == 0) return hold;
  std::unique_lock<std::recursive_mutex> lock = lock_recorders();
  for (const UOpRef& node : toposort(roots)) {
    if (node->op() != Op::Buffer) continue;
    const Buffer* buffer = static_cast<const Buffer*>(node->storage().get());
    for (LaunchRecorder* recorder : active_recorders()) {
      if (!recorder->step_buffers.count(buffer)) continue;
      hold.recorder = recorder;
      hold.lock = std::move(lock);
      return hold;
    }
  }
  return hold;
}

RecordingScope::RecordingScope(LaunchRecorder& recorder)
    : recorder_(&recorder), previous_(current) {
  const std::unique_lock<std::recursive_mutex> one_at_a_time = lock_recorders();
  active_recorders().push_back(recorder_);
  recorders_in_use.fetch_add(1, std::memory_order_release);
  current = recorder_;
}

RecordingScope::~RecordingScope() {
  const std::unique_lock<std::recursive_mutex> one_at_a_time = lock_recorders();
  std::vector<LaunchRecorder*>& recorders = active_recorders();
  recorders.erase(std::find(recorders.begin(), recorders.end(), recorder_));
  recorders_in_use.fetch_sub(1, std::memory_order_release);
  current = previous_;
}

}  // namespace kiln
