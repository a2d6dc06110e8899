#include "devices/cpu/host_memory.h"

#include <sys/sysinfo.h>

namespace kiln::cpu {

HostMemory host_memory() {
  HostMemory memory;
  struct sysinfo info {};
  if (sysinfo(&info) != 0) return memory;
  const uint64_t unit = info.mem_unit ? info.mem_unit : 1;
  memory.physical_bytes = static_cast<uint64_t>(info.totalram) * unit;
  memory.swap_bytes = static_cast<uint64_t>(info.totalswap) * unit;
  return memory;
}

}  // namespace kiln::cpu
