#pragma once
// Checked OpenCL calls and owned OpenCL handles.
//
//   KILN_CL_CHECK(clFinish(queue));                         // throws on an error status
//   cl_mem memory = KILN_CL_CREATE(clCreateBuffer, context, CL_MEM_READ_WRITE, nbytes, nullptr);
//
// A failure throws DeviceError("[cl] clFinish(queue) failed: CL_OUT_OF_RESOURCES (-5)"), or
// OutOfMemoryError (a DeviceError) when the driver ran out of memory, so the caching allocator
// can release its blocks and retry.

#include <CL/cl.h>

#include <string>

#include "runtime/driver_handle.h"

namespace kiln::opencl {

// "CL_OUT_OF_RESOURCES"; "unknown OpenCL error" for codes the table lacks.
const char* cl_error_name(cl_int status);

// The message for a failed call: "[cl] <call_text> failed: NAME (code)".
std::string cl_failure(const char* call_text, cl_int status);

// Throws DeviceError (OutOfMemoryError for memory exhaustion) unless status is CL_SUCCESS.
void check_cl(cl_int status, const char* call_text);

// For the calls that return an object and report through a trailing cl_int*.
template <typename Call>
auto create_checked(const char* call_text, Call call) {
  cl_int status = CL_SUCCESS;
  auto created = call(&status);
  check_cl(status, call_text);
  return created;
}

// A move-only owner of one OpenCL object, released when the owner goes.
template <typename Handle, auto Release>
using ClHandle = UniqueHandle<Handle, CallRelease<Release>>;

using ClContext = ClHandle<cl_context, clReleaseContext>;
using ClQueue = ClHandle<cl_command_queue, clReleaseCommandQueue>;
using ClProgram = ClHandle<cl_program, clReleaseProgram>;
using ClKernel = ClHandle<cl_kernel, clReleaseKernel>;
using ClEvent = ClHandle<cl_event, clReleaseEvent>;
using ClMemory = ClHandle<cl_mem, clReleaseMemObject>;

}  // namespace kiln::opencl

#define KILN_CL_CHECK(call) ::kiln::opencl::check_cl((call), #call)

#define KILN_CL_CREATE(function, ...)                                                          \
  ::kiln::opencl::create_checked(#function "(" #__VA_ARGS__ ")", [&](cl_int* kiln_cl_status) { \
    return function(__VA_ARGS__, kiln_cl_status);                                              \
  })
