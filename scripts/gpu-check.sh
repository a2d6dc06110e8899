#!/usr/bin/env bash
# The whole check on a machine with an NVIDIA GPU, in one command that fits in 10 minutes: build,
# the test suite on CUDA, the conformance battery on CUDA, `kiln bench --device CUDA`, then the
# battery and the bench on the GPU through Vulkan where a Vulkan driver for it is found, and a
# short summary last.
#
#   scripts/gpu-check.sh [STEP ...]
#
# STEPs, run in the order given (default: tests conformance bench vulkan opencl): tests,
# conformance, random (the battery on CUDA with random opts, --seed KILN_GPU_CHECK_SEED, default
# 1), bench, vulkan, opencl (the battery on the GPU through its OpenCL driver, where one is
# listed). The build and the device check always run first. A lease too short for one call runs
# the build and some steps in a first call and the rest in a second on the same warm machine: the
# build folder stays there, and the second build has nothing to do.
#
# Logs go to $OUT when it is set (the lent GPU machines bring that folder back), else to
# build-gpu/check. Needs CMake, a C++ compiler, the CUDA toolkit and the NVIDIA driver. kiln's own
# dependencies (spdlog, fmt, Catch2, xxHash, nlohmann-json, CLI11, the OpenCL and Vulkan loaders
# and headers, glslang) come from the system, else from the Debian packages in
# .gpu-deps/ (scripts/gpu-deps.sh downloads them), unpacked into build-gpu/deps: the lent machines
# reach no package registry.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

steps=("$@")
((${#steps[@]} == 0)) && steps=(tests conformance bench vulkan opencl)
for step in "${steps[@]}"; do
  case "$step" in
    tests | conformance | random | bench | vulkan | opencl) ;;
    *)
      echo "gpu-check: unknown step '$step' (the steps: tests conformance random bench vulkan opencl)" >&2
      exit 2
      ;;
  esac
done

build=build-gpu
logs="${OUT:-$build/check}"
mkdir -p "$build" "$logs"
jobs="$(nproc)"
summary=()
note() {
  summary+=("$1")
  echo "gpu-check: $1"
}
started=$SECONDS
# The lent machines stop a command after 600 s: every step's time limit is cut to what is left
# before this deadline, so the summary is always printed.
deadline=$((started + ${KILN_GPU_CHECK_SECONDS:-570}))
# The time limit for a step that wants `cap` seconds: what is left, less 10 s for the summary
# (at least 1: `timeout 0` would mean no limit).
limit() {
  local left=$((deadline - SECONDS - 10))
  ((left < 1)) && left=1
  ((left < $1)) && echo "$left" || echo "$1"
}
# Whether a step still fits; otherwise notes that it was skipped.
fits() {
  if (($(limit "$2") < 20)); then
    note "$1: SKIPPED, out of time"
    return 1
  fi
}
# The summary, the bench table, and the exit status.
finish() {
  printf '\n==== gpu-check summary (%d s) ====\n' "$((SECONDS - started))"
  printf '%s\n' "${summary[@]}"
  [[ -f "$logs/bench.log" ]] && sed -n '/^workload/,$p' "$logs/bench.log" | head -30
  exit "$1"
}

# ---- dependencies ---------------------------------------------------------------------------
prefix_path=()
missing_headers=0
for header in spdlog/spdlog.h catch2/catch.hpp xxhash.h nlohmann/json.hpp CLI/CLI.hpp CL/cl.h \
  vulkan/vulkan.h glslang/build_info.h; do
  [[ -e /usr/include/$header ]] || missing_headers=1
done
if ((missing_headers)); then
  if compgen -G ".gpu-deps/*.deb" >/dev/null; then
    root="$PWD/$build/deps"
    mkdir -p "$root"
    for package in .gpu-deps/*.deb; do
      if command -v dpkg-deb >/dev/null; then
        dpkg-deb -x "$package" "$root"
      else
        (work="$(mktemp -d)" && cd "$work" && ar x "$OLDPWD/$package" && tar -xf data.tar.* -C "$root")
      fi
    done
    prefix_path=("-DCMAKE_PREFIX_PATH=$root/usr")
    export LD_LIBRARY_PATH="$root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    # glslang's CMake package names SPIRV-Tools' static libraries without a folder.
    export LIBRARY_PATH="$root/usr/lib/x86_64-linux-gnu${LIBRARY_PATH:+:$LIBRARY_PATH}"
    note "dependencies: unpacked from .gpu-deps ($(ls .gpu-deps | sed 's/_.*//' | tr '\n' ' '))"
  else
    note "dependencies: some headers missing and no .gpu-deps/ (run scripts/gpu-deps.sh)"
  fi
fi

# The toolkit the CUDA plugin builds against: CUDA_PATH, else the one nvcc belongs to.
if [[ -z "${CUDA_PATH:-}" ]] && command -v nvcc >/dev/null; then
  CUDA_PATH="$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")"
  export CUDA_PATH
