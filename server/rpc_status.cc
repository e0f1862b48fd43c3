// absl::Status -> grpc::Status, logging the server's own failures (rate-limited).
#include "server/rpc_status.h"

#include <atomic>
#include <chrono>
#include <cstdint>

#include "common/util/logging.h"

namespace gtco::server {
namespace {

bool IsServerSide(absl::StatusCode code) {
  return code == absl::StatusCode::kUnavailable || code == absl::StatusCode::kInternal ||
         code == absl::StatusCode::kDataLoss || code == absl::StatusCode::kUnknown;
}

/// One log line a second at most; the lines dropped in between are counted in the next one.
void LogServerSideError(const absl::Status& status) {
  static std::atomic<int64_t> last_ms{0};
  static std::atomic<int64_t> dropped{0};
  const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::steady_clock::now().time_since_epoch())
                          .count();
  int64_t last = last_ms.load();
  if (now - last < 1000 || !last_ms.compare_exchange_strong(last, now)) {
    ++dropped;
    return;
  }
  const int64_t also = dropped.exchange(0);
  GTCO_LOG(kWarning, "a call failed: " << status
                                        << (also > 0 ? " (and " + std::to_string(also) +
                                                           " more failures since the last line)"
                                                     : std::string()));
}

}  // namespace

void LogIfServerSide(const absl::Status& status) {
  if (!status.ok() && IsServerSide(status.code())) LogServerSideError(status);
}

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  LogIfServerSide(status);
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                      std::string(status.message()));
}

std::string StatusCodeName(grpc::StatusCode code) {
  return absl::StatusCodeToString(static_cast<absl::StatusCode>(code));
}

}  // namespace gtco::server
