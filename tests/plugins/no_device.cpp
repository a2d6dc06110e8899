// A kiln plugin that loads but finds no device here, like a driver plugin on a machine without
// the hardware: `kiln devices` must show the reason and KILN_DEVICE=NODEVICE must fail with it.

#include "runtime/plugin.h"

namespace {

kiln::ProbeResult probe() {
  kiln::ProbeResult result;
  result.reason = "no NODEVICE hardware here (a deliberately empty test plugin)";
  return result;
}

std::unique_ptr<kiln::Device> create(int) {
  return nullptr;
}

const kiln::PluginEntry kEntry = {kiln::kPluginAbiVersion,
                                  kiln::plugin_layout_fingerprint(),
                                  "NODEVICE",
                                  &probe,
                                  &create,
                                  nullptr};

}  // namespace

extern "C" __attribute__((visibility("default"))) const kiln::PluginEntry* kiln_plugin_entry() {
  return &kEntry;
}
