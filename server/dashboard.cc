// The web dashboard: routing, sign-in (bearer tokens through the AuthGate, as over gRPC), team
// visibility, and the database reads behind the pages.
#include "server/dashboard.h"

#include <algorithm>
#include <exception>
#include <optional>
#include <string_view>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/db/states.h"
#include "common/util/logging.h"
#include "common/util/status.h"
#include "server/rpc_status.h"
#include "server/web_assets.h"

namespace gtco::server {
namespace {

using metrics::HttpRequest;
using metrics::HttpResponse;
using metrics::QueryParam;

constexpr absl::string_view kApiPrefix = "/api/";
constexpr absl::string_view kStaticPrefix = "/static/";
constexpr int kDefaultRecordLimit = 20;
constexpr int kMaxRecordLimit = 500;

/// The HTTP status of an error (the mapping gRPC's HTTP gateways use).
int HttpStatusOf(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kOk:
      return 200;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kOutOfRange:
      return 400;
    case absl::StatusCode::kUnauthenticated:
      return 401;
    case absl::StatusCode::kPermissionDenied:
      return 403;
    case absl::StatusCode::kNotFound:
      return 404;
    case absl::StatusCode::kAlreadyExists:
    case absl::StatusCode::kAborted:
      return 409;
    case absl::StatusCode::kResourceExhausted:
      return 429;
    case absl::StatusCode::kUnimplemented:
      return 501;
    case absl::StatusCode::kUnavailable:
      return 503;
    case absl::StatusCode::kDeadlineExceeded:
      return 504;
    default:
      return 500;
  }
}

HttpResponse JsonResponse(int status, std::string body) {
  HttpResponse response;
  response.status = status;
  response.content_type = "application/json; charset=utf-8";
  response.body = std::move(body);
  // Job data is per team: never kept by a browser or a proxy.
  response.headers = {{"Cache-Control", "no-store"}, {"X-Content-Type-Options", "nosniff"}};
  return response;
}

HttpResponse ErrorResponse(const absl::Status& status) {
  LogIfServerSide(status);  // the operator sees a failing database here as over gRPC
  HttpResponse response = JsonResponse(HttpStatusOf(status.code()), ErrorJson(status));
  if (status.code() == absl::StatusCode::kUnauthenticated) {
    response.headers.emplace_back("WWW-Authenticate", "Bearer realm=\"gtco\"");
  }
  return response;
}

/// The pages are one document whose script fetches everything it shows from /api/: no data in
/// the HTML, and no script or style from anywhere but this server.
HttpResponse AssetResponse(const WebAsset& asset) {
  HttpResponse response;
  response.content_type = std::string(asset.content_type);
  response.body = std::string(asset.content);
  response.headers = {
      {"Cache-Control", "no-cache"},
      {"X-Content-Type-Options", "nosniff"},
      {"Content-Security-Policy",
       "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; "
       "frame-ancestors 'none'"},
      {"Referrer-Policy", "no-referrer"}};
  return response;
}

HttpResponse TextResponse(int status, const std::string& text) {
  HttpResponse response;
  response.status = status;
  response.body = text + "\n";
  response.headers = {{"X-Content-Type-Options", "nosniff"}};
  return response;
}

const WebAsset* FindAsset(std::string_view name) {
  for (const WebAsset& asset : WebAssets()) {
    if (asset.name == name) return &asset;
  }
  return nullptr;
}

/// True for the paths the single-page app routes itself (it reads location.pathname).
bool IsPagePath(absl::string_view path) {
  if (path == "/" || path == "/jobs" || path == "/workers") return true;
  for (absl::string_view prefix : {"/jobs/", "/workloads/"}) {
    if (absl::StartsWith(path, prefix) && path.size() > prefix.size()) return true;
  }
  return false;
}

}  // namespace

Dashboard::Dashboard(FarmCore* core, const AuthGate* gate, std::unique_ptr<db::Database> database)
    : core_(core), gate_(gate), db_(std::move(database)) {}

