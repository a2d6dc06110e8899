// CapturedStep (include/kiln/capture.h): the second call records every kernel launch and copy its
// realizes make (runtime/launch_recorder.h); later calls launch those again, each buffer swapped
// for its counterpart of the call: the call's inputs for the captured inputs, a new buffer for
// each captured output, and the captured buffers themselves for intermediates and for the
// tensors the step holds (weights), which the capture keeps alive.

#include <kiln/capture.h>
#include <kiln/error.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

#include "core/rewrite.h"
#include "runtime/buffer.h"
#include "runtime/debug.h"
#include "runtime/environment.h"
#include "runtime/index_report.h"
#include "runtime/launch_recorder.h"
#include "runtime/realize.h"
#include "runtime/registry.h"
#include "runtime/tensor_internal.h"

namespace kiln {
namespace {

// The bound variables of a replay's inputs, by name, at the call's values.
using Bindings = std::map<std::string, Sym>;

// The buffers of one replay: each captured buffer the call replaces, with its replacement.
struct CallBuffers {
  // The call's inputs as whole buffers: held until the call's launches are done.
  std::vector<Tensor> plain_inputs;
  std::unordered_map<const Buffer*, std::shared_ptr<Buffer>> swapped;

  const std::shared_ptr<Buffer>& counterpart(const std::shared_ptr<Buffer>& captured) const {
    auto found = swapped.find(captured.get());
    return found == swapped.end() ? captured : found->second;
  }
  Buffer& current(const std::shared_ptr<Buffer>& captured) const { return *counterpart(captured); }
};

}  // namespace

struct CapturedStep::State {
  Function function;
  // 0 before the warm-up, 1 before the capture, 2 once captured: from then on the capture is
  // only read (but for the replays' graph, under launch_mutex), so replays need no other lock.
  std::atomic<int> calls{0};
  // Held through the warm-up and the capture, so that threads calling a fresh step wait for
  // them rather than change the state beside them.
  std::recursive_mutex capture_mutex;

  // The capture.
  struct Input {
    Shape shape;
    SymShape sym_shape;  // with the capture call's values of its variables
    DType dtype;
    std::string device;
    std::shared_ptr<Buffer> buffer;  // the capture call's: replaced by each call's own
  };
  std::vector<Input> inputs;
  bool symbolic = false;  // some input's shape has variables
  std::vector<RecordedLaunch> launches;
  struct Output {
    UOpRef node;  // as the capture returned it: a Buffer node, or a View of one
    std::string device;
    std::shared_ptr<Buffer> buffer;
    // Where the output is a whole tensor made before the step (a weight it returns, or a state
    // it writes in place): that tensor, which every replay returns as itself.
    Tensor kept;
  };
  std::vector<Output> outputs;
  std::unordered_set<const Buffer*> written;  // buffers the launches write
  // Tensors made before the step that it writes in place: each replay renews their nodes.
  std::vector<std::weak_ptr<TensorState>> written_tensors;
  std::unordered_set<const Buffer*> rewritten;  // their memory (by owner), which replays write
  bool aliases = false;  // some launch's buffer is an alias of another's memory (Buffer::alias_of)
  // The launches as one graph of their device (CUDA graphs), made at the first replay where
  // every launch is a kernel of one device with fixed sizes; null where not, or where the device
  // has none. Declared after `launches`, so destroyed first: the launches' buffers keep the
  // device, and the programs the graph launches, alive until it is gone.
  std::unique_ptr<LaunchGraph> graph;
  bool graph_tried = false;
  std::mutex launch_mutex;  // one call's launches at a time; guards graph and graph_tried

  // The first call: the step run as written, which compiles what the step needs.
  std::vector<Tensor> warm_up(const std::vector<Tensor>& call_inputs);
  // The second call: the step run while recording every launch.
  std::vector<Tensor> capture(const std::vector<Tensor>& call_inputs);
  // A later call: the captured launches again, on this call's buffers.
  std::vector<Tensor> replay(const std::vector<Tensor>& call_inputs);

  // The phases of a capture.
  static std::vector<Input> private_inputs(const std::vector<Tensor>& call_inputs,
                                           std::vector<Tensor>& private_tensors);
  std::vector<Tensor> record(const std::vector<Tensor>& private_tensors,
                             LaunchRecorder& recorder) const;
  static std::vector<Output> outputs_to_replay(const std::vector<Tensor>& results);
  void keep(std::vector<Input> captured_inputs, std::vector<Output> captured_outputs,
            LaunchRecorder& recorder, uint64_t first_made);

