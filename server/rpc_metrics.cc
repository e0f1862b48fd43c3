// RpcMetricsFactory: one interceptor per call, observing its latency when its status is sent.
#include "server/rpc_metrics.h"

#include <chrono>
#include <string>

#include "server/rpc_status.h"

namespace gtco::server {
namespace {

class RpcMetricsInterceptor final : public grpc::experimental::Interceptor {
 public:
  RpcMetricsInterceptor(const char* full_method, metrics::HistogramFamily& seconds)
      : start_(std::chrono::steady_clock::now()), seconds_(seconds) {
    // "/gtco.v1.WorkerService/Lease" -> service "gtco.v1.WorkerService", method "Lease".
    const std::string name = full_method == nullptr ? "" : full_method;
    const size_t slash = name.rfind('/');
    service_ = slash == std::string::npos || slash == 0 ? "" : name.substr(1, slash - 1);
    method_ = slash == std::string::npos ? name : name.substr(slash + 1);
  }

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(
            grpc::experimental::InterceptionHookPoints::PRE_SEND_STATUS)) {
      const grpc::Status status = methods->GetSendStatus();
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
      seconds_.Add({{"service", service_},
                    {"method", method_},
                    {"code", StatusCodeName(status.error_code())}})
          .Observe(seconds);
    }
    methods->Proceed();
  }

 private:
  const std::chrono::steady_clock::time_point start_;
  metrics::HistogramFamily& seconds_;
  std::string service_;
  std::string method_;
};

}  // namespace

RpcMetricsFactory::RpcMetricsFactory(metrics::Registry& registry)
    : seconds_(registry.AddHistogram(
          "gtco_rpc_seconds",
          "Wall time of one RPC from its arrival to its status, by service, method and code.",
          {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1, 0.5, 1, 5, 30})) {}

grpc::experimental::Interceptor* RpcMetricsFactory::CreateServerInterceptor(
    grpc::experimental::ServerRpcInfo* info) {
  return new RpcMetricsInterceptor(info->method(), seconds_);
}

}  // namespace gtco::server
