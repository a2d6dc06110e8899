#include "codegen/lower.h"

#include <kiln/error.h>

#include <cmath>
#include <limits>
#include <sstream>
#include <unordered_map>

namespace kiln {
namespace {

ConstArg const_of(DType dtype, double value) {
  ConstArg arg;
  arg.float_value = value;
  arg.int_value = std::isfinite(value) ? static_cast<int64_t>(value) : 0;
  if (dtype.is_unsigned() && value >= 9223372036854775808.0) {
    arg.int_value = static_cast<int64_t>(static_cast<uint64_t>(value));
  }
  return arg;
}

ConstArg reduce_identity(ReduceOp op, DType dtype) {
  switch (op) {
    case ReduceOp::Sum: return const_of(dtype, 0);
    case ReduceOp::Prod: return const_of(dtype, 1);
    case ReduceOp::Max: {
      if (dtype.is_float()) return const_of(dtype, -std::numeric_limits<double>::infinity());
      ConstArg arg = const_of(dtype, dtype.min_value());
      if (dtype == dtypes::int64) arg.int_value = std::numeric_limits<int64_t>::min();
      return arg;
    }
    case ReduceOp::Min: {
      if (dtype.is_float()) return const_of(dtype, std::numeric_limits<double>::infinity());
      ConstArg arg = const_of(dtype, dtype.max_value());
      if (dtype == dtypes::int64) arg.int_value = std::numeric_limits<int64_t>::max();
      if (dtype == dtypes::uint64) arg.int_value = -1;  // all bits set
      return arg;
    }
  }
  return {};
}

std::string index_key(const std::vector<Sym>& index) {
  std::string key;
  for (const Sym& value : index) key += value.key() + ",";
  return key;
}

class Lowerer {
 public:
  explicit Lowerer(const ScheduleItem& item) : item_(item) {}

  LinearProgram run() {
    program_.params.push_back({item_.output->dtype(), item_.output->numel(), true});
    for (const UOpRef& input : item_.inputs) {
      param_of_[input.get()] = static_cast<int>(program_.params.size());
      program_.params.push_back({input->dtype(), input->numel(), false});
    }
    const int64_t total = item_.output->numel();
    program_.global_size = total;
    scopes_.emplace_back();
    if (total > 0) {
      const Sym gid = Sym::var(program_.global_var, 0, total - 1);
      const std::vector<Sym> index = unravel_index(gid, to_sym_shape(item_.ast->shape()));
      int value = lower(item_.ast, index);
      value = cast_to(value, item_.output->dtype());
      LinInstr store{LinOp::Store, item_.output->dtype()};
      store.srcs = {value};
      store.buffer = 0;
      store.index = gid;
      emit(std::move(store));
    }
    return std::move(program_);
  }

 private:
  int emit(LinInstr instr) {
    program_.instrs.push_back(std::move(instr));
    return static_cast<int>(program_.instrs.size()) - 1;
  }

  int constant(DType dtype, ConstArg value) {
    LinInstr instr{LinOp::Const, dtype};
    instr.value = value;
    return emit(std::move(instr));
  }

  int index_value(const Sym& index, DType dtype) {
    LinInstr instr{LinOp::Index, dtypes::int64};
    instr.index = index;
    int value = emit(std::move(instr));
    return cast_to(value, dtype);
  }

  int cast_to(int value, DType dtype) {
    if (program_.instrs[value].dtype == dtype) return value;
    LinInstr instr{LinOp::Cast, dtype};
    instr.srcs = {value};
    return emit(std::move(instr));
  }

  int alu(Op op, DType dtype, std::vector<int> srcs) {
    LinInstr instr{LinOp::Alu, dtype};
    instr.alu = op;
    instr.srcs = std::move(srcs);
    return emit(std::move(instr));
  }

  // value where `valid` holds, else zero of the value's dtype.
  int masked(int value, const Sym& valid, DType dtype) {
    if (valid.is_const()) return valid.const_value() ? value : constant(dtype, ConstArg{});
    const int condition = index_value(valid, dtypes::bool_);
    return alu(Op::Where, dtype, {condition, value, constant(dtype, ConstArg{})});
  }

