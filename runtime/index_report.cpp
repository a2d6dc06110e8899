#include "runtime/index_report.h"

#include <kiln/error.h>

#include <map>
#include <string>

namespace kiln {

int index_errors_param(const LinearProgram& program) {
  for (size_t param = 0; param < program.params.size(); ++param) {
    if (program.params[param].index_errors) return static_cast<int>(param);
  }
  return -1;
}

IndexReport::IndexReport(std::shared_ptr<DeviceContext> context, const LinearProgram& program,
                         std::vector<int64_t> values)
    : buffer_(std::make_shared<Buffer>(std::move(context), dtypes::int32, 4)),
      kernel_(program.name),
      gathers_(program.gathers),
      variables_(program.variables) {
  reset(std::move(values));
}

void IndexReport::reset(std::vector<int64_t> values) {
  values_ = std::move(values);
  const int32_t zeros[4] = {0, 0, 0, 0};
  buffer_->copy_in(zeros);
}

void IndexReport::check() const {
  int32_t report[4];
  buffer_->copy_out(report);
  if (report[0] == 0) return;
  const size_t site = static_cast<size_t>(report[0] - 1);
  if (site >= gathers_.size())
    throw InternalError("[IndexReport] kernel " + kernel_ + " reported gather " +
                        std::to_string(site) + " of " + std::to_string(gathers_.size()));
  const GatherSite& gather = gathers_[site];
  const uint64_t bits = (static_cast<uint64_t>(static_cast<uint32_t>(report[2])) << 32) |
                        static_cast<uint32_t>(report[1]);
  const std::string index =
      gather.unsigned_index ? std::to_string(bits) : std::to_string(static_cast<int64_t>(bits));
  std::map<std::string, int64_t> named;
  for (size_t at = 0; at < variables_.size() && at < values_.size(); ++at)
    named.emplace(variables_[at].var_name(), values_[at]);
  const int64_t size = gather.size.eval(named);
  // Work items that meet bad indices at once may each write part of the report (plain stores):
  // an index it names is checked to be one that is out of range.
  const int64_t as_signed = static_cast<int64_t>(bits);
  const bool outside = gather.unsigned_index ? bits >= static_cast<uint64_t>(size)
                                             : as_signed < -size || as_signed >= size;
  if (!outside)
    throw IndexError("[" + gather.op + "] indices are out of range for axis " +
                     std::to_string(gather.axis) + " of size " + std::to_string(size) +
                     " (valid: " + (gather.unsigned_index ? "0" : std::to_string(-size)) + " to " +
                     std::to_string(size - 1) + ")");
  throw IndexError("[" + gather.op + "] index " + index + " is out of range for axis " +
                   std::to_string(gather.axis) + " of size " + std::to_string(size) +
                   " (valid: " + (gather.unsigned_index ? "0" : std::to_string(-size)) + " to " +
                   std::to_string(size - 1) + ")");
}

}  // namespace kiln
