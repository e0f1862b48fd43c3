// RPC latency metrics: a real gRPC server with the interceptor, called over loopback; every call
// lands in gtco_rpc_seconds under its service, method and status code.
#include "server/rpc_metrics.h"

#include <gtest/gtest.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>

#include <future>
#include <memory>
#include <string>
#include <vector>

#include "gtco/v1/gtco.grpc.pb.h"

namespace gtco::server {
namespace {

/// Calls `method` with an empty request; returns the call's status.
grpc::Status CallEmpty(grpc::GenericStub& stub, const std::string& method) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  grpc::Slice empty("");  // an empty message: every field at its default
  grpc::ByteBuffer request(&empty, 1), response;
  std::promise<grpc::Status> done;
  stub.UnaryCall(&context, method, grpc::StubOptions(), &request, &response,
                 [&](grpc::Status status) { done.set_value(status); });
  return done.get_future().get();
}

TEST(RpcMetricsTest, EveryCallIsTimedByServiceMethodAndCode) {
  metrics::Registry registry;
  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  // The generated base class answers every method UNIMPLEMENTED: a sync service to serve.
  gtco::v1::WorkerService::Service unimplemented;
  builder.RegisterService(&unimplemented);
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> creators;
  creators.push_back(std::make_unique<RpcMetricsFactory>(registry));
  builder.experimental().SetInterceptorCreators(std::move(creators));
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(server, nullptr);
  ASSERT_GT(port, 0);

  grpc::GenericStub stub(
      grpc::CreateChannel("127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials()));
  for (int call = 0; call < 3; ++call) {
    EXPECT_TRUE(CallEmpty(stub, "/grpc.health.v1.Health/Check").ok());
  }
  EXPECT_EQ(CallEmpty(stub, "/gtco.v1.WorkerService/Lease").error_code(),
            grpc::StatusCode::UNIMPLEMENTED);
  const std::string text = registry.Serialize();
  EXPECT_NE(text.find("gtco_rpc_seconds_count{code=\"UNIMPLEMENTED\",method=\"Lease\",service=\"gtco."
                      "v1.WorkerService\"} 1"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("gtco_rpc_seconds_count{code=\"OK\",method=\"Check\",service=\"grpc.health."
                      "v1.Health\"} 3"),
            std::string::npos)
      << text;
  server->Shutdown();
}

}  // namespace
}  // namespace gtco::server
