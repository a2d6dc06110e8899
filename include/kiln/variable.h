#pragma once
// Symbolic sizes: one compiled kernel for every value of a size.
//
// A Variable is a named integer with inclusive bounds. Bound to a value it is a Dim, usable
// wherever a tensor size is: reshape, expand and shrink take Dims, and the creation functions
// (full, zeros, ones) take shapes of Dims. A tensor whose shape holds a bound variable computes
// with that value, but its kernels are compiled for the variable, not the value: the value is a
// kernel argument, so binding another value compiles nothing.
//
//   kiln::Variable batch("batch", 1, 64);
//   kiln::Tensor x = kiln::Tensor::from_vector(data, {rows, 16}).reshape({batch.bind(rows), 16});
//   kiln::Tensor y = (x * 2).sum(1);  // compiled once for every batch size 1..64
//
//   // A growing length: the first n rows of a preallocated cache.
//   kiln::Variable n("n", 1, 4096);
//   kiln::Tensor keys = cache.shrink({{0, n.bind(length)}, {0, 64}});
//
// Shapes print with the variable's name and value: "float32(n=5, 16) on CPU", "((n*16)=80,)". A
// bound value outside the bounds, and two variables of one name with different bounds in one
// operation, are ShapeErrors naming the variable. The Dim arithmetic below makes sizes such as n *
// 16 (a flattened shape) and n + 1.

#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

namespace kiln {

class Sym;
class Dim;

class Variable {
 public:
  // The name must be an identifier ([A-Za-z_][A-Za-z0-9_]*) of at most 64 characters;
  // 0 <= min_value <= max_value (otherwise a ShapeError). Any bound computes on every device; on
  // VULKAN a kernel using a variable bounded past 2^31 - 1 holds it in 64 bits (shaderInt64).
  Variable(std::string name, int64_t min_value, int64_t max_value);

  const std::string& name() const { return name_; }
  int64_t min() const { return min_; }
  int64_t max() const { return max_; }
  // This variable at `value`; a ShapeError names the variable when the value is outside its
  // bounds.
  Dim bind(int64_t value) const;

 private:
  std::string name_;
  int64_t min_, max_;
};

// One size of a shape: a number, or an expression over bound variables.
class Dim {
 public:
  // Any signed integer converts implicitly, as a size does.
  template <typename Integer,
            std::enable_if_t<std::is_integral_v<Integer> && std::is_signed_v<Integer>, int> = 0>
  Dim(Integer value) : value_(static_cast<int64_t>(value)) {}  // NOLINT
  explicit Dim(const Sym& value);

  // The size with every variable at its bound value.
  int64_t value() const { return value_; }
  bool is_symbolic() const { return expression_ != nullptr; }
  // "16", "n=5", "(n*16)=80": the expression, and its value.
  std::string to_string() const;
  // Internal: the expression (a number as a constant).
  Sym sym() const;

 private:
  int64_t value_ = 0;
  std::shared_ptr<const Sym> expression_;  // null for a number
};

Dim operator+(const Dim& a, const Dim& b);
Dim operator-(const Dim& a, const Dim& b);
Dim operator*(const Dim& a, const Dim& b);

using DimShape = std::vector<Dim>;

}  // namespace kiln
