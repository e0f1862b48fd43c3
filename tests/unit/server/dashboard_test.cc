// The web dashboard without a browser: its JSON views (tuning curves, rounds, hidden leases,
// errors) and its HTTP handler over a real farm core and token gate on a temporary SQLite file
// (sign-in, team isolation, pages and assets, refusals).
#include "server/dashboard.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/auth/token.h"
#include "common/db/database.h"
#include "common/kernels/registry.h"
#include "server/auth_gate.h"
#include "server/dashboard_views.h"
#include "server/farm_core.h"

namespace gtco::server {
namespace {

using Json = nlohmann::json;

db::MeasurementRow Trial(const std::string& trace, bool ok, double seconds,
                         const std::string& hardware = "AMD EPYC") {
  db::MeasurementRow row;
  row.trace = trace;
  row.ok = ok;
  row.median_seconds = ok ? seconds : 0;
  row.hardware = hardware;
  return row;
}

TEST(DashboardViewsTest, MappingOfTraceComesFromTheRegistry) {
  const schedule::MappingSketch& mapping = *kernels::MappingRegistry().front();
  EXPECT_EQ(MappingOfTrace(absl::StrCat(mapping.sketch().Name(), ";a=1")), mapping.Name());
  EXPECT_EQ(MappingOfTrace("retired_sketch/v0;a=1"), "retired_sketch/v0");
  EXPECT_EQ(MappingOfTrace(""), "");
}

TEST(DashboardViewsTest, CurvesStepDownAtImprovementsAndCountFailures) {
  const std::vector<db::MeasurementRow> rows = {
      Trial("a/v1;x=1", true, 5e-6), Trial("b/v1;x=1", false, 0),   Trial("a/v1;x=2", true, 3e-6),
      Trial("b/v1;x=2", true, 4e-6), Trial("a/v1;x=3", true, 6e-6), Trial("b/v1;x=3", true, 2e-6)};
  TaskCurves curves = BuildTaskCurves("j.t0", rows);
  EXPECT_EQ(curves.overall.trials, 6);
  EXPECT_EQ(curves.overall.failed, 1);
  EXPECT_DOUBLE_EQ(curves.overall.best_seconds, 2e-6);
  using Steps = std::vector<std::pair<int64_t, double>>;
  EXPECT_EQ(curves.overall.best, (Steps{{1, 5e-6}, {3, 3e-6}, {6, 2e-6}}));
  EXPECT_EQ(curves.overall.points.size(), 5u);  // the failed trial has no point
  ASSERT_EQ(curves.mappings.size(), 2u);        // in order of first trial
  EXPECT_EQ(curves.mappings[0].name, "a/v1");
  // A mapping's line runs on to the task's last trial, at its best.
  EXPECT_EQ(curves.mappings[0].best, (Steps{{1, 5e-6}, {3, 3e-6}, {6, 3e-6}}));
  EXPECT_EQ(curves.mappings[1].trials, 3);
  EXPECT_EQ(curves.mappings[1].failed, 1);
  EXPECT_EQ(curves.mappings[1].best, (Steps{{4, 4e-6}, {6, 2e-6}}));
}

TEST(DashboardViewsTest, CurvesNameTheHardwareWhenSeveralClassesMeasured) {
  TaskCurves curves = BuildTaskCurves("j.t0", {Trial("a/v1;x=1", true, 1e-6, "avx2 box"),
                                               Trial("a/v1;x=1", true, 2e-6, "avx512 box")});
  ASSERT_EQ(curves.mappings.size(), 2u);
  EXPECT_EQ(curves.mappings[0].name, "a/v1 @ avx2 box");
  EXPECT_EQ(curves.mappings[1].name, "a/v1 @ avx512 box");
}

TEST(DashboardViewsTest, ManyPointsAreThinnedButTheBestLineIsExact) {
  std::vector<db::MeasurementRow> rows;
  for (int trial = 0; trial < 5000; ++trial) {
    rows.push_back(Trial("a/v1;x=1", true, trial == 4321 ? 1e-9 : 1e-6 + trial * 1e-12));
  }
  TaskCurves curves = BuildTaskCurves("j.t0", rows);
  EXPECT_EQ(curves.overall.points.size(), kMaxCurvePoints);
  EXPECT_EQ(curves.overall.trials, 5000);
  EXPECT_EQ(curves.overall.best.back(), (std::pair<int64_t, double>{5000, 1e-9}));
  EXPECT_EQ(curves.overall.best[1], (std::pair<int64_t, double>{4322, 1e-9}));
}

TEST(DashboardViewsTest, AllocationGroupsCandidatesProposedTogether) {
  auto candidate = [](int64_t created, const std::string& task, const std::string& trace) {
    db::CandidateRow row;
    row.created_unix_ms = created;
    row.task_id = task;
    row.trace = trace;
    return row;
  };
  std::vector<AllocationRound> rounds =
      BuildAllocation({candidate(200, "j.t1", "b/v1;x=1"), candidate(100, "j.t0", "a/v1;x=1"),
                       candidate(100, "j.t0", "b/v1;x=2"), candidate(100, "j.t0", "a/v1;x=3"),
                       candidate(200, "j.t0", "a/v1;x=4")});
  ASSERT_EQ(rounds.size(), 3u);
  EXPECT_EQ(rounds[0].task_id, "j.t0");
  EXPECT_EQ(rounds[0].Total(), 3);
  EXPECT_EQ(rounds[0].per_mapping.at("a/v1"), 2);
  EXPECT_EQ(rounds[1].created_unix_ms, 200);
  EXPECT_EQ(rounds[1].task_id, "j.t0");  // ties by task id
  EXPECT_EQ(rounds[2].task_id, "j.t1");
}

TEST(DashboardViewsTest, AnotherTeamsLeaseShowsOnlyThatTheWorkerIsBusy) {
  auto worker = std::make_shared<RegisteredWorker>();
  worker->row.worker_id = "w1";
  worker->hardware.cpu_model = "AMD EPYC";
  WorkerSnapshot snapshot{worker, 1000, true, 7, 3};
  Json json = Json::parse(
      WorkersJson({snapshot},
                  {WorkerLease{"w1", "j-ours.t0.c1", "j-ours.t0", "j-ours", true, 11000},
                   WorkerLease{"w1", "j-theirs.t2.c9", "j-theirs.t2", "j-theirs", false, 6000}},
                  1000));
  const Json& leases = json["workers"][0]["leases"];
  ASSERT_EQ(leases.size(), 2u);
  EXPECT_EQ(leases[0]["job_id"], "j-ours");
  EXPECT_DOUBLE_EQ(leases[0]["deadline_in_seconds"].get<double>(), 10.0);
  EXPECT_EQ(leases[1]["job_id"], "");
  EXPECT_EQ(leases[1]["task_id"], "");
  EXPECT_EQ(leases[1]["candidate_id"], "");
  EXPECT_EQ(json.dump().find("theirs"), std::string::npos) << json.dump();
  EXPECT_EQ(json["workers"][0]["trials_per_minute"], 3);
}

TEST(DashboardViewsTest, UnknownValuesAreNullAndInvalidUtf8IsReplaced) {
  JobInfo job;
  job.job_id = "j1";
  job.model_name = "bad\xff name.onnx";
  job.eta_seconds = -1;
  Json json = Json::parse(JobJson(job));
  EXPECT_TRUE(json["eta_seconds"].is_null());
  EXPECT_TRUE(json["estimated_latency_seconds"].is_null());
  EXPECT_EQ(json["state"], "running");
  EXPECT_NE(json["model_name"].get<std::string>().find("name.onnx"), std::string::npos);
  Json error = Json::parse(ErrorJson(absl::NotFoundError("job 'x' not found")));
  EXPECT_EQ(error["code"], "NOT_FOUND");
  EXPECT_EQ(error["error"], "job 'x' not found");
}

std::string ReadModel(const std::string& name) {
  std::ifstream in(std::string(GTCO_SOURCE_DIR) + "/tests/data/" + name, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

/// A farm as gtco-server wires it: core, token gate and dashboard each on their own connection to
/// one SQLite file, with teams "vision" and "nlp" and a token for each, a worker and an admin.
class DashboardHttpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/gtco-dashboard-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    directory_ = pattern;
    const std::string path = directory_ + "/gtco.db";
    auto admin = db::OpenSqliteDatabase(path);
    ASSERT_TRUE(admin.ok()) << admin.status();
    for (const char* team : {"vision", "nlp"}) {
      ASSERT_TRUE((*admin)->PutTeam(db::TeamRow{team}).ok());
    }
    vision_ = Issue(**admin, auth::Role::kSubmitter, "vision");
    nlp_ = Issue(**admin, auth::Role::kSubmitter, "nlp");
    worker_ = Issue(**admin, auth::Role::kWorker, "");
    admin_ = Issue(**admin, auth::Role::kAdmin, "");
    FarmOptions options;
    options.seed = 1;
    auto core = FarmCore::Create(*db::OpenSqliteDatabase(path), options, /*metrics=*/nullptr);
    ASSERT_TRUE(core.ok()) << core.status();
    core_ = std::move(*core);
    gate_ = std::make_unique<AuthGate>(*db::OpenSqliteDatabase(path));
    dashboard_ =
        std::make_unique<Dashboard>(core_.get(), gate_.get(), *db::OpenSqliteDatabase(path));
  }

  void TearDown() override {
    dashboard_.reset();
    gate_.reset();
    core_.reset();
    std::system(absl::StrCat("rm -rf '", directory_, "'").c_str());
  }

  static std::string Issue(db::Database& database, auth::Role role, const std::string& team) {
    auto issued = auth::CreateToken(database, role, team);
    EXPECT_TRUE(issued.ok()) << issued.status();
    return issued.ok() ? issued->token : "";
  }

  metrics::HttpResponse Get(const std::string& path, const std::string& token,
                            const std::string& method = "GET") {
    metrics::HttpRequest request;
    request.method = method;
    const size_t question = path.find('?');
    request.path = path.substr(0, question);
    request.query = question == std::string::npos ? "" : path.substr(question + 1);
    request.authorization = token.empty() ? "" : "Bearer " + token;
    return dashboard_->Handle(request);
  }

  Json GetJson(const std::string& path, const std::string& token, int status = 200) {
    metrics::HttpResponse response = Get(path, token);
    EXPECT_EQ(response.status, status) << path << ": " << response.body;
    EXPECT_EQ(response.content_type, "application/json; charset=utf-8");
    return Json::parse(response.body);
  }

  std::string SubmitFor(const std::string& team, int64_t budget) {
    JobSpec spec;
    spec.team = team;
    spec.budget = budget;
    spec.model_name = team + ".onnx";
    auto job = core_->Submit(spec, ReadModel("mlp.onnx"));
    EXPECT_TRUE(job.ok()) << job.status();
    return job.ok() ? job->job_id : "";
  }

  /// Registers a CPU worker and reports made-up but plausible timings of up to `trials`
  /// candidates (fewer when the job's small spaces run out); returns how many.
  int MeasureSome(int trials) {
    WorkerHello hello;
    hello.worker_id = "w-test";
    hello.hostname = "test-host";
    hello.hardware.target = target::Target::kCpu;
    hello.hardware.cores = 1;
    hello.languages = {"trace"};
    EXPECT_TRUE(core_->Register(hello).ok());
    double seconds = 1e-5;
    int reported = 0;
    while (reported < trials) {
      auto leased = core_->Lease("w-test", trials - reported, /*wait_ms=*/2000);
      EXPECT_TRUE(leased.ok()) << leased.status();
      if (!leased.ok() || leased->empty()) break;
      std::vector<TrialResult> results;
      for (const LeasedCandidate& candidate : *leased) {
        TrialResult result;
        result.candidate_id = candidate.candidate_id;
        result.ok = result.verified = true;
        seconds *= 0.9;
        result.median_seconds = result.min_seconds = result.max_seconds = seconds;
        result.repeats = 5;
        results.push_back(result);
      }
      EXPECT_TRUE(core_->Report("w-test", results).ok());
      reported += static_cast<int>(results.size());
    }
    return reported;
  }

  std::string directory_;
  std::string vision_, nlp_, worker_, admin_;
  std::unique_ptr<FarmCore> core_;
  std::unique_ptr<AuthGate> gate_;
  std::unique_ptr<Dashboard> dashboard_;
};

TEST_F(DashboardHttpTest, SignInNeedsASubmitterOrAdminToken) {
  Json missing = GetJson("/api/session", "", 401);
  EXPECT_EQ(missing["code"], "UNAUTHENTICATED");
  EXPECT_NE(missing["error"].get<std::string>().find("Authorization: Bearer"), std::string::npos);
  EXPECT_EQ(Get("/api/session", "").headers.back().first, "WWW-Authenticate");
  EXPECT_EQ(GetJson("/api/jobs", "gtco_s_000000000000_" + std::string(40, '0'), 401)["code"],
            "UNAUTHENTICATED");
  EXPECT_EQ(GetJson("/api/jobs", "not-a-token", 401)["code"], "UNAUTHENTICATED");
  Json worker = GetJson("/api/jobs", worker_, 403);
  EXPECT_NE(worker["error"].get<std::string>().find("submitter or admin"), std::string::npos);
  Json vision = GetJson("/api/session", vision_);
  EXPECT_EQ(vision["auth"], true);
  EXPECT_EQ(vision["role"], "submitter");
  EXPECT_EQ(vision["team"], "vision");
  EXPECT_EQ(GetJson("/api/session", admin_)["role"], "admin");
}

TEST_F(DashboardHttpTest, ATeamSeesOnlyItsOwnJobsLikeOverGrpc) {
  const std::string ours = SubmitFor("vision", 8);
  const std::string theirs = SubmitFor("nlp", 8);
  Json listed = GetJson("/api/jobs", vision_);
  ASSERT_EQ(listed["jobs"].size(), 1u);
  EXPECT_EQ(listed["jobs"][0]["job_id"], ours);
  EXPECT_EQ(GetJson("/api/jobs", admin_)["jobs"].size(), 2u);
  // Another team's job answers word for word like a job that does not exist, on every part.
  for (const char* part : {"", "/curves", "/allocation", "/plan"}) {
    Json hidden = GetJson(absl::StrCat("/api/jobs/", theirs, part), vision_, 404);
    Json unknown = GetJson(absl::StrCat("/api/jobs/j-unknown", part), vision_, 404);
    EXPECT_EQ(hidden["code"], "NOT_FOUND");
    EXPECT_EQ(hidden["error"], absl::StrCat("job '", theirs, "' not found"));
    EXPECT_EQ(unknown["error"], "job 'j-unknown' not found");
  }
  EXPECT_EQ(GetJson("/api/jobs/" + theirs, nlp_)["team"], "nlp");
  EXPECT_EQ(GetJson("/api/jobs/" + theirs, admin_)["team"], "nlp");
  EXPECT_EQ(GetJson("/api/jobs?state=done", vision_)["jobs"].size(), 0u);
  EXPECT_EQ(GetJson("/api/jobs?state=finished", vision_, 400)["code"], "INVALID_ARGUMENT");
}

TEST_F(DashboardHttpTest, AJobsCurvesRoundsAndPlanComeFromItsMeasurements) {
  const std::string job = SubmitFor("vision", 16);
  const int measured = MeasureSome(12);
  ASSERT_GE(measured, 4);
  Json curves = GetJson("/api/jobs/" + job + "/curves", vision_);
  int64_t points = 0, trials = 0;
  for (const Json& task : curves["tasks"]) {
    points += task["overall"]["points"].size();
    trials += task["overall"]["trials"].get<int64_t>();
    for (const Json& mapping : task["mappings"])
      EXPECT_FALSE(mapping["name"].get<std::string>().empty());
  }
  EXPECT_EQ(trials, measured);
  EXPECT_EQ(points, measured);
  Json allocation = GetJson("/api/jobs/" + job + "/allocation", vision_);
  int64_t proposed = 0;
  for (const Json& round : allocation["rounds"]) proposed += round["trials"].get<int64_t>();
  EXPECT_GE(proposed, measured);
  EXPECT_FALSE(allocation["mappings"].empty());
  Json plan = GetJson("/api/jobs/" + job + "/plan", vision_);
  ASSERT_FALSE(plan["subgraphs"].empty());
  EXPECT_FALSE(plan["subgraphs"][0]["canonical"].get<std::string>().empty());
  EXPECT_GT(plan["total_flops"].get<int64_t>(), 0);
  Json status = GetJson("/api/jobs/" + job, vision_);
  EXPECT_EQ(status["trials_done"], measured);
  EXPECT_FALSE(status["decisions"].empty());
  EXPECT_FALSE(status["tasks"][0]["mappings"].empty());  // the --explain verdicts
  Json workers = GetJson("/api/workers", vision_);
  ASSERT_EQ(workers["workers"].size(), 1u);
  EXPECT_EQ(workers["workers"][0]["hostname"], "test-host");
  EXPECT_EQ(workers["workers"][0]["results"], measured);
  EXPECT_EQ(workers["workers"][0]["alive"], true);
  // Records are shared by every team, as over gRPC.
  const std::string key = status["tasks"][0]["workload_key"];
  Json records = GetJson("/api/workloads/" + key + "/records?target=cpu&limit=2", nlp_);
  EXPECT_LE(records["records"].size(), 2u);
  EXPECT_EQ(GetJson("/api/workloads/" + key + "/records?limit=0", nlp_, 400)["code"],
            "INVALID_ARGUMENT");
  EXPECT_EQ(GetJson("/api/workloads/" + key + "/records?target=tpu", nlp_, 400)["code"],
            "INVALID_ARGUMENT");
  EXPECT_EQ(GetJson("/api/workloads/nope/records", nlp_, 404)["code"], "NOT_FOUND");
}

TEST_F(DashboardHttpTest, PagesAndAssetsAreBuiltInAndEverythingElseIsRefused) {
  for (const char* page : {"/", "/jobs", "/jobs/j1", "/workers", "/workloads/abc"}) {
    metrics::HttpResponse response = Get(page, "");
    EXPECT_EQ(response.status, 200) << page;
    EXPECT_EQ(response.content_type, "text/html; charset=utf-8");
    EXPECT_NE(response.body.find("/static/app.js"), std::string::npos);
  }
  metrics::HttpResponse script = Get("/static/app.js", "");
  EXPECT_EQ(script.status, 200);
  EXPECT_EQ(script.content_type, "text/javascript; charset=utf-8");
  bool has_policy = false;
  for (const auto& [name, value] : script.headers) {
    has_policy |= name == "Content-Security-Policy" && value.find("default-src 'self'") == 0;
  }
  EXPECT_TRUE(has_policy);
  EXPECT_EQ(Get("/static/charts.js", "").status, 200);
  EXPECT_EQ(Get("/static/style.css", "").content_type, "text/css; charset=utf-8");
  EXPECT_EQ(Get("/static/../gtco.db", "").status, 404);
  EXPECT_EQ(Get("/static/", "").status, 404);
  EXPECT_EQ(Get("/jobs/", "").status, 404);
  EXPECT_EQ(Get("/etc/passwd", "").status, 404);
  EXPECT_EQ(GetJson("/api/nothing", admin_, 404)["code"], "NOT_FOUND");
  EXPECT_EQ(GetJson("/api/jobs/j1/secrets", admin_, 404)["code"], "NOT_FOUND");
  metrics::HttpResponse post = Get("/api/jobs", admin_, "POST");
  EXPECT_EQ(post.status, 405);
}

TEST_F(DashboardHttpTest, AnOpenFarmShowsEverythingWithoutATokenLikeGrpc) {
  const std::string job = SubmitFor("nlp", 8);
  std::unique_ptr<AuthGate> open = AuthGate::Open();
  Dashboard dashboard(core_.get(), open.get(), *db::OpenSqliteDatabase(directory_ + "/gtco.db"));
  metrics::HttpRequest request;
  request.method = "GET";
  request.path = "/api/session";
  Json session = Json::parse(dashboard.Handle(request).body);
  EXPECT_EQ(session["auth"], false);
  EXPECT_EQ(session["role"], "admin");
  request.path = "/api/jobs/" + job;
  metrics::HttpResponse status = dashboard.Handle(request);
  EXPECT_EQ(status.status, 200) << status.body;
}

}  // namespace
}  // namespace gtco::server
