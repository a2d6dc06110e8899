#pragma once
// How much memory the host has, for the CPU device's limits.

#include <cstdint>

namespace kiln::cpu {

struct HostMemory {
  uint64_t physical_bytes = 0;  // RAM
  uint64_t swap_bytes = 0;
};

// Read from sysinfo(2); zeros where it fails.
HostMemory host_memory();

}  // namespace kiln::cpu
