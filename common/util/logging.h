// Minimal leveled logging to stderr with a timestamp and the process role.
#pragma once

#include <sstream>
#include <string>

namespace gtco::util {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

/// Sets the role printed in each line ("server", "worker", ...) and the minimum level.
void InitLogging(const std::string& role, LogLevel min_level = LogLevel::kInfo);
void LogLine(LogLevel level, const std::string& message);
bool LogEnabled(LogLevel level);

}  // namespace gtco::util

#define GTCO_LOG(level, ...)                                                        \
  do {                                                                              \
    if (::gtco::util::LogEnabled(::gtco::util::LogLevel::level)) {                  \
      std::ostringstream gtco_log_stream_;                                          \
      gtco_log_stream_ << __VA_ARGS__;                                              \
      ::gtco::util::LogLine(::gtco::util::LogLevel::level, gtco_log_stream_.str()); \
    }                                                                               \
  } while (0)
