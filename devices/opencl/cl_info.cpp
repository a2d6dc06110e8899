#include "devices/opencl/cl_info.h"

#include <CL/cl_ext.h>

#include <cstdio>
#include <sstream>

#include "runtime/device.h"

namespace kiln::opencl {
namespace {

// The ICD loader's status for "no platform installed" (cl_khr_icd); not in every cl.h.
constexpr cl_int kPlatformNotFound = -1001;

// OpenCL strings come with their terminating NUL inside the reported size.
std::string trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\0' || text.back() == ' ')) text.pop_back();
  return text;
}

}  // namespace

std::vector<ClDeviceId> all_devices() {
  cl_uint platform_count = 0;
  const cl_int status = clGetPlatformIDs(0, nullptr, &platform_count);
  if (status == kPlatformNotFound || (status == CL_SUCCESS && platform_count == 0)) return {};
  check_cl(status, "clGetPlatformIDs(0, nullptr, &platform_count)");
  std::vector<cl_platform_id> platforms(platform_count);
  KILN_CL_CHECK(clGetPlatformIDs(platform_count, platforms.data(), nullptr));
  std::vector<ClDeviceId> found;
  for (cl_platform_id platform : platforms) {
    cl_uint device_count = 0;
    const cl_int devices_status =
        clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 0, nullptr, &device_count);
    if (devices_status == CL_DEVICE_NOT_FOUND || device_count == 0) continue;
    check_cl(devices_status,
             "clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 0, nullptr, &device_count)");
    std::vector<cl_device_id> devices(device_count);
    KILN_CL_CHECK(
        clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, device_count, devices.data(), nullptr));
    for (cl_device_id device : devices) found.push_back({platform, device});
  }
  return found;
}

std::string platform_string(cl_platform_id platform, cl_platform_info what) {
  size_t size = 0;
  KILN_CL_CHECK(clGetPlatformInfo(platform, what, 0, nullptr, &size));
  std::string text(size, '\0');
  KILN_CL_CHECK(clGetPlatformInfo(platform, what, size, text.data(), nullptr));
  return trimmed(std::move(text));
}

std::string device_string(cl_device_id device, cl_device_info what) {
  size_t size = 0;
  KILN_CL_CHECK(clGetDeviceInfo(device, what, 0, nullptr, &size));
  std::string text(size, '\0');
  KILN_CL_CHECK(clGetDeviceInfo(device, what, size, text.data(), nullptr));
  return trimmed(std::move(text));
}

bool has_extension(cl_device_id device, const std::string& extension) {
  std::istringstream words(device_string(device, CL_DEVICE_EXTENSIONS));
  std::string word;
  while (words >> word) {
    if (word == extension) return true;
  }
  return false;
}

std::string device_type_name(cl_device_type type) {
  if (type & CL_DEVICE_TYPE_GPU) return "GPU";
  if (type & CL_DEVICE_TYPE_ACCELERATOR) return "accelerator";
  if (type & CL_DEVICE_TYPE_CPU) return "CPU";
  return "other";
}

std::string hardware_id_of(cl_device_id device) {
  if (has_extension(device, "cl_khr_pci_bus_info")) {
    cl_device_pci_bus_info_khr bus{};
    if (clGetDeviceInfo(device, CL_DEVICE_PCI_BUS_INFO_KHR, sizeof(bus), &bus, nullptr) ==
        CL_SUCCESS)
      return pci_hardware_id(bus.pci_domain, bus.pci_bus, bus.pci_device, bus.pci_function);
  }
  if (has_extension(device, "cl_nv_device_attribute_query")) {
    // cl_ext.h of Debian 12 lacks NVIDIA's names: CL_DEVICE_PCI_BUS_ID_NV, _SLOT_ID_NV,
    // _DOMAIN_ID_NV.
    cl_uint bus = 0, slot = 0, domain = 0;
    if (clGetDeviceInfo(device, 0x4008, sizeof(bus), &bus, nullptr) == CL_SUCCESS &&
        clGetDeviceInfo(device, 0x4009, sizeof(slot), &slot, nullptr) == CL_SUCCESS) {
      clGetDeviceInfo(device, 0x400A, sizeof(domain), &domain, nullptr);  // newer drivers only
      return pci_hardware_id(domain, bus, slot >> 3, slot & 7);
    }
  }
  if (has_extension(device, "cl_khr_device_uuid")) {
    cl_uchar uuid[CL_UUID_SIZE_KHR] = {};
    if (clGetDeviceInfo(device, CL_DEVICE_UUID_KHR, sizeof(uuid), uuid, nullptr) == CL_SUCCESS)
      return "UUID " + uuid_text(uuid);
  }
  return "";
}

}  // namespace kiln::opencl
