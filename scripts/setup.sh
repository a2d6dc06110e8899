#!/usr/bin/env bash
# Sets up kiln on Debian 12: installs the Debian packages it needs (only those missing), then
# configures and builds it in ./build. Safe to run again.
#
#   scripts/setup.sh          set up and build
#   scripts/setup.sh run      ... then list the devices and run the benchmark on the default device
#   scripts/setup.sh test     ... then run every test and list the devices
set -euo pipefail

mode="${1:-build}"
case "$mode" in
  build | run | test) ;;
  *)
    echo "usage: $0 [run|test]" >&2
    exit 2
    ;;
esac

cd "$(dirname "${BASH_SOURCE[0]}")/.."

# ---- Debian packages ------------------------------------------------------------------------
packages=(
  cmake make gcc g++       # build; the CPU device compiles its kernels with the system C compiler
  catch2                   # tests (Catch2 v2)
  libspdlog-dev libfmt-dev # logging
  libxxhash-dev            # stable hashes: kernel and cache entry names (compiled in, header only)
  nlohmann-json3-dev       # JSON: the conformance report, the KILN_TRACE file (header only)
  libcli11-dev             # the kiln tool's command line (header only)
  ocl-icd-opencl-dev opencl-headers pocl-opencl-icd clinfo  # OpenCL: loader, headers, a CPU driver
  libopenblas0-pthread     # kiln bench: the BLAS that matmul is set beside (dlopen'd, never linked)
  glslang-tools glslang-dev  # GLSL compute shaders to SPIR-V (the Vulkan device's compiler)
  libvulkan-dev mesa-vulkan-drivers vulkan-tools  # Vulkan: loader, headers, lavapipe, vulkaninfo
)

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done

if ((${#missing[@]} > 0)); then
  echo "setup: installing ${missing[*]}"
  if [[ $(id -u) -eq 0 ]]; then
    as_root=()
  elif command -v sudo >/dev/null; then
    as_root=(sudo)
  else
    echo "setup: missing packages (${missing[*]}); run as root or install sudo" >&2
    exit 1
  fi
  "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
  "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# ---- build ----------------------------------------------------------------------------------
jobs="$(nproc)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build -j"$jobs"

# ---- run or test ----------------------------------------------------------------------------
# ctest over build with the given options, then the tests it skipped with their reasons: a test
# that cannot run here (no plugin, no device) is reported skipped, not passed
# (tests/test_support.h), and lists itself in KILN_TEST_SKIP_LOG.
run_tests() {
  local skips status=0
  skips="$(mktemp)"
  KILN_TEST_SKIP_LOG="$skips" ctest --test-dir build --output-on-failure -j2 "$@" || status=$?
  if [[ -s $skips ]]; then
    local where="${KILN_DEVICE:+ (KILN_DEVICE=$KILN_DEVICE${KILN_OPTS:+ KILN_OPTS=$KILN_OPTS})}"
    echo "Skipped here$where:"
    sort -u "$skips" | sort -s -t "$(printf '\t')" -k2,2r |
      awk -F '\t' '{ printf "  %s%s: %s\n", $1, ($2 == "in part" ? " (in part)" : ""), $3 }'
  fi
  rm -f "$skips"
  return "$status"
}

case "$mode" in
  run)
    build/bin/kiln devices
    build/bin/kiln bench
    ;;
  test)
    run_tests
    # The suite again on the OpenCL and Vulkan devices where they run (conformance already covers
    # every device): on Vulkan once with its own opts and once with a GPU's (KILN_OPTS=gpu); on
    # OpenCL with a GPU's only. PoCL's own opts are a CPU's, which the conformance battery and the
    # unit tests that loop over every device already run on it, and each PoCL pass of the suite
    # takes ~450 s of CI's 90 minutes (PoCL compiles a kernel ~12 times slower than lavapipe).
    # The examples name their device themselves; examples/train's short training (~500 kernels)
    # runs once, in the first pass. So do the math functions' ulp bounds, which loop over every
    # device themselves (elementwise: a GPU's opts do not change them; 406 s of the PoCL pass);
    # and on PoCL the random opts lists' test (217 s there), which Vulkan's passes run, as they
    # run the battery under random opts.
    for device in CL VULKAN; do
      if build/bin/kiln devices | grep -qE "^[ *]+$device +available"; then
        passes=(default gpu)
        skip='conformance|install_and_build|CUDA C\+\+ and GLSL|example train|ulp bounds over many inputs'
        if [[ $device == CL ]]; then
          passes=(gpu)
          skip+='|every valid opts list'
        fi
        for opts in "${passes[@]}"; do
          KILN_DEVICE=$device KILN_OPTS=$opts run_tests -E "$skip"
        done
      fi
    done
    # The battery once more with a random valid opts list per kernel (a fixed seed): proves every
    # optimisation on the CPU and on a device with workgroups and local memory (Vulkan), not only
    # the heuristics' choices; on Vulkan also with the opts a GPU's heuristics choose (GRID, fused
    # rows, local tiles, emulated tensor cores), which its default opts never give lavapipe.
    # OpenCL runs the battery with its own opts (ctest above) and its unit tests with a GPU's, not
    # these two passes: PoCL compiles a kernel ~12 times slower than lavapipe (0.17 s a case
    # against 0.014 s), and the two took 27 of CI's 90 minutes. CUDA's compile-only passes below
    # render the GPU opts in a third dialect.
    # The gradient tier (family grad: ~500 cases of backward kernels built from the same ops, the
    # ops the other families run under random opts here) runs with the heuristics' opts on the CPU
    # and Vulkan (ctest above); these passes leave it out for CI's time.
    build/bin/kiln conformance --device CPU --opts random --seed 1 --filter '^(?!grad/)'
    if build/bin/kiln devices | grep -qE "^[ *]+VULKAN +available"; then
      build/bin/kiln conformance --device VULKAN --opts random --seed 1 --filter '^(?!grad/)'
      build/bin/kiln conformance --device VULKAN --opts gpu --filter '^(?!grad/)'
    fi
    # Every case's CUDA kernels rendered and compiled by NVRTC for an H100 (sm_90), where the CUDA
    # toolkit is: no GPU needed (scripts/gpu-check.sh runs them on one). Under random opts, the
    # families whose kernels opts shape most (tiles, locals, GRID, tensor cores; 921 cases, not
    # all 5019: 110 s of CI's 90 minutes).
    if [[ -e build/lib/libkiln_device_cuda.so ]]; then
      build/bin/kiln conformance --device CUDA --compile-only --arch sm_90
      build/bin/kiln conformance --device CUDA --compile-only --arch sm_90 --opts random --seed 1 \
        --filter '^(matmul|reduce|softmax|conv|nn|argreduce|cumsum)/'
    fi
    build/bin/kiln devices
    ;;
esac
