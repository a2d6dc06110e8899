// Lowering a Gather: loads from computed addresses. Each lane's index is read (as any value is),
// wrapped where negative, checked against the axis, and bound to an index variable (LinOp::IndexOf)
// that the source's index arithmetic then uses like a loop variable: views, masks and vector
// loads along other axes work unchanged, and the cost is one read of the source per output.

#include <kiln/error.h>

#include <limits>

#include "codegen/lowerer.h"

namespace kiln {

namespace {

// The dtype the index is compared in: its own where it holds the axis size, else 64 bits.
DType compare_dtype(DType index, const Sym& size) {
  if (index.itemsize() >= 8 || size.vmax() <= std::numeric_limits<int32_t>::max()) return index;
  return index.is_signed_int() ? dtypes::int64 : dtypes::uint64;
}

}  // namespace

int Lowerer::gather_site(const UOpRef& node) {
  auto found = gather_site_of_.find(node.get());
  if (found != gather_site_of_.end()) return found->second;
  const bool gather = node->op() == Op::Gather;
  const int axis = gather ? node->gather_arg().axis : node->scatter_arg().axis;
  const std::string& op = gather ? node->gather_arg().op : node->scatter_arg().op;
  const int site = static_cast<int>(program_.gathers.size());
  // The axis indexed: the Gather's source's, the Scatter's destination's (both srcs[0]).
  program_.gathers.push_back(
      {op, axis, node->src(0)->sym_shape()[axis], !node->src(1)->dtype().is_signed_int()});
  gather_site_of_.emplace(node.get(), site);
  if (index_errors_ < 0) {
    index_errors_ = static_cast<int>(program_.params.size());
    KernelParam report{dtypes::int32, 4, true};
    report.index_errors = true;
    program_.params.push_back(report);
  }
  return site;
}

Sym Lowerer::gathered_position(const UOpRef& node, int raw, Sym* inside) {
  const int site = gather_site(node);
  ValueKey key{ValueKey::Kind::Node, node.get(), raw, {}};
  if (!gate_.is_const()) key.at.push_back(gate_);
  const Sym size = program_.gathers[site].size;
  const auto position_var = [&](int index_of) {
    if (inside) {
      auto outside = gathered_outside_.find(program_.instrs[index_of].loop_var);
      *inside = outside == gathered_outside_.end() ? Sym(1) : eq(outside->second, Sym(0));
    }
    return Sym::var(program_.instrs[index_of].loop_var, 0, std::max<int64_t>(size.vmax() - 1, 0));
  };
  if (const int* known = find_value(key)) return position_var(*known);

  const DType dtype = compare_dtype(program_.instrs[raw].dtype, size);
  const int index = cast_to(raw, dtype);
  const int zero = constant(dtype, ConstArg{});
  const int extent = size.is_const()
                         ? constant(dtype, const_of(dtype, static_cast<double>(size.const_value())))
                         : index_value(size, dtype);
  int wrapped = index, in_range;
  if (dtype.is_signed_int()) {
    // A negative index counts from the end: -size .. -1 are the axis' positions too.
    const int negative = alu(Op::CmpLt, dtypes::bool_, {index, zero});
    wrapped = alu(Op::Where, dtype, {negative, alu(Op::Add, dtype, {index, extent}), index});
    in_range = alu(Op::And, dtypes::bool_,
                   {alu(Op::CmpGe, dtypes::bool_, {wrapped, zero}),
                    alu(Op::CmpLt, dtypes::bool_, {wrapped, extent})});
  } else {
    in_range = alu(Op::CmpLt, dtypes::bool_, {index, extent});
  }
  const int safe = alu(Op::Where, dtype, {in_range, wrapped, zero});
  const std::string name = "gathered" + std::to_string(gathered_count_++);
  const bool wide_axis = size.vmax() > std::numeric_limits<int32_t>::max();
  LinInstr position{LinOp::IndexOf, wide_axis ? dtypes::int64 : dtypes::int32};
  position.srcs = {safe};
  position.loop_var = name;
  position.loop_end = size;
  const int position_value = emit(std::move(position));

  // An index outside the axis is reported: the Gather's site, then the index's 64 bits (not
  // where the check folded to true, or where nothing here is computed).
  const LinInstr& check = program_.instrs[in_range];
  const bool always_inside = check.op == LinOp::Const && check.value.int_value != 0;
  if (!always_inside && !(gate_.is_const() && gate_.const_value() == 0)) {
    LinInstr bad{LinOp::IndexOf, dtypes::int32};
    bad.srcs = {alu(Op::Not, dtypes::bool_, {in_range})};
    bad.loop_var = name + "_outside";
    bad.loop_end = Sym(2);
    const Sym outside = Sym::var(bad.loop_var, 0, 1);
    gathered_outside_.emplace(name, outside);
    emit(std::move(bad));
    // The index's low and high 32 bits; a 32-bit index's high word is its sign (no 64-bit
    // arithmetic, which some devices lack).
    const int low = cast_to(index, dtypes::int32);
    int high;
    if (dtype.itemsize() == 8) {
      high = cast_to(alu(Op::Shr, dtype, {index, constant(dtype, const_of(dtype, 32))}),
                     dtypes::int32);
    } else if (dtype.is_signed_int()) {
      high = alu(Op::Where, dtypes::int32,
                 {alu(Op::CmpLt, dtypes::bool_, {index, zero}),
                  constant(dtypes::int32, const_of(dtypes::int32, -1)),
                  constant(dtypes::int32, ConstArg{})});
    } else {
      high = constant(dtypes::int32, ConstArg{});
    }
    const int fields[4] = {constant(dtypes::int32, const_of(dtypes::int32, site + 1)), low, high,
                           constant(dtypes::int32, ConstArg{})};
    for (int field = 0; field < 4; ++field) {
      LinInstr store{LinOp::Store, dtypes::int32};
      store.srcs = {fields[field]};
      store.buffer = index_errors_;
      store.index = Sym(field);
      store.valid = logical_and(gate_, eq(outside, Sym(1)));
      emit(std::move(store));
    }
  }
  remember(std::move(key), position_value);
  return position_var(position_value);
}

std::vector<int> Lowerer::lower_gather(const UOpRef& node, const Lanes& lanes) {
  const int axis = node->gather_arg().axis;
  const std::vector<int> raw = lower(node->src(1), lanes);
  const Sym size = node->src(0)->sym_shape()[axis];
  std::vector<int> values;
  for (size_t lane = 0; lane < lanes.size(); ++lane) {
    Index at = lanes[lane];
    at[axis] = gathered_position(node, raw[lane]);
    // An axis that may be empty has no position to read in place of an index outside it.
    if (size.vmin() > 0) {
      values.push_back(lower_one(node->src(0), at));
      continue;
    }
    const Sym inside = lt(at[axis], size);
    const int value = gated(inside, [&] { return lower_one(node->src(0), at); });
    values.push_back(masked(value, inside, node->dtype()));
  }
  return values;
}

}  // namespace kiln
