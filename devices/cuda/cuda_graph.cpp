#include "devices/cuda/cuda_graph.h"

#include <kiln/error.h>

#include <string>

#include "devices/cuda/cuda_api.h"
#include "devices/cuda/cuda_memory.h"

namespace kiln::cuda {
namespace {

CUDA_KERNEL_NODE_PARAMS node_params(const DriverLaunch& launch) {
  CUDA_KERNEL_NODE_PARAMS params{};  // no dynamic shared memory, extras, CUkernel or context
  params.func = launch.function;
  params.gridDimX = launch.grid[0];
  params.gridDimY = launch.grid[1];
  params.gridDimZ = launch.grid[2];
  params.blockDimX = launch.block[0];
  params.blockDimY = launch.block[1];
  params.blockDimZ = launch.block[2];
  // The driver copies the arguments these point to when it takes the parameters.
  params.kernelParams = const_cast<void**>(launch.arguments.data());
  return params;
}

// Whether `request` passes the kernel the arguments `launch` holds.
bool same_arguments(const DriverLaunch& launch, const LaunchRequest& request) {
  if (request.buffers.size() != launch.pointers.size() ||
      request.variables.size() != launch.variables.size())
    return false;
  for (size_t at = 0; at < launch.pointers.size(); ++at) {
    if (device_pointer(request.buffers[at]) != launch.pointers[at]) return false;
  }
  for (size_t at = 0; at < launch.variables.size(); ++at) {
    if (request.variables[at] != launch.variables[at]) return false;
  }
  return true;
}

}  // namespace

CudaGraph::CudaGraph(CudaStream& stream, const std::vector<GraphLaunch>& launches)
    : stream_(stream) {
  stream_.make_current();
  // Where this throws, the graph and its executable made so far are destroyed by their owners.
  CUgraph graph = nullptr;
  KILN_CU_CHECK_WITH(stream_.check, driver().cuGraphCreate(&graph, 0));
  graph_.reset(graph);
  CUgraphNode previous = nullptr;
  for (const GraphLaunch& launch : launches) {
    Node node;
    node.program = static_cast<const CudaProgram*>(launch.program);
    if (&node.program->stream() != &stream_)
      throw InternalError("[cuda graph] kernel " + node.program->name() +
                          " belongs to another device's stream");
    node.launch = node.program->prepare(launch.request);
    if (!node.launch.empty) {
      const CUDA_KERNEL_NODE_PARAMS params = node_params(node.launch);
      const KernelCheck check(stream_, node.program->name());
      KILN_CU_CHECK_WITH(check, driver().cuGraphAddKernelNode_v2(&node.node, graph_.get(),
                                                                 previous ? &previous : nullptr,
                                                                 previous ? 1 : 0, &params));
      previous = node.node;
    }
    nodes_.push_back(std::move(node));
  }
  CUgraphExec exec = nullptr;
  KILN_CU_CHECK_WITH(stream_.check, driver().cuGraphInstantiateWithFlags(&exec, graph_.get(), 0));
  exec_.reset(exec);
  if (!nodes_.empty())
    description_ = "a graph of " + std::to_string(nodes_.size()) + " kernels ending in " +
                   nodes_.back().program->name();
}

CudaGraph::~CudaGraph() {
  // A launch still running finishes: the driver frees its executable once it has. The owners
  // then destroy the executable and the graph.
  KILN_CU_WARN(driver().cuCtxSetCurrent(stream_.context()));
}

void CudaGraph::launch(const std::vector<LaunchRequest>& requests) {
  if (requests.size() != nodes_.size())
    throw InternalError("[cuda graph] " + std::to_string(requests.size()) +
                        " requests for a graph of " + std::to_string(nodes_.size()) + " launches");
  stream_.make_current();
  for (size_t at = 0; at < nodes_.size(); ++at) {
    Node& node = nodes_[at];
    if (!node.node || same_arguments(node.launch, requests[at])) continue;
    DriverLaunch next = node.program->prepare(requests[at]);
    // The graph replays the recorded geometry; only the arguments may change.
    for (int dim = 0; dim < 3; ++dim) {
      if (next.grid[dim] != node.launch.grid[dim] || next.block[dim] != node.launch.block[dim])
        throw InternalError("[cuda graph] kernel " + node.program->name() +
                            " was recorded with another launch geometry");
    }
    const CUDA_KERNEL_NODE_PARAMS params = node_params(next);
    const KernelCheck check(stream_, node.program->name());
    KILN_CU_CHECK_WITH(check,
                       driver().cuGraphExecKernelNodeSetParams_v2(exec_.get(), node.node, &params));
    node.launch = std::move(next);  // only once the graph holds them
  }
  KILN_CU_CHECK_WITH(stream_.check, driver().cuGraphLaunch(exec_.get(), stream_.get()));
  if (!description_.empty()) stream_.launched(description_);
}

}  // namespace kiln::cuda
