#pragma once
// Realize: schedule a graph, then lower, render, compile (cached) and launch each kernel.

#include <string>
#include <vector>

#include "core/uop.h"

namespace kiln {

// Computes the roots (on `device` unless their graph says otherwise) and returns, for each, a
// Buffer node holding its value, or the root itself when it already is a view of a buffer.
// Throws before launching anything when a kernel needs a dtype the device lacks. Safe to call
// from several threads at once.
std::vector<UOpRef> realize_nodes(const std::vector<UOpRef>& roots, const std::string& device);

// Copies a buffer's bytes to a buffer of the same size on another device (through the host).
class Buffer;
void copy_between_devices(Buffer& source, Buffer& destination);

}  // namespace kiln
