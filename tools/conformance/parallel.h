#pragma once
// Running the battery across worker processes.
//
// Each distinct kernel is compiled once by the device's compiler; kiln compiles under a lock, so
// one process compiles one kernel at a time. Workers (this executable, `kiln conformance
// --worker i/N`) each run every N-th case and stream their results back through a pipe, so N
// kernels compile at once. A worker that crashes (a kernel that faults takes its process down)
// costs only the case it was running: that case is reported as an error and a new worker resumes
// after it. So does a worker that spends longer than the plan's case timeout on one case, which
// the parent kills.

#include <functional>
#include <string>
#include <vector>

#include "tools/conformance/report.h"

namespace kiln::conformance {

struct WorkerPlan {
  std::string executable;                // the kiln tool (/proc/self/exe)
  std::vector<std::string> select_args;  // the arguments that select the same cases (--filter ...)
  int jobs = 1;
  // A worker still on one case after this many seconds is killed and the case reported as an
  // error (a kernel that never ends would otherwise hang the battery); 0: no limit.
  int case_timeout_seconds = 0;
};

// Runs `cases` on `device` in `plan.jobs` worker processes. `on_result(done, name, failures)`
// reports progress.
DeviceRun run_in_workers(const std::string& device, const std::vector<const Case*>& cases,
                         const WorkerPlan& plan,
                         const std::function<void(size_t, const std::string&, size_t)>& on_result);

// The worker side: runs cases shard, shard + count, ... after `resume_after` and writes one
// protocol line per case to stdout. Returns the exit code.
int worker_main(const std::string& device, const std::vector<const Case*>& cases, int shard,
                int count, long resume_after);

}  // namespace kiln::conformance
