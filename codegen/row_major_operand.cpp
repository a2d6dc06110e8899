#include "codegen/row_major_operand.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "core/rewrite.h"
#include "core/view.h"

namespace kiln {
namespace {

// Below this many multiply-adds the copy's kernel costs more than the tile saves.
constexpr int64_t kMinProductWork = int64_t{1} << 20;

// The operand's strides where it is a buffer or a computed value read through one plain View
// (no mask, constant sizes and strides); empty otherwise. (A reduction in a computed value is
// realized before the copy: codegen/schedule.cpp, Uses::untiled_read.)
std::vector<int64_t> plain_strides(const UOp& operand) {
  if (operand.op() != Op::View || operand.src()->op() == Op::Const ||
      operand.src()->op() == Op::Contiguous)
    return {};
  const std::vector<View>& views = operand.tracker().views();
  if (views.size() != 1 || views[0].mask || operand.tracker().is_symbolic()) return {};
  std::vector<int64_t> strides;
  for (const Sym& stride : views[0].strides) strides.push_back(stride.const_value());
  return strides;
}

// `operand` (a View of a buffer with `strides`) as a View of a row-major copy of the elements it
// reads, whose axes are the operand's in order with `column` moved last.
UOpRef over_row_major_copy(const UOpRef& operand, const std::vector<int64_t>& strides, int column) {
  const Shape& shape = operand->shape();
  std::vector<int> order;
  for (int axis = 0; axis < static_cast<int>(shape.size()); ++axis) {
    if (axis != column && strides[axis] != 0 && shape[axis] > 1) order.push_back(axis);
  }
  order.push_back(column);
  View read = operand->tracker().views()[0];
  SymShape copy_shape, copy_strides;
  Shape copy_values;
  for (int axis : order) {
    copy_shape.push_back(read.shape[axis]);
    copy_strides.push_back(read.strides[axis]);
    copy_values.push_back(shape[axis]);
  }
  const ShapeTracker copy_tracker({View{copy_shape, copy_strides, read.offset, std::nullopt}});
  const UOpRef copied =
      UOp::make(Op::View, operand->dtype(), {operand->src()}, copy_tracker, copy_values);
  const UOpRef stored = UOp::make(Op::Contiguous, operand->dtype(), {copied}, {}, copy_values);
  // The operand's shape over the copy: its axes at their row-major strides, the rest broadcast.
  SymShape new_strides(shape.size(), Sym(0));
  int64_t stride = 1;
  for (size_t at = order.size(); at-- > 0;) {
    new_strides[order[at]] = Sym(stride);
    stride *= shape[order[at]];
  }
  const ShapeTracker tracker({View{read.shape, new_strides, Sym(0), std::nullopt}});
  return UOp::make(Op::View, operand->dtype(), {stored}, tracker, shape);
}

}  // namespace

UOpRef copy_transposed_operand(const UOpRef& node) {
  if (node->op() != Op::Reduce || node->is_symbolic() || node->dtype() != DType(dtypes::float32))
    return nullptr;
  const ReduceArg& arg = node->reduce_arg();
  const UOpRef& product = node->src();
  if (arg.op != ReduceOp::Sum || product->op() != Op::Mul || product->is_symbolic()) return nullptr;
  const Shape& shape = product->shape();
  auto reduced = [&](int axis) {
    return std::find(arg.axes.begin(), arg.axes.end(), axis) != arg.axes.end();
  };
  // The output's last axis of more than one element: the columns a tile's lanes run along.
  int column = -1;
  for (int axis = static_cast<int>(shape.size()) - 1; axis >= 0 && column < 0; --axis) {
    if (!reduced(axis) && shape[axis] > 1) column = axis;
  }
  int64_t work = 1;
  for (int64_t size : shape) work *= size;
  if (column < 0 || shape[column] % 8 != 0 || work < kMinProductWork) return nullptr;
  std::vector<UOpRef> operands = product->srcs();
  for (UOpRef& operand : operands) {
    const std::vector<int64_t> strides = plain_strides(*operand);
    if (strides.empty() || strides[column] == 0 || std::abs(strides[column]) == 1) continue;
    bool along_reduce = false, shared = false;
    for (int axis = 0; axis < static_cast<int>(shape.size()); ++axis) {
      if (reduced(axis) && strides[axis] == 1 && shape[axis] > 1) along_reduce = true;
      if (!reduced(axis) && strides[axis] == 0 && shape[axis] > 1) shared = true;
    }
    if (!along_reduce || !shared) continue;
    operand = over_row_major_copy(operand, strides, column);
    return UOp::make(Op::Reduce, node->dtype(), {with_srcs(product, operands)}, arg, node->shape());
  }
  return nullptr;
}

}  // namespace kiln
