#pragma once
// The last phase of create_schedule: the items and the buffer table of a Schedule
// (codegen/schedule.h), made from the nodes the scheduler chose to realize, in order. Each
// realized node gets a new buffer and the item that fills it; a kernel reads its realized
// sources from their buffers, and the leaves the graph holds join the table as kernels first
// read them.

#include <string>
#include <unordered_map>
#include <vector>

#include "codegen/schedule.h"
#include "core/uop.h"

namespace kiln {

class ScheduleBuilder {
 public:
  // The item that fills a new buffer on `device` with the value of the realized `node`; its
  // sources are realized before it (sources first). A Scatter takes two: its destination's
  // values, then the stores in place; with `in_place`, only the stores, into the buffer of its
  // destination (a realized Scatter that nothing else reads: build_items decides).
  // `why` is the item's ScheduleItem::why.
  void add_item(const UOpRef& node, const std::string& device, std::string why = "",
                bool in_place = false);
  // The schedule, with each root's result: its buffer where an item computes it.
  Schedule finish(const std::vector<UOpRef>& roots);

 private:
  using NodeMap = std::unordered_map<const UOp*, UOpRef>;

  int index_of(const UOpRef& buffer);
  ScheduleItem item_of(const UOpRef& node, int output);
  // The kernel that computes `value` into buffer `output`.
  ScheduleItem kernel_item(const UOpRef& value, int output);

  Schedule schedule_;
  NodeMap buffer_of_;    // a realized node: its buffer's node
  NodeMap substituted_;  // a node as kernels read it (realized sources as their buffers)
  std::unordered_map<const UOp*, int> index_of_;  // a buffer's node: its index in the table
};

}  // namespace kiln
