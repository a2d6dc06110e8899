#pragma once
// Capture and replay: a step an application runs many times (a model's forward pass, one
// iteration of a solver) is run once to warm up, once more while kiln records every kernel it
// launches, and from then on replayed: the recorded kernels run again on the new inputs, with no
// graph built, nothing scheduled, lowered or looked up in a cache.
//
//   kiln::CapturedStep step([&](const std::vector<kiln::Tensor>& in) {
//     return std::vector<kiln::Tensor>{(in[0].matmul(weights) + bias).relu().softmax(-1)};
//   });
//   for (const kiln::Tensor& batch : batches) consume(step({batch})[0]);
//
// The function must compute its outputs from its inputs, and from tensors it holds (weights),
// through tensor operations only: what it reads on the host, and any choice it makes from that,
// is fixed when the step is captured. Every call's inputs must match the captured inputs in
// number, shape, dtype and device; a mismatch is an error that names the input, never a
// recapture. The outputs are realized together (kiln::realize), so work they share runs once.
// Each call returns new output tensors (a replay does not overwrite earlier outputs);
// a tensor the step realizes and keeps elsewhere is shared with the replays, which overwrite it.
// A tensor made before the step and written by it in place (Tensor::assign: an optimizer's
// state, a key/value cache) is written by every replay, and is returned as itself where the step
// returns it; a read of it built before a replay and realized after sees the replay's write.
//
// An input whose size is a bound variable (kiln/variable.h) replays at any value of it: each call
// binds the variables of its inputs, the captured kernels are dispatched for those values and the
// outputs are sized for them (a variable's bounds, like its name, must match the capture's).
// A size the step reads on the host (shape()[0], or a number computed from it) is a host value,
// fixed at capture; dims() keeps it symbolic. A replay takes its variables' values from the
// inputs' shapes only: a variable the step binds itself (pos.bind(t), t counted outside the step)
// is fixed at capture too. A position that changes per call (a key/value cache's) comes in as an
// input's size: an input of shape (0, pos.bind(t)) holds nothing, and in[k].dims()[1] is the
// position, to index with (cache.index_put_({Slice(), in[k].dims()[1]}, row)).
//
// On CUDA, a replay of fixed sizes launches its kernels as one CUDA graph; KILN_GRAPHS=0 launches
// them one by one.
//
// A step may be called from several threads at once: the warm-up and the capture run once, the
// other callers waiting for them. The replays of one step launch their kernels one call at a time
// (they share the buffers between the step's kernels), beside other steps' replays and realizes
// in other threads. A step called inside another step's capture runs as written, so that the
// outer capture records its kernels, and the outer step's replays compute it too. A realize that
// the step's function makes in another thread is part of the step where it reads the step's
// inputs or what the step computed from them (it is recorded and replayed); one that reads
// neither is a host value fixed at capture, like a weight.

#include <functional>
#include <memory>
#include <vector>

#include <kiln/tensor.h>

namespace kiln {

class CapturedStep {
 public:
  using Function = std::function<std::vector<Tensor>(const std::vector<Tensor>& inputs)>;

  explicit CapturedStep(Function function);
  ~CapturedStep();
  CapturedStep(const CapturedStep&) = delete;
  CapturedStep& operator=(const CapturedStep&) = delete;

  // Runs the step: the first call as written, the second while capturing, later ones as a
  // replay. Throws ShapeError, DTypeError or DeviceError when `inputs` do not match the capture.
  std::vector<Tensor> operator()(const std::vector<Tensor>& inputs);

  // Whether the step is captured (after its second call).
  bool captured() const;
  // Kernels each replay launches.
  size_t kernels() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace kiln