fi

# NVIDIA's Vulkan driver lives in libGLX_nvidia.so.0; a container may carry the library without the
# loader's manifest for it. Then one is written here, so that VULKAN reaches the GPU too.
# NVIDIA's container images put the driver's manifest beside the driver, where the loader does not
# look.
if [[ -z "${VK_ICD_FILENAMES:-}${VK_DRIVER_FILES:-}" ]] &&
  [[ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ]]; then
  export VK_ICD_FILENAMES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
  export VK_DRIVER_FILES="$VK_ICD_FILENAMES"
  note "vulkan: NVIDIA's manifest from /usr/local/nvidia/share/vulkan/icd.d"
fi
if ! compgen -G "/usr/share/vulkan/icd.d/nvidia*.json" >/dev/null &&
  ! compgen -G "/etc/vulkan/icd.d/nvidia*.json" >/dev/null && [[ -z "${VK_ICD_FILENAMES:-}" ]] &&
  ldconfig -p 2>/dev/null | grep libGLX_nvidia.so.0 >/dev/null; then
  mkdir -p "$build"
  printf '{"file_format_version": "1.0.0", "ICD": {"library_path": "libGLX_nvidia.so.0", "api_version": "1.3"}}\n' \
    >"$build/nvidia_icd.json"
  export VK_ICD_FILENAMES="$PWD/$build/nvidia_icd.json"
  note "vulkan: wrote a manifest for NVIDIA's Vulkan driver (libGLX_nvidia.so.0)"
fi

# NVIDIA's OpenCL driver (libnvidia-opencl.so.1) likewise, where no ICD file names it: the ICD
# loader then reads the one written here (OCL_ICD_VENDORS).
if [[ -z "${OCL_ICD_VENDORS:-}" ]] && ! grep -qs nvidia /etc/OpenCL/vendors/*.icd &&
  ldconfig -p 2>/dev/null | grep libnvidia-opencl.so.1 >/dev/null; then
  mkdir -p "$build/opencl-vendors"
  echo libnvidia-opencl.so.1 >"$build/opencl-vendors/nvidia.icd"
  export OCL_ICD_VENDORS="$PWD/$build/opencl-vendors"
  note "opencl: wrote an ICD file for NVIDIA's OpenCL driver (libnvidia-opencl.so.1)"
fi

# ---- the machine ----------------------------------------------------------------------------
nvidia-smi --query-gpu=name,driver_version,memory.total,pci.bus_id,compute_mode,persistence_mode \
  --format=csv,noheader >"$logs/machine.log" 2>&1 || echo "nvidia-smi failed" >>"$logs/machine.log"
# A GPU in exclusive-process mode takes one process (one CUDA context) at a time.
gpu_jobs="$jobs"
if grep -q 'Exclusive_Process' "$logs/machine.log"; then
  gpu_jobs=1
  note "the GPU is in exclusive-process mode: tests and conformance run one process at a time"
fi
note "GPU: $(head -1 "$logs/machine.log")"

# ---- build ----------------------------------------------------------------------------------
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
if cmake -S . -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo "${prefix_path[@]}" \
  >"$logs/build.log" 2>&1 &&
  timeout "$(limit 420)" cmake --build "$build" -j"$jobs" >>"$logs/build.log" 2>&1; then
  note "build: ok in $((SECONDS - started)) s"
else
  note "build: FAILED (build.log)"
  tail -40 "$logs/build.log"
  finish 1
fi
kiln="$build/bin/kiln"
# The device list stays in the build folder (the lent machines bring back at most 8 files) and
# is appended to machine.log.
devices="$build/devices.log"
"$kiln" devices >"$devices" 2>&1
cat "$devices" >>"$logs/machine.log"
grep -E '^[ *]+CUDA ' "$devices" | sed 's/^/gpu-check: /'
if ! grep -qE '^[ *]+CUDA +available' "$devices"; then
  why="$(grep -E '^[ *]+CUDA ' "$devices" | sed 's/  */ /g')"
  [[ -z "$why" ]] && why="no CUDA plugin was built: $(grep -m1 'kiln: CUDA' "$logs/build.log")"
  note "CUDA device: UNAVAILABLE: $why"
  finish 1
