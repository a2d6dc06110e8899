// einsum (kiln/shape_ops.h): each operand's repeated labels taken as diagonals, labels no one
// else needs summed away, then the operands multiplied pairwise, left to right, with each
// product summed over the labels that neither a later operand nor the output names. Every step
// is a broadcast multiply and a sum, so a two-operand einsum is one reduction kernel like matmul.

#include <kiln/error.h>
#include <kiln/shape_ops.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <string>
#include <vector>

#include "runtime/tensor_internal.h"

namespace kiln {
namespace {

// A label: a letter, or (for the axes an ellipsis stands for) 256 + the axis' place counted from
// the right end of the ellipsis.
using Label = int;
constexpr Label kEllipsisLabel = 256;

[[noreturn]] void einsum_error(const std::string& equation, const std::string& what) {
  throw ShapeError("[einsum] \"" + equation + "\": " + what);
}

// Subscripts as written: letters, and kEllipsisMark where "..." stands (at most once).
constexpr Label kEllipsisMark = -1;
std::vector<Label> parse_subscripts(const std::string& equation, const std::string& text) {
  std::vector<Label> labels;
  bool ellipsis = false;
  for (size_t at = 0; at < text.size(); ++at) {
    const char c = text[at];
    if (std::isalpha(static_cast<unsigned char>(c))) {
      labels.push_back(static_cast<unsigned char>(c));
    } else if (c == '.' && text.compare(at, 3, "...") == 0 && !ellipsis) {
      labels.push_back(kEllipsisMark);
      ellipsis = true;
      at += 2;
    } else {
      einsum_error(equation, std::string("'") + c + "' in \"" + text +
                                 "\": subscripts are letters and at most one \"...\"");
    }
  }
  return labels;
}

// The subscripts with "..." replaced by `spread` labels, right-aligned (the last axis it stands
// for is kEllipsisLabel).
std::vector<Label> expanded(const std::vector<Label>& subscripts, int64_t spread) {
  std::vector<Label> labels;
  for (Label label : subscripts) {
    if (label != kEllipsisMark) {
      labels.push_back(label);
      continue;
    }
    for (int64_t axis = spread; axis > 0; --axis)
      labels.push_back(kEllipsisLabel + static_cast<int>(axis) - 1);
  }
  return labels;
}

// An operand's labels, one per axis.
std::vector<Label> operand_labels(const std::string& equation, const std::string& text,
                                  const Tensor& operand, int64_t* spread) {
  const std::vector<Label> subscripts = parse_subscripts(equation, text);
  const bool ellipsis =
      std::find(subscripts.begin(), subscripts.end(), kEllipsisMark) != subscripts.end();
  const int64_t named = static_cast<int64_t>(subscripts.size()) - (ellipsis ? 1 : 0);
  if (ellipsis ? named > operand.ndim() : named != operand.ndim())
    einsum_error(equation, "\"" + text + "\" names " + std::to_string(named) + " axes of " +
                               describe(operand));
  *spread = ellipsis ? operand.ndim() - named : 0;
  return expanded(subscripts, *spread);
}

struct Term {
  Tensor value;
  std::vector<Label> labels;  // one per axis, distinct
};

// x's axes in `order` (a permutation of its labels' positions named by label).
Term arranged(const Term& term, const std::vector<Label>& order) {
  std::vector<int64_t> axes;
  for (Label label : order)
    axes.push_back(std::find(term.labels.begin(), term.labels.end(), label) - term.labels.begin());
  return {term.value.permute(axes), order};
}

// Sums the axes whose labels are not in `keep`.
Term summed_except(const Term& term, const std::vector<Label>& keep) {
  std::vector<int64_t> axes;
  std::vector<Label> kept;
  for (size_t axis = 0; axis < term.labels.size(); ++axis) {
    if (std::find(keep.begin(), keep.end(), term.labels[axis]) == keep.end())
      axes.push_back(static_cast<int64_t>(axis));
    else
      kept.push_back(term.labels[axis]);
  }
  if (axes.empty()) return term;
  return {term.value.sum(axes), kept};
}

// a * b over the union of their labels (a's first), each broadcast where it lacks a label.
Term product(const Term& a, const Term& b) {
  std::vector<Label> all = a.labels;
  for (Label label : b.labels)
    if (std::find(all.begin(), all.end(), label) == all.end()) all.push_back(label);
  auto spread = [&](const Term& term) {
    std::vector<Label> order;
    for (Label label : all)
      if (std::find(term.labels.begin(), term.labels.end(), label) != term.labels.end())
        order.push_back(label);
    const Term ordered = arranged(term, order);
    DimShape shape;
    for (Label label : all) {
      const auto found = std::find(order.begin(), order.end(), label);
      shape.push_back(found == order.end()
                          ? Dim(1)
                          : ordered.value.dims()[static_cast<size_t>(found - order.begin())]);
    }
    return ordered.value.reshape(shape);
  };
  return {spread(a) * spread(b), all};
}

}  // namespace

Tensor einsum(const std::string& equation, const std::vector<Tensor>& operands) {
  for (const Tensor& operand : operands) check_defined(operand, "einsum");
  std::string text;
  for (char c : equation)
    if (!std::isspace(static_cast<unsigned char>(c))) text += c;
  const size_t arrow = text.find("->");
  const std::string inputs = text.substr(0, arrow);
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    const size_t comma = inputs.find(',', start);
    parts.push_back(inputs.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (parts.size() != operands.size())
    einsum_error(equation, std::to_string(parts.size()) + " operands' subscripts for " +
                               std::to_string(operands.size()) + " operands");
  if (operands.empty()) einsum_error(equation, "needs at least one operand");
  for (const Tensor& operand : operands) check_same_device(operands[0], operand, "einsum");

  // Each operand's labels, its repeated ones taken as diagonals.
  std::vector<Term> terms;
  int64_t ellipsis_rank = 0;
  std::map<Label, Dim> sizes;
  std::map<Label, int> uses;
  for (size_t at = 0; at < operands.size(); ++at) {
    int64_t spread = 0;
    Term term{operands[at], operand_labels(equation, parts[at], operands[at], &spread)};
    for (Label label : term.labels) ++uses[label];  // before diagonals: "ii" names i twice
    ellipsis_rank = std::max(ellipsis_rank, spread);
    // A repeated label takes the diagonal of its two axes, which diagonal() appends last.
    while (true) {
      size_t first = 0, second = 0;
      for (size_t a = 0; a < term.labels.size() && second == 0; ++a)
        for (size_t b = a + 1; b < term.labels.size() && second == 0; ++b)
          if (term.labels[a] == term.labels[b]) first = a, second = b;
      if (second == 0) break;
      if (term.value.shape()[first] != term.value.shape()[second])
        einsum_error(equation, "label '" + std::string(1, static_cast<char>(term.labels[first])) +
                                   "' names axes of sizes " +
                                   std::to_string(term.value.shape()[first]) + " and " +
                                   std::to_string(term.value.shape()[second]) + " in " +
                                   describe(operands[at]));
      term.value =
          diagonal(term.value, 0, static_cast<int64_t>(first), static_cast<int64_t>(second));
      const Label label = term.labels[first];
      term.labels.erase(term.labels.begin() + static_cast<std::ptrdiff_t>(second));
      term.labels.erase(term.labels.begin() + static_cast<std::ptrdiff_t>(first));
      term.labels.push_back(label);
    }
    // A label's sizes agree, or are 1 (broadcast), as torch.einsum's.
    for (size_t axis = 0; axis < term.labels.size(); ++axis) {
      const Label label = term.labels[axis];
      const Dim size = term.value.dims()[axis];
      const auto known = sizes.find(label);
      if (known == sizes.end() || known->second.value() == 1) {
        sizes.insert_or_assign(label, size);
      } else if (size.value() != 1 && size.value() != known->second.value()) {
        einsum_error(equation,
                     label >= kEllipsisLabel
                         ? "the axes \"...\" stands for do not broadcast: " + describe(operands[at])
                         : "label '" + std::string(1, static_cast<char>(label)) + "' has sizes " +
                               known->second.to_string() + " and " + size.to_string());
      }
    }
    terms.push_back(term);
  }

  // The output's labels: as given, or the ellipsis then the letters named once, in order.
  std::vector<Label> output;
  if (arrow != std::string::npos) {
    const std::vector<Label> subscripts = parse_subscripts(equation, text.substr(arrow + 2));
    output = expanded(subscripts, ellipsis_rank);
    for (size_t at = 0; at < output.size(); ++at) {
      if (uses.count(output[at]) == 0)
        einsum_error(equation, "the output names '" +
                                   std::string(1, static_cast<char>(output[at])) +
                                   "', which no operand has");
      if (std::find(output.begin() + static_cast<std::ptrdiff_t>(at) + 1, output.end(),
                    output[at]) != output.end())
        einsum_error(equation, "the output names '" +
                                   std::string(1, static_cast<char>(output[at])) + "' twice");
    }
  } else {
    output = expanded({kEllipsisMark}, ellipsis_rank);
    for (const auto& [label, count] : uses)
      if (label < kEllipsisLabel && count == 1) output.push_back(label);
  }

  const DType dtype = [&] {
    DType promoted = operands[0].dtype();
    for (const Tensor& operand : operands) promoted = promote_types(promoted, operand.dtype());
    return promoted;
  }();
  return built_from_ops(
      "einsum", [&] { return "\"" + equation + "\""; },
      [&] {
        // Labels still needed after operand `at`: the output's and those of later operands.
        auto needed_after = [&](size_t at) {
          std::vector<Label> labels = output;
          for (size_t later = at + 1; later < terms.size(); ++later)
            labels.insert(labels.end(), terms[later].labels.begin(), terms[later].labels.end());
          return labels;
        };
        auto needed_by_others = [&](size_t at) {
          std::vector<Label> labels = output;
          for (size_t other = 0; other < terms.size(); ++other)
            if (other != at)
              labels.insert(labels.end(), terms[other].labels.begin(), terms[other].labels.end());
          return labels;
        };
        // A label only one operand has, and the output lacks, is summed at once.
        Term result = summed_except(terms[0], needed_by_others(0));
        result.value = result.value.cast(dtype);
        for (size_t at = 1; at < terms.size(); ++at) {
          Term next = summed_except(terms[at], needed_by_others(at));
          next.value = next.value.cast(dtype);
          result = summed_except(product(result, next), needed_after(at));
        }
        result = summed_except(result, output);
        // Axes of size 1 a broadcast ellipsis left out of an operand are there by now; the
        // output's order.
        return arranged(result, output).value.cast(dtype);
      });
}

}  // namespace kiln
