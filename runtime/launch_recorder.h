#pragma once
// What a capture (include/kiln/capture.h) records of the realizes a step makes: each kernel
// launch and each copy between devices, in order, with the buffers they used.

#include <memory>
#include <mutex>
#include <unordered_set>
#include <vector>

#include "codegen/linear.h"
#include "core/symbolic.h"
#include "core/uop.h"
#include "runtime/buffer.h"
#include "runtime/device.h"

namespace kiln {

class IndexReport;
class TensorState;

struct RecordedLaunch {
  std::shared_ptr<Program> program;  // null for a copy between devices; held for the replays
  LaunchRequest request;             // as launched (its buffers are replaced on replay)
  // A kernel's buffers in the request's order (its output first); a copy's source, then its
  // destination.
  std::vector<std::shared_ptr<Buffer>> buffers;
  // The elements of the buffer it writes (a kernel's output, a copy's destination), over the
  // bound variables: a replay with other values sizes the buffer from it.
  Sym written_numel = Sym(0);
  // A kernel that writes a buffer holding values already (an Assign's target, a tensor written
  // in place): where the step did not make that memory, a replay writes that same buffer, even
  // where the step returns it.
  bool in_place = false;
  // A kernel with variables: its launch geometry (a program with only `launch`, `global_size`
  // and `variables`) and the bound variable each of its variables stood for, so that a replay
  // dispatches it for other values.
  std::shared_ptr<const LinearProgram> geometry;
  std::vector<Sym> bound;
  // A kernel whose Gathers report index errors: its report (also the last of `buffers`), zeroed
  // before a replay launches it and read after.
  std::shared_ptr<IndexReport> index_report;
};

struct LaunchRecorder {
  std::vector<RecordedLaunch> launches;
  // The step's buffers: its inputs (private copies) and every buffer a recorded launch wrote. A
  // realize in another thread that reads one of them is part of the step, and is recorded too.
  std::unordered_set<const Buffer*> step_buffers;
  // The tensors the step wrote in place (Tensor::assign, index_put_), as their handles share
  // them: a replay gives those whose memory it writes again a node of their own, as an assign
  // does, so that reads built after it are not served results computed before it.
  std::vector<std::weak_ptr<TensorState>> written_in_place;

  void record(RecordedLaunch launch);
};

// The recorder of a realize, with the lock that guards every recorder's contents: held for as
// long as the realize records, so that the threads of one step record one at a time. A realize
// that nothing records holds no lock.
struct RecorderHold {
  LaunchRecorder* recorder = nullptr;
  std::unique_lock<std::recursive_mutex> lock;
};

// The recorder of the realize of `roots`: this thread's, else that of a capture running in
// another thread whose buffers the graph reads; none when nothing records.
RecorderHold recorder_for(const std::vector<UOpRef>& roots);

// Records this thread's realizes into `recorder` for its lifetime, and those of other threads
// that read the step's buffers. While recording, a graph does not read values realized before
// (realized_value()): every kernel of the step must run, to be recorded.
class RecordingScope {
 public:
  explicit RecordingScope(LaunchRecorder& recorder);
  ~RecordingScope();
  RecordingScope(const RecordingScope&) = delete;
  RecordingScope& operator=(const RecordingScope&) = delete;

 private:
  LaunchRecorder* recorder_;
  LaunchRecorder* previous_;
};

}  // namespace kiln
