#pragma once
// What a run found, as a summary table on the terminal, a list of failures, a progress bar while
// it runs, and JSON for machines.

#include <cstdio>
#include <string>
#include <vector>

#include "tools/conformance/case.h"

namespace kiln::conformance {

struct DeviceRun {
  std::string device;
  std::string description;    // the device's own name and driver
  bool guards = false;        // out-of-bounds writes detected
  bool compile_only = false;  // kernels compiled, none ran: a pass means "compiled"
  std::vector<const Case*> cases;
  std::vector<CaseResult> results;  // one per case
  double seconds = 0;
  int64_t compiles = 0, disk_hits = 0;

  int64_t count(Status status) const;
  bool ok() const { return count(Status::Fail) == 0 && count(Status::Error) == 0; }
};

// op family x dtype: passes, or "nF" where n cases failed or errored, "u" where all unsupported.
void print_table(FILE* out, const DeviceRun& run, bool color);
// One block per failing or erroring case: name, detail, reproduction.
void print_failures(FILE* out, const DeviceRun& run, size_t limit);
// "CPU: 2113 cases, 2100 pass, 3 fail, 0 error, 10 unsupported in 81.2 s (1890 kernels compiled,
// ...)"
std::string summary_line(const DeviceRun& run);
void write_json(const std::string& path, const std::vector<DeviceRun>& runs);
// The case as a kiln C++ snippet that rebuilds its graph.
std::string reproduction(const Case& item);

// A one-line progress bar on stderr, drawn only when stderr is a terminal.
class Progress {
 public:
  explicit Progress(size_t total, const std::string& label);
  void update(size_t done, const std::string& current, size_t failures);
  void finish();

 private:
  size_t total_;
  std::string label_;
  bool enabled_;
  double last_draw_ = -1;
};

}  // namespace kiln::conformance
