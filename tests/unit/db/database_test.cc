// The schedule database contract, run against every backend: SQLite files in a temporary
// directory and databases on a private PostgreSQL server (skipped when PostgreSQL is absent).
#include "common/db/database.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/db/migrations.h"
#include "tests/unit/db/database_fixture.h"
#include "tests/unit/db/test_rows.h"

namespace gtco::db {
namespace {

using testing::Backend;
using testing::BackendName;
using testing::CreateTwoTaskJob;
using testing::DatabaseTest;
using testing::MakeCandidate;
using testing::MakeJob;
using testing::MakeMeasurement;
using testing::MakeTask;

std::vector<std::string> CandidateIds(const std::vector<CandidateRow>& rows) {
  std::vector<std::string> ids;
  for (const CandidateRow& row : rows) ids.push_back(row.candidate_id);
  return ids;
}

std::vector<std::string> MeasurementIds(const std::vector<MeasurementRow>& rows) {
  std::vector<std::string> ids;
  for (const MeasurementRow& row : rows) ids.push_back(row.candidate_id);
  return ids;
}

std::vector<std::string> JobIds(const std::vector<JobRow>& rows) {
  std::vector<std::string> ids;
  for (const JobRow& row : rows) ids.push_back(row.job_id);
  return ids;
}

INSTANTIATE_TEST_SUITE_P(Sqlite, DatabaseTest, ::testing::Values(Backend::kSqlite), BackendName);
INSTANTIATE_TEST_SUITE_P(Postgres, DatabaseTest, ::testing::Values(Backend::kPostgres),
                         BackendName);

TEST_P(DatabaseTest, MigrationsCreateSchemaOnce) {
  {
    std::unique_ptr<Database> database = OpenOrDie();
    ASSERT_NE(database, nullptr);
    EXPECT_EQ(*database->SchemaVersion(), LatestSchemaVersion());
  }
  const std::string applied_at = RawQuery("SELECT applied_unix_ms FROM schema_migrations");
  EXPECT_FALSE(applied_at.empty());
  for (const char* table :
       {"workloads", "workers", "jobs", "tasks", "candidates", "measurements"}) {
    EXPECT_EQ(CatalogLookup("table", table), table);
  }
  EXPECT_EQ(CatalogLookup("index", "measurements_by_workload"), "measurements_by_workload");

  std::unique_ptr<Database> reopened = OpenOrDie();
  ASSERT_NE(reopened, nullptr);
  EXPECT_EQ(*reopened->SchemaVersion(), LatestSchemaVersion());
  EXPECT_EQ(RawQuery("SELECT COUNT(*) FROM schema_migrations"),
            std::to_string(AllMigrations().size()));
  EXPECT_EQ(RawQuery("SELECT applied_unix_ms FROM schema_migrations"), applied_at);
}

TEST_P(DatabaseTest, ConcurrentOpensMigrateOnce) {
  constexpr int kOpeners = 4;
  std::vector<absl::Status> statuses(kOpeners);
  std::vector<std::thread> threads;
  for (int opener = 0; opener < kOpeners; ++opener) {
    threads.emplace_back([&, opener] {
      absl::StatusOr<std::unique_ptr<Database>> database = OpenDatabase(location_);
      statuses[opener] = database.status();
      if (database.ok() && *(*database)->SchemaVersion() != LatestSchemaVersion()) {
        statuses[opener] = absl::InternalError("wrong schema version");
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (const absl::Status& status : statuses) EXPECT_TRUE(status.ok()) << status;
  EXPECT_EQ(RawQuery("SELECT COUNT(*) FROM schema_migrations"),
            std::to_string(AllMigrations().size()));
}

TEST_P(DatabaseTest, RefusesSchemaNewerThanBinary) {
  OpenOrDie().reset();
  RawQuery("INSERT INTO schema_migrations (version, applied_unix_ms) VALUES (999, 0)");
  absl::StatusOr<std::unique_ptr<Database>> database = OpenDatabase(location_);
  ASSERT_FALSE(database.ok());
  EXPECT_EQ(database.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(database.status().message().find("999"), std::string::npos);
  EXPECT_NE(database.status().message().find(location_), std::string::npos) << database.status();
}

TEST_P(DatabaseTest, WorkloadAndWorkerUpserts) {
  std::unique_ptr<Database> database = OpenOrDie();
  EXPECT_FALSE(database->GetWorkload("wk")->has_value());
  WorkloadRow workload{"wk", "matmul", "matmul(64x64)", "a matmul", 524288};
  ASSERT_TRUE(database->PutWorkload(workload).ok());
  workload.description = "updated";
  ASSERT_TRUE(database->PutWorkload(workload).ok());
  std::optional<WorkloadRow> stored = *database->GetWorkload("wk");
  ASSERT_TRUE(stored.has_value());
  EXPECT_EQ(stored->kind, "matmul");
  EXPECT_EQ(stored->description, "updated");
  EXPECT_EQ(stored->flops, 524288);

  WorkerRow worker{"w1", target::Target::kCpu, "host", R"({"avx2": true})", 10, 20};
  ASSERT_TRUE(database->PutWorker(worker).ok());
  worker.last_seen_unix_ms = 30;
  ASSERT_TRUE(database->PutWorker(worker).ok());
  std::optional<WorkerRow> stored_worker = *database->GetWorker("w1");
  ASSERT_TRUE(stored_worker.has_value());
  EXPECT_EQ(stored_worker->hardware, R"({"avx2": true})");
  EXPECT_EQ(stored_worker->registered_unix_ms, 10);
  EXPECT_EQ(stored_worker->last_seen_unix_ms, 30);
  EXPECT_FALSE(database->GetWorker("w2")->has_value());
}

TEST_P(DatabaseTest, JobAndTaskRoundTrip) {
  std::unique_ptr<Database> database = OpenOrDie();
  ASSERT_TRUE(database
                  ->CreateJob(MakeJob("j1", "team-a", 100),
                              {MakeTask("j1", 1, "wk2"), MakeTask("j1", 0, "wk")})
                  .ok());
  ASSERT_TRUE(database->CreateJob(MakeJob("j2", "team-b", 200), {}).ok());
  ASSERT_TRUE(database->CreateJob(MakeJob("j3", "team-a", 300), {}).ok());

  absl::StatusOr<JobRow> job = database->GetJob("j1");
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->team, "team-a");
  EXPECT_EQ(job->options, R"({"batch": 1})");
  EXPECT_EQ(job->budget, 1000);

  std::vector<TaskRow> tasks = *database->ListTasks("j1");
  ASSERT_EQ(tasks.size(), 2u);
  EXPECT_EQ(tasks[0].task_id, "j1.t0");
  EXPECT_EQ(tasks[1].task_id, "j1.t1");
  EXPECT_EQ(tasks[1].workload_key, "wk2");
  EXPECT_EQ(tasks[1].weight, 2);
  EXPECT_EQ(tasks[1].trials_allotted, 64);
  EXPECT_TRUE(database->ListTasks("j2")->empty());

  EXPECT_EQ(JobIds(*database->ListJobs("", std::nullopt)), (std::vector<std::string>{"j3", "j2", "j1"}));
  EXPECT_EQ(JobIds(*database->ListJobs("team-a", std::nullopt)), (std::vector<std::string>{"j3", "j1"}));

  ASSERT_TRUE(database->UpdateJobState("j3", JobState::kDone, "", 400).ok());
  ASSERT_TRUE(database->UpdateTaskState("j1.t0", TaskState::kDone).ok());
  EXPECT_EQ(JobIds(*database->ListJobs("team-a", JobState::kRunning)), (std::vector<std::string>{"j1"}));
  EXPECT_EQ(JobIds(*database->ListJobs("", JobState::kDone)), (std::vector<std::string>{"j3"}));
  EXPECT_EQ(database->GetJob("j3")->updated_unix_ms, 400);
  EXPECT_EQ((*database->ListTasks("j1"))[0].state, TaskState::kDone);
}

TEST_P(DatabaseTest, UnknownAndDuplicateJobs) {
  std::unique_ptr<Database> database = OpenOrDie();
  absl::StatusOr<JobRow> missing = database->GetJob("nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(missing.status().message(), "job 'nope' not found");
  EXPECT_EQ(database->UpdateJobState("nope", JobState::kDone, "", 1).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(database->ListTasks("nope").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(database->UpdateTaskState("nope.t0", TaskState::kDone).code(), absl::StatusCode::kNotFound);

  CreateTwoTaskJob(*database);
  absl::Status duplicate = database->CreateJob(MakeJob("j", "team-b", 5), {MakeTask("j", 7, "x")});
  EXPECT_EQ(duplicate.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(duplicate.message(), "job 'j' already exists");
  EXPECT_EQ(database->ListTasks("j")->size(), 2u);
  EXPECT_EQ(database->GetJob("j")->team, "team-a");
}

TEST_P(DatabaseTest, CreateJobIsAtomic) {
  std::unique_ptr<Database> database = OpenOrDie();
  // The second task reuses the first one's id: the whole job must be rolled back.
  absl::Status status = database->CreateJob(MakeJob("k", "team-a", 1),
                                            {MakeTask("k", 0, "wk"), MakeTask("k", 0, "wk")});
  EXPECT_EQ(status.code(), absl::StatusCode::kAlreadyExists) << status;
  EXPECT_EQ(database->GetJob("k").status().code(), absl::StatusCode::kNotFound);
  // A task naming another job is refused up front.
  EXPECT_EQ(database->CreateJob(MakeJob("m", "team-a", 1), {MakeTask("other", 0, "wk")}).code(),
            absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(database->CreateJob(MakeJob("k", "team-a", 1), {MakeTask("k", 0, "wk")}).ok());
}

TEST_P(DatabaseTest, CandidateNeedsExistingTask) {
  std::unique_ptr<Database> database = OpenOrDie();
  absl::Status status = database->PutCandidates({MakeCandidate("c1", "no-such-task", 1)});
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
  EXPECT_NE(status.message().find("FOREIGN KEY"), std::string::npos) << status;
  EXPECT_NE(status.message().find("c1"), std::string::npos) << status;
}

TEST_P(DatabaseTest, CandidatesArePutAllOrNone) {
  std::unique_ptr<Database> database = OpenOrDie();
  CreateTwoTaskJob(*database);
  absl::Status status = database->PutCandidates(
      {MakeCandidate("c1", "j.t0", 1), MakeCandidate("c2", "no-such-task", 1)});
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
  EXPECT_FALSE(database->GetCandidate("c1")->has_value());  // rolled back with its batch
  ASSERT_TRUE(
      database->PutCandidates({MakeCandidate("c1", "j.t0", 1), MakeCandidate("c2", "j.t1", 2)})
          .ok());
  EXPECT_EQ(database->GetCandidate("c2")->value().task_id, "j.t1");
  EXPECT_TRUE(database->PutCandidates({}).ok());
}

TEST_P(DatabaseTest, MeasurementOfUnknownTaskIsRejected) {
  std::unique_ptr<Database> database = OpenOrDie();
  CreateTwoTaskJob(*database);
  ASSERT_TRUE(database->PutCandidates({MakeCandidate("c1", "j.t0", 1)}).ok());
  absl::StatusOr<bool> stored = database->RecordMeasurement(MakeMeasurement("c1", "nope", true, 1));
  ASSERT_FALSE(stored.ok());
  EXPECT_EQ(stored.status().code(), absl::StatusCode::kFailedPrecondition) << stored.status();
  // Nothing of the failed transaction remains, and the connection is usable afterwards.
  EXPECT_EQ(database->GetCandidate("c1")->value().state, CandidateState::kPending);
  EXPECT_EQ(*database->CountMeasurements("nope"), 0);
  EXPECT_TRUE(*database->RecordMeasurement(MakeMeasurement("c1", "j.t0", true, 1)));
}

TEST_P(DatabaseTest, RecordsArePagedAndImportedAllOrNone) {
  std::unique_ptr<Database> database = OpenOrDie();
  CreateTwoTaskJob(*database);
  for (const char* id : {"m3", "m1", "m2"}) {
    ASSERT_TRUE(database->RecordMeasurement(MakeMeasurement(id, "j.t0", true, 1)).ok());
  }
  ASSERT_TRUE(database->RecordMeasurement(MakeMeasurement("m0", "j.t0", false, 0)).ok());
  RecordFilter filter;
  EXPECT_EQ(MeasurementIds(*database->ListRecords(filter, "", 2)),
            (std::vector<std::string>{"m1", "m2"}));
  EXPECT_EQ(MeasurementIds(*database->ListRecords(filter, "m2", 2)),
            (std::vector<std::string>{"m3"}));
  filter.include_failed = true;
  EXPECT_EQ(database->ListRecords(filter, "", 10)->size(), 4u);
  filter.workload_key = "other";
  EXPECT_TRUE(database->ListRecords(filter, "", 10)->empty());
  filter.workload_key.clear();
  filter.target = target::Target::kCuda;
  EXPECT_TRUE(database->ListRecords(filter, "", 10)->empty());
  EXPECT_EQ(database->ListRecords(filter, "", -1).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(*database->ExistingMeasurements({"m1", "nope", "m3"}),
            (std::vector<std::string>{"m1", "m3"}));

  // An import whose last row fails (unknown task) stores nothing: not its workload, job or task.
  WorkloadRow workload{"wk-new", "matmul", "canonical", "description", 10};
  JobRow job = MakeJob("import-1", "", 7);
  job.state = JobState::kDone;
  TaskRow task = MakeTask("import-1", 0, "wk-new");
  MeasurementRow fresh = MakeMeasurement("n1", "import-1.t0", true, 2);
  MeasurementRow orphan = MakeMeasurement("n2", "no-such-task", true, 2);
  absl::StatusOr<int64_t> failed =
      database->ImportRecords({workload}, {job}, {task}, {fresh, orphan});
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kFailedPrecondition) << failed.status();
  EXPECT_FALSE(database->GetWorkload("wk-new")->has_value());
  EXPECT_EQ(database->GetJob("import-1").status().code(), absl::StatusCode::kNotFound);
  // The same without the orphan: stored; an id already present is skipped, not overwritten.
  MeasurementRow clash = MakeMeasurement("m1", "import-1.t0", true, 99);
  absl::StatusOr<int64_t> added = database->ImportRecords({workload}, {job}, {task}, {fresh, clash});
  ASSERT_TRUE(added.ok()) << added.status();
  EXPECT_EQ(*added, 1);
  EXPECT_EQ(database->GetWorkload("wk-new")->value().canonical, "canonical");
  EXPECT_EQ(MeasurementIds(*database->ListMeasurementsForTask("import-1.t0")),
            (std::vector<std::string>{"n1"}));
  EXPECT_EQ(database->ListMeasurementsForTask("j.t0")->size(), 4u);
}

TEST_P(DatabaseTest, LeasesExpireBackToPending) {
  std::unique_ptr<Database> database = OpenOrDie();
  CreateTwoTaskJob(*database);
  for (const char* id : {"c1", "c2", "c3", "c4"}) {
    ASSERT_TRUE(database->PutCandidates({MakeCandidate(id, "j.t0", 10)}).ok());
  }
  ASSERT_TRUE(database->LeaseCandidate("c1", "w1", 1000).ok());
  ASSERT_TRUE(database->LeaseCandidate("c2", "w2", 5000).ok());
  ASSERT_TRUE(database->LeaseCandidate("c3", "w1", 999).ok());
  absl::Status unknown = database->LeaseCandidate("nope", "w1", 1);
  EXPECT_EQ(unknown.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(unknown.message(), "candidate 'nope' not found");

  std::optional<CandidateRow> leased = *database->GetCandidate("c2");
  ASSERT_TRUE(leased.has_value());
  EXPECT_EQ(leased->state, CandidateState::kLeased);
  EXPECT_EQ(leased->worker_id, "w2");
  EXPECT_EQ(leased->lease_deadline_unix_ms, 5000);
  EXPECT_EQ(database->ListCandidates("j.t0", CandidateState::kLeased)->size(), 3u);

  // A deadline equal to `now` has not passed yet.
  std::vector<std::string> expired = *database->ExpireLeases(1000);
  EXPECT_EQ(expired, (std::vector<std::string>{"c3"}));
  expired = *database->ExpireLeases(2000);
  EXPECT_EQ(expired, (std::vector<std::string>{"c1"}));
  EXPECT_TRUE(database->ExpireLeases(2000)->empty());

  std::optional<CandidateRow> returned = *database->GetCandidate("c1");
  EXPECT_EQ(returned->state, CandidateState::kPending);
  EXPECT_EQ(returned->worker_id, "");
  EXPECT_EQ(returned->lease_deadline_unix_ms, 0);
  EXPECT_EQ(database->GetCandidate("c2")->value().state, CandidateState::kLeased);
  EXPECT_EQ(CandidateIds(*database->ListCandidates("j.t0", CandidateState::kPending)),
            (std::vector<std::string>{"c1", "c3", "c4"}));
}

TEST_P(DatabaseTest, ExpireLeasesReportsInDeadlineOrder) {
  std::unique_ptr<Database> database = OpenOrDie();
  CreateTwoTaskJob(*database);
  const std::vector<std::pair<std::string, int64_t>> leases = {
      {"late", 300}, {"early", 100}, {"b", 200}, {"a", 200}};
  for (const auto& [id, deadline] : leases) {
    ASSERT_TRUE(database->PutCandidates({MakeCandidate(id, "j.t1", 1)}).ok());
    ASSERT_TRUE(database->LeaseCandidate(id, "w", deadline).ok());
  }
  EXPECT_EQ(*database->ExpireLeases(1000), (std::vector<std::string>{"early", "a", "b", "late"}));
}

TEST_P(DatabaseTest, RecordMeasurementIsIdempotentAndMarksCandidate) {
  std::unique_ptr<Database> database = OpenOrDie();
  CreateTwoTaskJob(*database);
  ASSERT_TRUE(database->PutCandidates({MakeCandidate("c1", "j.t0", 1)}).ok());
  ASSERT_TRUE(database->LeaseCandidate("c1", "worker-1", 100).ok());

  absl::StatusOr<bool> first =
      database->RecordMeasurement(MakeMeasurement("c1", "j.t0", true, 2e-3));
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE(*first);
  MeasurementRow replay = MakeMeasurement("c1", "j.t0", true, 9.0);
  absl::StatusOr<bool> second = database->RecordMeasurement(replay);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_FALSE(*second);

  std::vector<MeasurementRow> stored = *database->ListMeasurementsForTask("j.t0");
  ASSERT_EQ(stored.size(), 1u);
  EXPECT_DOUBLE_EQ(stored[0].median_seconds, 2e-3);
  EXPECT_EQ(stored[0].trace, "trace of c1");
  EXPECT_EQ(stored[0].hardware, R"({"cores": 8})");
  EXPECT_EQ(stored[0].repeats, 10);
  EXPECT_TRUE(stored[0].ok);
  EXPECT_EQ(*database->CountMeasurements("j.t0"), 1);

  std::optional<CandidateRow> candidate = *database->GetCandidate("c1");
  EXPECT_EQ(candidate->state, CandidateState::kMeasured);
  EXPECT_EQ(candidate->lease_deadline_unix_ms, 0);
  // A measured candidate neither expires nor can be leased again.
  EXPECT_TRUE(database->ExpireLeases(1'000'000)->empty());
  absl::Status relet = database->LeaseCandidate("c1", "worker-2", 5);
  EXPECT_EQ(relet.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(relet.message(), "candidate 'c1' is already measured and cannot be leased");
}

TEST_P(DatabaseTest, BestAndTopIgnoreFailuresAndOrderByMedian) {
  std::unique_ptr<Database> database = OpenOrDie();
  CreateTwoTaskJob(*database);
  EXPECT_FALSE(database->BestMeasurement("wk", target::Target::kCpu)->has_value());
  ASSERT_TRUE(database->RecordMeasurement(MakeMeasurement("a", "j.t0", true, 3.0)).ok());
  ASSERT_TRUE(database->RecordMeasurement(MakeMeasurement("b", "j.t0", false, 0.0)).ok());
  ASSERT_TRUE(database->RecordMeasurement(MakeMeasurement("c", "j.t0", true, 1.0)).ok());
  ASSERT_TRUE(database->RecordMeasurement(MakeMeasurement("d", "j.t1", true, 2.0)).ok());
  MeasurementRow other_target = MakeMeasurement("e", "j.t0", true, 0.5);
  other_target.target = target::Target::kCuda;
  ASSERT_TRUE(database->RecordMeasurement(other_target).ok());

  std::optional<MeasurementRow> best = *database->BestMeasurement("wk", target::Target::kCpu);
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->candidate_id, "c");
  EXPECT_EQ(MeasurementIds(*database->TopMeasurements("wk", target::Target::kCpu, 10)),
            (std::vector<std::string>{"c", "d", "a"}));
  EXPECT_EQ(database->TopMeasurements("wk", target::Target::kCpu, 2)->size(), 2u);
  EXPECT_TRUE(database->TopMeasurements("wk", target::Target::kCpu, 0)->empty());
  EXPECT_EQ(database->TopMeasurements("wk", target::Target::kCpu, -1).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(database->BestMeasurement("wk", target::Target::kCuda)->value().candidate_id, "e");
}

// A trace measured more than once ranks by the mean of its medians (the search confirms its best
// by measuring it again): a lucky first measurement does not keep it first.
TEST_P(DatabaseTest, TopMeasurementsRankATraceByTheMeanOfItsMeasurements) {
  std::unique_ptr<Database> database = OpenOrDie();
  CreateTwoTaskJob(*database);
  auto measure = [&](const std::string& id, const std::string& trace, double seconds,
                     const std::string& hardware) {
    MeasurementRow row = MakeMeasurement(id, "j.t0", true, seconds);
    row.trace = trace;
    row.hardware = hardware;
    ASSERT_TRUE(database->RecordMeasurement(row).ok());
  };
  measure("lucky", "A", 1.0, "cpu x");
  measure("steady", "B", 2.0, "cpu x");
  measure("lucky-again", "A", 3.2, "cpu x");  // A: mean 2.1
  measure("steady-again", "B", 2.2, "cpu x");
  measure("steady-third", "B", 1.6, "cpu x");  // B: mean 1.9333
  measure("elsewhere", "A", 1.5, "cpu y");     // the same trace on other hardware: its own row
  std::vector<MeasurementRow> top = *database->TopMeasurements("wk", target::Target::kCpu, 10);
  ASSERT_EQ(top.size(), 3u);
  EXPECT_EQ(top[0].trace, "A");
  EXPECT_EQ(top[0].hardware, "cpu y");
  EXPECT_EQ(top[0].measurements, 1);
  EXPECT_EQ(top[1].trace, "B");
  EXPECT_EQ(top[1].candidate_id, "steady-third");  // its fastest measurement's row
  EXPECT_NEAR(top[1].median_seconds, (2.0 + 2.2 + 1.6) / 3, 1e-12);
  EXPECT_EQ(top[1].measurements, 3);
  EXPECT_EQ(top[1].repeats, 30);
  EXPECT_NEAR(top[1].max_seconds, 2.2 * 1.1, 1e-12);
  EXPECT_EQ(top[2].candidate_id, "lucky");
  EXPECT_NEAR(top[2].median_seconds, 2.1, 1e-12);
  EXPECT_EQ(top[2].measurements, 2);
  EXPECT_EQ(database->BestMeasurement("wk", target::Target::kCpu)->value().candidate_id,
            "elsewhere");
  EXPECT_EQ(MeasurementIds(*database->TopMeasurements("wk", target::Target::kCpu, 2)),
            (std::vector<std::string>{"elsewhere", "steady-third"}));
}

TEST_P(DatabaseTest, RecentMeasurementsAreNewestOkOnTarget) {
  std::unique_ptr<Database> database = OpenOrDie();
  CreateTwoTaskJob(*database);
  const std::vector<std::pair<std::string, int64_t>> times = {
      {"old", 100}, {"new", 300}, {"mid", 200}, {"tie", 300}};
  for (const auto& [id, measured_unix_ms] : times) {
    MeasurementRow row = MakeMeasurement(id, "j.t0", true, 1.0);
    row.measured_unix_ms = measured_unix_ms;
    ASSERT_TRUE(database->RecordMeasurement(row).ok());
  }
  MeasurementRow failed = MakeMeasurement("failed", "j.t1", false, 0);
  failed.measured_unix_ms = 400;
  ASSERT_TRUE(database->RecordMeasurement(failed).ok());
  MeasurementRow cuda = MakeMeasurement("cuda", "j.t1", true, 1.0);
  cuda.target = target::Target::kCuda;
  cuda.measured_unix_ms = 500;
  ASSERT_TRUE(database->RecordMeasurement(cuda).ok());

  EXPECT_EQ(MeasurementIds(*database->RecentMeasurements(target::Target::kCpu, 3)),
            (std::vector<std::string>{"new", "tie", "mid"}));
  EXPECT_EQ(database->RecentMeasurements(target::Target::kCpu, 100)->size(), 4u);
  EXPECT_EQ(MeasurementIds(*database->RecentMeasurements(target::Target::kCuda, 100)),
            (std::vector<std::string>{"cuda"}));
  EXPECT_EQ(database->RecentMeasurements(target::Target::kCpu, -1).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_P(DatabaseTest, TaskProgressCounts) {
  std::unique_ptr<Database> database = OpenOrDie();
  CreateTwoTaskJob(*database);
  TaskProgress empty = *database->GetTaskProgress("j.t0");
  EXPECT_EQ(empty.trials_done, 0);
  EXPECT_EQ(empty.trials_failed, 0);
  EXPECT_FALSE(empty.best_seconds.has_value());

  ASSERT_TRUE(database->RecordMeasurement(MakeMeasurement("f1", "j.t0", false, 0)).ok());
  TaskProgress only_failed = *database->GetTaskProgress("j.t0");
  EXPECT_EQ(only_failed.trials_done, 1);
  EXPECT_EQ(only_failed.trials_failed, 1);
  EXPECT_FALSE(only_failed.best_seconds.has_value());

  ASSERT_TRUE(database->RecordMeasurement(MakeMeasurement("f2", "j.t0", false, 0)).ok());
  ASSERT_TRUE(database->RecordMeasurement(MakeMeasurement("o1", "j.t0", true, 4.0)).ok());
  ASSERT_TRUE(database->RecordMeasurement(MakeMeasurement("o2", "j.t0", true, 2.5)).ok());
  ASSERT_TRUE(database->RecordMeasurement(MakeMeasurement("x", "j.t1", true, 0.1)).ok());
  TaskProgress progress = *database->GetTaskProgress("j.t0");
  EXPECT_EQ(progress.trials_done, 4);
  EXPECT_EQ(progress.trials_failed, 2);
  ASSERT_TRUE(progress.best_seconds.has_value());
  EXPECT_DOUBLE_EQ(*progress.best_seconds, 2.5);
}

TEST_P(DatabaseTest, ValuesRoundTripExactly) {
  std::unique_ptr<Database> database = OpenOrDie();
  // Text that would break string-built SQL, non-ASCII text, and values at the edges of
  // int64 and double precision.
  const std::string tricky = "it's \"quoted\"; DROP TABLE measurements; -- ünïcødé ✓ \\ $1 ?1\n";
  WorkloadRow workload{tricky, "matmul", tricky, tricky, std::numeric_limits<int64_t>::max()};
  ASSERT_TRUE(database->PutWorkload(workload).ok());
  std::optional<WorkloadRow> stored_workload = *database->GetWorkload(tricky);
  ASSERT_TRUE(stored_workload.has_value());
  EXPECT_EQ(stored_workload->canonical, tricky);
  EXPECT_EQ(stored_workload->flops, std::numeric_limits<int64_t>::max());

  CreateTwoTaskJob(*database);
  MeasurementRow row = MakeMeasurement(tricky, "j.t0", true, 0.1 + 0.2);
  row.min_seconds = 1.0 / 3.0;
  row.max_seconds = 6.02214076e23;
  row.stddev_seconds = 1e-300;
  row.compile_seconds = std::nextafter(1.0, 2.0);
  row.trace = tricky;
  row.measured_unix_ms = std::numeric_limits<int64_t>::min() + 1;
  ASSERT_TRUE(database->RecordMeasurement(row).ok());
  std::vector<MeasurementRow> stored = *database->ListMeasurementsForTask("j.t0");
  ASSERT_EQ(stored.size(), 1u);
  EXPECT_EQ(stored[0].candidate_id, tricky);
  EXPECT_EQ(stored[0].trace, tricky);
  EXPECT_EQ(stored[0].median_seconds, 0.1 + 0.2);  // bit-exact, not just close
  EXPECT_EQ(stored[0].min_seconds, 1.0 / 3.0);
  EXPECT_EQ(stored[0].max_seconds, 6.02214076e23);
  EXPECT_EQ(stored[0].stddev_seconds, 1e-300);
  EXPECT_EQ(stored[0].compile_seconds, std::nextafter(1.0, 2.0));
  EXPECT_EQ(stored[0].measured_unix_ms, std::numeric_limits<int64_t>::min() + 1);
}

TEST_P(DatabaseTest, NulBytesAndNaNAreRefusedOnEveryBackend) {
  std::unique_ptr<Database> database = OpenOrDie();
  const absl::Status nul =
      database->PutWorkload(WorkloadRow{std::string("wk\0tail", 7), "matmul", "c", "d", 1});
  EXPECT_EQ(nul.code(), absl::StatusCode::kInvalidArgument) << nul;
  EXPECT_NE(nul.message().find("put workload"), std::string::npos) << nul;
  EXPECT_NE(nul.message().find("NUL"), std::string::npos) << nul;
  EXPECT_FALSE(database->GetWorkload("wk")->has_value());

  CreateTwoTaskJob(*database);
  MeasurementRow row = MakeMeasurement("c1", "j.t0", false, std::nan(""));
  const absl::StatusOr<bool> stored = database->RecordMeasurement(row);
  EXPECT_EQ(stored.status().code(), absl::StatusCode::kInvalidArgument) << stored.status();
  EXPECT_NE(stored.status().message().find("NaN"), std::string::npos) << stored.status();
  EXPECT_EQ(*database->CountMeasurements("j.t0"), 0);
}

TEST_P(DatabaseTest, TextOrderIsBytewise) {
  std::unique_ptr<Database> database = OpenOrDie();
  // Bytewise: "B" (0x42) < "_c" (0x5f) < "a" (0x61); a natural-language collation such as
  // en-US would give "_c", "a", "B".
  for (const char* id : {"a", "B", "_c"}) {
    ASSERT_TRUE(database->CreateJob(MakeJob(id, "team", 7), {}).ok());
  }
  EXPECT_EQ(JobIds(*database->ListJobs("", std::nullopt)), (std::vector<std::string>{"a", "_c", "B"}));
  CreateTwoTaskJob(*database);
  for (const char* id : {"a", "B", "_c"}) {
    ASSERT_TRUE(database->PutCandidates({MakeCandidate(id, "j.t0", 5)}).ok());
    ASSERT_TRUE(database->LeaseCandidate(id, "w", 50).ok());
  }
  EXPECT_EQ(CandidateIds(*database->ListCandidates("j.t0", CandidateState::kLeased)),
            (std::vector<std::string>{"B", "_c", "a"}));
  EXPECT_EQ(*database->ExpireLeases(100), (std::vector<std::string>{"B", "_c", "a"}));
  for (const char* id : {"a", "B", "_c"}) {
    ASSERT_TRUE(database->RecordMeasurement(MakeMeasurement(id, "j.t0", true, 1.0)).ok());
  }
  EXPECT_EQ(MeasurementIds(*database->ListMeasurementsForTask("j.t0")),
            (std::vector<std::string>{"B", "_c", "a"}));
  EXPECT_EQ(MeasurementIds(*database->TopMeasurements("wk", target::Target::kCpu, 10)),
            (std::vector<std::string>{"B", "_c", "a"}));
  EXPECT_EQ(MeasurementIds(*database->RecentMeasurements(target::Target::kCpu, 10)),
            (std::vector<std::string>{"B", "_c", "a"}));
}

TEST_P(DatabaseTest, ConcurrentRecordMeasurementStoresEachOnce) {
  std::unique_ptr<Database> database = OpenOrDie();
  CreateTwoTaskJob(*database);
  constexpr int kThreads = 4;
  constexpr int kCandidates = 60;
  std::atomic<int> inserted{0};
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int thread_index = 0; thread_index < kThreads; ++thread_index) {
    threads.emplace_back([&, thread_index] {
      // Every thread records every candidate, each in a different order.
      for (int step = 0; step < kCandidates; ++step) {
        const int candidate = (step * (thread_index + 1) * 7 + thread_index) % kCandidates;
        absl::StatusOr<bool> stored = database->RecordMeasurement(
            MakeMeasurement(absl::StrCat("c", candidate), "j.t0", true, 1.0 + candidate));
        if (!stored.ok()) {
          ++failures;
        } else if (*stored) {
          ++inserted;
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(inserted.load(), kCandidates);
  EXPECT_EQ(*database->CountMeasurements("j.t0"), kCandidates);
}

TEST_P(DatabaseTest, ConcurrentRecordMeasurementAcrossConnections) {
  // Two Database objects (two connections, as two servers would have) race on the same ids.
  std::unique_ptr<Database> first = OpenOrDie();
  std::unique_ptr<Database> second = OpenOrDie();
  ASSERT_NE(second, nullptr);
  CreateTwoTaskJob(*first);
  constexpr int kCandidates = 40;
  for (int candidate = 0; candidate < kCandidates; ++candidate) {
    ASSERT_TRUE(first->PutCandidates({MakeCandidate(absl::StrCat("c", candidate), "j.t0", 1)}).ok());
  }
  std::atomic<int> inserted{0};
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int thread_index = 0; thread_index < 4; ++thread_index) {
    Database* database = thread_index % 2 == 0 ? first.get() : second.get();
    threads.emplace_back([&, database, thread_index] {
      for (int step = 0; step < kCandidates; ++step) {
        const int candidate = thread_index < 2 ? step : kCandidates - 1 - step;
        absl::StatusOr<bool> stored = database->RecordMeasurement(
            MakeMeasurement(absl::StrCat("c", candidate), "j.t0", true, 1.0));
        if (!stored.ok()) {
          ADD_FAILURE() << stored.status();
          ++failures;
        } else if (*stored) {
          ++inserted;
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(inserted.load(), kCandidates);
  EXPECT_EQ(*second->CountMeasurements("j.t0"), kCandidates);
  EXPECT_TRUE(second->ListCandidates("j.t0", CandidateState::kPending)->empty());
}

TEST_P(DatabaseTest, SecondDatabaseObjectSeesDataAcrossRestart) {
  std::unique_ptr<Database> first = OpenOrDie();
  CreateTwoTaskJob(*first);
  ASSERT_TRUE(first->RecordMeasurement(MakeMeasurement("c1", "j.t0", true, 1.5)).ok());
  // While the first is still open (two connections on one database) ...
  std::unique_ptr<Database> second = OpenOrDie();
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(second->GetJob("j")->model_name, "resnet");
  EXPECT_FALSE(*second->RecordMeasurement(MakeMeasurement("c1", "j.t0", true, 9.0)));
  ASSERT_TRUE(second->RecordMeasurement(MakeMeasurement("c2", "j.t0", true, 0.5)).ok());
  EXPECT_EQ(*first->CountMeasurements("j.t0"), 2);
  // ... and after both are closed, as after a server restart.
  first.reset();
  second.reset();
  std::unique_ptr<Database> restarted = OpenOrDie();
  ASSERT_NE(restarted, nullptr);
  EXPECT_EQ(restarted->ListTasks("j")->size(), 2u);
  EXPECT_EQ(restarted->BestMeasurement("wk", target::Target::kCpu)->value().candidate_id, "c2");
  EXPECT_EQ(*restarted->SchemaVersion(), LatestSchemaVersion());
}

}  // namespace
}  // namespace gtco::db
