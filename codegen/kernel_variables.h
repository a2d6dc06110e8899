#pragma once
// A kernel's variables: the bound variables of a scheduled kernel become unbound kernel
// variables, so that one compiled kernel serves every value; the values are passed at launch.
//
// A bound variable n=5 becomes the kernel variable var_n (the prefix keeps user names apart from
// the renderer's own: loop and work-item variables, keywords), a Sym::parameter whose key names
// its bounds. Two values of one name in one kernel (the sums of an n=3 and an n=5 tensor added)
// become var_n and var_n_1.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "codegen/schedule.h"
#include "core/symbolic.h"

namespace kiln {

// The kernel with its bound variables unbound (its ast, inputs and output rewritten), and for each
// kernel variable by name its value and the bound variable it stands for.
struct UnboundKernel {
  ScheduleItem item;
  std::map<std::string, int64_t> values;
  std::map<std::string, Sym> bound;
};
UnboundKernel unbind_variables(const ScheduleItem& item);

// Calls `visit` with every Sym of the node's shape (where it is symbolic) and of its View: sizes,
// strides, offset and mask.
template <typename Visit>
void for_each_sym(const UOp& node, Visit&& visit) {
  if (node.is_symbolic()) {
    for (const Sym& size : node.sym_shape()) visit(size);
  }
  if (node.op() != Op::View) return;
  for (const View& view : node.tracker().views()) {
    for (const Sym& size : view.shape) visit(size);
    for (const Sym& stride : view.strides) visit(stride);
    visit(view.offset);
    if (view.mask) {
      for (const auto& [begin, end] : *view.mask) {
        visit(begin);
        visit(end);
      }
    }
  }
}

// The unbound variables the ast mentions, each once, sorted by name (the order their values are
// passed in).
std::vector<Sym> kernel_variables(const UOpRef& ast);

}  // namespace kiln
