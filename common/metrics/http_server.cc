// civetweb-backed /metrics endpoint, and the fallback handler for every other path.
#include "common/metrics/http_server.h"

#include <civetweb.h>

#include <cstring>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "common/metrics/registry.h"
#include "common/util/logging.h"

namespace gtco::metrics {
namespace {

void InitCivetwebOnce() {
  static std::once_flag initialized;
  std::call_once(initialized, [] { mg_init_library(0); });
}

// Routes civetweb's own error log into ours instead of stderr.
int LogCivetwebMessage(const mg_connection* connection, const char* message) {
  GTCO_LOG(kWarning, "metrics http: " << message);
  return 1;
}

void SendPlainStatus(mg_connection* connection, int status, const char* text) {
  mg_printf(connection,
            "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\n"
            "Content-Length: %zu\r\nConnection: close\r\n\r\n%s\n",
            status, text, std::strlen(text) + 1, text);
}

}  // namespace

MetricsHttpServer::MetricsHttpServer(const Registry* registry) : registry_(registry) {}

MetricsHttpServer::~MetricsHttpServer() { Stop(); }

absl::Status MetricsHttpServer::Start(const std::string& address, int port) {
  if (context_ != nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("metrics server already listening on port ", port_));
  }
  if (port < 0 || port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("metrics server: port ", port, " is outside 0..65535"));
  }
  InitCivetwebOnce();
  const std::string listen_spec =
      address.empty() ? std::to_string(port) : absl::StrCat(address, ":", port);
  const char* options[] = {"listening_ports",
                           listen_spec.c_str(),  //
                           "num_threads",
                           "4",  // a scrape is not held up by a dashboard's polls
                           "request_timeout_ms",
                           "10000",  //
                           nullptr};
  mg_callbacks callbacks;
  std::memset(&callbacks, 0, sizeof(callbacks));
  callbacks.log_message = &LogCivetwebMessage;
  mg_init_data init_data{&callbacks, this, options};
  unsigned error_code = 0;
  char error_text[256] = "";
  mg_error_data error_data{&error_code, error_text, sizeof(error_text)};
  mg_context* context = mg_start2(&init_data, &error_data);
  if (context == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        "metrics server: cannot listen on ", listen_spec, ": ",
        error_text[0] != '\0' ? error_text : "civetweb failed to start", " (is the port in use?)"));
  }
  mg_server_port bound_ports[4];
  const int port_count = mg_get_server_ports(context, 4, bound_ports);
  if (port_count < 1) {
    mg_stop(context);
    return absl::InternalError(
        absl::StrCat("metrics server: started on ", listen_spec, " but reports no port"));
  }
  mg_set_request_handler(context, "/metrics$", &MetricsHttpServer::HandleMetrics, this);
  if (fallback_) mg_set_request_handler(context, "**", &MetricsHttpServer::HandleFallback, this);
  context_ = context;
  port_ = bound_ports[0].port;
  return absl::OkStatus();
}

void MetricsHttpServer::Stop() {
  if (context_ == nullptr) return;
  mg_stop(context_);
  context_ = nullptr;
  port_ = 0;
}

int MetricsHttpServer::HandleMetrics(mg_connection* connection, void* server) {
  return static_cast<MetricsHttpServer*>(server)->Respond(connection);
}

int MetricsHttpServer::HandleFallback(mg_connection* connection, void* server) {
  return static_cast<MetricsHttpServer*>(server)->RespondFallback(connection);
}

int MetricsHttpServer::RespondFallback(mg_connection* connection) {
  const mg_request_info* info = mg_get_request_info(connection);
  HttpRequest request;
  request.method = info->request_method;
  request.path = info->local_uri != nullptr ? info->local_uri : "";
  // civetweb may try the catch-all pattern before "/metrics$": /metrics is always the registry.
  if (request.path == "/metrics") return Respond(connection);
  request.query = info->query_string != nullptr ? info->query_string : "";
  const char* authorization = mg_get_header(connection, "Authorization");
  request.authorization = authorization != nullptr ? authorization : "";
  const HttpResponse response = fallback_(request);
  std::string head = absl::StrCat("HTTP/1.1 ", response.status, " ",
                                  mg_get_response_code_text(connection, response.status),
                                  "\r\nContent-Type: ", response.content_type,
                                  "\r\nContent-Length: ", response.body.size(), "\r\n");
  for (const auto& [name, value] : response.headers) {
    absl::StrAppend(&head, name, ": ", value, "\r\n");
  }
  absl::StrAppend(&head, "Connection: close\r\n\r\n");
  mg_write(connection, head.data(), head.size());
  if (request.method != "HEAD") mg_write(connection, response.body.data(), response.body.size());
  return response.status;
}

int MetricsHttpServer::Respond(mg_connection* connection) {
  const mg_request_info* request = mg_get_request_info(connection);
  const bool is_head = std::strcmp(request->request_method, "HEAD") == 0;
  if (!is_head && std::strcmp(request->request_method, "GET") != 0) {
    SendPlainStatus(connection, 405, "Method Not Allowed");
    return 405;
  }
  if (before_scrape_) before_scrape_();
  const std::string body = registry_->Serialize();
  mg_send_http_ok(connection, kTextFormatContentType, static_cast<long long>(body.size()));
  if (!is_head) mg_write(connection, body.data(), body.size());
  return 200;
}

std::optional<std::string> QueryParam(const std::string& query, const std::string& name) {
  // civetweb's own parser (it decodes %XX and '+'); the value is never longer than the query.
  std::string value(query.size() + 1, '\0');
  const int length =
      mg_get_var(query.data(), query.size(), name.c_str(), value.data(), value.size());
  if (length < 0) return std::nullopt;
  value.resize(static_cast<size_t>(length));
  return value;
}

}  // namespace gtco::metrics
