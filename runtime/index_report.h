#pragma once
// Where a kernel's Gathers report an index outside its axis (KernelParam::index_errors): a small
// buffer per launch, zero before it and read once the realize's kernels have run, so that a
// realize (or a captured step's replay) that met one raises IndexError before any result is
// kept.

#include <cstdint>
#include <memory>
#include <vector>

#include "codegen/linear.h"
#include "runtime/buffer.h"

namespace kiln {

// The program's index_errors parameter, or -1 where it has none.
int index_errors_param(const LinearProgram& program);

class IndexReport {
 public:
  // A zero-filled report for a launch of `program` (which must have the parameter) with its
  // variables at `values` (program.variables order).
  IndexReport(std::shared_ptr<DeviceContext> context, const LinearProgram& program,
              std::vector<int64_t> values);

  const std::shared_ptr<Buffer>& buffer() const { return buffer_; }
  // Zero again, for another launch (a replay) at `values`.
  void reset(std::vector<int64_t> values);
  // Reads the report (waiting for the launch) and throws IndexError, naming the operation, the
  // index and the axis size, where an index was outside its axis.
  void check() const;

 private:
  std::shared_ptr<Buffer> buffer_;
  // What the message needs of the program (a captured step's replays outlive its cache entry).
  std::string kernel_;
  std::vector<GatherSite> gathers_;
  std::vector<Sym> variables_;
  std::vector<int64_t> values_;
};

}  // namespace kiln
