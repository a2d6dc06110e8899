// Tests for core/symbolic.h: every simplification the Sym constructors do must keep the value of
// the expression, and every node's [vmin, vmax] must hold for every assignment of its variables.
//
// The oracle is an Expr: a Sym built through the public API next to a direct evaluation of the
// same (unsimplified) expression in plain int64 arithmetic with Python (floor) division.

#include <catch2/catch.hpp>

#include <kiln/error.h>

#include <cmath>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/symbolic.h"

using namespace kiln;

namespace {

using Env = std::map<std::string, int64_t>;

// Floor division and the matching non-negative modulo, written independently of symbolic.cpp
// (through double floor; every value in these tests is far below 2^53).
int64_t ref_div(int64_t a, int64_t b) {
  return static_cast<int64_t>(std::floor(static_cast<double>(a) / static_cast<double>(b)));
}
int64_t ref_mod(int64_t a, int64_t b) {
  return a - b * ref_div(a, b);
}

struct Expr {
  Sym sym;
  std::function<int64_t(const Env&)> ref;
  std::string text;  // the unsimplified expression, for failure messages
};

Expr constant(int64_t value) {
  return {Sym(value), [value](const Env&) { return value; }, std::to_string(value)};
}

Expr variable(const std::string& name, int64_t low, int64_t high) {
  return {Sym::var(name, low, high), [name](const Env& env) { return env.at(name); }, name};
}

// Builds the Expr for a binary operation from the Sym operation and the reference operation.
template <typename SymOp, typename RefOp>
Expr binary(const Expr& a, const Expr& b, SymOp sym_op, RefOp ref_op, const std::string& spelling) {
  auto ra = a.ref, rb = b.ref;
  return {sym_op(a.sym, b.sym),
          [ra, rb, ref_op](const Env& env) { return ref_op(ra(env), rb(env)); },
          spelling + "(" + a.text + ", " + b.text + ")"};
}

Expr operator+(const Expr& a, const Expr& b) {
  return binary(
      a, b, [](const Sym& x, const Sym& y) { return x + y; },
      [](int64_t x, int64_t y) { return x + y; }, "add");
}
Expr operator-(const Expr& a, const Expr& b) {
  return binary(
      a, b, [](const Sym& x, const Sym& y) { return x - y; },
      [](int64_t x, int64_t y) { return x - y; }, "sub");
}
Expr operator*(const Expr& a, const Expr& b) {
  return binary(
      a, b, [](const Sym& x, const Sym& y) { return x * y; },
      [](int64_t x, int64_t y) { return x * y; }, "mul");
}
Expr operator-(const Expr& a) {
  auto ra = a.ref;
  return {-a.sym, [ra](const Env& env) { return -ra(env); }, "neg(" + a.text + ")"};
}
// The reference refuses a non-positive divisor: that would mean the Sym side accepted a divisor
// whose range it got wrong, and we must not divide by zero here.
Expr div(const Expr& a, const Expr& b) {
  return binary(
      a, b, [](const Sym& x, const Sym& y) { return floordiv(x, y); },
      [](int64_t x, int64_t y) { return y > 0 ? ref_div(x, y) : INT64_MIN; }, "div");
}
Expr mod(const Expr& a, const Expr& b) {
  return binary(
      a, b, [](const Sym& x, const Sym& y) { return kiln::mod(x, y); },
      [](int64_t x, int64_t y) { return y > 0 ? ref_mod(x, y) : INT64_MIN; }, "mod");
}
Expr min(const Expr& a, const Expr& b) {
  return binary(
      a, b, sym_min, [](int64_t x, int64_t y) { return std::min(x, y); }, "min");
}
Expr max(const Expr& a, const Expr& b) {
  return binary(
      a, b, sym_max, [](int64_t x, int64_t y) { return std::max(x, y); }, "max");
}
Expr less(const Expr& a, const Expr& b) {
  return binary(
      a, b, lt, [](int64_t x, int64_t y) -> int64_t { return x < y; }, "lt");
}
Expr less_equal(const Expr& a, const Expr& b) {
  return binary(
      a, b, le, [](int64_t x, int64_t y) -> int64_t { return x <= y; }, "le");
}
Expr greater_equal(const Expr& a, const Expr& b) {
  return binary(
      a, b, ge, [](int64_t x, int64_t y) -> int64_t { return x >= y; }, "ge");
}
Expr equal(const Expr& a, const Expr& b) {
  return binary(
      a, b, eq, [](int64_t x, int64_t y) -> int64_t { return x == y; }, "eq");
}
Expr both(const Expr& a, const Expr& b) {
  return binary(
      a, b, logical_and, [](int64_t x, int64_t y) -> int64_t { return x != 0 && y != 0; }, "and");
}

struct VarRange {
  std::string name;
  int64_t low, high;
};

// Calls visit(env) for every assignment of the variables inside their ranges.
void for_each_assignment(const std::vector<VarRange>& vars,
                         const std::function<void(const Env&)>& visit) {
  Env env;
  std::function<void(size_t)> recurse = [&](size_t index) {
    if (index == vars.size()) return visit(env);
    for (int64_t value = vars[index].low; value <= vars[index].high; ++value) {
      env[vars[index].name] = value;
      recurse(index + 1);
    }
  };
  recurse(0);
}

// Checks value and range at every assignment; returns false (after reporting) on the first miss
// so that a fuzz failure prints one readable case instead of thousands.
bool check_everywhere(const Expr& expr, const std::vector<VarRange>& vars) {
  bool ok = true;
  for_each_assignment(vars, [&](const Env& env) {
    if (!ok) return;
    const int64_t expected = expr.ref(env);
    const int64_t got = expr.sym.eval(env);
    if (got != expected || got < expr.sym.vmin() || got > expr.sym.vmax()) {
      std::string where;
      for (const auto& [name, value] : env) where += name + "=" + std::to_string(value) + " ";
      INFO("expression: " << expr.text);
      INFO("simplified: " << expr.sym.key() << "  range [" << expr.sym.vmin() << ", "
                          << expr.sym.vmax() << "]");
      INFO("at " << where << " expected " << expected << ", got " << got);
      CHECK(got == expected);
      CHECK(expr.sym.vmin() <= got);
      CHECK(got <= expr.sym.vmax());
      ok = false;
    }
  });
  return ok;
}

const std::vector<VarRange> kVars = {{"a", -3, 5}, {"b", 0, 7}, {"c", 1, 4}};

}  // namespace

