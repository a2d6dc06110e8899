#pragma once
// What a capture (include/kiln/capture.h) records of the realizes a step makes: each kernel
// launch and each copy between devices, in order, with the buffers they used.

#include <memory>
#include <vector>

#include "runtime/buffer.h"
#include "runtime/device.h"

namespace kiln {

struct RecordedLaunch {
  Program* program = nullptr;  // null for a copy between devices
  LaunchRequest request;       // as launched (its buffers are replaced on replay)
  // A kernel's buffers in the request's order (its output first); a copy's source, then its
  // destination.
  std::vector<std::shared_ptr<Buffer>> buffers;
};

struct LaunchRecorder {
  std::vector<RecordedLaunch> launches;
};

// The recorder of the realizes this thread makes, or null when none records.
LaunchRecorder* active_recorder();

// Records this thread's realizes into `recorder` for its lifetime. While recording, a graph does
// not read values realized before (realized_value()): every kernel of the step must run, to be
// recorded.
class RecordingScope {
 public:
  explicit RecordingScope(LaunchRecorder& recorder);
  ~RecordingScope();
  RecordingScope(const RecordingScope&) = delete;
  RecordingScope& operator=(const RecordingScope&) = delete;

 private:
  LaunchRecorder* previous_;
};

}  // namespace kiln
