// Variables and Dims: the public face of symbolic sizes (core/symbolic.h).

#include <kiln/error.h>
#include <kiln/variable.h>

#include <cctype>

#include "core/symbolic.h"

namespace kiln {
namespace {

// Names become identifiers in kernel source, where compilers limit their length (glslang
// rejected a 3,000-character one).
constexpr size_t kMaxNameLength = 64;

bool is_identifier(const std::string& name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

}  // namespace

Variable::Variable(std::string name, int64_t min_value, int64_t max_value)
    : name_(std::move(name)), min_(min_value), max_(max_value) {
  if (!is_identifier(name_)) {
    throw ShapeError("[Variable] name '" + name_ +
                     "' is not an identifier; use letters, digits and _, not starting with a "
                     "digit");
  }
  if (name_.size() > kMaxNameLength) {
    throw ShapeError("[Variable] name '" + name_.substr(0, 16) + "...' has " +
                     std::to_string(name_.size()) + " characters; a name has at most " +
                     std::to_string(kMaxNameLength));
  }
  if (min_value < 0 || min_value > max_value) {
    throw ShapeError("[Variable] variable '" + name_ + "' has bounds [" +
                     std::to_string(min_value) + ", " + std::to_string(max_value) +
                     "]; sizes need 0 <= min <= max");
  }
}

Dim Variable::bind(int64_t value) const {
  if (value < min_ || value > max_) {
    throw ShapeError("[Variable::bind] variable '" + name_ + "' bound to " + std::to_string(value) +
                     ", outside its bounds [" + std::to_string(min_) + ", " + std::to_string(max_) +
                     "]");
  }
  return Dim(Sym::bound_var(name_, min_, max_, value));
}

Dim::Dim(const Sym& value) : value_(value.eval()) {
  if (!value.is_const()) expression_ = std::make_shared<const Sym>(value);
}

Sym Dim::sym() const {
  return expression_ ? *expression_ : Sym(value_);
}

std::string Dim::to_string() const {
  if (!expression_) return std::to_string(value_);
  return expression_->to_string() + "=" + std::to_string(value_);
}

Dim operator+(const Dim& a, const Dim& b) {
  return Dim(a.sym() + b.sym());
}
Dim operator-(const Dim& a, const Dim& b) {
  return Dim(a.sym() - b.sym());
}
Dim operator*(const Dim& a, const Dim& b) {
  return Dim(a.sym() * b.sym());
}

}  // namespace kiln
