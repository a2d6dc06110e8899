#pragma once
// The device registry: finds device plugins, loads them, and opens devices by name.
//
// Plugins (libkiln_device_<name>.so) are looked for beside libkiln itself and in every folder of
// KILN_PLUGIN_PATH (colon-separated). A plugin that cannot be loaded, has another ABI version or
// finds no device is kept with the reason, so `kiln devices` and error messages can say why.

#include <kiln/device.h>

#include <memory>
#include <string>
#include <vector>

#include "runtime/device_context.h"

namespace kiln {

struct DeviceRecord {
  std::string name;  // "CPU", "CL", "CL:1"; the plugin's file name when it failed to load
  bool available = false;
  bool is_gpu = false;
  std::string reason;  // why unavailable, or what the probe found
  std::string plugin_path;
};

// Every device the plugins report, and every plugin that failed, in discovery order.
std::vector<DeviceRecord> device_records();

// Opens (once) and returns a device; throws DeviceError naming what is available when it can't.
// "NAME@TARGET" opens the NAME plugin's compile-only device for TARGET, e.g. "CUDA@sm_90".
std::shared_ptr<DeviceContext> open_device(const std::string& name);

// The devices opened so far.
std::vector<std::shared_ptr<DeviceContext>> open_devices();

// "cl:0" -> "CL", "cpu" -> "CPU", "CL:1" -> "CL:1", "cuda@SM_90" -> "CUDA@sm_90".
std::string canonical_device_name(const std::string& name);

}  // namespace kiln
