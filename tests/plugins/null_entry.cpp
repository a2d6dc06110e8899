// A kiln plugin of the right ABI and layout whose table leaves out what the registry calls: with
// KILN_TEST_NULL_NAME no device name, with KILN_TEST_NULL_PROBE no probe function, with
// KILN_TEST_NULL_CREATE no create function. The registry must list it as unusable, with the
// reason, rather than call through the null pointer.

#include "runtime/plugin.h"

namespace {

[[maybe_unused]] kiln::ProbeResult probe() {
  kiln::ProbeResult result;
  result.device_count = 1;
  result.reason = "one pretend device";
  return result;
}

[[maybe_unused]] std::unique_ptr<kiln::Device> create(int) {
  return nullptr;
}

#if defined(KILN_TEST_NULL_NAME)
const kiln::PluginEntry kEntry = {
    kiln::kPluginAbiVersion, kiln::plugin_layout_fingerprint(), nullptr, &probe, &create, nullptr};
#elif defined(KILN_TEST_NULL_PROBE)
const kiln::PluginEntry kEntry = {kiln::kPluginAbiVersion,
                                  kiln::plugin_layout_fingerprint(),
                                  "NULLPROBE",
                                  nullptr,
                                  &create,
                                  nullptr};
#else
const kiln::PluginEntry kEntry = {kiln::kPluginAbiVersion,
                                  kiln::plugin_layout_fingerprint(),
                                  "NULLCREATE",
                                  &probe,
                                  nullptr,
                                  nullptr};
#endif

}  // namespace

extern "C" __attribute__((visibility("default"))) const kiln::PluginEntry* kiln_plugin_entry() {
  return &kEntry;
}
