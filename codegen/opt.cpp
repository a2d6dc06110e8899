#include "codegen/opt.h"

#include <algorithm>

namespace kiln {

const char* opt_kind_name(OptKind kind) {
  switch (kind) {
    case OptKind::Local:
      return "LOCAL";
    case OptKind::Upcast:
      return "UPCAST";
    case OptKind::Unroll:
      return "UNROLL";
    case OptKind::Group:
      return "GROUP";
    case OptKind::Rows:
      return "ROWS";
    case OptKind::Tile:
      return "TILE";
    case OptKind::Grid:
      return "GRID";
    case OptKind::TensorCore:
      return "TC";
  }
  return "?";
}

std::string Opt::to_string() const {
  const std::string where = axis == kFlatAxis ? "flat" : "axis " + std::to_string(axis);
  return std::string(opt_kind_name(kind)) + "(" + where + ", " + std::to_string(amount) + ")";
}

bool has_opt(const std::vector<Opt>& opts, OptKind kind) {
  return std::any_of(opts.begin(), opts.end(), [kind](const Opt& opt) { return opt.kind == kind; });
}

std::string opts_to_string(const std::vector<Opt>& opts) {
  if (opts.empty()) return "none";
  std::string text;
  for (const Opt& opt : opts) text += (text.empty() ? "" : " ") + opt.to_string();
  return text;
}

}  // namespace kiln
