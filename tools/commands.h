#pragma once
// The subcommands of the `kiln` tool. Each takes the words after its name and returns the exit
// code.

#include <string>
#include <vector>

namespace kiln::tools {

int devices_main(const std::vector<std::string>& args);
int bench_main(const std::vector<std::string>& args);
int conformance_main(const std::vector<std::string>& args);

}  // namespace kiln::tools