HttpResponse Dashboard::Handle(const HttpRequest& request) {
  if (request.method != "GET" && request.method != "HEAD") {
    HttpResponse response = TextResponse(405, "method not allowed: the dashboard is read-only");
    response.headers.emplace_back("Allow", "GET, HEAD");
    return response;
  }
  const absl::string_view path = request.path;
  try {
    if (absl::StartsWith(path, kApiPrefix)) {
      absl::StatusOr<auth::Principal> principal = gate_->AuthorizeHeader(
          request.authorization.empty() ? std::nullopt
                                        : std::optional<absl::string_view>(request.authorization),
          {auth::Role::kSubmitter, auth::Role::kAdmin});
      if (!principal.ok()) return ErrorResponse(principal.status());
      absl::StatusOr<std::string> document =
          Api(*principal, std::string(path.substr(kApiPrefix.size())), request.query);
      if (!document.ok()) return ErrorResponse(document.status());
      return JsonResponse(200, *std::move(document));
    }
    if (absl::StartsWith(path, kStaticPrefix)) {
      const absl::string_view name = path.substr(kStaticPrefix.size());
      const WebAsset* asset = FindAsset(std::string_view(name.data(), name.size()));
      if (asset != nullptr) return AssetResponse(*asset);
    } else if (IsPagePath(path)) {
      return AssetResponse(*FindAsset("index.html"));
    }
    return TextResponse(404, absl::StrCat("not found: ", path));
  } catch (const std::exception& error) {
    // One boundary for the unexpected (a JSON library throw, an allocation failure).
    GTCO_LOG(kError, "dashboard: " << path << ": " << error.what());
    return ErrorResponse(absl::InternalError(absl::StrCat("the dashboard failed: ", error.what())));
  }
}

absl::StatusOr<std::string> Dashboard::Api(const auth::Principal& principal,
                                           const std::string& path, const std::string& query) {
  const std::vector<std::string> parts = absl::StrSplit(path, '/');
  if (parts.size() == 1 && parts[0] == "session") {
    return SessionJson(gate_->enabled(), std::string(auth::RoleName(principal.role)),
                       principal.team);
  }
  if (parts.size() == 1 && parts[0] == "jobs") {
    std::optional<db::JobState> state;
    if (std::optional<std::string> name = QueryParam(query, "state"); name && !name->empty()) {
      GTCO_ASSIGN_OR_RETURN(state, db::ParseJobState(*name));
    }
    GTCO_ASSIGN_OR_RETURN(std::vector<JobInfo> jobs,
                          core_->ListJobs(ListedTeam(principal, ""), state));
    return JobListJson(jobs);
  }
  if (parts.size() >= 2 && parts.size() <= 3 && parts[0] == "jobs" && !parts[1].empty()) {
    return JobDocument(principal, parts[1], parts.size() == 3 ? parts[2] : "");
  }
  if (parts.size() == 1 && parts[0] == "workers") return WorkersDocument(principal);
  if (parts.size() == 3 && parts[0] == "workloads" && !parts[1].empty() && parts[2] == "records") {
    return RecordsDocument(parts[1], query);
  }
  return absl::NotFoundError(absl::StrCat(
      "no API at /api/", path,
      "; see session, jobs, jobs/ID[/curves|/allocation|/plan], workers, workloads/KEY/records"));
}

absl::StatusOr<JobInfo> Dashboard::VisibleJob(const auth::Principal& principal,
                                              const std::string& job_id) {
  return VisibleTo(principal, job_id, core_->GetJob(job_id));
}

absl::StatusOr<std::string> Dashboard::JobDocument(const auth::Principal& principal,
                                                   const std::string& job_id,
                                                   const std::string& part) {
  GTCO_ASSIGN_OR_RETURN(JobInfo job, VisibleJob(principal, job_id));
  if (part.empty()) return JobJson(job);
  if (part == "curves") {
    GTCO_ASSIGN_OR_RETURN(std::vector<TaskHistory> history, History(job_id, true, false));
    return CurvesJson(job, history);
  }
  if (part == "allocation") {
    GTCO_ASSIGN_OR_RETURN(std::vector<TaskHistory> history, History(job_id, false, true));
    return AllocationJson(job, history);
  }
  if (part == "plan") {
    GTCO_ASSIGN_OR_RETURN(std::vector<TaskHistory> history, History(job_id, false, false));
    return PlanJson(job, history);
  }
  return absl::NotFoundError(
      absl::StrCat("no API at /api/jobs/", job_id, "/", part, "; see curves, allocation, plan"));
}

