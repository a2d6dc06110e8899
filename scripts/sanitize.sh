#!/usr/bin/env bash
# The whole test suite again under AddressSanitizer and UndefinedBehaviorSanitizer, in
# ./build-sanitize (a Debug build with KILN_SANITIZE=ON). Run scripts/setup.sh first: it installs
# what the build needs. CI runs this after the README's test command.
#
# Leak checking is off: LeakSanitizer's tracer crashes at exit in any process that has loaded
# PoCL (its worker threads), which every device test does. Kernels compiled at run time are not
# instrumented; the runtime around them is.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

cmake -S . -B build-sanitize -DCMAKE_BUILD_TYPE=Debug -DKILN_SANITIZE=ON
cmake --build build-sanitize -j"$(nproc)"
export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
# The install test builds an example against the installed package: nothing more to sanitize.
# The elementwise conformance families (unary, activation, binary, pow, compare, bitwise, scalar,
# promotion, cast) run the host path the other families run (build a graph, compile, launch,
# compare), once per op and dtype; the sanitizers watch host code only (kernels compiled at run
# time are not instrumented), so those families add time and no coverage here. So do the
# families of ops composed from others (nn, conv, sort, random, and the gradient tier), whose host code their own unit
# tests (test_nn, test_conv, test_sort, test_random) run here. They all run in the plain build.
# The random distributions' statistical test (millions of draws checked by the test's own host
# code, 132 s at -O0) runs in the plain build; test_random's other cases run here.
# So do the view families (shapes, layout, movement: the ShapeTracker's arithmetic, which
# test_view and test_schedule run here) and the regression family (past defects' graphs, many of
# them at a device's limits: long loops, big index arithmetic, which is kernel work, not host
# work): together about 7 of CI's 90 minutes under the sanitizers. All run in the plain build.
# The battery runs on the CPU only (KILN_DEVICE): the host code it drives is the same for every
# device, and each device plugin's own host code runs in the unit tests, which still use every
# device.
KILN_DEVICE=CPU ctest --test-dir build-sanitize --output-on-failure -j2 \
  -E 'install_and_build|follow their distributions|conformance: (unary|activation|binary|pow|compare|bitwise|scalar|promotion|cast|nn|conv|sort|random|grad|shapes|layout|regression|movement)'
