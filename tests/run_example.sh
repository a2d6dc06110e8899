#!/bin/sh
# Runs one of the examples for ctest: run_example.sh "<test name>" <example> [arguments...].
# An example exits with 4 when its device cannot be opened here, which ctest reports as skipped
# (SKIP_RETURN_CODE); the skip is also appended to KILN_TEST_SKIP_LOG with the example's reason,
# as the test binaries append theirs (tests/test_support.h), for scripts/setup.sh to list.
test_name=$1
shift
output=$("$@" 2>&1)
status=$?
printf '%s\n' "$output"
if [ "$status" -eq 4 ] && [ -n "$KILN_TEST_SKIP_LOG" ]; then
  # A DeviceError's first line says why; the lines after it list every unavailable device.
  reason=$(printf '%s\n' "$output" | sed -n 's/^skipped: //p' | head -n 1 | sed 's/; unavailable:$//')
  printf '%s\tskipped\t%s\n' "$test_name" "$reason" >>"$KILN_TEST_SKIP_LOG"
fi
exit "$status"
