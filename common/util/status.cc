// Fatal check failure reporting.
#include "common/util/status.h"

namespace gtco::util {

void CheckFailed(const char* file, int line, const char* condition, const std::string& message) {
  std::fprintf(stderr, "GTCO_CHECK failed at %s:%d: %s %s\n", file, line, condition,
               message.c_str());
  std::fflush(stderr);
  std::abort();
}

}  // namespace gtco::util