TEST_CASE("symbolic: hand-written expressions match brute force everywhere", "[symbolic]") {
  const Expr a = variable("a", -3, 5), b = variable("b", 0, 7), c = variable("c", 1, 4);
  const Expr k = constant(1);
  const std::vector<Expr> cases = {
      a + b,
      a - b,
      a * b,
      -a,
      a + a,
      a - a,
      a * constant(3) - a,
      (a + b) * constant(2) - b,
      a * b * c,
      (a + constant(1)) * (b - constant(2)),
      // Constant divisors, numerators of both signs, gcd reductions, nested div and mod.
      div(a, constant(2)),
      mod(a, constant(2)),
      div(a, constant(3)),
      mod(a, constant(3)),
      div(a * constant(4) + constant(3), constant(4)),
      mod(a * constant(4) + constant(3), constant(4)),
      div(a * constant(6) + b * constant(4), constant(8)),
      mod(a * constant(6) + b * constant(4), constant(8)),
      div(b * constant(2) + constant(1), constant(4)),
      mod(b * constant(2) + constant(1), constant(4)),
      div(div(a * b, constant(2)), constant(3)),
      mod(mod(a * b, constant(6)), constant(3)),
      mod(mod(a * b, constant(4)), constant(3)),
      div(mod(a + b, constant(6)), constant(2)),
      div(a, constant(4)) * constant(4) + mod(a, constant(4)),
      div(a + b, constant(3)) * constant(6) + mod(a + b, constant(3)) * constant(2),
      div(a + b, constant(3)) * constant(3) - mod(a + b, constant(3)),
      div(a - constant(2), constant(5)),
      mod(constant(7) - b, constant(3)),
      // c + 3 lies in [4, 7]: one block of 4, but not the first one.
      mod(c + constant(3), constant(4)),
      div(c + constant(3), constant(4)),
      mod(c * constant(3) + constant(9), constant(12)),
      div(c * constant(3) + constant(9), constant(12)),
      // Positive symbolic divisors.
      div(a, c),
      mod(a, c),
      div(b, c),
      mod(b, c),
      div(a * b, c + k),
      mod(a * b, c + k),
      div(a + b, c * constant(2)),
      mod(a - b, c * c),
      div(c, c),
      mod(c, c),
      div(b, b + k),
      mod(b, b + k),
      div(a, max(a, k)),
      mod(a + constant(3), c + constant(7)),
      div(div(a, c), c),
      mod(div(b, c), constant(2)),
      // min, max and the comparisons.
      min(a, b),
      max(a, b),
      min(a, constant(10)),
      max(a, constant(-10)),
      min(a, a),
      max(a + b, a - b),
      min(max(a, constant(0)), constant(3)),
      less(a, b),
      less(a, constant(6)),
      less(a, constant(-3)),
      less_equal(a, b),
      less_equal(a, constant(5)),
      greater_equal(a, b),
      greater_equal(b, constant(0)),
      equal(a, b),
      equal(a, a),
      equal(a + constant(9), b),
      equal(a * constant(2), b),
      // logical_and must give 0 or 1, whatever its operands' values.
      both(less(a, b), less(b, c)),
      both(a, b),
      both(a, a),
      both(b, b),
      both(constant(1), a),
      both(a, constant(2)),
      both(constant(0), a),
      both(less(a, c), constant(1)),
      both(equal(a, b), equal(a, b)),
      // Mixtures of the above.
      mod(a * constant(3) + div(b, constant(2)), constant(4)) + less(a, c) * b,
      div(max(a, b) * constant(2) + min(a, c), constant(3)),
  };
  for (const Expr& expr : cases) {
    CHECK(check_everywhere(expr, kVars));
  }
}

