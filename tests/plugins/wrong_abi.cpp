// A kiln plugin built for another ABI version: the registry must refuse it without calling
// anything but the entry point, and say which versions differ.

#include "runtime/plugin.h"

namespace {

constexpr uint32_t kWrongAbiVersion = kiln::kPluginAbiVersion + 1000;

kiln::ProbeResult probe() {
  return {};
}
std::unique_ptr<kiln::Device> create(int) {
  return nullptr;
}

const kiln::PluginEntry kEntry = {kWrongAbiVersion, "WRONGABI", &probe, &create};

}  // namespace

extern "C" __attribute__((visibility("default"))) const kiln::PluginEntry* kiln_plugin_entry() {
  return &kEntry;
}
