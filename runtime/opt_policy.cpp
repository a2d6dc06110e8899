#include "runtime/opt_policy.h"

#include <kiln/error.h>

#include <cstdlib>
#include <mutex>
#include <optional>

#include "runtime/environment.h"

namespace kiln {
namespace {

OptSettings settings_from_environment() {
  OptSettings settings;
  if (switch_from_environment("KILN_NOOPT", "the heuristics' opts", "no opts for any kernel",
                              /*unset=*/false))
    settings.policy = OptPolicy::None;
  settings.tensor_cores = tensor_cores_from_environment();
  const char* value = std::getenv("KILN_OPTS");
  if (!value || !*value) return settings;
  const std::string text = value;
  if (text == "default") {
    settings.policy = OptPolicy::Default;
  } else if (text == "none") {
    settings.policy = OptPolicy::None;
  } else if (text == "gpu") {
    settings.policy = OptPolicy::Gpu;
  } else if (text.rfind("random", 0) == 0) {
    settings.policy = OptPolicy::Random;
    if (text.size() > 6) {
      char* end = nullptr;
      const std::string seed = text.substr(7);
      settings.seed = std::strtoull(seed.c_str(), &end, 10);
      if (text[6] != ':' || seed.empty() || *end != '\0')
        throw Error("[KILN_OPTS] '" + text + "' is not valid: random takes ':<seed>' (digits)");
    }
  } else {
    throw Error("[KILN_OPTS] '" + text + "' is not valid: use default, none, random:<seed> or gpu");
  }
  return settings;
}

std::mutex settings_mutex;
std::optional<OptSettings> current_settings;

}  // namespace

bool tensor_cores_from_environment() {
  return switch_from_environment("KILN_TENSOR_CORES", "no tensor cores",
                                 "where the device has them");
}

OptSettings opt_settings() {
  std::lock_guard<std::mutex> lock(settings_mutex);
  if (!current_settings) current_settings = settings_from_environment();
  return *current_settings;
}

void set_opt_settings(const OptSettings& settings) {
  OptSettings effective = settings;
  // KILN_TENSOR_CORES=0 holds for settings made in code too: it rules TC out everywhere.
  effective.tensor_cores = settings.tensor_cores && tensor_cores_from_environment();
  std::lock_guard<std::mutex> lock(settings_mutex);
  current_settings = effective;
}

std::string opt_settings_to_string(const OptSettings& settings) {
  switch (settings.policy) {
    case OptPolicy::Default:
      return "default";
    case OptPolicy::None:
      return "none";
    case OptPolicy::Random:
      return "random:" + std::to_string(settings.seed);
    case OptPolicy::Gpu:
      return "gpu";
  }
  return "?";
}

OptTarget opt_target(const Device& device) {
  const DeviceProperties& properties = device.properties();
  OptTarget target;
  target.device = device.name();
  target.architecture = properties.architecture;
  if (!target.architecture.empty() && target.device.find(target.architecture) == std::string::npos)
    target.device += " (" + target.architecture + ")";
  target.loop_launch = device.dialect().launch_style == Dialect::LaunchStyle::kCpuLoop;
  target.is_gpu = properties.kind == DeviceKind::GPU;
  target.max_workgroup_size = properties.max_workgroup_size;
  for (int dim = 0; dim < 3; ++dim) {
    target.max_workgroup_dims[dim] = properties.max_workgroup_dims[dim];
    target.max_workgroups[dim] = properties.max_workgroups[dim];
  }
  target.local_memory_bytes = properties.local_memory_bytes;
  target.compute_units = properties.compute_units;
  target.simd_width = properties.warp_width;
  target.max_kernel_buffers = properties.max_kernel_buffers;
  target.grid = static_cast<bool>(device.dialect().atomic_increment) && !target.loop_launch;
  target.vector_loads = !device.dialect().vector_widths.empty();
  // A dialect with matrix fragments renders TC for the device's units (where it has them);
  // others emulate them.
  const bool fragments = static_cast<bool>(device.dialect().mma);
  target.native_tensor_cores = fragments && properties.tensor_cores;
  target.tensor_cores = !target.loop_launch && target.local_memory_bytes > 0 &&
                        (!fragments || properties.tensor_cores);
  return target;
}

OptTarget opt_target(const Device& device, const OptSettings& settings) {
  OptTarget target = opt_target(device);
  if (settings.policy == OptPolicy::Gpu && !target.loop_launch) {
    // A GPU's choices, TC included: where the device has no matrix units its dialect emulates
    // them.
    target.is_gpu = true;
    target.native_tensor_cores = target.tensor_cores;
  }
  if (!settings.tensor_cores) target.tensor_cores = target.native_tensor_cores = false;
  return target;
}

}  // namespace kiln
