#include "runtime/opt_policy.h"

#include <kiln/error.h>

#include <atomic>
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
  const OptSettings parsed = parse_opt_settings(value, "KILN_OPTS");
  settings.policy = parsed.policy;
  settings.seed = parsed.seed;
  return settings;
}

std::mutex settings_mutex;
std::optional<OptSettings> current_settings;
// Raised by each change: every realize reads the settings, and a thread keeps its own copy while
// this is unchanged rather than meet other threads on settings_mutex.
std::atomic<uint64_t> settings_version{1};

}  // namespace

bool tensor_cores_from_environment() {
  return switch_from_environment("KILN_TENSOR_CORES", "no tensor cores",
                                 "where the device has them");
}

OptSettings opt_settings() {
  thread_local uint64_t copied_version = 0;
  thread_local OptSettings copy;
  if (copied_version == settings_version.load(std::memory_order_acquire)) return copy;
  std::lock_guard<std::mutex> lock(settings_mutex);
  if (!current_settings) current_settings = settings_from_environment();
  copy = *current_settings;
  copied_version = settings_version.load(std::memory_order_relaxed);
  return copy;
}

void set_opt_settings(const OptSettings& settings) {
  OptSettings effective = settings;
  // KILN_TENSOR_CORES=0 holds for settings made in code too: it rules TC out everywhere.
  effective.tensor_cores = settings.tensor_cores && tensor_cores_from_environment();
  std::lock_guard<std::mutex> lock(settings_mutex);
  current_settings = effective;
  settings_version.fetch_add(1, std::memory_order_release);
}

OptTarget opt_target(const Device& device) {
  return opt_target(device.name(), device.properties(), device.dialect());
}

OptTarget opt_target(const std::string& name, const DeviceProperties& properties,
                     const Dialect& dialect) {
  OptTarget target;
  target.device = name;
  target.architecture = properties.architecture;
  if (!target.architecture.empty() && target.device.find(target.architecture) == std::string::npos)
    target.device += " (" + target.architecture + ")";
  target.loop_launch = dialect.launch_style == Dialect::LaunchStyle::kCpuLoop;
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
  target.max_loop_iterations = properties.max_loop_iterations;
  target.grid = static_cast<bool>(dialect.atomic_increment) && !target.loop_launch;
  target.vector_loads = !dialect.vector_widths.empty();
  // A dialect with matrix fragments renders TC for the device's units (where it has them);
  // others emulate them.
  const bool fragments = static_cast<bool>(dialect.mma);
  target.native_tensor_cores = fragments && properties.tensor_cores;
  target.tensor_cores = !target.loop_launch && target.local_memory_bytes > 0 &&
                        (!fragments || properties.tensor_cores);
  return target;
}

OptTarget opt_target(const Device& device, const OptSettings& settings) {
  return with_settings(opt_target(device), settings);
}

OptTarget with_settings(OptTarget target, const OptSettings& settings) {
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
