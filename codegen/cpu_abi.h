#pragma once
// The CPU kernel ABI, in one place: how the C dialect's kernels are declared and how the CPU
// device calls them.
//
// A kernel is a C function that runs the work items [begin, end) of its one flat launch
// dimension. `buffers` holds its parameters in the program's order (output first), each the
// address of element 0; `variables` holds the values of the kernel's symbolic variables.

#include <string>

namespace kiln {

struct Dialect;
struct LinearProgram;

using CpuKernelFunction = void (*)(void** buffers, const long long* variables, long long begin,
                                   long long end);

// The signature of `program`'s kernel and the typed buffer pointers it declares from `buffers`,
// up to its opening `{`, in `dialect`'s type names.
std::string cpu_kernel_signature(const LinearProgram& program, const Dialect& dialect);

}  // namespace kiln
