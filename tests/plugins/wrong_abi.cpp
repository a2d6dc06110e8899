// A kiln plugin built for another ABI version (or, with KILN_TEST_WRONG_LAYOUT, against headers
// with other layouts): the registry must refuse it without calling anything but the entry point,
// and say what differs.

#include "runtime/plugin.h"

namespace {

constexpr uint32_t kWrongAbiVersion = kiln::kPluginAbiVersion + 1000;

kiln::ProbeResult probe() {
  return {};
}
std::unique_ptr<kiln::Device> create(int) {
  return nullptr;
}

#ifdef KILN_TEST_WRONG_LAYOUT
// The right version, built against headers whose layouts differ.
const kiln::PluginEntry kEntry = {kiln::kPluginAbiVersion,
                                  kiln::plugin_layout_fingerprint() + 1,
                                  "WRONGLAYOUT",
                                  &probe,
                                  &create,
                                  nullptr};
#else
const kiln::PluginEntry kEntry = {
    kWrongAbiVersion, kiln::plugin_layout_fingerprint(), "WRONGABI", &probe, &create, nullptr};
#endif

}  // namespace

extern "C" __attribute__((visibility("default"))) const kiln::PluginEntry* kiln_plugin_entry() {
  return &kEntry;
}
