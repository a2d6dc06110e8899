#include "devices/vulkan/glslang_compiler.h"

#include <glslang/Include/glslang_c_interface.h>
#include <glslang/Public/resource_limits_c.h>
#include <glslang/build_info.h>
#include <kiln/error.h>

#include <cstring>
#include <mutex>

namespace kiln::vulkan {
namespace {

// SPIR-V 1.5 for Vulkan 1.2: what kiln asks of every device.
constexpr glslang_target_client_version_t kClientVersion = GLSLANG_TARGET_VULKAN_1_2;
constexpr glslang_target_language_version_t kSpirvVersion = GLSLANG_TARGET_SPV_1_5;
constexpr const char* kOptions = "glsl 450, vulkan 1.2, spir-v 1.5, spv+vulkan rules";

void initialize_glslang_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (!glslang_initialize_process())
      throw DeviceError("[vulkan] glslang_initialize_process failed");
  });
}

struct ShaderDeleter {
  void operator()(glslang_shader_t* shader) const { glslang_shader_delete(shader); }
};
struct ProgramDeleter {
  void operator()(glslang_program_t* program) const { glslang_program_delete(program); }
};

std::string trimmed(const char* text) {
  std::string log = text ? text : "";
  while (!log.empty() && (log.back() == '\n' || log.back() == ' ')) log.pop_back();
  return log;
}

std::string float_controls_text(const FloatControls& controls) {
  return std::string("float controls: inf/nan ") + (controls.preserve_inf_nan_32 ? "32" : "") +
         (controls.preserve_inf_nan_64 ? " 64" : "") + ", denorm " +
         (controls.preserve_denorm_32 ? "32" : "") + (controls.preserve_denorm_64 ? " 64" : "");
}

class GlslangCompiler : public Compiler {
 public:
  GlslangCompiler(const std::string& device_identity, const FloatControls& float_controls,
                  const uint32_t max_workgroup_size[3])
      : identity_("GLSL->SPIR-V | glslang " + glslang_version() + " | " + kOptions + " | " +
                  float_controls_text(float_controls) + " | " + device_identity),
        float_controls_(float_controls),
        resource_(*glslang_default_resource()) {
    resource_.max_compute_work_group_size_x = static_cast<int>(max_workgroup_size[0]);
    resource_.max_compute_work_group_size_y = static_cast<int>(max_workgroup_size[1]);
    resource_.max_compute_work_group_size_z = static_cast<int>(max_workgroup_size[2]);
  }

  std::string identity() const override { return identity_; }

  std::vector<uint8_t> compile(const std::string& source, const std::string& kernel_name) override {
    initialize_glslang_once();
    glslang_input_t input{};
    input.language = GLSLANG_SOURCE_GLSL;
    input.stage = GLSLANG_STAGE_COMPUTE;
    input.client = GLSLANG_CLIENT_VULKAN;
    input.client_version = kClientVersion;
    input.target_language = GLSLANG_TARGET_SPV;
    input.target_language_version = kSpirvVersion;
    input.code = source.c_str();
    input.default_version = 450;
    input.default_profile = GLSLANG_NO_PROFILE;
    input.messages =
        static_cast<glslang_messages_t>(GLSLANG_MSG_SPV_RULES_BIT | GLSLANG_MSG_VULKAN_RULES_BIT);
    input.resource = &resource_;

    const std::string what = "[vulkan] compiling kernel " + kernel_name + " with glslang";
    std::unique_ptr<glslang_shader_t, ShaderDeleter> shader(glslang_shader_create(&input));
    if (!shader) throw DeviceError(what + ": glslang_shader_create failed");
    if (!glslang_shader_preprocess(shader.get(), &input))
      throw CompileError(what + ": preprocessing failed",
                         trimmed(glslang_shader_get_info_log(shader.get())), source);
    if (!glslang_shader_parse(shader.get(), &input))
      throw CompileError(what + ": the shader does not compile",
                         trimmed(glslang_shader_get_info_log(shader.get())), source);

    std::unique_ptr<glslang_program_t, ProgramDeleter> program(glslang_program_create());
    glslang_program_add_shader(program.get(), shader.get());
    if (!glslang_program_link(program.get(), input.messages))
      throw CompileError(what + ": linking failed",
                         trimmed(glslang_program_get_info_log(program.get())), source);
    glslang_program_SPIRV_generate(program.get(), GLSLANG_STAGE_COMPUTE);
    const size_t words = glslang_program_SPIRV_get_size(program.get());
    if (words == 0)
      throw CompileError(what + ": no SPIR-V was generated",
                         trimmed(glslang_program_SPIRV_get_messages(program.get())), source);
    std::vector<uint8_t> binary(words * sizeof(uint32_t));
    std::memcpy(binary.data(), glslang_program_SPIRV_get_ptr(program.get()), binary.size());
    return with_float_controls(binary, float_controls_, kernel_name);
  }

 private:
  std::string identity_;
  FloatControls float_controls_;
  glslang_resource_t resource_;
};

}  // namespace

std::string glslang_version() {
  return std::to_string(GLSLANG_VERSION_MAJOR) + "." + std::to_string(GLSLANG_VERSION_MINOR) + "." +
         std::to_string(GLSLANG_VERSION_PATCH) + GLSLANG_VERSION_FLAVOR;
}

std::unique_ptr<Compiler> make_glslang_compiler(const std::string& device_identity,
                                                const FloatControls& float_controls,
                                                const uint32_t max_workgroup_size[3]) {
  return std::make_unique<GlslangCompiler>(device_identity, float_controls, max_workgroup_size);
}

}  // namespace kiln::vulkan