namespace {

// A random expression of at most `depth` levels over the given variables. Symbolic divisors are
// wrapped as max(subtree, k) with k >= 1, which is positive both in the reference and (if the
// ranges are right) for the Sym builder.
Expr random_expr(std::mt19937& rng, const std::vector<Expr>& vars, int depth) {
  auto pick = [&](int low, int high) { return std::uniform_int_distribution<int>(low, high)(rng); };
  if (depth == 0 || pick(0, 5) == 0) {
    const Expr& var = vars[pick(0, static_cast<int>(vars.size()) - 1)];
    switch (pick(0, 3)) {
      case 0:
        return constant(pick(-4, 8));
      // Affine leaves: what index arithmetic is made of, and what the div/mod rules split.
      case 1:
        return var * constant(pick(1, 4)) + constant(pick(-8, 8));
      default:
        return var;
    }
  }
  auto sub = [&] { return random_expr(rng, vars, depth - 1); };
  auto positive = [&]() -> Expr {
    switch (pick(0, 2)) {
      case 0:
        return constant(pick(1, 9));
      case 1:
        return constant(std::vector<int>{2, 4, 8, 16, 64}[pick(0, 4)]);
      default:
        return max(sub(), constant(pick(1, 3)));
    }
  };
  switch (pick(0, 15)) {
    case 0:
      return sub() + sub();
    case 1:
      return sub() - sub();
    case 2:
      return sub() * sub();
    case 3:
      return sub() * constant(pick(-3, 4));
    case 4:
      return -sub();
    case 5:
    case 6:
      return div(sub(), positive());
    case 7:
    case 8:
      return mod(sub(), positive());
    case 9:
      return min(sub(), sub());
    case 10:
      return max(sub(), sub());
    case 11:
      return less(sub(), sub());
    case 12:
      return pick(0, 1) ? less_equal(sub(), sub()) : greater_equal(sub(), sub());
    case 13:
      return equal(sub(), sub());
    case 14:
      return both(sub(), sub());
    default: {
      // The unravel-then-ravel shape that index arithmetic produces.
      const Expr x = sub();
      const Expr d = constant(pick(2, 8));
      return div(x, d) * d + mod(x, d);
    }
  }
}

}  // namespace

TEST_CASE("symbolic: random expression trees match brute force (fuzz)", "[symbolic]") {
  const std::vector<VarRange> two = {{"a", -3, 5}, {"b", 0, 6}};
  // c starts well above 0, so that remainders can sit in one non-zero block of the divisor.
  const std::vector<VarRange> three = {{"a", -3, 5}, {"b", 0, 6}, {"c", 3, 6}};
  int failures = 0;
  for (uint32_t seed = 1; seed <= 10000 && failures < 5; ++seed) {
    std::mt19937 rng(seed);
    const auto& ranges = seed % 2 ? two : three;
    std::vector<Expr> vars;
    for (const VarRange& range : ranges)
      vars.push_back(variable(range.name, range.low, range.high));
    INFO("seed " << seed);
    try {
      const Expr expr = random_expr(rng, vars, 4);
      if (!check_everywhere(expr, ranges)) ++failures;
    } catch (const std::exception& error) {
      // A builder that throws means it misjudged a divisor's range (all divisors are positive).
      FAIL_CHECK("builder threw: " << error.what());
      ++failures;
    }
  }
  CHECK(failures == 0);
}

