#include "devices/vulkan/spirv_module.h"

#include <kiln/error.h>

#include <algorithm>
#include <cstring>

namespace kiln::vulkan {
namespace {

constexpr uint32_t kMagic = 0x07230203;
constexpr uint32_t kHeaderWords = 5;
// Opcodes, capabilities and execution modes from the SPIR-V specification.
constexpr uint32_t kOpDecorate = 71;
constexpr uint32_t kDecorationBinding = 33;
constexpr uint32_t kOpEntryPoint = 15;
constexpr uint32_t kOpExecutionMode = 16;
constexpr uint32_t kOpCapability = 17;
constexpr uint32_t kCapabilityFloat64 = 10;
constexpr uint32_t kCapabilityDenormPreserve = 4464;
constexpr uint32_t kCapabilitySignedZeroInfNanPreserve = 4466;
constexpr uint32_t kModeDenormPreserve = 4459;
constexpr uint32_t kModeSignedZeroInfNanPreserve = 4461;

uint32_t word_op(uint32_t length, uint32_t opcode) {
  return (length << 16) | opcode;
}

// The module as words, its header checked.
std::vector<uint32_t> module_words(const std::vector<uint8_t>& spirv, const std::string& kernel) {
  if (spirv.size() < kHeaderWords * 4 || spirv.size() % 4 != 0)
    throw DeviceError("[vulkan] kernel " + kernel + ": a module of " +
                      std::to_string(spirv.size()) + " bytes is not SPIR-V");
  std::vector<uint32_t> words(spirv.size() / 4);
  std::memcpy(words.data(), spirv.data(), spirv.size());
  if (words[0] != kMagic)
    throw DeviceError("[vulkan] kernel " + kernel + ": the module lacks the SPIR-V magic number");
  return words;
}

// Calls visit(position, length, opcode) for each instruction after the header.
template <typename Visit>
void for_each_instruction(const std::vector<uint32_t>& words, const std::string& kernel,
                          Visit&& visit) {
  for (size_t at = kHeaderWords; at < words.size();) {
    const uint32_t length = words[at] >> 16, opcode = words[at] & 0xffff;
    if (length == 0 || at + length > words.size())
      throw DeviceError("[vulkan] kernel " + kernel +
                        ": the SPIR-V module holds a malformed instruction");
    visit(at, length, opcode);
    at += length;
  }
}

}  // namespace

uint32_t spirv_binding_count(const std::vector<uint8_t>& spirv, const std::string& kernel) {
  const std::vector<uint32_t> words = module_words(spirv, kernel);
  uint32_t count = 0;
  for_each_instruction(words, kernel, [&](size_t at, uint32_t length, uint32_t opcode) {
    if (opcode == kOpDecorate && length >= 4 && words[at + 2] == kDecorationBinding)
      count = std::max(count, words[at + 3] + 1);
  });
  return count;
}

std::vector<uint8_t> with_float_controls(const std::vector<uint8_t>& spirv,
                                         const FloatControls& supported,
                                         const std::string& kernel) {
  const std::vector<uint32_t> words = module_words(spirv, kernel);
  // Where capabilities end and execution modes go, and what the module declares.
  size_t after_capabilities = kHeaderWords, after_modes = 0;
  bool uses_float64 = false;
  std::vector<uint32_t> capabilities, entry_points;
  for_each_instruction(words, kernel, [&](size_t at, uint32_t length, uint32_t opcode) {
    if (opcode == kOpCapability) {
      capabilities.push_back(words[at + 1]);
      uses_float64 |= words[at + 1] == kCapabilityFloat64;
      after_capabilities = at + length;
    } else if (opcode == kOpEntryPoint) {
      entry_points.push_back(words[at + 2]);
      after_modes = at + length;
    } else if (opcode == kOpExecutionMode) {
      after_modes = at + length;
    }
  });

  std::vector<uint32_t> new_capabilities, new_modes;
  auto add = [&](uint32_t capability, uint32_t mode, uint32_t width) {
    bool declared = false;
    for (uint32_t known : capabilities) declared |= known == capability;
    for (uint32_t known : new_capabilities) declared |= known == capability;
    if (!declared) new_capabilities.push_back(capability);
    for (uint32_t entry : entry_points) {
      new_modes.insert(new_modes.end(), {word_op(4, kOpExecutionMode), entry, mode, width});
    }
  };
  if (supported.preserve_inf_nan_32)
    add(kCapabilitySignedZeroInfNanPreserve, kModeSignedZeroInfNanPreserve, 32);
  if (supported.preserve_denorm_32) add(kCapabilityDenormPreserve, kModeDenormPreserve, 32);
  if (uses_float64 && supported.preserve_inf_nan_64)
    add(kCapabilitySignedZeroInfNanPreserve, kModeSignedZeroInfNanPreserve, 64);
  if (uses_float64 && supported.preserve_denorm_64)
    add(kCapabilityDenormPreserve, kModeDenormPreserve, 64);
  if (entry_points.empty() || (new_capabilities.empty() && new_modes.empty())) return spirv;

  std::vector<uint32_t> patched(words.begin(), words.begin() + after_capabilities);
  for (uint32_t capability : new_capabilities)
    patched.insert(patched.end(), {word_op(2, kOpCapability), capability});
  patched.insert(patched.end(), words.begin() + after_capabilities, words.begin() + after_modes);
  patched.insert(patched.end(), new_modes.begin(), new_modes.end());
  patched.insert(patched.end(), words.begin() + after_modes, words.end());
  std::vector<uint8_t> bytes(patched.size() * 4);
  std::memcpy(bytes.data(), patched.data(), bytes.size());
  return bytes;
}

}  // namespace kiln::vulkan