fi

# What failed, run again with the two newest paths off (KILN_TENSOR_CORES=0, KILN_GRAPHS=0): what
# passes then points at the tensor cores or at CUDA graphs (tests that ask for TC by name still
# use it). The output goes to the end of the step's log (the lent machines bring back at most 8
# files).
isolated() {
  KILN_TENSOR_CORES=0 KILN_GRAPHS=0 "$@"
}
# The last line of LOG after its first MARK lines that matches PATTERN, else 'did not finish'.
rerun_result() {
  tail -n +"$(($2 + 1))" "$1" | grep -E "$3" | tail -1 | grep . || echo 'did not finish'
}

status=0
# ---- the test suite on CUDA -----------------------------------------------------------------
# Codegen-only tests that need tools of a Debian machine (glslang) are left to CI.
run_tests() {
  local step=$SECONDS failed mark names
  fits "tests on CUDA" 240 || { status=1; return; }
  KILN_DEVICE=CUDA timeout "$(limit 240)" ctest --test-dir "$build" -j"$gpu_jobs" --timeout 200 --output-on-failure \
    -E 'conformance|install_and_build|CUDA C\+\+ and GLSL' >"$logs/tests.log" 2>&1 || status=1
  note "tests on CUDA: $(grep -E 'tests passed' "$logs/tests.log" || echo 'did not finish') ($((SECONDS - step)) s)"
  # ctest lists the failed tests, and the skipped ones (that cannot run here) the same way.
  failed="$(grep -E '^\s+[0-9]+ - ' "$logs/tests.log" | grep -v ' (Skipped)$')"
  [[ -n $failed ]] && head -20 <<<"$failed" | sed 's/^/gpu-check:   failed: /'
  if [[ -n $failed ]] && fits "failed tests without TC and graphs" 60; then
    # By name: --rerun-failed reads the numbers of whichever ctest run wrote its list last.
    names="$(head -300 <<<"$failed" | sed -E 's/^\s+[0-9]+ - //; s/ \([^()]*\)$//' |
      sed 's/[][\\.^$*+?(){}|]/\\&/g' | paste -sd'|')"
    mark="$(wc -l <"$logs/tests.log")"
    printf '\n==== the failed tests again, with KILN_TENSOR_CORES=0 KILN_GRAPHS=0 ====\n' >>"$logs/tests.log"
    isolated env KILN_DEVICE=CUDA timeout "$(limit 60)" ctest --test-dir "$build" -R "^($names)\$" --timeout 50 \
      --output-on-failure >>"$logs/tests.log" 2>&1
    note "  again with KILN_TENSOR_CORES=0 KILN_GRAPHS=0: $(rerun_result "$logs/tests.log" "$mark" 'tests passed')"
  fi
}

# ---- the conformance battery on CUDA --------------------------------------------------------
# run_conformance LOG [OPTION ...]: the battery on CUDA with the given options, then what failed
# again without tensor cores and graphs.
run_conformance() {
  local log="$1" step=$SECONDS failed pattern mark
  shift
  fits "conformance $*" 200 || { status=1; return; }
  timeout "$(limit 200)" "$kiln" conformance --device CUDA --jobs "$gpu_jobs" --failures 1000 --case-timeout 60 \
    "$@" >"$logs/$log" 2>&1 || status=1
  note "conformance $*: $(grep -E '^CUDA: ' "$logs/$log" | tail -1 || tail -1 "$logs/$log") ($((SECONDS - step)) s)"
  grep -E '^(FAIL|ERROR) ' "$logs/$log" | head -10 | sed 's/^/gpu-check:   /'
  # At most 300 of them (as printed: --failures 1000), so that the pattern stays a sane length.
  failed="$(grep -E '^(FAIL|ERROR) ' "$logs/$log" | awk '{print $2}' | sort -u | head -300)"
  if [[ -n "$failed" ]] && fits "failed cases without TC and graphs" 60; then
    pattern="^($(sed 's/[][\\.^$*+?(){}|]/\\&/g' <<<"$failed" | paste -sd'|'))\$"
    mark="$(wc -l <"$logs/$log")"
    printf '\n==== %d failed cases again, with KILN_TENSOR_CORES=0 KILN_GRAPHS=0 ====\n' \
      "$(wc -l <<<"$failed")" >>"$logs/$log"
    isolated timeout "$(limit 60)" "$kiln" conformance --device CUDA --jobs "$gpu_jobs" --failures 20 \
      --case-timeout 30 --filter "$pattern" "$@" >>"$logs/$log" 2>&1
    note "  $(wc -l <<<"$failed") of them again with KILN_TENSOR_CORES=0 KILN_GRAPHS=0: $(rerun_result "$logs/$log" "$mark" '^CUDA: ')"
  fi
}

