#pragma once
// Index arithmetic (Sym) and integer literals as a dialect's source text, for the renderer.

#include <cstdint>
#include <string>

#include "codegen/dialect.h"
#include "core/symbolic.h"

namespace kiln {

// An integer literal; outside the int range with the dialect's 64-bit suffix, so that it never
// overflows `int`.
std::string int_literal(int64_t value, const Dialect& dialect);

// An index expression. Division and modulo of a possibly negative left side floor (through the
// preludes' kiln_floordiv / kiln_floormod); otherwise they are the target's own.
std::string sym_text(const Sym& value, const Dialect& dialect);

}  // namespace kiln
