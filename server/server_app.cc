// gtco-server start-up: open the database, resume jobs, serve gRPC + health, and on the HTTP
// port /metrics and the web dashboard.
#include "server/server_app.h"

#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/db/database.h"
#include "common/metrics/http_server.h"
#include "common/metrics/registry.h"
#include "common/util/flags.h"
#include "common/util/logging.h"
#include "server/admin_app.h"
#include "server/auth_gate.h"
#include "server/dashboard.h"
#include "server/farm_core.h"
#include "server/farm_metrics.h"
#include "server/rpc_metrics.h"
#include "server/service.h"

namespace gtco::server {
namespace {

constexpr const char* kUsage =
    "usage: gtco-server [--listen HOST:PORT] [--db PATH] [--http-port PORT]\n"
    "                   [--tls-cert PEM --tls-key PEM [--tls-client-ca PEM]] [--no-auth]\n"
    "                   [--allow-insecure] [--lease-seconds N] [--heartbeat-seconds N]\n"
    "                   [--round-size N] [--max-model-mb N] [--verbose]\n"
    "       gtco-server admin --db DB create-team|issue-token|revoke-token|list-teams ...\n"
    "  --listen          gRPC address (default 127.0.0.1:7070)\n"
    "  --db              schedule database: a SQLite file (default ./gtco.db) or a\n"
    "                    postgresql://user@host/dbname URI\n"
    "  --tls-cert/--tls-key  serve TLS with this certificate chain and private key\n"
    "  --tls-client-ca   also ask clients for a certificate signed by this CA (optional for\n"
    "                    clients, verified when presented)\n"
    "  --no-auth         an open single-user farm (no tokens); loopback addresses only\n"
    "  --allow-insecure  serve a non-loopback address without TLS\n"
    "  --http-port       serve the web dashboard (/) and Prometheus /metrics on this port\n"
    "                    (default: off; --metrics-port is the same flag); --http-address\n"
    "                    (or --metrics-address) binds it (default 127.0.0.1)\n"
    "  --model-dir       where cost models are saved (default: beside a SQLite database; not\n"
    "                    saved for PostgreSQL, where they warm-start from the records)\n"
    "  A second server on the same database waits as a standby and takes over the farm when\n"
    "  the active server's lease (10 s) lapses.\n";

/// True when `listen` (HOST:PORT) binds only the loopback interface.
bool IsLoopback(const std::string& listen) {
  const size_t colon = listen.rfind(':');
  std::string host = colon == std::string::npos ? listen : listen.substr(0, colon);
  if (!host.empty() && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

absl::StatusOr<std::string> ReadPem(const std::string& path, const char* flag) {
  std::ifstream file(path);
  if (!file) {
    return absl::InvalidArgumentError(absl::StrCat("cannot read ", flag, " file '", path, "'"));
  }
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

/// Server credentials for the flags: TLS when --tls-cert/--tls-key are given.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> ServerCredentials(
    const util::ParsedArgs& args) {
  if (!args.Has("tls-cert") && !args.Has("tls-key")) return grpc::InsecureServerCredentials();
  if (!args.Has("tls-cert") || !args.Has("tls-key")) {
    return absl::InvalidArgumentError("--tls-cert and --tls-key go together");
  }
  absl::StatusOr<std::string> cert = ReadPem(args.Get("tls-cert"), "--tls-cert");
  if (!cert.ok()) return cert.status();
  absl::StatusOr<std::string> key = ReadPem(args.Get("tls-key"), "--tls-key");
  if (!key.ok()) return key.status();
  grpc::SslServerCredentialsOptions options(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  if (args.Has("tls-client-ca")) {
    absl::StatusOr<std::string> ca = ReadPem(args.Get("tls-client-ca"), "--tls-client-ca");
    if (!ca.ok()) return ca.status();
    options.pem_root_certs = *ca;
    options.client_certificate_request = GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_AND_VERIFY;
  }
  options.pem_key_cert_pairs.push_back({*key, *cert});
  return grpc::SslServerCredentials(options);
}

std::atomic<bool> g_stop{false};
void OnSignal(int) { g_stop = true; }

/// The leader lease: how long a server leads without renewing, and how often it renews.
constexpr int64_t kLeaseMs = 10000;
constexpr int64_t kRenewMs = 2500;

int64_t WallMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

/// This server's identity in the leader lease: host and listen address, so a server restarted
/// in place (the only one that can bind that address) takes its own lease back at once.
std::string InstanceId(const std::string& listen) {
  char host[256] = {0};
  ::gethostname(host, sizeof(host) - 1);
  return absl::StrCat(host, "/", listen);
}

/// Waits as a standby until this server holds the leader lease (or a signal arrives). False on
/// a database error or a signal.
bool WaitForLeadership(db::Database& database, const std::string& instance,
                       const std::string& listen) {
  bool announced = false;
  while (!g_stop) {
    absl::StatusOr<db::LeaderRow> leader =
        database.ClaimLeadership(instance, listen, WallMs(), kLeaseMs);
    if (!leader.ok()) {
      std::cerr << "gtco-server: cannot claim the leader lease: " << leader.status().message()
                << "\n";
      return false;
    }
    if (leader->holder == instance) return true;
    if (!announced) {
      std::cout << "gtco-server standby: " << leader->holder << " (" << leader->address
                << ") leads this database; taking over when its lease lapses" << std::endl;
      GTCO_LOG(kInfo, "standby behind " << leader->holder);
      announced = true;
    }
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  return false;
}

}  // namespace

int RunServerApp(int argc, char** argv) {
  if (argc >= 2 && std::string(argv[1]) == "admin") {
    return RunAdminApp(std::vector<std::string>(argv + 2, argv + argc));
  }
  util::FlagSpec spec{{"listen", "db", "metrics-port", "lease-seconds", "heartbeat-seconds",
                       "round-size", "max-model-mb", "metrics-address", "tls-cert", "tls-key",
                       "tls-client-ca", "model-dir", "http-port", "http-address"},
                      {"verbose", "help", "no-auth", "allow-insecure"}};
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
  // --http-port is the clearer name of --metrics-port: the port serves the dashboard too.
  auto metrics_port = args->GetInt(args->Has("http-port") ? "http-port" : "metrics-port", -1);
  for (const auto* value : {&lease, &heartbeat, &round, &max_mb, &metrics_port}) {
    if (!value->ok()) {
      std::cerr << "gtco-server: " << value->status().message() << "\n" << kUsage;
      return 2;
    }
  }
  if (args->Has("http-port") && args->Has("metrics-port") &&
      args->Get("http-port") != args->Get("metrics-port")) {
    std::cerr << "gtco-server: --http-port and --metrics-port name the same port; give one\n";
    return 2;
  }
  options.lease_seconds = static_cast<int>(*lease);
  options.heartbeat_seconds = static_cast<int>(*heartbeat);
  options.default_round_size = static_cast<int>(*round);
  options.max_model_bytes = *max_mb * 1024 * 1024;

  const std::string listen = args->Get("listen", "127.0.0.1:7070");
  const bool tls = args->Has("tls-cert") || args->Has("tls-key");
  if (args->Has("no-auth") && !IsLoopback(listen)) {
    std::cerr << "gtco-server: --no-auth is refused on " << listen
              << ": an open farm may only listen on a loopback address (127.0.0.1, ::1); issue "
                 "tokens with `gtco-server admin` instead\n";
    return 2;
  }
  if (!tls && !IsLoopback(listen) && !args->Has("allow-insecure")) {
    std::cerr << "gtco-server: refusing to serve " << listen
              << " without TLS: tokens would cross the network in clear text; pass --tls-cert "
                 "and --tls-key (or --allow-insecure on a trusted network)\n";
    return 2;
  }
  auto credentials = ServerCredentials(*args);
  if (!credentials.ok()) {
    std::cerr << "gtco-server: " << credentials.status().message() << "\n";
    return 2;
  }

  std::string db_path = args->Get("db", "gtco.db");
  if (args->Has("model-dir")) {
    options.model_dir = args->Get("model-dir");
  } else if (db_path.rfind("postgres", 0) == 0) {
    // Not saved by default: a server on a shared database warm-starts its models from the
    // database's records (the saved file is only a cache).
    options.model_dir = "";
  } else {
    size_t slash = db_path.find_last_of('/');
    options.model_dir = slash == std::string::npos ? "." : db_path.substr(0, slash);
  }
  // One active server per database; others wait here as standbys (PostgreSQL shared by
  // several machines, or SQLite on one) and take over when the active one's lease lapses.
  // Before the databases and the lease renewer, which report their statements to it.
  metrics::Registry registry;
  FarmMetrics farm_metrics(registry);
  auto lease_database = db::OpenDatabase(db_path);
  if (!lease_database.ok()) {
    std::cerr << "gtco-server: cannot open database: " << lease_database.status().message()
              << "\n";
    return 1;
  }
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  const std::string instance = InstanceId(listen);
  if (!WaitForLeadership(**lease_database, instance, listen)) return g_stop ? 0 : 1;
  GTCO_LOG(kInfo, "leading the farm as " << instance);
  // Renews the lease; a server that lost it (it stalled past the lease and a standby took over)
  // stops at once rather than drive jobs beside the new leader.
  std::atomic<bool> renewing{true};
  std::thread renewer([&] {
    int64_t last_renewed = WallMs();
    while (renewing) {
      std::this_thread::sleep_for(std::chrono::milliseconds(kRenewMs));
      if (!renewing) break;
      absl::StatusOr<db::LeaderRow> leader =
          (*lease_database)->ClaimLeadership(instance, listen, WallMs(), kLeaseMs);
      if (leader.ok() && leader->holder == instance) {
        if (WallMs() - last_renewed > kLeaseMs) {
          GTCO_LOG(kInfo, "the database is back; still leading the farm as " << instance);
        }
        last_renewed = WallMs();
      } else if (leader.ok()) {
        std::cerr << "gtco-server: lost the leader lease to " << leader->holder << "; stopping\n";
        std::_Exit(1);
      } else {
        // The database is down (unreachable, full, failing): nobody can take the lease while it
        // is, so keep serving what needs no database; the first claim once it is back tells
        // whether a standby took over meanwhile (then this server stops, above).
        GTCO_LOG(kWarning, "cannot renew the leader lease: " << leader.status().message());
      }
    }
  });
  struct StopRenewing {
    std::atomic<bool>* flag;
    std::thread* thread;
    ~StopRenewing() {
      *flag = false;
      thread->join();
    }
  } stop_renewing{&renewing, &renewer};

  auto database = db::OpenDatabase(db_path);
  if (!database.ok()) {
    std::cerr << "gtco-server: cannot open database: " << database.status().message() << "\n";
    return 1;
  }
  auto observe = [&farm_metrics](double seconds, absl::StatusCode code) {
    farm_metrics.ObserveDatabaseStatement(seconds, code);
  };
  (*database)->SetStatementObserver(observe);
  (*lease_database)->SetStatementObserver(observe);
  auto core = FarmCore::Create(std::move(*database), options, &farm_metrics);
  if (!core.ok()) {
    std::cerr << "gtco-server: cannot resume from " << db_path << ": " << core.status().message()
              << "\n";
    return 1;
  }

  // Tokens are checked on a connection of their own (the core's is busy with the farm).
  std::unique_ptr<AuthGate> gate;
  if (args->Has("no-auth")) {
    gate = AuthGate::Open();
  } else {
    auto auth_database = db::OpenDatabase(db_path);
    if (!auth_database.ok()) {
      std::cerr << "gtco-server: cannot open database: " << auth_database.status().message()
                << "\n";
      return 1;
    }
    gate = std::make_unique<AuthGate>(std::move(*auth_database));
  }

  // The HTTP port serves /metrics and the web dashboard (declared first: it outlives the server).
  std::unique_ptr<Dashboard> dashboard;
  std::unique_ptr<metrics::MetricsHttpServer> metrics_server;
  if (*metrics_port >= 0) {
    // The dashboard reads history on a connection of its own, like the gate.
    auto dashboard_database = db::OpenDatabase(db_path);
    if (!dashboard_database.ok()) {
      std::cerr << "gtco-server: cannot open database: " << dashboard_database.status().message()
                << "\n";
      return 1;
    }
    (*dashboard_database)->SetStatementObserver(observe);
    dashboard =
        std::make_unique<Dashboard>(core->get(), gate.get(), std::move(*dashboard_database));
    metrics_server = std::make_unique<metrics::MetricsHttpServer>(&registry);
    metrics_server->set_before_scrape([&core] { (*core)->Tick(); });
    metrics_server->set_fallback_handler(
        [&dashboard](const metrics::HttpRequest& request) { return dashboard->Handle(request); });
    const std::string http_address =
        args->Get("http-address", args->Get("metrics-address", "127.0.0.1"));
    absl::Status started = metrics_server->Start(http_address, static_cast<int>(*metrics_port));
    if (!started.ok()) {
      std::cerr << "gtco-server: metrics: " << started.message() << "\n";
      return 1;
    }
    GTCO_LOG(kInfo, "metrics on http://" << http_address << ":" << metrics_server->port()
                                         << "/metrics, dashboard on http://" << http_address << ":"
                                         << metrics_server->port() << "/");
    if (gate->enabled() && !IsLoopback(http_address)) {
      GTCO_LOG(kWarning, "the dashboard on " << http_address
                                             << " is plain HTTP: team tokens cross "
                                                "the network in clear text; put it behind a TLS "
                                                "proxy");
    }
  }

  grpc::EnableDefaultHealthCheckService(true);
  ClientServiceImpl client_service(core->get(), gate.get(), options.max_model_bytes);
  WorkerServiceImpl worker_service(core->get(), gate.get());
  grpc::ServerBuilder builder;
  int bound_port = 0;
  builder.AddListeningPort(listen, *credentials, &bound_port);
  builder.SetMaxReceiveMessageSize(64 * 1024 * 1024);
  builder.RegisterService(&client_service);
  builder.RegisterService(&worker_service);
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> interceptors;
  interceptors.push_back(std::make_unique<RpcMetricsFactory>(registry));
  builder.experimental().SetInterceptorCreators(std::move(interceptors));
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || bound_port == 0) {
    std::cerr << "gtco-server: cannot listen on " << listen
              << " (address in use or invalid?)\n";
    return 1;
  }
  GTCO_LOG(kInfo, "serving on " << listen << " (database " << db_path << ", "
                                  << (tls ? "TLS" : "plaintext") << ", "
                                  << (gate->enabled() ? "tokens required" : "no auth") << ")");
  std::cout << "gtco-server listening on " << listen << std::endl;

  while (!g_stop) {
    (*core)->Tick();
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  GTCO_LOG(kInfo, "shutting down");
  (*core)->Shutdown();
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  if (metrics_server) metrics_server->Stop();
  (void)(*lease_database)->ReleaseLeadership(instance);
  return 0;
}

}  // namespace gtco::server
