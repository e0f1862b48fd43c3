// Leveled stderr logging.
#include "common/util/logging.h"

#include <chrono>
#include <cstdio>
#include <ctime>
#include <mutex>

namespace gtco::util {
namespace {
std::mutex g_log_mutex;
std::string g_role = "gtco";
LogLevel g_min_level = LogLevel::kInfo;
const char* LevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug: return "D";
    case LogLevel::kInfo: return "I";
    case LogLevel::kWarning: return "W";
    case LogLevel::kError: return "E";
  }
  return "?";
}
}  // namespace

void InitLogging(const std::string& role, LogLevel min_level) {
  std::lock_guard<std::mutex> lock(g_log_mutex);
  g_role = role;
  g_min_level = min_level;
}

bool LogEnabled(LogLevel level) { return level >= g_min_level; }

void LogLine(LogLevel level, const std::string& message) {
  auto now = std::chrono::system_clock::now();
  std::time_t seconds = std::chrono::system_clock::to_time_t(now);
  int millis = static_cast<int>(
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000);
  std::tm tm_utc;
  gmtime_r(&seconds, &tm_utc);
  char stamp[32];
  std::strftime(stamp, sizeof(stamp), "%H:%M:%S", &tm_utc);
  std::lock_guard<std::mutex> lock(g_log_mutex);
  std::fprintf(stderr, "%s %s.%03d %s] %s\n", LevelName(level), stamp, millis, g_role.c_str(),
               message.c_str());
}

}  // namespace gtco::util
