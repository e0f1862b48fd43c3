// Conversion between absl::Status and grpc::Status: the one place the two meet.
#pragma once

#include <grpcpp/grpcpp.h>

#include "absl/status/status.h"

namespace gtco::server {

/// absl codes are gRPC codes, so this is a cast plus the message.
inline grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                      std::string(status.message()));
}

}  // namespace gtco::server
