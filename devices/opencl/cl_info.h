#pragma once
// Finding OpenCL devices and reading their properties.

#include <CL/cl.h>

#include <string>
#include <vector>

#include "devices/opencl/cl_check.h"

namespace kiln::opencl {

struct ClDeviceId {
  cl_platform_id platform = nullptr;
  cl_device_id device = nullptr;
};

// Every device of every platform, platforms in the ICD loader's order, then devices in the
// platform's order: CL is the first, CL:1 the second. Empty when no platform is installed.
std::vector<ClDeviceId> all_devices();

std::string platform_string(cl_platform_id platform, cl_platform_info what);
std::string device_string(cl_device_id device, cl_device_info what);

template <typename T>
T device_value(cl_device_id device, cl_device_info what, const char* what_text) {
  T value{};
  check_cl(clGetDeviceInfo(device, what, sizeof(value), &value, nullptr), what_text);
  return value;
}

#define KILN_CL_DEVICE_VALUE(type, device, what) \
  ::kiln::opencl::device_value<type>(device, what, "clGetDeviceInfo(" #what ")")

// Whether the space-separated extension list of the device names `extension`.
bool has_extension(cl_device_id device, const std::string& extension);

// "CPU", "GPU", "accelerator"
std::string device_type_name(cl_device_type type);

// DeviceProperties::hardware_id: the PCI bus from cl_khr_pci_bus_info (or NVIDIA's
// cl_nv_device_attribute_query), else the UUID from cl_khr_device_uuid; empty where the driver
// offers neither (PoCL on the CPU).
std::string hardware_id_of(cl_device_id device);

}  // namespace kiln::opencl
