// gtco-server start-up: open the database, resume jobs, serve gRPC + health + /metrics.
#include "server/server_app.h"

#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <iostream>
#include <thread>

#include "common/db/database.h"
#include "common/metrics/http_server.h"
#include "common/metrics/registry.h"
#include "common/util/flags.h"
#include "common/util/logging.h"
#include "server/farm_core.h"
#include "server/farm_metrics.h"
#include "server/service.h"

namespace gtco::server {
namespace {

constexpr const char* kUsage =
    "usage: gtco-server [--listen HOST:PORT] [--db PATH] [--metrics-port PORT]\n"
    "                   [--lease-seconds N] [--heartbeat-seconds N] [--round-size N]\n"
    "                   [--max-model-mb N] [--verbose]\n"
    "  --listen        gRPC address (default 127.0.0.1:7070)\n"
    "  --db            schedule database: a SQLite file (default ./gtco.db) or a\n"
    "                  postgresql://user@host/dbname URI\n"
    "  --metrics-port  serve Prometheus /metrics on this port (default: off)\n";

std::atomic<bool> g_stop{false};
void OnSignal(int) { g_stop = true; }

}  // namespace

int RunServerApp(int argc, char** argv) {
  util::FlagSpec spec{{"listen", "db", "metrics-port", "lease-seconds", "heartbeat-seconds",
                       "round-size", "max-model-mb", "metrics-address"},
                      {"verbose", "help"}};
  auto args = util::ParsedArgs::Parse(std::vector<std::string>(argv + 1, argv + argc), spec);
  if (!args.ok() || args->Has("help") || !args->positional().empty()) {
    if (!args.ok()) std::cerr << "gtco-server: " << args.status().message() << "\n";
    std::cerr << kUsage;
    return args.ok() && args->Has("help") ? 0 : 2;
  }
  util::InitLogging("server", args->Has("verbose") ? util::LogLevel::kDebug : util::LogLevel::kInfo);
  FarmOptions options;
  auto lease = args->GetInt("lease-seconds", options.lease_seconds);
  auto heartbeat = args->GetInt("heartbeat-seconds", options.heartbeat_seconds);
  auto round = args->GetInt("round-size", options.default_round_size);
  auto max_mb = args->GetInt("max-model-mb", 2048);
  auto metrics_port = args->GetInt("metrics-port", -1);
  for (const auto* value : {&lease, &heartbeat, &round, &max_mb, &metrics_port}) {
    if (!value->ok()) {
      std::cerr << "gtco-server: " << value->status().message() << "\n" << kUsage;
      return 2;
    }
  }
  options.lease_seconds = static_cast<int>(*lease);
  options.heartbeat_seconds = static_cast<int>(*heartbeat);
  options.default_round_size = static_cast<int>(*round);
  options.max_model_bytes = *max_mb * 1024 * 1024;

  std::string db_path = args->Get("db", "gtco.db");
  if (db_path.rfind("postgres", 0) == 0) {
    options.model_dir = ".";  // cost models beside the server's working directory
  } else {
    size_t slash = db_path.find_last_of('/');
    options.model_dir = slash == std::string::npos ? "." : db_path.substr(0, slash);
  }
  auto database = db::OpenDatabase(db_path);
  if (!database.ok()) {
    std::cerr << "gtco-server: cannot open database: " << database.status().message() << "\n";
    return 1;
  }
  metrics::Registry registry;
  FarmMetrics farm_metrics(registry);
  auto core = FarmCore::Create(std::move(*database), options, &farm_metrics);
  if (!core.ok()) {
    std::cerr << "gtco-server: cannot resume from " << db_path << ": " << core.status().message()
              << "\n";
    return 1;
  }

  std::unique_ptr<metrics::MetricsHttpServer> metrics_server;
  if (*metrics_port >= 0) {
    metrics_server = std::make_unique<metrics::MetricsHttpServer>(&registry);
    metrics_server->set_before_scrape([&core] { (*core)->Tick(); });
    absl::Status started = metrics_server->Start(args->Get("metrics-address", "127.0.0.1"),
                                                 static_cast<int>(*metrics_port));
    if (!started.ok()) {
      std::cerr << "gtco-server: metrics: " << started.message() << "\n";
      return 1;
    }
    GTCO_LOG(kInfo, "metrics on http://" << args->Get("metrics-address", "127.0.0.1") << ":"
                                         << metrics_server->port() << "/metrics");
  }

  grpc::EnableDefaultHealthCheckService(true);
  ClientServiceImpl client_service(core->get(), options.max_model_bytes);
  WorkerServiceImpl worker_service(core->get());
  grpc::ServerBuilder builder;
  std::string listen = args->Get("listen", "127.0.0.1:7070");
  int bound_port = 0;
  builder.AddListeningPort(listen, grpc::InsecureServerCredentials(), &bound_port);
  builder.SetMaxReceiveMessageSize(64 * 1024 * 1024);
  builder.RegisterService(&client_service);
  builder.RegisterService(&worker_service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || bound_port == 0) {
    std::cerr << "gtco-server: cannot listen on " << listen
              << " (address in use or invalid?)\n";
    return 1;
  }
  GTCO_LOG(kInfo, "serving on " << listen << " (database " << db_path << ")");
  std::cout << "gtco-server listening on " << listen << std::endl;

  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  while (!g_stop) {
    (*core)->Tick();
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  GTCO_LOG(kInfo, "shutting down");
  (*core)->Shutdown();
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  if (metrics_server) metrics_server->Stop();
  return 0;
}

}  // namespace gtco::server
