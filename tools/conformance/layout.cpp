// Layouts: how an op's input reaches it. The same shape and values can arrive as a contiguous
// buffer, or through movement ops that change only the View (permuted, expanded, padded, shrunk,
// flipped, and chains of them, including one that needs a second View). Kernels must index each
// of them correctly; the host applies the same steps by explicit index math.

#include <algorithm>
#include <numeric>

#include "tools/conformance/case.h"
#include "tools/conformance/reference.h"

namespace kiln::conformance {
namespace {

using Kind = LayoutStep::Kind;

std::vector<int64_t> reversed_axes(size_t ndim) {
  std::vector<int64_t> axes(ndim);
  std::iota(axes.rbegin(), axes.rend(), 0);
  return axes;
}

Shape reversed(const Shape& shape) {
  return Shape(shape.rbegin(), shape.rend());
}

std::vector<int64_t> all_axes(size_t ndim) {
  std::vector<int64_t> axes(ndim);
  std::iota(axes.begin(), axes.end(), 0);
  return axes;
}

LayoutStep step(Kind kind, std::vector<int64_t> values = {},
                std::vector<std::pair<int64_t, int64_t>> pairs = {}, double pad_value = 0) {
  return LayoutStep{kind, std::move(values), std::move(pairs), pad_value};
}

std::string list_code(const std::vector<int64_t>& values) {
  std::string text = "{";
  for (size_t index = 0; index < values.size(); ++index)
    text += (index ? ", " : "") + std::to_string(values[index]);
  return text + "}";
}

std::string pairs_code(const std::vector<std::pair<int64_t, int64_t>>& pairs) {
  std::string text = "{";
  for (size_t index = 0; index < pairs.size(); ++index) {
    text += (index ? ", {" : "{") + std::to_string(pairs[index].first) + ", " +
            std::to_string(pairs[index].second) + "}";
  }
  return text + "}";
}

}  // namespace

const std::vector<std::string>& layout_names() {
  static const std::vector<std::string> names = {"contiguous",
                                                 "permuted",
                                                 "expanded",
                                                 "padded",
                                                 "padded(-2)",
                                                 "shrunk",
                                                 "flipped",
                                                 "permuted+flipped",
                                                 "shrunk+permuted+flipped",
                                                 "permuted+reshaped",
                                                 "expanded+permuted",
                                                 "padded+shrunk+flipped"};
  return names;
}

std::optional<Layout> make_layout(const std::string& name, const Shape& target) {
  const size_t ndim = target.size();
  const int64_t total = numel_of(target);
  Layout layout{name, target, {}};
  if (name == "contiguous") return layout;
  if (ndim == 0) return std::nullopt;
  auto first_wide =
      std::find_if(target.begin(), target.end(), [](int64_t size) { return size > 1; });
  if (name == "permuted" || name == "permuted+flipped" || name == "permuted+reshaped") {
    if (ndim < 2) return std::nullopt;
    layout.source = reversed(target);
    if (name == "permuted+flipped") layout.steps.push_back(step(Kind::Flip, all_axes(ndim)));
    layout.steps.push_back(step(Kind::Permute, reversed_axes(ndim)));
    if (name == "permuted+reshaped") {
      // The permuted View cannot merge with a flattening reshape: a second View is pushed.
      layout.steps.push_back(step(Kind::Reshape, {total}));
      layout.steps.push_back(step(Kind::Reshape, target));
    }
    return layout;
  }
  if (name == "expanded") {
    if (first_wide == target.end()) return std::nullopt;
    layout.source[first_wide - target.begin()] = 1;
    layout.steps.push_back(step(Kind::Expand, target));
    return layout;
  }
  if (name == "expanded+permuted") {
    if (ndim < 2 || first_wide == target.end()) return std::nullopt;
    const Shape permuted = reversed(target);
    layout.source = permuted;
    layout.source[ndim - 1 - (first_wide - target.begin())] = 1;
    layout.steps.push_back(step(Kind::Expand, permuted));
    layout.steps.push_back(step(Kind::Permute, reversed_axes(ndim)));
    return layout;
  }
  if (name == "padded" || name == "padded(-2)") {
    std::vector<std::pair<int64_t, int64_t>> pads(ndim, {0, 0});
    bool any = false;
    for (size_t dim = 0; dim < ndim; ++dim) {
      if (target[dim] >= 3) {
        pads[dim] = {1, 1};
        layout.source[dim] -= 2;
        any = true;
      }
    }
    if (!any) return std::nullopt;
    layout.steps.push_back(step(Kind::Pad, {}, pads, name == "padded" ? 0.0 : -2.0));
    return layout;
  }
  if (name == "shrunk") {
    std::vector<std::pair<int64_t, int64_t>> bounds;
    for (size_t dim = 0; dim < ndim; ++dim) {
      layout.source[dim] += 3;
      bounds.emplace_back(1, target[dim] + 1);
    }
    layout.steps.push_back(step(Kind::Shrink, {}, bounds));
    return layout;
  }
  if (name == "flipped") {
    layout.steps.push_back(step(Kind::Flip, all_axes(ndim)));
    return layout;
  }
  if (name == "shrunk+permuted+flipped") {
    if (ndim < 2) return std::nullopt;
    const Shape permuted = reversed(target);
    std::vector<std::pair<int64_t, int64_t>> bounds;
    layout.source = permuted;
    for (size_t dim = 0; dim < ndim; ++dim) {
      layout.source[dim] += 3;
      bounds.emplace_back(2, permuted[dim] + 2);
    }
    layout.steps.push_back(step(Kind::Shrink, {}, bounds));
    layout.steps.push_back(step(Kind::Permute, reversed_axes(ndim)));
    layout.steps.push_back(step(Kind::Flip, all_axes(ndim)));
    return layout;
  }
  if (name == "padded+shrunk+flipped") {
    // Pad 2 before and 1 after, then cut one from each end: the first element of every axis is
    // padding and the last source element is cut off, then everything reverses.
    if (total == 0) return std::nullopt;
    std::vector<std::pair<int64_t, int64_t>> pads(ndim, {2, 1}), bounds;
    for (size_t dim = 0; dim < ndim; ++dim) bounds.emplace_back(1, target[dim] + 1);
    layout.steps.push_back(step(Kind::Pad, {}, pads, 0.0));
    layout.steps.push_back(step(Kind::Shrink, {}, bounds));
    layout.steps.push_back(step(Kind::Flip, all_axes(ndim)));
    return layout;
  }
  return std::nullopt;
}

Tensor apply_layout(const Layout& layout, Tensor tensor) {
  for (const LayoutStep& item : layout.steps) {
    switch (item.kind) {
      case Kind::Reshape:
        tensor = tensor.reshape(item.values);
        break;
      case Kind::Permute:
        tensor = tensor.permute(item.values);
        break;
      case Kind::Expand:
        tensor = tensor.expand(item.values);
        break;
      case Kind::Pad:
        tensor = tensor.pad(item.pairs, item.pad_value);
        break;
      case Kind::Shrink:
        tensor = tensor.shrink(item.pairs);
        break;
      case Kind::Flip:
        tensor = tensor.flip(item.values);
        break;
    }
  }
  return tensor;
}

HostTensor apply_layout(const Layout& layout, const HostTensor& input) {
  HostTensor tensor = input;
  for (const LayoutStep& item : layout.steps) {
    switch (item.kind) {
      case Kind::Reshape:
        tensor = ref::reshape(tensor, item.values);
        break;
      case Kind::Permute:
        tensor = ref::permute(tensor, item.values);
        break;
      case Kind::Expand:
        tensor = ref::broadcast_to(tensor, item.values);
        break;
      case Kind::Pad:
        tensor = ref::pad(tensor, item.pairs, item.pad_value);
        break;
      case Kind::Shrink:
        tensor = ref::shrink(tensor, item.pairs);
        break;
      case Kind::Flip:
        tensor = ref::flip(tensor, item.values);
        break;
    }
  }
  return tensor;
}

std::string layout_code(const Layout& layout) {
  std::string code;
  for (const LayoutStep& item : layout.steps) {
    switch (item.kind) {
      case Kind::Reshape:
        code += ".reshape(" + list_code(item.values) + ")";
        break;
      case Kind::Permute:
        code += ".permute(" + list_code(item.values) + ")";
        break;
      case Kind::Expand:
        code += ".expand(" + list_code(item.values) + ")";
        break;
      case Kind::Pad:
        code +=
            ".pad(" + pairs_code(item.pairs) +
            (item.pad_value != 0 ? ", " + std::to_string(static_cast<int>(item.pad_value)) : "") +
            ")";
        break;
      case Kind::Shrink:
        code += ".shrink(" + pairs_code(item.pairs) + ")";
        break;
      case Kind::Flip:
        code += ".flip(" + list_code(item.values) + ")";
        break;
    }
  }
  return code;
}

}  // namespace kiln::conformance
