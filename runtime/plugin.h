#pragma once
// The one entry point of a device plugin. A plugin is a shared library named
// libkiln_device_<name>.so that exports
//
//   extern "C" const kiln::PluginEntry* kiln_plugin_entry(void);
//
// The registry dlopens it, checks the ABI version, asks `probe` how many devices it can drive
// here (and why none, if none), and calls `create` for the one a user selects ("CL", "CL:1"), or
// `create_compile_only` for "NAME@TARGET".

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/device.h"

namespace kiln {

// Bump whenever any interface in runtime/device.h or codegen/dialect.h changes layout.
inline constexpr uint32_t kPluginAbiVersion = 13;

struct ProbeResult {
  int device_count = 0;  // 0: unavailable here
  std::string reason;    // why unavailable, or a short description of what was found
  bool is_gpu = false;   // whether these devices are preferred as the default
};

// A fingerprint of the layouts a plugin and kiln share: the structs passed across and the
// standard library's string and vector. It catches a plugin built against another kiln's headers
// or another standard library even when nobody bumped kPluginAbiVersion.
inline constexpr uint32_t plugin_layout_fingerprint() {
  const size_t sizes[] = {sizeof(Dialect),          sizeof(DeviceLimits),
                          sizeof(DeviceProperties), sizeof(LaunchRequest),
                          sizeof(LaunchDims),       sizeof(ProbeResult),
                          sizeof(std::string),      sizeof(std::vector<DeviceMemory>)};
  uint32_t hash = 2166136261u;
  for (size_t size : sizes) hash = (hash ^ static_cast<uint32_t>(size)) * 16777619u;
  return hash;
}

struct PluginEntry {
  uint32_t abi_version;  // first, so that every version can read it
  uint32_t layout;       // plugin_layout_fingerprint() as the plugin was built
  const char* name;      // the device name prefix: "CPU", "CL"
  ProbeResult (*probe)();
  std::unique_ptr<Device> (*create)(int index);
  // A compile-only device (DeviceProperties::compile_only) for `target`, such as "sm_90"; it
  // needs no hardware. nullptr where the plugin has none.
  std::unique_ptr<Device> (*create_compile_only)(const std::string& target);
};

}  // namespace kiln

#define KILN_PLUGIN_ENTRY_SYMBOL "kiln_plugin_entry"
