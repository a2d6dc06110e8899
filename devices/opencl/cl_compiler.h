#pragma once
// Compiles OpenCL C with the driver's compiler (clBuildProgram) and loads the binaries back.

#include <CL/cl.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "devices/opencl/cl_check.h"
#include "runtime/device.h"

namespace kiln::opencl {

// `context` and `device` belong to the caller and must outlive the compiler. `identity` names
// the platform, device and driver (it keys the disk cache); `options` are clBuildProgram's.
std::unique_ptr<Compiler> make_cl_compiler(cl_context context, cl_device_id device,
                                           const std::string& identity, const std::string& options);

// The programs built from binaries (the bytes `compile` returned), one per distinct binary while
// anything holds it: every kernel loaded from one binary shares its program.
//
// Why one: PoCL builds a program from a binary in a directory of its cache named by the hash the
// binary carries, and removes that directory when the program is released (its kernel cache is
// off, configure_pocl_files). Two programs of one binary alive at once share the directory, and
// releasing one deletes the files the other is building from ("Can't get stat() on
// .../program.bc", then an abort): a kernel cache trimmed or cleared in one thread while another
// loads the same kernel again. So a program is released, after the queue's commands that use it
// have finished (PoCL drops their hold on it before it reports them finished), before a program
// of its binary is built again; loads and releases take one lock.
class BinaryPrograms {
 public:
  // `context`, `device` and `queue` belong to the caller and must outlive every program loaded.
  BinaryPrograms(cl_context context, cl_device_id device, cl_command_queue queue,
                 std::string options);

  // The program of `binary`, built for the device when no one holds it yet. Throws DeviceError
  // when the driver rejects the binary (`kernel_name` names the kernel in the message).
  std::shared_ptr<const ClProgram> load(const std::vector<uint8_t>& binary,
                                        const std::string& kernel_name);

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace kiln::opencl
