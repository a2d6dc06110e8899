#include "devices/opencl/cl_compiler.h"

#include <kiln/error.h>

#include <condition_variable>
#include <map>
#include <mutex>

namespace kiln::opencl {
namespace {

std::string build_log(cl_program program, cl_device_id device) {
  size_t size = 0;
  if (clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &size) !=
      CL_SUCCESS) {
    return "(no build log)";
  }
  std::string log(size, '\0');
  if (clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, size, log.data(), nullptr) !=
      CL_SUCCESS) {
    return "(no build log)";
  }
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  return log;
}

// The program's binary for its one device, as the driver reports it.
std::vector<uint8_t> program_binary(cl_program program) {
  size_t size = 0;
  KILN_CL_CHECK(clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, sizeof(size), &size, nullptr));
  if (size == 0)
    throw DeviceError("[cl] clGetProgramInfo(CL_PROGRAM_BINARY_SIZES) reported an empty binary");
  std::vector<uint8_t> binary(size);
  unsigned char* destination = binary.data();
  KILN_CL_CHECK(
      clGetProgramInfo(program, CL_PROGRAM_BINARIES, sizeof(destination), &destination, nullptr));
  return binary;
}

class ClCompiler : public Compiler {
 public:
  ClCompiler(cl_context context, cl_device_id device, std::string identity, std::string options)
      : context_(context),
        device_(device),
        identity_(std::move(identity)),
        options_(std::move(options)) {}

  std::string identity() const override { return identity_; }

  std::vector<uint8_t> compile(const std::string& source, const std::string& kernel_name) override {
    const char* text = source.c_str();
    const size_t length = source.size();
    ClProgram program(KILN_CL_CREATE(clCreateProgramWithSource, context_, 1, &text, &length));
    const cl_int status =
        clBuildProgram(program.get(), 1, &device_, options_.c_str(), nullptr, nullptr);
    if (status != CL_SUCCESS) {
      throw CompileError("[cl] compiling kernel " + kernel_name + ": " +
                             cl_failure("clBuildProgram(program, 1, &device, options)", status),
                         build_log(program.get(), device_), source);
    }
    return program_binary(program.get());
  }

 private:
  cl_context context_;
  cl_device_id device_;
  std::string identity_;
  std::string options_;
};

}  // namespace

std::unique_ptr<Compiler> make_cl_compiler(cl_context context, cl_device_id device,
                                           const std::string& identity,
                                           const std::string& options) {
  return std::make_unique<ClCompiler>(context, device, identity, options);
}

struct BinaryPrograms::State {
  // One program and the registry entry it leaves when its last holder lets it go.
  class Shared {
   public:
    using Entry = std::map<std::vector<uint8_t>, std::weak_ptr<Shared>>::iterator;
    Shared(std::shared_ptr<State> state, ClProgram program, Entry entry)
        : state_(std::move(state)), program_(std::move(program)), entry_(entry) {}
    ~Shared() {
      std::lock_guard<std::mutex> lock(state_->mutex);
      // Queued kernels hold the program in the driver: finished first, so that this release is
      // the last one and no other program of the binary is built while it runs.
      static_cast<void>(clFinish(state_->queue.get()));
      program_.reset();
      state_->live.erase(entry_);
      state_->released.notify_all();
    }
    Shared(const Shared&) = delete;
    Shared& operator=(const Shared&) = delete;

    const ClProgram& program() const { return program_; }

   private:
    std::shared_ptr<State> state_;
    ClProgram program_;
    Entry entry_;
  };

  // Retained: a program a captured step holds may outlive the device's own handles.
  ClContext context;
  ClQueue queue;
  cl_device_id device = nullptr;
  std::string options;
  std::mutex mutex;
  std::condition_variable released;  // a program's entry left `live`
  std::map<std::vector<uint8_t>, std::weak_ptr<Shared>> live;
};

BinaryPrograms::BinaryPrograms(cl_context context, cl_device_id device, cl_command_queue queue,
                               std::string options)
    : state_(std::make_shared<State>()) {
  KILN_CL_CHECK(clRetainContext(context));
  state_->context = ClContext(context);
  KILN_CL_CHECK(clRetainCommandQueue(queue));
  state_->queue = ClQueue(queue);
  state_->device = device;
  state_->options = std::move(options);
}

std::shared_ptr<const ClProgram> BinaryPrograms::load(const std::vector<uint8_t>& binary,
                                                      const std::string& kernel_name) {
  State& state = *state_;
  std::unique_lock<std::mutex> lock(state.mutex);
  for (auto found = state.live.find(binary); found != state.live.end();
       found = state.live.find(binary)) {
    if (std::shared_ptr<State::Shared> shared = found->second.lock())
      return std::shared_ptr<const ClProgram>(shared, &shared->program());
    // Its last holder let it go and is releasing it now: built again once that is done.
    state.released.wait(lock);
  }
  const unsigned char* bytes = binary.data();
  const size_t size = binary.size();
  cl_int binary_status = CL_SUCCESS;
  ClProgram program(KILN_CL_CREATE(clCreateProgramWithBinary, state.context.get(), 1, &state.device,
                                   &size, &bytes, &binary_status));
  check_cl(binary_status, "clCreateProgramWithBinary(binary_status)");
  // Building a program from a binary finishes it for the device (no source compile).
  const cl_int status =
      clBuildProgram(program.get(), 1, &state.device, state.options.c_str(), nullptr, nullptr);
  if (status != CL_SUCCESS) {
    throw DeviceError(cl_failure("clBuildProgram(program from binary)", status) + " for kernel " +
                      kernel_name + ": " + build_log(program.get(), state.device));
  }
  const auto entry = state.live.emplace(binary, std::weak_ptr<State::Shared>()).first;
  std::shared_ptr<State::Shared> shared;
  try {
    shared = std::make_shared<State::Shared>(state_, std::move(program), entry);
  } catch (...) {
    state.live.erase(entry);
    throw;
  }
  entry->second = shared;
  return std::shared_ptr<const ClProgram>(shared, &shared->program());
}

}  // namespace kiln::opencl
