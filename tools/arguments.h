#pragma once
// Reading the numbers in the `kiln` tool's options.

#include <cerrno>
#include <cstdlib>
#include <optional>
#include <string>

namespace kiln::tools {

// `text` as a whole decimal number from `least` to `most`; nothing when it is empty, has other
// characters, or is out of that range. ("3x", " 3", "-1" for a count: the option's own error
// says what it takes.)
inline std::optional<long long> parse_whole_number(const std::string& text, long long least,
                                                   long long most) {
  if (text.empty() || !(text[0] == '-' || (text[0] >= '0' && text[0] <= '9'))) return {};
  char* end = nullptr;
  errno = 0;
  const long long number = std::strtoll(text.c_str(), &end, 10);
  if (errno == ERANGE || *end != '\0' || number < least || number > most) return {};
  return number;
}

// `text` as a whole decimal number from 0 to 2^64 - 1 (a seed); nothing otherwise.
inline std::optional<unsigned long long> parse_unsigned(const std::string& text) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos) return {};
  errno = 0;
  const unsigned long long number = std::strtoull(text.c_str(), nullptr, 10);
  if (errno == ERANGE) return {};
  return number;
}

}  // namespace kiln::tools
