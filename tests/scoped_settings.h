#pragma once
// Settings a test changes for its own length: restored when the scope ends, also when a check
// throws, so that no later test in the same process runs under them.

#include <cstdlib>
#include <optional>
#include <string>

#include "runtime/opt_policy.h"

namespace kiln::testing {

// An environment variable set (or, for nullptr, unset) until the scope ends.
class ScopedEnvironment {
 public:
  ScopedEnvironment(const char* name, const char* value) : name_(name) {
    if (const char* before = std::getenv(name)) before_ = before;
    set(value);
  }
  ~ScopedEnvironment() { set(before_ ? before_->c_str() : nullptr); }
  ScopedEnvironment(const ScopedEnvironment&) = delete;
  ScopedEnvironment& operator=(const ScopedEnvironment&) = delete;

  void set(const char* value) const {
    if (value)
      setenv(name_.c_str(), value, 1);
    else
      unsetenv(name_.c_str());
  }

 private:
  std::string name_;
  std::optional<std::string> before_;
};

// The opt settings in force until the scope ends (set_opt_settings).
class ScopedOptSettings {
 public:
  explicit ScopedOptSettings(const OptSettings& settings) : before_(opt_settings()) {
    set_opt_settings(settings);
  }
  ~ScopedOptSettings() { set_opt_settings(before_); }
  ScopedOptSettings(const ScopedOptSettings&) = delete;
  ScopedOptSettings& operator=(const ScopedOptSettings&) = delete;

 private:
  OptSettings before_;
};

}  // namespace kiln::testing
