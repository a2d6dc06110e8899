#pragma once
// Index arithmetic (Sym) and literals as a dialect's source text, for the renderer.

#include <cstdint>
#include <string>

#include "codegen/dialect.h"
#include "core/symbolic.h"
#include "core/uop.h"

namespace kiln {

// An integer literal; outside the int range with the dialect's 64-bit suffix, so that it never
// overflows `int`.
std::string int_literal(int64_t value, const Dialect& dialect);

// A float literal with the dialect's suffix (`wide`: float64), printed to round-trip.
std::string float_literal(double number, bool wide, const Dialect& dialect);

// A constant of `dtype` as the dialect writes it: bools as its true and false, floats narrowed
// to their dtype first (a value past float's range is its infinity), specials and zero as the
// dialect spells them, integers cast to their type.
std::string value_literal(DType dtype, const ConstArg& value, const Dialect& dialect);

// An index expression. Division and modulo of a possibly negative left side floor (through the
// preludes' kiln_floordiv / kiln_floormod); otherwise they are the target's own.
std::string sym_text(const Sym& value, const Dialect& dialect);

}  // namespace kiln
