// An embedded HTTP server (civetweb) that serves a Registry at GET /metrics, and hands every
// other path to one handler when it has one (the server's web dashboard).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "common/metrics/registry.h"

struct mg_context;
struct mg_connection;

namespace gtco::metrics {

/// A request as a fallback handler sees it (civetweb's types stay in http_server.cc).
struct HttpRequest {
  std::string method;         ///< "GET", "HEAD", ...
  std::string path;           ///< URL-decoded path, e.g. "/api/jobs/j1"
  std::string query;          ///< the raw query string without '?' ("" when none)
  std::string authorization;  ///< the Authorization header ("" when absent)
};

/// The URL-decoded value of `name` in query string `query` ("a=1&b=x%20y"); nullopt when absent.
std::optional<std::string> QueryParam(const std::string& query, const std::string& name);

/// What a fallback handler answers; the server adds Content-Length and closes the connection.
struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  ///< extra headers, in order
};

/// Answers one request; called from the server's threads, so it must be thread-safe.
using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;

/// Serves `GET /metrics` (and HEAD) with Content-Type kTextFormatContentType, any other method
/// 405; every other path goes to the fallback handler, or is 404 without one. Start()/Stop() may
/// be called from any thread but not concurrently with each other.
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
  /// Answers every path other than /metrics with `handler` (for HEAD without the body). Set it
  /// before Start().
  void set_fallback_handler(HttpHandler handler) { fallback_ = std::move(handler); }

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
  static int HandleFallback(mg_connection* connection, void* server);
  int Respond(mg_connection* connection);
  int RespondFallback(mg_connection* connection);

  const Registry* registry_;
  std::function<void()> before_scrape_;
  HttpHandler fallback_;
  mg_context* context_ = nullptr;
  int port_ = 0;
};

}  // namespace gtco::metrics
