// Conversion between absl::Status and grpc::Status: the one place the two meet.
#pragma once

#include <grpcpp/grpcpp.h>

#include <string>

#include "absl/status/status.h"

namespace gtco::server {

/// absl codes are gRPC codes, so this is a cast plus the message. Errors that are the server's
/// own trouble rather than the caller's (UNAVAILABLE: its database is down or full; INTERNAL,
/// DATA_LOSS, UNKNOWN) are also logged, at most one line a second, so the operator sees them.
grpc::Status ToGrpcStatus(const absl::Status& status);
/// The logging half of ToGrpcStatus, for answers that are not gRPC (the dashboard's HTTP API).
void LogIfServerSide(const absl::Status& status);
/// The code's name as absl and gRPC spell it ("OK", "UNAVAILABLE", ...).
std::string StatusCodeName(grpc::StatusCode code);

}  // namespace gtco::server
