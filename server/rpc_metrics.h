// RPC latency by service, method and status code: a gRPC server interceptor that observes every
// call of the server into a histogram of its metrics registry.
#pragma once

#include <memory>

#include <grpcpp/support/server_interceptor.h>

#include "common/metrics/registry.h"

namespace gtco::server {

/// Times each call from its arrival to its status (gtco_rpc_seconds{service, method, code}).
/// `registry` must outlive the server the factory is installed in.
class RpcMetricsFactory final : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit RpcMetricsFactory(metrics::Registry& registry);
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override;

 private:
  metrics::HistogramFamily& seconds_;
};

}  // namespace gtco::server
