#!/usr/bin/env bash
# The tests that share kiln between threads again under ThreadSanitizer, in ./build-tsan (an
# optimised build with KILN_TSAN=ON). Run scripts/setup.sh first: it installs what the build
# needs. CI runs this after the address sanitizer's run.
#
# Chosen: the tests that use kiln from several threads or processes at once (shared tensor
# handles, the disk cache, capture and replay, symbolic sizes, the caching allocator), the devices
# (the CPU device's thread pool; PoCL and lavapipe run their own threads) and the error paths.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKILN_TSAN=ON
cmake --build build-tsan -j"$(nproc)"
# Any report fails the run.
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1"
build-tsan/bin/kiln_tests \
  "[threads],[runtime],[resources],[capture],[variables],[vulkan],[devices],[errors]"
