// The web dashboard gtco-server serves on its HTTP port beside /metrics: the pages (HTML, JS and
// CSS built into the binary, server/web/) and the JSON API under /api/ behind them. Every API
// call carries a team's token as "Authorization: Bearer <token>" and sees exactly what the gRPC
// API shows that token: a submitter its own team's jobs (another team's job answers 404, like a
// job that does not exist), an admin everything, anyone everything under --no-auth.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/auth/principal.h"
#include "common/db/database.h"
#include "common/metrics/http_server.h"
#include "server/auth_gate.h"
#include "server/dashboard_views.h"
#include "server/farm_core.h"

namespace gtco::server {

/// Thread-safe (the HTTP server calls Handle from several threads).
class Dashboard {
 public:
  /// `core` and `gate` must outlive the dashboard. `database` is its own connection to the
  /// farm's database: the history it reads (curves, rounds, the plan, leases) never waits on the
  /// core's connection, and survives a server restart because it is read from there.
  Dashboard(FarmCore* core, const AuthGate* gate, std::unique_ptr<db::Database> database);

  /// Answers one request: GET (or HEAD) of a page, an asset under /static/ or an /api/ document;
  /// 405 for other methods, 404 for other paths.
  metrics::HttpResponse Handle(const metrics::HttpRequest& request);

 private:
  /// The /api/ document at `path` for `principal` (JSON text), or the error to answer.
  absl::StatusOr<std::string> Api(const auth::Principal& principal, const std::string& path,
                                  const std::string& query);
  absl::StatusOr<std::string> JobDocument(const auth::Principal& principal,
                                          const std::string& job_id, const std::string& part);
  absl::StatusOr<std::string> WorkersDocument(const auth::Principal& principal);
  absl::StatusOr<std::string> RecordsDocument(const std::string& workload_key,
                                              const std::string& query);
  /// The job when `principal` may see it; NOT_FOUND, word for word as for an unknown job, when
  /// it is another team's.
  absl::StatusOr<JobInfo> VisibleJob(const auth::Principal& principal, const std::string& job_id);
  /// The job's tasks with their workloads, measurements and (with `candidates`) candidates.
  absl::StatusOr<std::vector<TaskHistory>> History(const std::string& job_id, bool measurements,
                                                   bool candidates);

  FarmCore* core_;
  const AuthGate* gate_;
  std::unique_ptr<db::Database> db_;
};

}  // namespace gtco::server
