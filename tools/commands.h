#pragma once
// The subcommands of the `kiln` tool. Each adds itself to the tool's command line (its options,
// parsed into state of its own) and returns its subcommand with what runs it once the command
// line is parsed.

#include <functional>

namespace CLI {
class App;
}

namespace kiln::tools {

struct Command {
  CLI::App* app;
  std::function<int()> run;  // returns the exit code
};

Command add_devices_command(CLI::App& kiln);
Command add_bench_command(CLI::App& kiln);
Command add_conformance_command(CLI::App& kiln);
Command add_render_command(CLI::App& kiln);

}  // namespace kiln::tools
