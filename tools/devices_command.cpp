// kiln devices: every device the plugins report, whether it can run here, what it is, and for
// the ones that can't, why.

#include <kiln/dtype.h>
#include <kiln/error.h>
#include <kiln/tensor.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "runtime/registry.h"
#include "tools/commands.h"

namespace kiln::tools {
namespace {

std::string dtype_list(const DeviceProperties& properties) {
  if (properties.dtypes.size() == std::size(dtypes::all)) return "all";
  std::string text;
  for (DType dtype : dtypes::all) {
    if (properties.dtypes.count(dtype.type()))
      text += (text.empty() ? "" : " ") + std::string(dtype.short_name());
  }
  return text.empty() ? "none" : text;
}

// One device as a row of the listing.
struct Line {
  std::string marker, name, status, kind, driver, description, dtypes, hardware;
  std::string note;  // the reason for an unavailable device; the probe's finding for --verbose
  std::string plugin_path;
  bool available = false;
};

Line describe(const DeviceRecord& record, const std::string& default_name) {
  Line line;
  line.name = record.name;
  line.marker = record.name == default_name ? "*" : " ";
  line.plugin_path = record.plugin_path;
  if (!record.available) {
    line.status = "unavailable";
    line.note = record.reason;
    return line;
  }
  try {
    // Opening the device is what a user's first tensor does: report what that would meet.
    const DeviceProperties& properties = open_device(record.name)->device().properties();
    line.available = true;
    line.status = "available";
    line.kind = properties.kind == DeviceKind::GPU ? "GPU" : "CPU";
    line.driver = properties.driver;
    line.description = properties.description;
    line.dtypes = dtype_list(properties);
    line.hardware = properties.hardware_id.empty() ? "-" : properties.hardware_id;
    line.note = record.reason;
  } catch (const Error& error) {
    line.status = "unavailable";
    line.note = std::string("failed to open: ") + error.what();
  }
  return line;
}

int devices_main(bool verbose) {
  // The default is resolved first so it can be marked; a KILN_DEVICE that can't run here is
  // reported after the listing, which shows what can.
  std::string default_name;
  std::optional<std::string> default_problem;
  try {
    default_name = default_device();
  } catch (const Error& error) {
    default_problem = error.what();
  }

  const std::vector<DeviceRecord> records = device_records();
  std::vector<Line> lines;
  for (const DeviceRecord& record : records) lines.push_back(describe(record, default_name));
  // Unset KILN_DEVICE falls back to "CPU" without opening it: say so when that can't run either.
  const bool default_runs = std::any_of(lines.begin(), lines.end(), [&](const Line& line) {
    return line.available && line.name == default_name;
  });
  if (!default_problem && !default_runs) {
    default_problem = "the default device " + default_name + " is not available here";
  }

  Line header;
  header.marker = " ";
  header.name = "device";
  header.status = "status";
  header.kind = "kind";
  header.driver = "driver";
  header.description = "description";
  header.dtypes = "dtypes";
  header.hardware = "hardware";
  size_t name_width = header.name.size(), status_width = header.status.size(),
         kind_width = header.kind.size();
  size_t driver_width = header.driver.size(), description_width = header.description.size();
  size_t dtypes_width = header.dtypes.size();
  for (const Line& line : lines) {
    name_width = std::max(name_width, line.name.size());
    status_width = std::max(status_width, line.status.size());
    kind_width = std::max(kind_width, line.kind.size());
    driver_width = std::max(driver_width, line.driver.size());
    description_width = std::max(description_width, line.description.size());
    dtypes_width = std::max(dtypes_width, line.dtypes.size());
  }
  auto print_line = [&](const Line& line) {
    std::printf("%s %-*s  %-*s  ", line.marker.c_str(), static_cast<int>(name_width),
                line.name.c_str(), static_cast<int>(status_width), line.status.c_str());
    if (line.available || &line == &header) {
      std::printf("%-*s  %-*s  %-*s  %-*s  %s\n", static_cast<int>(kind_width), line.kind.c_str(),
                  static_cast<int>(driver_width), line.driver.c_str(),
                  static_cast<int>(description_width), line.description.c_str(),
                  static_cast<int>(dtypes_width), line.dtypes.c_str(), line.hardware.c_str());
    } else {
      std::printf("%s\n", line.note.c_str());  // the reason takes the rest of the line
    }
    if (verbose && &line != &header) {
      const std::string indent(name_width + 4, ' ');
      if (!line.plugin_path.empty())
        std::printf("%splugin: %s\n", indent.c_str(), line.plugin_path.c_str());
      if (line.available && !line.note.empty())
        std::printf("%sprobe: %s\n", indent.c_str(), line.note.c_str());
    }
  };

  print_line(header);
  for (const Line& line : lines) print_line(line);
  if (lines.empty())
    std::printf("  (no device plugin found; KILN_PLUGIN_PATH adds folders to search)\n");

  if (default_problem) {
    std::fflush(stdout);
    std::fprintf(stderr, "\nkiln devices: no default device: %s\n", default_problem->c_str());
    return 1;
  }
  const char* requested = std::getenv("KILN_DEVICE");
  std::printf(
      "\n* default: %s (%s)\n", default_name.c_str(),
      requested && *requested ? "from KILN_DEVICE" : "KILN_DEVICE unset: the first GPU, else CPU");
  return 0;
}

}  // namespace

Command add_devices_command(CLI::App& kiln) {
  CLI::App* command = kiln.add_subcommand(
      "devices", "list every device, its kind and driver, or why it is unavailable");
  command->footer(
      "Lists every device kiln's plugins report: its kind, driver, dtypes and hardware (the PCI\n"
      "bus or UUID, the same through every API that reaches one GPU), or why it is unavailable.\n"
      "'*' marks the default device (KILN_DEVICE, else the first GPU, else CPU).\n\n"
      "Exit status: 1 when KILN_DEVICE names a device that cannot run here.");
  auto verbose = std::make_shared<bool>(false);
  command->add_flag("-v,--verbose", *verbose,
                    "also show each device's plugin file and what its probe found");
  return {command, [verbose] { return devices_main(*verbose); }};
}

}  // namespace kiln::tools