absl::StatusOr<std::vector<TaskHistory>> Dashboard::History(const std::string& job_id,
                                                            bool measurements, bool candidates) {
  GTCO_ASSIGN_OR_RETURN(std::vector<db::TaskRow> tasks, db_->ListTasks(job_id));
  std::vector<TaskHistory> history;
  for (db::TaskRow& task : tasks) {
    TaskHistory entry;
    GTCO_ASSIGN_OR_RETURN(entry.workload, db_->GetWorkload(task.workload_key));
    if (measurements) {
      GTCO_ASSIGN_OR_RETURN(entry.measurements, db_->ListMeasurementsForTask(task.task_id));
    }
    if (candidates) {
      for (db::CandidateState state : {db::CandidateState::kPending, db::CandidateState::kLeased,
                                       db::CandidateState::kMeasured}) {
        GTCO_ASSIGN_OR_RETURN(std::vector<db::CandidateRow> rows,
                              db_->ListCandidates(task.task_id, state));
        entry.candidates.insert(entry.candidates.end(), rows.begin(), rows.end());
      }
    }
    entry.task = std::move(task);
    history.push_back(std::move(entry));
  }
  return history;
}

absl::StatusOr<std::string> Dashboard::WorkersDocument(const auth::Principal& principal) {
  // Leases are read from the database: the candidates a worker holds, on unfinished tasks of
  // running jobs; those of another team's job show only that the worker is busy.
  std::vector<WorkerLease> leases;
  GTCO_ASSIGN_OR_RETURN(std::vector<db::JobRow> running, db_->ListJobs("", db::JobState::kRunning));
  for (const db::JobRow& job : running) {
    GTCO_ASSIGN_OR_RETURN(std::vector<db::TaskRow> tasks, db_->ListTasks(job.job_id));
    for (const db::TaskRow& task : tasks) {
      if (db::IsFinished(task.state)) continue;
      GTCO_ASSIGN_OR_RETURN(std::vector<db::CandidateRow> leased,
                            db_->ListCandidates(task.task_id, db::CandidateState::kLeased));
      for (const db::CandidateRow& candidate : leased) {
        leases.push_back(WorkerLease{candidate.worker_id, candidate.candidate_id, task.task_id,
                                     job.job_id, !HiddenFrom(principal, job.team),
                                     candidate.lease_deadline_unix_ms});
      }
    }
  }
  const int64_t now_ms = absl::ToUnixMillis(absl::Now());
  return WorkersJson(core_->Workers(), leases, now_ms);
}

absl::StatusOr<std::string> Dashboard::RecordsDocument(const std::string& workload_key,
                                                       const std::string& query) {
  // Tuned schedules are shared by every team (they name no model or job), as over gRPC.
  const std::string target_name = QueryParam(query, "target").value_or("cpu");
  GTCO_ASSIGN_OR_RETURN(target::Target target, target::ParseTarget(target_name));
  int limit = kDefaultRecordLimit;
  if (std::optional<std::string> text = QueryParam(query, "limit")) {
    if (!absl::SimpleAtoi(*text, &limit) || limit < 1 || limit > kMaxRecordLimit) {
      return absl::InvalidArgumentError(absl::StrCat("limit must be a number from 1 to ",
                                                     kMaxRecordLimit, ", got '", *text, "'"));
    }
  }
  GTCO_ASSIGN_OR_RETURN(QueryResult result, core_->QueryWorkload(workload_key, target, limit));
  return RecordsJson(workload_key, target::TargetName(target), result);
}

}  // namespace gtco::server
