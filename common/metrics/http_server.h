// An embedded HTTP server (civetweb) that serves a Registry at GET /metrics.
#pragma once

#include <functional>
#include <string>

#include "absl/status/status.h"
#include "common/metrics/registry.h"

struct mg_context;
struct mg_connection;

namespace gtco::metrics {

/// Serves `GET /metrics` (and HEAD) with Content-Type kTextFormatContentType; any other path
/// is 404, any other method 405. Start()/Stop() may be called from any thread but not
/// concurrently with each other.
class MetricsHttpServer {
 public:
  /// `registry` is not owned and must outlive the server.
  explicit MetricsHttpServer(const Registry* registry);
  /// Stops the server if it is running.
  ~MetricsHttpServer();
  MetricsHttpServer(const MetricsHttpServer&) = delete;
  MetricsHttpServer& operator=(const MetricsHttpServer&) = delete;

  /// Runs `callback` at the start of every scrape, before serialization (e.g. to refresh gauges
  /// read from the database). Set it before Start().
  void set_before_scrape(std::function<void()> callback) { before_scrape_ = std::move(callback); }

  /// Listens on `address`:`port` ("0.0.0.0" for every interface; port 0 picks a free port,
  /// see port()). INVALID_ARGUMENT for a port outside 0..65535, FAILED_PRECONDITION when
  /// already running or when the address cannot be bound (e.g. the port is in use).
  absl::Status Start(const std::string& address, int port);
  /// Stops listening and waits for in-flight requests. No-op when not running.
  void Stop();

  bool running() const { return context_ != nullptr; }
  /// The bound port while running (the chosen one when started with port 0), else 0.
  int port() const { return port_; }

 private:
  static int HandleMetrics(mg_connection* connection, void* server);
  int Respond(mg_connection* connection);

  const Registry* registry_;
  std::function<void()> before_scrape_;
  mg_context* context_ = nullptr;
  int port_ = 0;
};

}  // namespace gtco::metrics
