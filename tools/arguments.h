#pragma once
// Reading the numbers in the `kiln` tool's options, with an error that names the option.

#include <CLI/CLI.hpp>

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

// Adds `name` to `command`: a whole number from `least` to `most` stored in `target`. CLI11's own
// conversion would take "3.0" for an int and word its error for the type; this one says the range
// ("--jobs needs a whole number from 1 to 1024, not 'abc'").
template <typename Number>
CLI::Option* add_whole_number(CLI::App& command, const std::string& name, Number& target,
                              long long least, long long most, const std::string& description) {
  return command
      .add_option_function<std::string>(
          name,
          [&target, name, least, most](const std::string& text) {
            const std::optional<long long> number = parse_whole_number(text, least, most);
            if (!number)
              throw CLI::ValidationError(name + " needs a whole number from " +
                                         std::to_string(least) + " to " + std::to_string(most) +
                                         ", not '" + text + "'");
            target = static_cast<Number>(*number);
          },
          description)
      ->type_name("N");
}

}  // namespace kiln::tools