# ---- the benchmark --------------------------------------------------------------------------
run_bench() {
  local step=$SECONDS
  fits "bench" 150 || { status=1; return; }
  timeout "$(limit 150)" "$kiln" bench --device CUDA >"$logs/bench.log" 2>&1 || status=1
  note "bench: $((SECONDS - step)) s (bench.log)"
}

# ---- the GPU through Vulkan -----------------------------------------------------------------
run_vulkan() {
  local step vulkan_line
  vulkan_line="$(grep -E '^[ *]+VULKAN ' "$devices" | head -1)"
  if [[ ! "$vulkan_line" =~ VULKAN\ +available\ +GPU ]]; then
    note "vulkan: no Vulkan GPU (${vulkan_line:-no VULKAN plugin built}): skipped"
    return
  fi
  step=$SECONDS
  if ! fits "bench on VULKAN" 90; then
    status=1
  else
    timeout "$(limit 90)" "$kiln" bench --device VULKAN >"$logs/bench-vulkan.log" 2>&1 || status=1
    note "bench on VULKAN: $((SECONDS - step)) s (bench-vulkan.log)"
    sed -n '/^workload/,$p' "$logs/bench-vulkan.log" | head -12 | sed 's/^/gpu-check:   /'
  fi
  step=$SECONDS
  if ! fits "conformance on VULKAN" 120; then
    status=1
  else
    timeout "$(limit 120)" "$kiln" conformance --device VULKAN --jobs "$gpu_jobs" --failures 1000 --case-timeout 60 \
      >"$logs/conformance-vulkan.log" 2>&1 || status=1
    note "conformance on VULKAN: $(grep -E '^VULKAN: ' "$logs/conformance-vulkan.log" | tail -1 ||
      tail -1 "$logs/conformance-vulkan.log") ($((SECONDS - step)) s)"
    grep -E '^(FAIL|ERROR) ' "$logs/conformance-vulkan.log" | head -10 | sed 's/^/gpu-check:   /'
  fi
}

# ---- the GPU through OpenCL -----------------------------------------------------------------
run_opencl() {
  local step opencl_device
  opencl_device="$(grep -E '^[ *]+CL(:[0-9]+)? +available +GPU' "$devices" | head -1 |
    awk '{print $1 == "*" ? $2 : $1}')"
  if [[ -z "$opencl_device" ]]; then
    note "opencl: no OpenCL GPU listed: skipped"
    return
  fi
  step=$SECONDS
  fits "conformance on $opencl_device" 90 || { status=1; return; }
  timeout "$(limit 90)" "$kiln" conformance --device "$opencl_device" --jobs "$gpu_jobs" --failures 1000 \
    --case-timeout 60 >"$logs/conformance-opencl.log" 2>&1 || status=1
  note "conformance on $opencl_device: $(grep -E "^$opencl_device: " "$logs/conformance-opencl.log" | tail -1 ||
    tail -1 "$logs/conformance-opencl.log") ($((SECONDS - step)) s)"
  grep -E '^(FAIL|ERROR) ' "$logs/conformance-opencl.log" | head -10 | sed 's/^/gpu-check:   /'
}

for step in "${steps[@]}"; do
  case "$step" in
    tests) run_tests ;;
    conformance) run_conformance conformance.log ;;
    random) run_conformance conformance-random.log --opts random --seed "${KILN_GPU_CHECK_SEED:-1}" ;;
    bench) run_bench ;;
    vulkan) run_vulkan ;;
    opencl) run_opencl ;;
  esac
done

finish $status
