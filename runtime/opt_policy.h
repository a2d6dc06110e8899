#pragma once
// Which opts the runtime gives each kernel: the heuristics' choice (the default), none
// (KILN_NOOPT=1, for debugging), a random valid list per kernel (kiln conformance --opts random,
// which proves every opt on every device), or the heuristics' choice for a GPU on a device with
// workgroups that is not one (gpu: PoCL and lavapipe then run what a GPU would: GRID, fused rows,
// local tiles, neighbouring reads). KILN_OPTS=default|none|random:<seed>|gpu selects one from the
// environment. KILN_TENSOR_CORES=0 keeps every policy off the matrix units (TC), so that a wrong
// result on a GPU can be traced to them or cleared of them.

#include <cstdint>
#include <string>

#include "codegen/opt_settings.h"
#include "codegen/opt_target.h"
#include "runtime/device.h"

namespace kiln {

// From KILN_OPTS, KILN_NOOPT and KILN_TENSOR_CORES on first use (an invalid value is an Error),
// unless set.
OptSettings opt_settings();
// KILN_TENSOR_CORES: whether policies may choose TC (true when unset; an invalid value is an
// Error).
bool tensor_cores_from_environment();
// Replaces them; under KILN_TENSOR_CORES=0 TC stays off whatever `settings` say.
void set_opt_settings(const OptSettings& settings);

// What `device` offers the optimiser.
OptTarget opt_target(const Device& device);
// What a device with these properties, writing kernels in `dialect`, offers it (a device need
// not be open: `kiln render` describes targets it does not have).
OptTarget opt_target(const std::string& name, const DeviceProperties& properties,
                     const Dialect& dialect);
// What the optimiser targets on `device` under `settings`: the device's own, or under the gpu
// policy a GPU with the device's limits, where the device launches workgroups; without tensor
// cores where the settings say so.
OptTarget opt_target(const Device& device, const OptSettings& settings);
OptTarget with_settings(OptTarget target, const OptSettings& settings);

}  // namespace kiln