  int lower(const UOpRef& node, const std::vector<Sym>& index) {
    const std::string key = std::to_string(reinterpret_cast<uintptr_t>(node.get())) + "@" + index_key(index);
    for (auto scope = scopes_.rbegin(); scope != scopes_.rend(); ++scope) {
      auto found = scope->find(key);
      if (found != scope->end()) return found->second;
    }
    const int value = lower_uncached(node, index);
    scopes_.back()[key] = value;
    return value;
  }

  int lower_uncached(const UOpRef& node, const std::vector<Sym>& index) {
    const DType dtype = node->dtype();
    switch (node->op()) {
      case Op::Buffer: {
        const SymShape strides = View::contiguous_strides(to_sym_shape(node->shape()));
        Sym flat(0);
        for (size_t dim = 0; dim < index.size(); ++dim) flat = flat + index[dim] * strides[dim];
        return load(node, flat, Sym(1));
      }
      case Op::Const: return constant(dtype, node->const_arg());
      case Op::Iota: return index_value(index[0], dtype);
      case Op::View: return lower_view(node, index);
      case Op::Reduce: return lower_reduce(node, index);
      case Op::Cast: {
        LinInstr instr{LinOp::Cast, dtype};
        instr.srcs = {lower(node->src(), index)};
        return emit(std::move(instr));
      }
      default: break;
    }
    if (!is_elementwise(node->op())) {
      throw Error(std::string("[lower_kernel] internal error: unexpected ") + op_name(node->op()) +
                  " in a kernel");
    }
    std::vector<int> srcs;
    for (const UOpRef& src : node->srcs()) srcs.push_back(lower(src, index));
    return alu(node->op(), dtype, std::move(srcs));
  }

  int load(const UOpRef& buffer, const Sym& flat, const Sym& valid) {
    if (valid.is_const() && valid.const_value() == 0) return constant(buffer->dtype(), ConstArg{});
    LinInstr instr{LinOp::Load, buffer->dtype()};
    instr.buffer = param_of_.at(buffer.get());
    instr.index = flat;
    instr.valid = valid;
    return emit(std::move(instr));
  }

  int lower_view(const UOpRef& node, const std::vector<Sym>& index) {
    const UOpRef& src = node->src();
    auto [flat, valid] = node->tracker().to_index(index);
    if (valid.is_const() && valid.const_value() == 0) return constant(node->dtype(), ConstArg{});
    switch (src->op()) {
      case Op::Buffer: return load(src, flat, valid);
      case Op::Const: return masked(constant(src->dtype(), src->const_arg()), valid, node->dtype());
      case Op::Iota: return masked(index_value(flat, src->dtype()), valid, node->dtype());
      default: break;
    }
    const int value = lower(src, unravel_index(flat, to_sym_shape(src->shape())));
    return masked(value, valid, node->dtype());
  }

  int lower_reduce(const UOpRef& node, const std::vector<Sym>& index) {
    const ReduceArg& reduce = node->reduce_arg();
    const UOpRef& src = node->src();
    LinInstr define{LinOp::AccDefine, node->dtype()};
    define.value = reduce_identity(reduce.op, node->dtype());
    const int accumulator = emit(std::move(define));

    for (int axis : reduce.axes) {
      if (src->shape()[axis] == 0) return accumulator;  // nothing to reduce: the identity
    }
    std::vector<Sym> src_index = index;
    std::vector<int> loops;
    for (int axis : reduce.axes) {
      const int64_t size = src->shape()[axis];
      if (size == 1) {
        src_index[axis] = Sym(0);
        continue;
      }
      const std::string name = "r" + std::to_string(loop_counter_++);
      LinInstr begin{LinOp::LoopBegin, dtypes::int64};
      begin.loop_var = name;
      begin.loop_end = size;
      loops.push_back(emit(std::move(begin)));
      scopes_.emplace_back();
      src_index[axis] = Sym::var(name, 0, size - 1);
    }
    const size_t body_start = program_.instrs.size();
    int value = cast_to(lower(src, src_index), node->dtype());
    LinInstr update{LinOp::AccUpdate, node->dtype()};
    update.srcs = {accumulator, value};
    update.reduce = reduce.op;
    emit(std::move(update));
    if (!loops.empty() && reduce.op == ReduceOp::Sum && node->dtype().is_float() &&
        innermost_body(body_start)) {
      program_.instrs[loops.back()].reduction_acc = accumulator;
    }
    for (size_t level = 0; level < loops.size(); ++level) {
      emit(LinInstr{LinOp::LoopEnd, dtypes::int64});
      scopes_.pop_back();
    }
    return accumulator;
  }