  // The phases of a replay.
  Bindings check_inputs(const std::vector<Tensor>& call_inputs) const;
  CallBuffers buffers_of_call(const std::vector<Tensor>& call_inputs,
                              const std::map<std::string, int64_t>& values) const;
  void launch_recorded(const CallBuffers& call, const std::map<std::string, int64_t>& values);
  void launch_one_by_one(const CallBuffers& call, const std::map<std::string, int64_t>& values,
                         std::vector<Device*>& launched_on) const;
  std::unordered_set<const UOp*> renew_written_tensors() const;
  std::vector<Tensor> outputs_of_call(const CallBuffers& call, const Bindings& bindings,
                                      const std::unordered_set<const UOp*>& renewed) const;
};

namespace {

std::shared_ptr<Buffer> buffer_behind(const UOp& node) {
  const UOp& base = node.op() == Op::Buffer ? node : *node.src();
  return std::static_pointer_cast<Buffer>(base.storage());
}

// The input as a tensor that is a whole buffer (what a captured kernel reads).
Tensor as_plain_buffer(const Tensor& input) {
  input.realize();
  if (input.node()->op() == Op::Buffer) return input;
  Tensor copy = input.contiguous();
  copy.realize();
  return copy;
}

// The input in a buffer of its own, so that no two captured inputs, and no input and a tensor the
// step holds, share one: a replay swaps each captured input's buffer for the call's.
Tensor private_copy(const Tensor& input) {
  const Tensor plain = as_plain_buffer(input);
  Buffer& source = *buffer_behind(*plain.node());
  auto copy = std::make_shared<Buffer>(open_device(input.device()), input.dtype(), input.numel());
  copy_between_devices(source, *copy);
  return make_tensor(
      UOp::make_symbolic(Op::Buffer, input.dtype(), {}, copy, plain.node()->sym_shape()),
      input.device());
}

std::string input_text(size_t index, const Tensor& input) {
  return "input " + std::to_string(index) + " (" + describe(input) + ")";
}

// A size with each bound variable's value left out (printed "n[1,64]"): what a replay's input
// must match.
Sym size_pattern(const Sym& size) {
  if (size.is_const()) return size;
  std::map<std::string, Sym> unbound;
  for (const Sym& variable : size.variable_nodes()) {
    if (!variable.is_bound()) continue;
    unbound.emplace(variable.var_name(),
                    Sym::var(variable.var_name() + "[" + std::to_string(variable.vmin()) + "," +
                                 std::to_string(variable.vmax()) + "]",
                             variable.vmin(), variable.vmax()));
  }
  return size.substitute(unbound);
}

// Each bound variable of `value` at its binding in `bindings` (by name).
Sym rebind(const Sym& value, const Bindings& bindings) {
  return value.is_const() ? value : value.substitute(bindings);
}

// Checks a replay's input against the captured symbolic shape (the same expressions, the values
// free) and adds its variables' values to `bindings`.
void bind_input(size_t index, const Tensor& input, const SymShape& captured,
                const std::string& expected, Bindings& bindings) {
  const DimShape dims = input.dims();
  bool same_shape = dims.size() == captured.size();
  for (size_t dim = 0; same_shape && dim < dims.size(); ++dim)
    same_shape = size_pattern(dims[dim].sym()) == size_pattern(captured[dim]);
  if (!same_shape) {
    // Two shapes may print alike where only a variable's bounds differ: show them with bounds.
    std::string given = "(", wanted = "(";
    for (size_t dim = 0; dim < dims.size(); ++dim)
      given += (dim ? ", " : "") + size_pattern(dims[dim].sym()).key();
    for (size_t dim = 0; dim < captured.size(); ++dim)
      wanted += (dim ? ", " : "") + size_pattern(captured[dim]).key();
    throw ShapeError("[CapturedStep] " + input_text(index, input) + " has another shape" +
                     expected + " (with each variable's bounds: " + given + ") given, " + wanted +
                     ") captured; a variable size is passed bound: Variable::bind)");
  }
  for (const Dim& dim : dims) {
    for (const Sym& variable : dim.sym().variable_nodes()) {
      auto [known, fresh] = bindings.emplace(variable.var_name(), variable);
      if (!fresh && known->second.bound_value() != variable.bound_value())
        throw ShapeError("[CapturedStep] " + input_text(index, input) + " binds variable '" +
                         variable.var_name() + "' to " + std::to_string(variable.bound_value()) +
                         ", an earlier input to " + std::to_string(known->second.bound_value()));
    }
  }
}

std::map<std::string, int64_t> values_of(const Bindings& bindings) {
  std::map<std::string, int64_t> values;
  for (const auto& [name, variable] : bindings) values[name] = variable.bound_value();
  return values;
}

// KILN_GRAPHS=0 launches each kernel of a replay, so that a fault of the device's graphs can be
// told from one of the kernels.
bool graphs_allowed() {
  return switch_from_environment("KILN_GRAPHS", "each kernel launched",
                                 "graphs where the device has them");
}

// The replays' graph: where every launch is a kernel of one device, and none has a size that a
// replay changes, the device's LaunchGraph of them (CUDA graphs: one launch call per replay in
// place of one per kernel); null otherwise. A device that fails to make one is logged, and its
// replays launch each kernel.
std::unique_ptr<LaunchGraph> record_replay_graph(const std::vector<RecordedLaunch>& recorded,
                                                 bool symbolic) {
  if (!graphs_allowed() || symbolic || recorded.empty()) return nullptr;
  Device* device = nullptr;
  std::vector<GraphLaunch> launches;
  for (const RecordedLaunch& launch : recorded) {
    if (!launch.program || launch.geometry) return nullptr;
    Device& own = launch.buffers[0]->context().device();
    if (device && device != &own) return nullptr;
    device = &own;
    launches.push_back({launch.program.get(), launch.request});
  }
  try {
    return device->record_graph(launches);
  } catch (const Error& error) {
    logger().warn("a captured step's {} kernels are launched one by one: {}", launches.size(),
                  error.what());
    return nullptr;
  }
}

// The step's function run as written, its outputs realized together (work they share runs once).
std::vector<Tensor> run_as_written(const CapturedStep::Function& function,
                                   const std::vector<Tensor>& inputs) {
  std::vector<Tensor> outputs = function(inputs);
  realize(outputs);
  return outputs;
}

// Whether a capture is recording this call: this thread's, or one whose buffers the inputs are.
bool inside_capture(const std::vector<Tensor>& inputs) {
  std::vector<UOpRef> nodes;
  for (const Tensor& input : inputs) nodes.push_back(input.node());
  return recorder_for(nodes).recorder != nullptr;
}

// A replay gives each variable one value, taken from the inputs.
void check_each_variable_bound_once(const std::vector<RecordedLaunch>& recorded) {
  for (const RecordedLaunch& launch : recorded) {
    for (size_t at = 0; at < launch.bound.size(); ++at) {
      for (size_t other = 0; other < at; ++other) {
        if (launch.bound[at].var_name() == launch.bound[other].var_name())
          throw ShapeError("[CapturedStep] a kernel of the step reads variable '" +
                           launch.bound[at].var_name() +
                           "' at two values; a captured step binds each variable once");
      }
    }
  }
}

// The recorded request on this call's buffers.
LaunchRequest request_of(const RecordedLaunch& launch, const CallBuffers& call) {
  LaunchRequest request = launch.request;
  for (size_t index = 0; index < launch.buffers.size(); ++index)
    request.buffers[index] = call.current(launch.buffers[index]).memory();
  return request;
}

}  // namespace

std::vector<Tensor> CapturedStep::State::warm_up(const std::vector<Tensor>& call_inputs) {
  // On private copies of the inputs, as the capture reads them: the kernels built now are then
  // the capture's too (a view's input read in place would need others), and it builds none. A
  // compile-only device holds no values to copy: there the inputs are read as given.
  const bool compile_only =
      std::any_of(call_inputs.begin(), call_inputs.end(), [](const Tensor& in) {
        return open_device(in.device())->device().properties().compile_only;
      });
  std::vector<Tensor> private_tensors;
  if (!compile_only) private_inputs(call_inputs, private_tensors);
  std::vector<Tensor> results =
      run_as_written(function, compile_only ? call_inputs : private_tensors);
  calls.store(1, std::memory_order_release);
  return results;
}

// Built aside and kept only when it succeeds: a capture that throws leaves the step to capture
// at its next call.
std::vector<Tensor> CapturedStep::State::capture(const std::vector<Tensor>& call_inputs) {
  const uint64_t first_made = Buffer::next_serial();
  std::vector<Tensor> private_tensors;
  std::vector<Input> captured_inputs = private_inputs(call_inputs, private_tensors);
  LaunchRecorder recorder;
  for (const Input& input : captured_inputs) recorder.step_buffers.insert(input.buffer.get());
  std::vector<Tensor> results = record(private_tensors, recorder);
  std::vector<Output> captured_outputs = outputs_to_replay(results);
  check_each_variable_bound_once(recorder.launches);
  keep(std::move(captured_inputs), std::move(captured_outputs), recorder, first_made);
  return results;
}

// Each input copied into a buffer of its own (`private_tensors`), as a replay swaps it.
std::vector<CapturedStep::State::Input> CapturedStep::State::private_inputs(
    const std::vector<Tensor>& call_inputs, std::vector<Tensor>& private_tensors) {
  std::vector<Input> captured_inputs;
  for (const Tensor& input : call_inputs) {
    private_tensors.push_back(private_copy(input));
    captured_inputs.push_back({input.shape(), private_tensors.back().node()->sym_shape(),
                               input.dtype(), input.device(),
                               buffer_behind(*private_tensors.back().node())});
  }
  return captured_inputs;
}

// The step's function run on the private inputs, its outputs realized together (so a replay
// launches work they share once), every launch recorded.
std::vector<Tensor> CapturedStep::State::record(const std::vector<Tensor>& private_tensors,
                                                LaunchRecorder& recorder) const {
  const RecordingScope recording(recorder);
  std::vector<Tensor> results = function(private_tensors);
  realize(results);
  return results;
}

// A replay makes its outputs anew from these: each a buffer, or a View of one.
std::vector<CapturedStep::State::Output> CapturedStep::State::outputs_to_replay(
    const std::vector<Tensor>& results) {
  std::vector<Output> captured_outputs;
  for (size_t index = 0; index < results.size(); ++index) {
    const UOpRef node = results[index].node();
    if (node->op() != Op::Buffer && !(node->op() == Op::View && node->src()->op() == Op::Buffer))
      throw InternalError("[CapturedStep] output " + std::to_string(index) +
                          " is, realized, not a view of a buffer: " + node->to_string());
    captured_outputs.push_back({node, results[index].device(), buffer_behind(*node),
                                node->op() == Op::Buffer ? results[index] : Tensor()});
  }
  return captured_outputs;
}

// The capture made the step's own (unless it writes an input in place: a ValueError, and nothing
// kept); replays read it without a lock.
void CapturedStep::State::keep(std::vector<Input> captured_inputs,
                               std::vector<Output> captured_outputs, LaunchRecorder& recorder,
                               uint64_t first_made) {
  std::vector<RecordedLaunch>& recorded = recorder.launches;
  // Memory that existed before the step and that it writes in place (a tensor's assign) is the
  // tensor's for good: not swapped for a new buffer per call. Memory the step made is its own,
  // under whichever Buffer (an alias: runtime/tensor_assign.cpp) a launch writes it.
  std::unordered_set<const Buffer*> made;  // by memory owner
  std::unordered_set<const Buffer*> step_written;
  bool has_aliases = false;
  for (const RecordedLaunch& launch : recorded) {
    const Buffer* buffer = launch.buffers[launch.program ? 0 : 1].get();
    for (const std::shared_ptr<Buffer>& used : launch.buffers)
      has_aliases |= used->memory_owner() != used.get();
    if (!launch.in_place) made.insert(buffer->memory_owner());
    if (!launch.in_place || made.count(buffer->memory_owner())) {
      step_written.insert(buffer);
      continue;
    }
    for (const Input& input : captured_inputs) {
      if (input.buffer->memory_owner() == buffer->memory_owner())
        throw ValueError(
            "[CapturedStep] the step writes one of its inputs in place (assign, "
            "index_put_): a replay would write the caller's tensor where the "
            "first calls wrote a copy; assign to a copy of the input instead");
    }
    // Made in the call, not by a kernel (from_vector, from_blob): a replay would not make it
    // again, so each would write on the last one's result.
    if (buffer->memory_owner()->serial() >= first_made)
      throw ValueError(
          "[CapturedStep] the step writes in place (assign, index_put_) a tensor it made from "
          "host data (from_vector, from_blob): a replay does not make it again, and would write "
          "over what the last call left; make it before the step, or compute it in the step "
          "(zeros, full)");
    rewritten.insert(buffer->memory_owner());
  }
  for (const Input& input : captured_inputs) {
    for (const Sym& size : input.sym_shape) symbolic |= !size.is_const();
  }
  // Outputs a replay makes anew, or takes from its inputs, are not the tensors returned now.
  for (Output& output : captured_outputs) {
    const bool input_buffer =
        std::any_of(captured_inputs.begin(), captured_inputs.end(),
                    [&](const Input& input) { return input.buffer == output.buffer; });
    if (step_written.count(output.buffer.get()) || input_buffer) output.kept = Tensor();
  }
  // The tensors written in place whose memory is not the step's own: the replays write it again.
  std::unordered_set<const TensorState*> listed;
  for (const std::weak_ptr<TensorState>& held : recorder.written_in_place) {
    const std::shared_ptr<TensorState> state = held.lock();
    if (!state || !listed.insert(state.get()).second) continue;
    const UOpRef node = state->node();
    if (node->op() == Op::Buffer && !made.count(buffer_behind(*node)->memory_owner()))
      written_tensors.push_back(state);
  }
  written = std::move(step_written);
  aliases = has_aliases;
  inputs = std::move(captured_inputs);
  outputs = std::move(captured_outputs);
  launches = std::move(recorded);
  calls.store(2, std::memory_order_release);
}

std::vector<Tensor> CapturedStep::State::replay(const std::vector<Tensor>& call_inputs) {
  const Bindings bindings = check_inputs(call_inputs);
  std::map<std::string, int64_t> values;  // the variables' values in this call
  if (symbolic) values = values_of(bindings);
  const CallBuffers call = buffers_of_call(call_inputs, values);
  launch_recorded(call, values);
  const std::unordered_set<const UOp*> renewed = renew_written_tensors();
  return outputs_of_call(call, bindings, renewed);
}

// A mismatch is an error, never a recapture. Gives the variables' values in this call.
Bindings CapturedStep::State::check_inputs(const std::vector<Tensor>& call_inputs) const {
  if (call_inputs.size() != inputs.size())
    throw ShapeError("[CapturedStep] the step was captured with " + std::to_string(inputs.size()) +
                     " input(s), got " + std::to_string(call_inputs.size()));
  Bindings bindings;
  for (size_t index = 0; index < call_inputs.size(); ++index) {
    const Input& captured = inputs[index];
    const Tensor& input = call_inputs[index];
    const std::string expected = std::string("; the step was captured with ") +
                                 captured.dtype.name() + shape_string(captured.sym_shape) + " on " +
                                 captured.device;
    if (!symbolic) {
      if (input.shape() != captured.shape)
        throw ShapeError("[CapturedStep] " + input_text(index, input) + " has another shape" +
                         expected);
    } else {
      bind_input(index, input, captured.sym_shape, expected, bindings);
    }
    if (input.dtype() != captured.dtype)
      throw DTypeError("[CapturedStep] " + input_text(index, input) + " has another dtype" +
                       expected);
    if (input.device() != captured.device)
      throw DeviceError("[CapturedStep] " + input_text(index, input) + " is on another device" +
                        expected);
  }
  return bindings;
}

// The call's inputs for the captured inputs and a new buffer for each output the launches write,
// so that a replay leaves earlier outputs as they were; with variables, every buffer the step
// writes sized for this call's values.
CallBuffers CapturedStep::State::buffers_of_call(
    const std::vector<Tensor>& call_inputs, const std::map<std::string, int64_t>& values) const {
  CallBuffers call;
  for (size_t index = 0; index < call_inputs.size(); ++index) {
    call.plain_inputs.push_back(as_plain_buffer(call_inputs[index]));
    call.swapped[inputs[index].buffer.get()] = buffer_behind(*call.plain_inputs.back().node());
  }
  // An output written in place under an alias (runtime/tensor_assign.cpp) shares its memory with
  // the buffer first written: both are swapped, each alias for an alias of the new one.
  for (const Output& output : outputs) {
    const Buffer* captured = output.buffer.get();
    if (!written.count(captured) || call.swapped.count(captured)) continue;
    const Buffer* owner = captured->memory_owner();
    std::shared_ptr<Buffer>& fresh = call.swapped[owner];
    if (!fresh)
      fresh = std::make_shared<Buffer>(open_device(output.device), output.buffer->dtype(),
                                       output.buffer->numel());
    if (owner != captured) call.swapped[captured] = Buffer::alias_of(fresh);
  }
  for (const RecordedLaunch& launch : launches) {
    if (!aliases) break;
    for (const std::shared_ptr<Buffer>& buffer : launch.buffers) {
      const Buffer* owner = buffer->memory_owner();
      if (owner == buffer.get() || call.swapped.count(buffer.get())) continue;
      auto fresh = call.swapped.find(owner);
      if (fresh != call.swapped.end()) call.swapped[buffer.get()] = Buffer::alias_of(fresh->second);
    }
  }
  if (!symbolic) return call;
  for (const RecordedLaunch& launch : launches) {
    const std::shared_ptr<Buffer>& written_buffer = launch.buffers[launch.program ? 0 : 1];
    if (!written.count(written_buffer.get())) continue;  // a tensor's own, written in place
    const int64_t numel = launch.written_numel.eval(values);
    if (call.current(written_buffer).numel() == numel) continue;
    call.swapped[written_buffer.get()] = std::make_shared<Buffer>(
        open_device(written_buffer->device()), written_buffer->dtype(), numel);
  }
  return call;
}

// As one graph where the device made one, else launch by launch. The replays of one step share
// the buffers between its kernels (a call has its own inputs and outputs only): one call launches
// at a time, and each device runs what it was given in order, so a later call's kernels cannot
// overwrite what an earlier one still reads. Other steps and realizes launch meanwhile.
void CapturedStep::State::launch_recorded(const CallBuffers& call,
                                          const std::map<std::string, int64_t>& values) {
  const std::lock_guard<std::mutex> lock(launch_mutex);
  if (!graph_tried) {
    graph = record_replay_graph(launches, symbolic);
    graph_tried = true;
  }
  // Index errors are reported afresh by each call (at its values of the variables).
  for (const RecordedLaunch& launch : launches) {
    if (!launch.index_report) continue;
    std::vector<int64_t> variables = launch.request.variables;
    if (launch.geometry) {
      variables.clear();
      for (const Sym& bound : launch.bound) variables.push_back(bound.eval(values));
    }
    launch.index_report->reset(std::move(variables));
  }
  std::vector<Device*> launched_on;
  if (graph) {
    std::vector<LaunchRequest> requests;
    for (const RecordedLaunch& launch : launches) requests.push_back(request_of(launch, call));
    graph->launch(requests);
    launched_on.push_back(&launches[0].buffers[0]->context().device());
  } else {
    launch_one_by_one(call, values, launched_on);
  }
  for (Device* device : launched_on) device->flush();
  for (const RecordedLaunch& launch : launches) {
    if (launch.index_report) launch.index_report->check();
  }
}

// Each recorded kernel and copy in turn; a kernel of variable size dispatched for this call's
// values, and skipped where they leave it nothing to do.
void CapturedStep::State::launch_one_by_one(const CallBuffers& call,
                                            const std::map<std::string, int64_t>& values,
                                            std::vector<Device*>& launched_on) const {
  for (const RecordedLaunch& launch : launches) {
    if (!launch.program) {
      copy_between_devices(call.current(launch.buffers[0]), call.current(launch.buffers[1]));
      continue;
    }
    LaunchRequest request = request_of(launch, call);
    if (launch.geometry) {
      request.variables.clear();
      for (const Sym& bound : launch.bound) request.variables.push_back(bound.eval(values));
      if (work_items(*launch.geometry, request.variables) == 0) continue;
      int64_t global[3], local[3];
      dispatch_sizes(*launch.geometry, request.variables, global, local);
      request.global = {global[0], global[1], global[2]};
      request.local = {local[0], local[1], local[2]};
    }
    launch.program->launch(request);
    Device& device = call.current(launch.buffers[0]).context().device();
    if (std::find(launched_on.begin(), launched_on.end(), &device) == launched_on.end())
      launched_on.push_back(&device);
  }
}

// The tensors the replay wrote in place, each under a new node over the same memory, as an assign
// leaves them: a read built after the replay is a graph of its own, never one realized before.
// Gives the new nodes.
std::unordered_set<const UOp*> CapturedStep::State::renew_written_tensors() const {
  std::unordered_set<const UOp*> renewed;
  for (const std::weak_ptr<TensorState>& held : written_tensors) {
    const std::shared_ptr<TensorState> state = held.lock();
    if (!state) continue;
    const UOpRef now = state->node();
    if (now->op() != Op::Buffer) continue;
    UOpRef fresh = buffer_node(*now, Buffer::alias_of(buffer_behind(*now)));
    renewed.insert(fresh.get());
    state->set_node(std::move(fresh));
  }
  return renewed;
}

// New tensors on this call's buffers, each shaped as its captured output; with variables, sizes
// and Views at this call's values.
std::vector<Tensor> CapturedStep::State::outputs_of_call(
    const CallBuffers& call, const Bindings& bindings,
    const std::unordered_set<const UOp*>& renewed) const {
  std::vector<Tensor> results;
  for (const Output& output : outputs) {
    std::shared_ptr<Buffer> buffer = call.counterpart(output.buffer);
    if (buffer == output.buffer) {
      // Memory the step keeps: the tensor it is, while that tensor is still this memory's
      // contents and, where the replay wrote them, holds the node this replay renewed; else (a
      // view, another handle on the memory, a handle whose node kept the contents of before a
      // write) a node of its own over the memory, which holds no result of before the replay.
      if (output.kept.defined()) {
        const UOpRef now = output.kept.node();
        const Buffer* owner = buffer->memory_owner();
        if (!output.node->is_symbolic() && now->op() == Op::Buffer && !now->snapshot() &&
            buffer_behind(*now)->memory_owner() == owner &&
            (!rewritten.count(owner) || renewed.count(now.get()))) {
          results.push_back(output.kept);
          continue;
        }
      }
      buffer = Buffer::alias_of(buffer);
    }
    const UOpRef& captured_buffer =
        output.node->op() == Op::Buffer ? output.node : output.node->src();
    if (!symbolic) {
      const UOpRef node =
          UOp::make(Op::Buffer, captured_buffer->dtype(), {}, buffer, captured_buffer->shape());
      results.push_back(make_tensor(
          output.node->op() == Op::Buffer ? node : with_srcs(output.node, {node}), output.device));
      continue;
    }
    SymShape sizes;
    for (const Sym& size : captured_buffer->sym_shape()) sizes.push_back(rebind(size, bindings));
    const UOpRef node = UOp::make_symbolic(Op::Buffer, captured_buffer->dtype(), {}, buffer, sizes);
    if (output.node->op() == Op::Buffer) {
      results.push_back(make_tensor(node, output.device));
      continue;
    }
    results.push_back(
        make_tensor(UOp::make(Op::View, node->dtype(), {node},
                              output.node->tracker().substitute(bindings), output.node->shape()),
                    output.device));
  }
  return results;
}

CapturedStep::CapturedStep(Function function) : state_(std::make_unique<State>()) {
  state_->function = std::move(function);
}

CapturedStep::~CapturedStep() = default;

bool CapturedStep::captured() const {
  return state_->calls >= 2;
}

size_t CapturedStep::kernels() const {
  size_t count = 0;
  for (const RecordedLaunch& launch : state_->launches) count += launch.program != nullptr;
  return count;
}

std::vector<Tensor> CapturedStep::operator()(const std::vector<Tensor>& inputs) {
  State& state = *state_;
  // Called inside another step's capture (from its function, or from a thread that works on its
  // buffers): run as written, so that the outer capture records these kernels with its own. A
  // replay would launch outside any realize, unseen by the outer recorder.
  if (inside_capture(inputs)) return run_as_written(state.function, inputs);
  if (state.calls.load(std::memory_order_acquire) < 2) {
    const std::lock_guard<std::recursive_mutex> lock(state.capture_mutex);
    // Another thread may have warmed up or captured the step while this one waited.
    const int calls = state.calls.load(std::memory_order_relaxed);
    if (calls == 0) return state.warm_up(inputs);
    if (calls == 1) return state.capture(inputs);
  }
  return state.replay(inputs);
}

}  // namespace kiln