TEST_CASE("symbolic: substitute agrees with eval of the substituted values", "[symbolic]") {
  const std::vector<VarRange> ranges = {{"a", -3, 5}, {"b", 0, 6}};
  for (uint32_t seed = 5000; seed < 5300; ++seed) {
    std::mt19937 rng(seed);
    const std::vector<Expr> vars = {variable("a", -3, 5), variable("b", 0, 6)};
    const Expr expr = random_expr(rng, vars, 3);
    INFO("seed " << seed << " expression " << expr.text << " simplified " << expr.sym.key());
    // Every variable replaced by a constant folds to that assignment's value.
    for_each_assignment(ranges, [&](const Env& env) {
      const Sym folded = expr.sym.substitute({{"a", Sym(env.at("a"))}, {"b", Sym(env.at("b"))}});
      REQUIRE(folded.is_const());
      CHECK(folded.const_value() == expr.ref(env));
    });
    // a -> b - 2 stays inside a's range [-3, 5], so the simplifications made for `a` still hold.
    const Sym b = Sym::var("b", 0, 6);
    const Sym partial = expr.sym.substitute({{"a", b - Sym(2)}});
    for (int64_t value = 0; value <= 6; ++value) {
      const int64_t expected = expr.ref({{"a", value - 2}, {"b", value}});
      CHECK(partial.eval({{"b", value}}) == expected);
      CHECK(partial.vmin() <= expected);
      CHECK(expected <= partial.vmax());
    }
  }
}

TEST_CASE("symbolic: constants fold", "[symbolic]") {
  CHECK(Sym(3) + Sym(4) == Sym(7));
  CHECK((Sym(3) - Sym(10)).const_value() == -7);
  CHECK(Sym(6) * Sym(-7) == Sym(-42));
  CHECK(floordiv(Sym(-7), Sym(2)) == Sym(-4));
  CHECK(mod(Sym(-7), Sym(3)) == Sym(2));
  CHECK(floordiv(Sym(7), Sym(2)) == Sym(3));
  CHECK(sym_min(Sym(3), Sym(5)) == Sym(3));
  CHECK(sym_max(Sym(3), Sym(5)) == Sym(5));
  CHECK(lt(Sym(2), Sym(3)) == Sym(1));
  CHECK(le(Sym(3), Sym(3)) == Sym(1));
  CHECK(ge(Sym(2), Sym(3)) == Sym(0));
  CHECK(eq(Sym(4), Sym(4)) == Sym(1));
  CHECK(logical_and(Sym(2), Sym(5)) == Sym(1));
  CHECK(logical_and(Sym(2), Sym(0)) == Sym(0));
  CHECK(sym_prod({}) == Sym(1));
  CHECK(sym_prod({Sym(2), Sym(3), Sym(4)}) == Sym(24));
  // A variable whose range is one value is that constant.
  CHECK(Sym::var("n", 4, 4) == Sym(4));
}

TEST_CASE("symbolic: like terms combine into one canonical form", "[symbolic]") {
  const Sym x = Sym::var("x", -10, 10), y = Sym::var("y", 0, 20);
  CHECK(x + x == Sym(2) * x);
  CHECK(x - x == Sym(0));
  CHECK((x - x).is_const());
  CHECK(Sym(3) * x - Sym(2) * x == x);
  CHECK((x + Sym(1)) + (y - Sym(1)) - y == x);
  CHECK(x + y == y + x);
  CHECK(x * y == y * x);
  CHECK(Sym(2) * (x + y) == x + x + y + y);
  CHECK(sym_min(x, y) == sym_min(y, x));
  CHECK(sym_max(x, x) == x);
  // One node per structure: equal Syms are one node, and print alike.
  CHECK((x + y).node() == (y + x).node());
  CHECK((x + y).key() == (y + x).key());
  CHECK(x + Sym(1) != x);
  CHECK((x + Sym(5)).vmin() == -5);
  CHECK((x + Sym(5)).vmax() == 15);
  CHECK((x * Sym(-2)).vmin() == -20);
  CHECK((x * Sym(-2)).vmax() == 20);
}

