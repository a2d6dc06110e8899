#pragma once
// Devices: which ones can run here, and the one a tensor goes to when none is named.
//
// Devices come from plugins that kiln loads on first use (README.md: "Devices"). A device is
// named "NAME" or "NAME:N" (the plugin's device N, counted from 0; "NAME:0" is "NAME"), in any
// case: "CPU", "CL", "CL:1", "CUDA", "VULKAN:1"; "NAME@TARGET" ("CUDA@sm_90") is a device that
// compiles for TARGET and runs nothing.
//
// The default device is chosen once per process, on the first call of default_device() (or of
// anything that uses it: a tensor or memory call given no device). KILN_DEVICE, when set and not
// empty, names it; a name that is unknown, malformed or unavailable here throws DeviceError
// saying why and listing the devices that are available. Unset, it is the first available GPU in
// the order devices() lists them, else "CPU". Every function is safe to call from any thread.

#include <string>
#include <vector>

namespace kiln {

// Names of the devices that can run here ("CPU", "CL", "CL:1", ...).
std::vector<std::string> devices();
// KILN_DEVICE when set (an unknown or unavailable name throws DeviceError), else the first GPU,
// else "CPU".
std::string default_device();

}  // namespace kiln
