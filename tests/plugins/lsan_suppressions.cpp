// LeakSanitizer (KILN_SANITIZE=ON) reads this hook from the executable. Allocations that an
// OpenCL driver keeps until exit (PoCL and the LLVM it compiles with do, by design, from the
// moment the registry probes them) are the driver's, not kiln's: without this every process of
// a sanitized build would fail at exit. Leaks with no vendor frame are still reported.

extern "C" const char* __lsan_default_suppressions() {
  return "leak:libpocl.so\n"
         "leak:libLLVM\n"
         "leak:libclang-cpp\n"
         "leak:libOpenCL.so\n";
}