TEST_CASE("symbolic: identity is structural (hash-consed nodes, a stable order)", "[symbolic]") {
  const Sym x = Sym::var("x", 0, 63), y = Sym::var("y", 0, 7);
  // Built twice, apart: one node, one hash.
  const Sym a = floordiv(x * Sym(8) + y, Sym(4)) + mod(x, Sym(3)) * y;
  const Sym b = mod(x, Sym(3)) * y + floordiv(y + x * Sym(8), Sym(4));
  CHECK(a.node() == b.node());
  CHECK(a.hash() == b.hash());
  CHECK(Sym(1000003).node() == Sym(1000003).node());
  // A variable is its name, its bounds and its binding: a name with other bounds, a bound value
  // or a kernel parameter is another variable.
  CHECK(Sym::var("x", 0, 63) == x);
  CHECK(Sym::var("x", 0, 31) != x);
  CHECK(Sym::bound_var("x", 0, 63, 5) != x);
  CHECK(Sym::bound_var("x", 0, 63, 5) == Sym::bound_var("x", 0, 63, 5));
  CHECK(Sym::bound_var("x", 0, 63, 5) != Sym::bound_var("x", 0, 63, 6));
  CHECK(Sym::parameter("x", 0, 63) != x);
  // The order is total and agrees with equality.
  const std::vector<Sym> values = {x,
                                   y,
                                   Sym(0),
                                   Sym(-4),
                                   x + y,
                                   x * y,
                                   mod(x, 5),
                                   floordiv(x, 5),
                                   sym_min(x, y),
                                   lt(x, y),
                                   a,
                                   x + y * 2,
                                   Sym::var("x", 0, 31),
                                   Sym::parameter("y", 0, 7)};
  for (const Sym& first : values) {
    for (const Sym& second : values) {
      const int relations = (first < second) + (second < first) + (first == second);
      CHECK(relations == 1);
    }
  }
  // (x // 4) * 4 + x % 4 folds by structure, not by how the terms print.
  CHECK(floordiv(x, Sym(4)) * Sym(4) + mod(x, Sym(4)) == x);
  // Substitution by node tells a bound variable from its name's other values.
  const Sym n3 = Sym::bound_var("n", 1, 9, 3), n5 = Sym::bound_var("n", 1, 9, 5);
  const Sym shape = n3 * Sym(10) + n5;
  const Sym p = Sym::var("p", 1, 9);
  CHECK(shape.substitute(std::map<Sym, Sym>{{n3, p}}) == p * Sym(10) + n5);
  CHECK(shape.substitute(std::map<std::string, Sym>{{"n", p}}) == p * Sym(11));
}

