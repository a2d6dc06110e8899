#pragma once
// A captured step's kernels as one CUDA graph (runtime/device.h's LaunchGraph): a chain of kernel
// nodes, each after the one before as on the stream, instantiated once. A replay sets the
// parameters of the nodes whose arguments changed (the call's inputs, its new outputs) and
// launches the whole graph with one call, where launching each kernel costs a call per kernel.

#include <cuda.h>

#include <string>
#include <vector>

#include "devices/cuda/cuda_api.h"
#include "devices/cuda/cuda_program.h"
#include "devices/cuda/cuda_stream.h"
#include "runtime/device.h"

namespace kiln::cuda {

class CudaGraph : public LaunchGraph {
 public:
  // `launches` are of CudaPrograms on `stream`'s device. Throws DeviceError naming the driver
  // call that failed.
  CudaGraph(CudaStream& stream, const std::vector<GraphLaunch>& launches);
  ~CudaGraph() override;
  CudaGraph(const CudaGraph&) = delete;
  CudaGraph& operator=(const CudaGraph&) = delete;

  void launch(const std::vector<LaunchRequest>& requests) override;

 private:
  struct Node {
    const CudaProgram* program = nullptr;
    CUgraphNode node = nullptr;  // null for a launch of no work items
    DriverLaunch launch;         // the arguments the node holds now
  };

  CudaStream& stream_;
  std::string description_;  // for errors that a fault in one of its kernels raises later
  OwnedGraph graph_;
  OwnedGraphExec exec_;  // after the graph: destroyed before it
  std::vector<Node> nodes_;
};

}  // namespace kiln::cuda
