#!/usr/bin/env bash
# Downloads the Debian 12 packages kiln builds with (spdlog, fmt, Catch2; the Vulkan loader and
# headers, glslang and SPIRV-Tools for the Vulkan device) into .gpu-deps/, for a machine that
# reaches no package registry (the lent GPU machines): scripts/gpu-check.sh unpacks them there
# when the machine lacks them. Run on a Debian 12 machine; .gpu-deps/ is not tracked.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
mkdir -p .gpu-deps
cd .gpu-deps
apt-get download catch2 libspdlog-dev libspdlog1.10 libfmt-dev libfmt9 libxxhash-dev nlohmann-json3-dev \
  libcli11-dev ocl-icd-libopencl1 ocl-icd-opencl-dev opencl-c-headers opencl-clhpp-headers \
  libvulkan1 libvulkan-dev glslang-dev glslang-tools spirv-tools libglvnd0 libglx0 libegl1 libopengl0 \
  libgl1 libgles2
ls -l