TEST_CASE("symbolic: Syms built on many threads at once are one node each", "[symbolic][threads]") {
  constexpr int kThreads = 4;
  std::vector<std::vector<Sym>> built(kThreads);
  std::vector<std::thread> threads;
  for (int thread = 0; thread < kThreads; ++thread) {
    threads.emplace_back([&built, thread] {
      const Sym x = Sym::var("x", 0, 1000), y = Sym::var("y", 0, 1000);
      for (int step = 0; step < 500; ++step) {
        const Sym value = mod(floordiv(x * Sym(step + 1) + y, Sym(7)), Sym(5)) + Sym(step * 1000);
        if (step % 50 == 0) built[thread].push_back(value);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int thread = 1; thread < kThreads; ++thread) {
    REQUIRE(built[thread].size() == built[0].size());
    for (size_t at = 0; at < built[0].size(); ++at)
      CHECK(built[thread][at].node() == built[0][at].node());
  }
}

TEST_CASE("symbolic: division and modulo simplify by range and structure", "[symbolic]") {
  const Sym gid = Sym::var("gid", 0, 4095);
  const Sym x = Sym::var("x", 0, 1000);
  const Sym small = Sym::var("s", 0, 7);
  const Sym any = Sym::var("z", -50, 50);
  const Sym n = Sym::var("n", 1, 16);

  // Unravel then ravel gives the index back, also with an offset and a common factor.
  CHECK(floordiv(gid, Sym(64)) * Sym(64) + mod(gid, Sym(64)) == gid);
  CHECK(floordiv(gid + Sym(5), Sym(64)) * Sym(64) + mod(gid + Sym(5), Sym(64)) == gid + Sym(5));
  CHECK(floordiv(any, Sym(8)) * Sym(8) + mod(any, Sym(8)) == any);
  CHECK(floordiv(gid * Sym(2), Sym(8)) * Sym(8) + mod(gid * Sym(2), Sym(8)) == gid * Sym(2));

  // Terms that are multiples of the divisor leave the division.
  CHECK(floordiv(x * Sym(4) + Sym(3), Sym(4)) == x);
  CHECK(mod(x * Sym(4) + Sym(3), Sym(4)) == Sym(3));
  CHECK(floordiv(any * Sym(4) + Sym(3), Sym(4)) == any);  // floor semantics: true for x < 0 too
  CHECK(floordiv(x * Sym(8) + small, Sym(8)) == x);
  CHECK(mod(x * Sym(8) + small, Sym(8)) == small);

  // Range elimination.
  CHECK(mod(small, Sym(8)) == small);
  CHECK(floordiv(small, Sym(8)) == Sym(0));
  CHECK(mod(small, n + Sym(7)) == small);  // symbolic divisor, always larger than the numerator
  CHECK(floordiv(small, n + Sym(7)) == Sym(0));
  CHECK(floordiv(n, n) == Sym(1));
  CHECK(mod(n, n) == Sym(0));

  // Nested divisions and modulos.
  CHECK(floordiv(floordiv(x, Sym(4)), Sym(8)) == floordiv(x, Sym(32)));
  CHECK(floordiv(floordiv(any, Sym(4)), Sym(8)) == floordiv(any, Sym(32)));
  CHECK(mod(mod(x, Sym(8)), Sym(4)) == mod(x, Sym(4)));
  CHECK(floordiv(x, Sym(1)) == x);
  CHECK(mod(x, Sym(1)) == Sym(0));

  // Ranges of what remains are tight enough to be useful.
  CHECK(mod(x, Sym(8)).vmin() == 0);
  CHECK(mod(x, Sym(8)).vmax() == 7);
  CHECK(floordiv(x, Sym(8)).vmax() == 125);
  CHECK(mod(x, n).vmax() == 15);
}

TEST_CASE("symbolic: comparisons, min and max decided by range", "[symbolic]") {
  const Sym x = Sym::var("x", 0, 7), y = Sym::var("y", 10, 20);
  CHECK(lt(x, y) == Sym(1));
  CHECK(lt(y, x) == Sym(0));
  CHECK(lt(x, Sym(8)) == Sym(1));
  CHECK(le(x, Sym(7)) == Sym(1));
  CHECK(ge(x, Sym(0)) == Sym(1));
  CHECK(eq(x, y) == Sym(0));
  CHECK(eq(x, x) == Sym(1));
  CHECK(sym_min(x, y) == x);
  CHECK(sym_max(x, y) == y);
  CHECK(sym_min(x, Sym(100)) == x);
  CHECK(sym_max(x, Sym(0)) == x);
  CHECK(logical_and(lt(x, Sym(3)), Sym(1)) == lt(x, Sym(3)));
  CHECK(logical_and(Sym(1), lt(x, Sym(3))) == lt(x, Sym(3)));
  // Undecidable ones stay, with a 0/1 range.
  const Sym open = lt(x, Sym(3));
  CHECK_FALSE(open.is_const());
  CHECK(open.vmin() == 0);
  CHECK(open.vmax() == 1);
}

TEST_CASE("symbolic: variables, eval and errors", "[symbolic]") {
  const Sym x = Sym::var("x", 0, 7), y = Sym::var("y", 1, 3);
  const Sym expr = floordiv(x * y + Sym(3), y) + mod(x, Sym(4));
  CHECK(expr.variables() == std::vector<std::string>{"x", "y"});
  CHECK(Sym(5).variables().empty());
  CHECK_THROWS_AS(expr.eval({{"x", 1}}), Error);  // y has no value
  CHECK_THROWS_AS(Sym::var("bad", 3, 2), ShapeError);
  CHECK_THROWS_AS(floordiv(x, Sym(0)), Error);
  CHECK_THROWS_AS(mod(x, Sym(-2)), Error);
  CHECK_THROWS_AS(floordiv(x, Sym::var("d", 0, 3)), Error);  // the divisor can be zero
  CHECK_THROWS_AS(mod(x, Sym::var("d", -2, 3)), Error);
}
