#include <catch2/catch.hpp>

#include "core/symbolic.h"
#include "core/uop.h"
#include "core/view.h"

using namespace kiln;

TEST_CASE("symbolic folds unravel then ravel", "[symbolic]") {
  Sym gid = Sym::var("gid", 0, 4095);
  Sym again = floordiv(gid, 64) * 64 + mod(gid, 64);
  CHECK(again == gid);
  CHECK(floordiv(gid * 4 + 3, 4) == gid);
  CHECK(mod(gid * 4 + 3, 4) == Sym(3));
}

TEST_CASE("uops are hash-consed", "[uop]") {
  auto a = UOp::make(Op::Const, dtypes::float32, {}, ConstArg{1.0, 1}, {2, 3});
  auto b = UOp::make(Op::Const, dtypes::float32, {}, ConstArg{1.0, 1}, {2, 3});
  CHECK(a.get() == b.get());
  auto sum = UOp::make(Op::Add, dtypes::float32, {a, b}, {}, {2, 3});
  auto again = UOp::make(Op::Add, dtypes::float32, {a, b}, {}, {2, 3});
  CHECK(sum.get() == again.get());
}
