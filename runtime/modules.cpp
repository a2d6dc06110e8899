// The Module base (include/kiln/modules.h): registration, named state, loading it back, modes;
// and Sequential. The layers are in modules_layers.cpp and modules_attention.cpp.

#include <kiln/autograd.h>
#include <kiln/error.h>
#include <kiln/modules.h>

#include <cmath>
#include <map>
#include <set>
#include <string>

#include "core/uop.h"
#include "runtime/tensor_internal.h"

namespace kiln::nn {
namespace {

int64_t numel_of_shape(const Shape& shape) {
  int64_t count = 1;
  for (int64_t size : shape) count *= size;
  return count;
}

}  // namespace

Tensor Module::forward(const Tensor&) {
  throw ValueError("[" + type_name() +
                   "] takes more than one input: call its forward with each of them");
}

void Module::register_parameter(const std::string& name, Tensor* parameter) {
  parameters_.emplace_back(name, parameter);
}

void Module::register_buffer(const std::string& name, Tensor* buffer) {
  buffers_.emplace_back(name, buffer);
}

void Module::register_module(const std::string& name, std::shared_ptr<Module> child) {
  if (!child) throw ValueError("[" + type_name() + "] module '" + name + "' is null");
  children_.emplace_back(name, std::move(child));
}

void Module::collect(const std::string& prefix, bool parameters, bool buffers,
                     NamedTensors& out) const {
  // An optional tensor that is not there (a Linear without bias) is empty and not state.
  if (parameters) {
    for (const auto& [name, slot] : parameters_)
      if (slot->defined()) out.emplace_back(prefix + name, *slot);
  }
  if (buffers) {
    for (const auto& [name, slot] : buffers_)
      if (slot->defined()) out.emplace_back(prefix + name, *slot);
  }
  for (const auto& [name, child] : children_)
    child->collect(prefix + name + ".", parameters, buffers, out);
}

void Module::collect_slots(const std::string& prefix,
                           std::vector<std::pair<std::string, Tensor*>>& out) {
  for (auto* slots : {&parameters_, &buffers_}) {
    for (const auto& [name, slot] : *slots)
      if (slot->defined()) out.emplace_back(prefix + name, slot);
  }
  for (const auto& [name, child] : children_) child->collect_slots(prefix + name + ".", out);
}

NamedTensors Module::named_parameters() const {
  NamedTensors all;
  collect("", true, false, all);
  // A parameter shared by two modules (tied weights, a module registered twice) is listed once,
  // under its first name, so that an optimizer updates it once per step (PyTorch's rule).
  NamedTensors out;
  std::set<const TensorState*> seen;
  for (auto& [name, parameter] : all) {
    if (seen.insert(parameter.shared_state().get()).second) out.emplace_back(name, parameter);
  }
  return out;
}

std::vector<Tensor> Module::parameters() const {
  std::vector<Tensor> out;
  for (auto& [name, parameter] : named_parameters()) out.push_back(parameter);
  return out;
}

NamedTensors Module::named_buffers() const {
  NamedTensors out;
  collect("", false, true, out);
  return out;
}

NamedTensors Module::state_dict() const {
  NamedTensors out;
  collect("", true, true, out);
  return out;
}

void Module::load_state_dict(const NamedTensors& state, bool strict) {
  std::vector<std::pair<std::string, Tensor*>> slots;
  collect_slots("", slots);
  std::map<std::string, Tensor*> by_name(slots.begin(), slots.end());
  const std::string op = "[" + type_name() + ".load_state_dict] ";

  // Every check before the first write, so a bad checkpoint changes nothing.
  std::set<std::string> given;
  std::vector<std::pair<Tensor*, const Tensor*>> writes;
  for (const auto& [name, value] : state) {
    if (!given.insert(name).second) throw ValueError(op + "tensor '" + name + "' is given twice");
    auto found = by_name.find(name);
    if (found == by_name.end()) {
      if (!strict) continue;
      throw ValueError(op + "unexpected tensor '" + name + "' " + describe(value) + ": this " +
                       type_name() +
                       " has no parameter or buffer of that name (a checkpoint of another "
                       "architecture?); pass strict = false to skip it");
    }
    Tensor& slot = *found->second;
    check_defined(value, "load_state_dict");
    if (value.shape() != slot.shape()) {
      throw ShapeError(op + "tensor '" + name + "' has shape " + value.shape_string() +
                       " in the checkpoint, but the module's is " + slot.shape_string());
    }
    if (value.dtype() != slot.dtype()) {
      throw DTypeError(op + "tensor '" + name + "' is " + value.dtype().name() +
                       " in the checkpoint, but the module's is " + slot.dtype().name() +
                       " (cast it first)");
    }
    writes.emplace_back(&slot, &value);
  }
  if (strict) {
    std::string missing;
    for (const auto& [name, slot] : slots) {
      if (!given.count(name)) missing += (missing.empty() ? "'" : ", '") + name + "'";
    }
    if (!missing.empty()) {
      throw ValueError(op + "the checkpoint lacks " + missing +
                       "; pass strict = false to keep their current values");
    }
  }
  NoGradGuard writing;
  for (auto& [slot, value] : writes) slot->assign(value->to(slot->device()));
}

void Module::train(bool on) {
  training_ = on;
  for (auto& [name, child] : children_) child->train(on);
}

Generator Module::layer_generator(const LayerOptions& options, const std::string& layer) {
  if (!options.generator) return default_generator(options.device);
  const std::string device = resolve_device(options.device);
  if (options.generator->device() != device) {
    throw DeviceError("[" + layer + "] LayerOptions::generator is on " +
                      options.generator->device() + ", but the parameters go on " + device +
                      ": give a generator of that device");
  }
  return *options.generator;
}

Tensor Module::make_parameter(const Tensor& value) {
  // Uploaded zeros, then written: a constant (Tensor::ones) shares its node with every equal
  // constant, and a parameter is written in place by the optimizer.
  const std::string& device = value.device();
  const size_t count = static_cast<size_t>(value.numel());
  Tensor own = value.dtype() == dtypes::float64
                   ? Tensor::from_vector(std::vector<double>(count, 0.0), value.shape(), device)
                   : Tensor::from_vector(std::vector<float>(count, 0.0f), value.shape(), device)
                         .cast(value.dtype());
  own.realize();
  {
    NoGradGuard writing;
    own.assign(value);
  }
  own.requires_grad_();
  return own;
}

Tensor Module::make_parameter(const Shape& shape, double bound, const LayerOptions& options) {
  if (!options.dtype.is_float()) {
    throw DTypeError(std::string("[layer] parameters are float: LayerOptions::dtype is ") +
                     options.dtype.name());
  }
  Generator generator = layer_generator(options, "layer");
  DimShape dims(shape.begin(), shape.end());
  // No range to draw from (a layer with no inputs): zeros, as PyTorch's.
  if (!(bound > 0) || numel_of_shape(shape) == 0)
    return make_parameter(Tensor::zeros(dims, options.dtype, options.device));
  return make_parameter(random::uniform(generator, dims, -bound, bound, options.dtype));
}

Sequential::Sequential(std::vector<std::shared_ptr<Module>> modules) {
  for (auto& module : modules) push_back(std::move(module));
}

void Sequential::push_back(std::shared_ptr<Module> module) {
  register_module(std::to_string(children().size()), std::move(module));
}

Tensor Sequential::forward(const Tensor& input) {
  Tensor value = input;
  for (const auto& [name, child] : children()) value = child->forward(value);
  return value;
}

ModuleList::ModuleList(std::vector<std::shared_ptr<Module>> modules) {
  for (auto& module : modules) push_back(std::move(module));
}

void ModuleList::push_back(std::shared_ptr<Module> module) {
  register_module(std::to_string(children().size()), std::move(module));
}

Tensor GELU::forward(const Tensor& input) {
  return approximate_tanh ? gelu_tanh(input) : input.gelu();
}

}  // namespace kiln::nn
