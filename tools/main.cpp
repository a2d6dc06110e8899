// kiln: the command-line tool.
//   kiln devices       every device, its kind and driver, or why it is unavailable
//   kiln bench         timed workloads beside the machine's own limits
//   kiln conformance   which ops and dtypes a device gets right

#include <kiln/error.h>

#include <cstdio>
#include <cstring>
#include <exception>

#include "tools/commands.h"

namespace {

struct Command {
  const char* name;
  const char* summary;
  int (*run)(const std::vector<std::string>&);
};

const Command kCommands[] = {
    {"devices", "list every device, its kind and driver, or why it is unavailable",
     kiln::tools::devices_main},
    {"bench", "time standard workloads on a device beside the machine's limits",
     kiln::tools::bench_main},
    {"conformance", "check every op and dtype on a device against a reference",
     kiln::tools::conformance_main},
};

void print_usage(FILE* out) {
  std::fprintf(out, "usage: kiln <command> [options]\n\ncommands:\n");
  for (const Command& command : kCommands)
    std::fprintf(out, "  %-12s %s\n", command.name, command.summary);
  std::fprintf(out, "\n'kiln <command> --help' describes a command's options.\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    print_usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  for (const Command& command : kCommands) {
    if (std::strcmp(argv[1], command.name) != 0) continue;
    try {
      return command.run(std::vector<std::string>(argv + 2, argv + argc));
    } catch (const kiln::Error& error) {
      std::fprintf(stderr, "kiln %s: %s\n", command.name, error.what());
      return 1;
    } catch (const std::exception& error) {
      std::fprintf(stderr, "kiln %s: internal error: %s\n", command.name, error.what());
      return 1;
    }
  }
  std::fprintf(stderr, "kiln: unknown command '%s'\n\n", argv[1]);
  print_usage(stderr);
  return 2;
}
