// kiln: the command-line tool.
//   kiln devices       every device, its kind and driver, or why it is unavailable
//   kiln bench         timed workloads beside the machine's own limits
//   kiln conformance   which ops and dtypes a device gets right
//   kiln render        a program's kernels as source for any dialect and target, no device

#include <kiln/error.h>

#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "tools/commands.h"

namespace {

using kiln::tools::Command;

// "kiln conformance" for the subcommand being parsed, else "kiln": the prefix of an error.
std::string command_line_name(const std::vector<Command>& commands) {
  for (const Command& command : commands)
    if (command.app->parsed()) return "kiln " + command.app->get_name();
  return "kiln";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App kiln("kiln: a lazy tensor runtime's command-line tool", "kiln");
  kiln.footer("'kiln <command> --help' describes a command's options.");
  kiln.require_subcommand(1);
  // An option given twice takes its last value, as the tool always has (--device, which may be
  // repeated, says otherwise).
  kiln.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  kiln.get_formatter()->column_width(22);
  const std::vector<Command> commands = {
      kiln::tools::add_devices_command(kiln), kiln::tools::add_bench_command(kiln),
      kiln::tools::add_conformance_command(kiln), kiln::tools::add_render_command(kiln)};

  if (argc < 2) {
    std::fputs(kiln.help().c_str(), stderr);
    return 2;
  }
  try {
    kiln.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    // --help: the help of the command it follows, on stdout.
    if (error.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return kiln.exit(error);
    const std::string name = command_line_name(commands);
    // CLI11 reports a word that names no subcommand as a missing subcommand: name the word.
    if (name == "kiln" && argv[1][0] != '-') {
      std::fprintf(stderr, "kiln: unknown command '%s'\n\n%s", argv[1], kiln.help().c_str());
      return 2;
    }
    std::fprintf(stderr, "%s: %s\nRun '%s --help' for its options.\n", name.c_str(), error.what(),
                 name.c_str());
    return 2;
  }

  for (const Command& command : commands) {
    if (!command.app->parsed()) continue;
    const std::string name = command.app->get_name();
    try {
      return command.run();
    } catch (const kiln::Error& error) {
      std::fprintf(stderr, "kiln %s: %s\n", name.c_str(), error.what());
      return 1;
    } catch (const std::exception& error) {
      std::fprintf(stderr, "kiln %s: internal error: %s\n", name.c_str(), error.what());
      return 1;
    }
  }
  return 2;  // unreachable: a subcommand is required
}
