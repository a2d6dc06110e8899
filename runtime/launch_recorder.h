#pragma once
// What a capture (include/kiln/capture.h) records of the realizes a step makes: each kernel
// launch and each copy between devices, in order, with the buffers they used.

#include <memory>
#include <vector>

#include "codegen/linear.h"
#include "core/symbolic.h"
#include "runtime/buffer.h"
#include "runtime/device.h"

namespace kiln {

struct RecordedLaunch {
  std::shared_ptr<Program> program;  // null for a copy between devices; held for the replays
  LaunchRequest request;       // as launched (its buffers are replaced on replay)
  // A kernel's buffers in the request's order (its output first); a copy's source, then its
  // destination.
  std::vector<std::shared_ptr<Buffer>> buffers;
  // The elements of the buffer it writes (a kernel's output, a copy's destination), over the
  // bound variables: a replay with other values sizes the buffer from it.
  Sym written_numel = Sym(0);
  // A kernel with variables: its launch geometry (a program with only `launch`, `global_size`
  // and `variables`) and the bound variable each of its variables stood for, so that a replay
  // dispatches it for other values.
  std::shared_ptr<const LinearProgram> geometry;
  std::vector<Sym> bound;
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
