#include "tools/conformance/report.h"

#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tools/conformance/battery.h"

namespace kiln::conformance {
namespace {

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

int64_t DeviceRun::count(Status status) const {
  int64_t total = 0;
  for (const CaseResult& result : results) total += result.status == status;
  return total;
}

void print_table(FILE* out, const DeviceRun& run, bool color) {
  struct Cell {
    int pass = 0, bad = 0, unsupported = 0;
  };
  std::map<std::string, std::map<ScalarType, Cell>> cells;
  for (size_t index = 0; index < run.results.size(); ++index) {
    Cell& cell = cells[run.cases[index]->family][run.cases[index]->dtype.type()];
    switch (run.results[index].status) {
      case Status::Pass:
        ++cell.pass;
        break;
      case Status::Unsupported:
        ++cell.unsupported;
        break;
      default:
        ++cell.bad;
        break;
    }
  }
  const char* red = color ? "\033[31m" : "";
  const char* dim = color ? "\033[2m" : "";
  const char* reset = color ? "\033[0m" : "";
  std::fprintf(out, "%-12s", "family");
  for (DType dtype : dtypes::all) std::fprintf(out, "%5s", dtype.short_name());
  std::fprintf(out, "  %s\n", "total");
  for (const std::string& family : families()) {
    auto row = cells.find(family);
    if (row == cells.end()) continue;
    Cell total;
    std::fprintf(out, "%-12s", family.c_str());
    for (DType dtype : dtypes::all) {
      auto found = row->second.find(dtype.type());
      if (found == row->second.end()) {
        std::fprintf(out, "%s%5s%s", dim, ".", reset);
        continue;
      }
      const Cell& cell = found->second;
      total.pass += cell.pass;
      total.bad += cell.bad;
      total.unsupported += cell.unsupported;
      if (cell.bad > 0) {
        std::fprintf(out, "%s%4dF%s", red, cell.bad, reset);
      } else if (cell.pass == 0) {
        std::fprintf(out, "%s%5s%s", dim, "u", reset);
      } else {
        std::fprintf(out, "%5d", cell.pass);
      }
    }
    std::fprintf(out, "  %d/%d", total.pass, total.pass + total.bad + total.unsupported);
    if (total.bad) std::fprintf(out, " %s(%d failed)%s", red, total.bad, reset);
    if (total.unsupported) std::fprintf(out, " (%d unsupported)", total.unsupported);
    std::fprintf(out, "\n");
  }
  std::fprintf(out,
               "cells: cases passed; nF: n cases failed or errored; u: unsupported by the device; "
               ".: none\n");
}

std::string reproduction(const Case& item) {
  std::ostringstream code;
  const char* names[] = {"a", "b", "c", "d"};
  for (size_t index = 0; index < item.inputs.size() && index < 4; ++index) {
    const InputSpec& spec = item.inputs[index];
    const std::optional<Layout> layout = make_layout(spec.layout, spec.shape);
    code << "  kiln::Tensor " << names[index] << " = /* " << spec.dtype.name() << " "
         << shape_text(layout ? layout->source : spec.shape) << " values */"
         << (layout ? layout_code(*layout) : "") << ";\n";
  }
  code << "  kiln::Tensor out = " << item.code << ";";
  return code.str();
}

void print_failures(FILE* out, const DeviceRun& run, size_t limit) {
  size_t shown = 0, total = 0;
  for (size_t index = 0; index < run.results.size(); ++index) {
    const CaseResult& result = run.results[index];
    if (result.status != Status::Fail && result.status != Status::Error) continue;
    ++total;
    if (shown >= limit) continue;
    ++shown;
    const Case& item = *run.cases[index];
    std::fprintf(out, "%s %s\n  %s\n%s\n  rerun: kiln conformance --device %s --filter '^%s$'\n",
                 result.status == Status::Fail ? "FAIL " : "ERROR", item.name.c_str(),
                 result.detail.c_str(), reproduction(item).c_str(), run.device.c_str(),
                 item.name.c_str());
  }
  if (total > shown) std::fprintf(out, "... and %zu more (see --json)\n", total - shown);
}

std::string summary_line(const DeviceRun& run) {
  char text[512];
  std::snprintf(
      text, sizeof(text),
      "%s: %zu cases: %lld %s, %lld fail, %lld error, %lld unsupported in %.1f s (%lld "
      "kernels compiled, "
      "%lld from the disk cache; %s)",
      run.device.c_str(), run.results.size(), static_cast<long long>(run.count(Status::Pass)),
      run.compile_only ? "compiled" : "pass", static_cast<long long>(run.count(Status::Fail)),
      static_cast<long long>(run.count(Status::Error)),
      static_cast<long long>(run.count(Status::Unsupported)), run.seconds,
      static_cast<long long>(run.compiles), static_cast<long long>(run.disk_hits),
      run.compile_only ? "compile only: nothing ran"
      : run.guards     ? "guard regions checked"
                       : "guard regions not available (the device has no subregions)");
  return text;
}

void write_json(const std::string& path, const std::vector<DeviceRun>& runs) {
  nlohmann::ordered_json devices = nlohmann::ordered_json::array();
  for (const DeviceRun& run : runs) {
    nlohmann::ordered_json cases = nlohmann::ordered_json::array();
    for (size_t index = 0; index < run.results.size(); ++index) {
      const Case& item = *run.cases[index];
      const CaseResult& result = run.results[index];
      nlohmann::ordered_json entry = {{"name", item.name},
                                      {"family", item.family},
                                      {"op", item.op},
                                      {"dtype", item.dtype.name()},
                                      {"shape", item.shape},
                                      {"layout", item.layout},
                                      {"tolerance", item.tolerance.text()},
                                      {"status", status_name(result.status)},
                                      {"seconds", result.seconds}};
      if (!result.detail.empty()) entry["detail"] = result.detail;
      if (result.worst_index >= 0) {
        entry["worst"] = {{"index", result.worst_index},
                          {"at", result.worst_at},
                          {"expected", result.expected},
                          {"got", result.got}};
      }
      cases.push_back(std::move(entry));
    }
    devices.push_back({{"device", run.device},
                       {"description", run.description},
                       {"guards", run.guards},
                       {"seconds", run.seconds},
                       {"kernels_compiled", run.compiles},
                       {"kernels_from_disk", run.disk_hits},
                       {"summary",
                        {{"cases", run.results.size()},
                         {"pass", run.count(Status::Pass)},
                         {"fail", run.count(Status::Fail)},
                         {"error", run.count(Status::Error)},
                         {"unsupported", run.count(Status::Unsupported)}}},
                       {"cases", std::move(cases)}});
  }
  const nlohmann::ordered_json report = {{"tolerances", tolerance_notes()},
                                         {"devices", std::move(devices)}};
  std::ofstream file(path);
  if (!file) throw Error("[conformance] cannot write " + path);
  // Fields keep the order they are written in (ordered_json). Details quote device output, which
  // need not be UTF-8: replaced, not an exception mid-report.
  file << report.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << "\n";
  if (!file) throw Error("[conformance] cannot write " + path);
}

Progress::Progress(size_t total, const std::string& label)
    : total_(total), label_(label), enabled_(isatty(STDERR_FILENO) != 0) {}

void Progress::update(size_t done, const std::string& current, size_t failures) {
  if (!enabled_) return;
  const double now = now_seconds();
  if (done < total_ && now - last_draw_ < 0.05) return;  // at most 20 redraws a second
  last_draw_ = now;
  constexpr int kWidth = 30;
  const int filled = total_ ? static_cast<int>(kWidth * done / total_) : kWidth;
  std::string bar(static_cast<size_t>(filled), '=');
  if (filled < kWidth) bar += '>' + std::string(static_cast<size_t>(kWidth - filled - 1), ' ');
  std::string name = current.size() > 40 ? current.substr(0, 37) + "..." : current;
  std::fprintf(stderr, "\r\033[K%s [%s] %zu/%zu%s %s", label_.c_str(), bar.c_str(), done, total_,
               failures ? (" (" + std::to_string(failures) + " failed)").c_str() : "",
               name.c_str());
  std::fflush(stderr);
}

void Progress::finish() {
  if (!enabled_) return;
  std::fprintf(stderr, "\r\033[K");
  std::fflush(stderr);
}

}  // namespace kiln::conformance