  // True when no loop opens between `start` and the end of the program.
  bool innermost_body(size_t start) const {
    for (size_t index = start; index < program_.instrs.size(); ++index) {
      if (program_.instrs[index].op == LinOp::LoopBegin) return false;
    }
    return true;
  }

  const ScheduleItem& item_;
  LinearProgram program_;
  std::unordered_map<const UOp*, int> param_of_;
  std::vector<std::unordered_map<std::string, int>> scopes_;
  int loop_counter_ = 0;
};

// A short stable name: what the kernel does and a hash of its program.
std::string kernel_name(const LinearProgram& program) {
  bool has_loop = false;
  for (const LinInstr& instr : program.instrs) has_loop |= instr.op == LinOp::LoopBegin;
  uint64_t hash = 1469598103934665603ull;
  for (char c : program.to_string()) hash = (hash ^ static_cast<uint8_t>(c)) * 1099511628211ull;
  std::ostringstream name;
  name << (has_loop ? "r_" : "e_") << program.global_size << "_" << std::hex << (hash & 0xffffffffull);
  return name.str();
}

}  // namespace

LinearProgram lower_kernel(const ScheduleItem& item) {
  LinearProgram program = Lowerer(item).run();
  program.name = kernel_name(program);
  return program;
}

std::string LinearProgram::to_string() const {
  static const char* const kOpNames[] = {"CONST", "INDEX",  "LOAD",       "STORE",      "ALU",
                                         "CAST",  "DEFACC", "ACC_UPDATE", "LOOP_BEGIN", "LOOP_END"};
  std::ostringstream text;
  text << "kernel " << name << " global=" << global_size << "\n";
  for (size_t param = 0; param < params.size(); ++param) {
    text << "  param " << param << ": " << params[param].dtype.name() << "[" << params[param].numel
         << "]" << (params[param].is_output ? " out" : "") << "\n";
  }
  for (size_t index = 0; index < instrs.size(); ++index) {
    const LinInstr& instr = instrs[index];
    text << "  %" << index << " = " << kOpNames[static_cast<int>(instr.op)] << " "
         << instr.dtype.name();
    if (instr.op == LinOp::Alu) text << " " << op_name(instr.alu);
    if (instr.op == LinOp::AccUpdate) text << " " << reduce_op_name(instr.reduce);
    for (int src : instr.srcs) text << " %" << src;
    if (instr.op == LinOp::Const || instr.op == LinOp::AccDefine) {
      text << " " << (instr.dtype.is_float() ? std::to_string(instr.value.float_value)
                                             : std::to_string(instr.value.int_value));
    }
    if (instr.buffer >= 0) text << " buf" << instr.buffer;
    if (instr.op == LinOp::Load || instr.op == LinOp::Store || instr.op == LinOp::Index) {
      text << " [" << instr.index.key() << "]";
    }
    if (instr.op == LinOp::Load && !(instr.valid == Sym(1))) text << " if " << instr.valid.key();
    if (instr.op == LinOp::LoopBegin) text << " " << instr.loop_var << " < " << instr.loop_end;
    text << "\n";
  }
  return text.str();
}

}  // namespace kiln
