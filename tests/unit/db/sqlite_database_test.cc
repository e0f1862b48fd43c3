// Tests of the SQLite schedule database against real database files in a temporary directory.
#include "common/db/sqlite_database.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/db/migrations.h"

namespace gtco::db {
namespace {

// A fresh directory per test, removed with its files afterwards.
class SqliteDatabaseTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = ::testing::TempDir() + "gtco_db_XXXXXX";
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    directory_ = pattern;
    path_ = directory_ + "/schedules.db";
  }
  void TearDown() override {
    for (const char* suffix : {"", "-wal", "-shm", "-journal"}) unlink((path_ + suffix).c_str());
    unlink((directory_ + "/garbage.db").c_str());
    rmdir(directory_.c_str());
  }

  std::unique_ptr<Database> OpenOrDie() {
    absl::StatusOr<std::unique_ptr<Database>> database = OpenSqliteDatabase(path_);
    EXPECT_TRUE(database.ok()) << database.status();
    return database.ok() ? *std::move(database) : nullptr;
  }

  // Runs one query on a separate raw sqlite3 connection and returns the first column of the
  // first row as text ("" when there is none).
  std::string RawQuery(const std::string& sql) {
    sqlite3* handle = nullptr;
    EXPECT_EQ(sqlite3_open(path_.c_str(), &handle), SQLITE_OK);
    sqlite3_stmt* statement = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(handle, sql.c_str(), -1, &statement, nullptr), SQLITE_OK)
        << sqlite3_errmsg(handle);
    std::string value;
    if (sqlite3_step(statement) == SQLITE_ROW && sqlite3_column_text(statement, 0) != nullptr) {
      value = reinterpret_cast<const char*>(sqlite3_column_text(statement, 0));
    }
    sqlite3_finalize(statement);
    sqlite3_close(handle);
    return value;
  }

  std::string directory_;
  std::string path_;
};

JobRow MakeJob(const std::string& job_id, const std::string& team, int64_t created_unix_ms) {
  JobRow job;
  job.job_id = job_id;
  job.team = team;
  job.model_name = "resnet";
  job.model_sha = "abc123";
  job.target = "cpu";
  job.state = "running";
  job.budget = 1000;
  job.options = R"({"batch": 1})";
  job.created_unix_ms = created_unix_ms;
  job.updated_unix_ms = created_unix_ms;
  return job;
}

TaskRow MakeTask(const std::string& job_id, int ordinal, const std::string& workload_key) {
  TaskRow task;
  task.task_id = absl::StrCat(job_id, ".t", ordinal);
  task.job_id = job_id;
  task.ordinal = ordinal;
  task.workload_key = workload_key;
  task.target = "cpu";
  task.weight = ordinal + 1;
  task.trials_allotted = 64;
  task.state = "pending";
  return task;
}

CandidateRow MakeCandidate(const std::string& candidate_id, const std::string& task_id,
                           int64_t created_unix_ms) {
  CandidateRow candidate;
  candidate.candidate_id = candidate_id;
  candidate.task_id = task_id;
  candidate.workload_key = "wk";
  candidate.target = "cpu";
  candidate.trace = "split(i, 32)";
  candidate.program_hash = "h" + candidate_id;
  candidate.state = "pending";
  candidate.created_unix_ms = created_unix_ms;
  return candidate;
}

MeasurementRow MakeMeasurement(const std::string& candidate_id, const std::string& task_id, bool ok,
                               double median_seconds) {
  MeasurementRow row;
  row.candidate_id = candidate_id;
  row.task_id = task_id;
  row.workload_key = "wk";
  row.target = "cpu";
  row.trace = "trace of " + candidate_id;
  row.program_hash = "h" + candidate_id;
  row.ok = ok;
  row.error_kind = ok ? "" : "runtime";
  row.error = ok ? "" : "segfault";
  row.median_seconds = median_seconds;
  row.min_seconds = median_seconds * 0.9;
  row.max_seconds = median_seconds * 1.1;
  row.stddev_seconds = 1e-6;
  row.repeats = 10;
  row.compile_seconds = 0.25;
  row.worker_id = "worker-1";
  row.hardware = R"({"cores": 8})";
  row.measured_unix_ms = 1000;
  return row;
}

// Creates job "j" with tasks "j.t0" and "j.t1".
void CreateTwoTaskJob(Database& database) {
  ASSERT_TRUE(
      database
          .CreateJob(MakeJob("j", "team-a", 100), {MakeTask("j", 0, "wk"), MakeTask("j", 1, "wk2")})
          .ok());
}

TEST_F(SqliteDatabaseTest, MigrationsCreateSchemaOnceAndEnableWal) {
  {
    std::unique_ptr<Database> database = OpenOrDie();
    ASSERT_NE(database, nullptr);
    EXPECT_EQ(*database->SchemaVersion(), LatestSchemaVersion());
  }
  const std::string applied_at = RawQuery("SELECT applied_unix_ms FROM schema_migrations");
  EXPECT_FALSE(applied_at.empty());
  for (const char* table :
       {"workloads", "workers", "jobs", "tasks", "candidates", "measurements"}) {
    EXPECT_EQ(RawQuery(absl::StrCat("SELECT name FROM sqlite_master WHERE type = 'table' AND "
                                    "name = '",
                                    table, "'")),
              table);
  }
  EXPECT_EQ(RawQuery("SELECT name FROM sqlite_master WHERE name = 'measurements_by_workload'"),
            "measurements_by_workload");
  EXPECT_EQ(RawQuery("PRAGMA journal_mode"), "wal");

  std::unique_ptr<Database> reopened = OpenOrDie();
  ASSERT_NE(reopened, nullptr);
  EXPECT_EQ(*reopened->SchemaVersion(), LatestSchemaVersion());
  EXPECT_EQ(RawQuery("SELECT COUNT(*) FROM schema_migrations"),
            std::to_string(AllMigrations().size()));
  EXPECT_EQ(RawQuery("SELECT applied_unix_ms FROM schema_migrations"), applied_at);
}

TEST_F(SqliteDatabaseTest, RefusesSchemaNewerThanBinary) {
  OpenOrDie().reset();
  RawQuery("INSERT INTO schema_migrations (version, applied_unix_ms) VALUES (999, 0)");
  absl::StatusOr<std::unique_ptr<Database>> database = OpenSqliteDatabase(path_);
  ASSERT_FALSE(database.ok());
  EXPECT_EQ(database.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(database.status().message().find("999"), std::string::npos);
  EXPECT_NE(database.status().message().find(path_), std::string::npos);
}

TEST_F(SqliteDatabaseTest, GarbageFileIsRejectedWithPath) {
  const std::string garbage_path = directory_ + "/garbage.db";
  {
    std::ofstream garbage(garbage_path);
    for (int line = 0; line < 200; ++line) garbage << "this is not a sqlite database\n";
  }
  absl::StatusOr<std::unique_ptr<Database>> database = OpenSqliteDatabase(garbage_path);
  ASSERT_FALSE(database.ok());
  EXPECT_EQ(database.status().code(), absl::StatusCode::kInvalidArgument) << database.status();
  EXPECT_NE(database.status().message().find(garbage_path), std::string::npos);
  EXPECT_NE(database.status().message().find("not a SQLite database"), std::string::npos);
}

TEST_F(SqliteDatabaseTest, MissingDirectoryIsRejectedWithPath) {
  const std::string missing = directory_ + "/no/such/dir/schedules.db";
  absl::StatusOr<std::unique_ptr<Database>> database = OpenSqliteDatabase(missing);
  ASSERT_FALSE(database.ok());
  EXPECT_EQ(database.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(database.status().message().find(missing), std::string::npos);
  EXPECT_NE(database.status().message().find("does not exist"), std::string::npos);
}

TEST(SqliteInMemoryTest, MemoryDatabaseWorksForTests) {
  absl::StatusOr<std::unique_ptr<Database>> database = OpenSqliteDatabase(":memory:");
  ASSERT_TRUE(database.ok()) << database.status();
  EXPECT_EQ(*(*database)->SchemaVersion(), LatestSchemaVersion());
  ASSERT_TRUE((*database)->CreateJob(MakeJob("j", "t", 1), {MakeTask("j", 0, "wk")}).ok());
  EXPECT_EQ((*database)->ListTasks("j")->size(), 1u);
}

TEST_F(SqliteDatabaseTest, WorkloadAndWorkerUpserts) {
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

  WorkerRow worker{"w1", "cpu", "host", R"({"avx2": true})", 10, 20};
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

TEST_F(SqliteDatabaseTest, JobAndTaskRoundTrip) {
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

  auto job_ids = [](const std::vector<JobRow>& jobs) {
    std::vector<std::string> ids;
    for (const JobRow& row : jobs) ids.push_back(row.job_id);
    return ids;
  };
  EXPECT_EQ(job_ids(*database->ListJobs("", "")), (std::vector<std::string>{"j3", "j2", "j1"}));
  EXPECT_EQ(job_ids(*database->ListJobs("team-a", "")), (std::vector<std::string>{"j3", "j1"}));

  ASSERT_TRUE(database->UpdateJobState("j3", "done", "", 400).ok());
  ASSERT_TRUE(database->UpdateTaskState("j1.t0", "done").ok());
  EXPECT_EQ(job_ids(*database->ListJobs("team-a", "running")), (std::vector<std::string>{"j1"}));
  EXPECT_EQ(job_ids(*database->ListJobs("", "done")), (std::vector<std::string>{"j3"}));
  EXPECT_EQ(database->GetJob("j3")->updated_unix_ms, 400);
  EXPECT_EQ((*database->ListTasks("j1"))[0].state, "done");
}

TEST_F(SqliteDatabaseTest, UnknownAndDuplicateJobs) {
  std::unique_ptr<Database> database = OpenOrDie();
  absl::StatusOr<JobRow> missing = database->GetJob("nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(missing.status().message(), "job 'nope' not found");
  EXPECT_EQ(database->UpdateJobState("nope", "done", "", 1).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(database->ListTasks("nope").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(database->UpdateTaskState("nope.t0", "done").code(), absl::StatusCode::kNotFound);

  CreateTwoTaskJob(*database);
  absl::Status duplicate = database->CreateJob(MakeJob("j", "team-b", 5), {MakeTask("j", 7, "x")});
  EXPECT_EQ(duplicate.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(duplicate.message(), "job 'j' already exists");
  EXPECT_EQ(database->ListTasks("j")->size(), 2u);
  EXPECT_EQ(database->GetJob("j")->team, "team-a");
}

TEST_F(SqliteDatabaseTest, CreateJobIsAtomic) {
  std::unique_ptr<Database> database = OpenOrDie();
  // The second task reuses the first one's id: the whole job must be rolled back.
  absl::Status status = database->CreateJob(MakeJob("k", "team-a", 1),
                                            {MakeTask("k", 0, "wk"), MakeTask("k", 0, "wk")});
  EXPECT_FALSE(status.ok());
  EXPECT_EQ(database->GetJob("k").status().code(), absl::StatusCode::kNotFound);
  // A task naming another job is refused up front.
  EXPECT_EQ(database->CreateJob(MakeJob("m", "team-a", 1), {MakeTask("other", 0, "wk")}).code(),
            absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(database->CreateJob(MakeJob("k", "team-a", 1), {MakeTask("k", 0, "wk")}).ok());
}

TEST_F(SqliteDatabaseTest, CandidateNeedsExistingTask) {
  std::unique_ptr<Database> database = OpenOrDie();
  absl::Status status = database->PutCandidate(MakeCandidate("c1", "no-such-task", 1));
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
  EXPECT_NE(status.message().find("FOREIGN KEY"), std::string::npos) << status;
}

TEST_F(SqliteDatabaseTest, LeasesExpireBackToPending) {
  std::unique_ptr<Database> database = OpenOrDie();
  CreateTwoTaskJob(*database);
  for (const char* id : {"c1", "c2", "c3", "c4"}) {
    ASSERT_TRUE(database->PutCandidate(MakeCandidate(id, "j.t0", 10)).ok());
  }
  ASSERT_TRUE(database->LeaseCandidate("c1", "w1", 1000).ok());
  ASSERT_TRUE(database->LeaseCandidate("c2", "w2", 5000).ok());
  ASSERT_TRUE(database->LeaseCandidate("c3", "w1", 999).ok());
  EXPECT_EQ(database->LeaseCandidate("nope", "w1", 1).code(), absl::StatusCode::kNotFound);

  std::optional<CandidateRow> leased = *database->GetCandidate("c2");
  ASSERT_TRUE(leased.has_value());
  EXPECT_EQ(leased->state, "leased");
  EXPECT_EQ(leased->worker_id, "w2");
  EXPECT_EQ(leased->lease_deadline_unix_ms, 5000);
  EXPECT_EQ(database->ListCandidates("j.t0", "leased")->size(), 3u);

  // A deadline equal to `now` has not passed yet.
  std::vector<std::string> expired = *database->ExpireLeases(1000);
  EXPECT_EQ(expired, (std::vector<std::string>{"c3"}));
  expired = *database->ExpireLeases(2000);
  EXPECT_EQ(expired, (std::vector<std::string>{"c1"}));
  EXPECT_TRUE(database->ExpireLeases(2000)->empty());

  std::optional<CandidateRow> returned = *database->GetCandidate("c1");
  EXPECT_EQ(returned->state, "pending");
  EXPECT_EQ(returned->worker_id, "");
  EXPECT_EQ(database->GetCandidate("c2")->value().state, "leased");
  std::vector<CandidateRow> pending = *database->ListCandidates("j.t0", "pending");
  std::vector<std::string> pending_ids;
  for (const CandidateRow& row : pending) pending_ids.push_back(row.candidate_id);
  EXPECT_EQ(pending_ids, (std::vector<std::string>{"c1", "c3", "c4"}));
}

TEST_F(SqliteDatabaseTest, RecordMeasurementIsIdempotentAndMarksCandidate) {
  std::unique_ptr<Database> database = OpenOrDie();
  CreateTwoTaskJob(*database);
  ASSERT_TRUE(database->PutCandidate(MakeCandidate("c1", "j.t0", 1)).ok());
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
  EXPECT_EQ(candidate->state, "measured");
  EXPECT_EQ(candidate->lease_deadline_unix_ms, 0);
  // A measured candidate neither expires nor can be leased again.
  EXPECT_TRUE(database->ExpireLeases(1'000'000)->empty());
  EXPECT_EQ(database->LeaseCandidate("c1", "worker-2", 5).code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST_F(SqliteDatabaseTest, BestAndTopIgnoreFailuresAndOrderByMedian) {
  std::unique_ptr<Database> database = OpenOrDie();
  CreateTwoTaskJob(*database);
  EXPECT_FALSE(database->BestMeasurement("wk", "cpu")->has_value());
  ASSERT_TRUE(database->RecordMeasurement(MakeMeasurement("a", "j.t0", true, 3.0)).ok());
  ASSERT_TRUE(database->RecordMeasurement(MakeMeasurement("b", "j.t0", false, 0.0)).ok());
  ASSERT_TRUE(database->RecordMeasurement(MakeMeasurement("c", "j.t0", true, 1.0)).ok());
  ASSERT_TRUE(database->RecordMeasurement(MakeMeasurement("d", "j.t1", true, 2.0)).ok());
  MeasurementRow other_target = MakeMeasurement("e", "j.t0", true, 0.5);
  other_target.target = "cuda";
  ASSERT_TRUE(database->RecordMeasurement(other_target).ok());

  std::optional<MeasurementRow> best = *database->BestMeasurement("wk", "cpu");
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->candidate_id, "c");
  std::vector<MeasurementRow> top = *database->TopMeasurements("wk", "cpu", 10);
  std::vector<std::string> top_ids;
  for (const MeasurementRow& row : top) top_ids.push_back(row.candidate_id);
  EXPECT_EQ(top_ids, (std::vector<std::string>{"c", "d", "a"}));
  EXPECT_EQ(database->TopMeasurements("wk", "cpu", 2)->size(), 2u);
  EXPECT_TRUE(database->TopMeasurements("wk", "cpu", 0)->empty());
  EXPECT_EQ(database->TopMeasurements("wk", "cpu", -1).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(database->BestMeasurement("wk", "cuda")->value().candidate_id, "e");
}

TEST_F(SqliteDatabaseTest, TaskProgressCounts) {
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

TEST_F(SqliteDatabaseTest, ConcurrentRecordMeasurementStoresEachOnce) {
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

TEST_F(SqliteDatabaseTest, SecondDatabaseObjectSeesDataAcrossRestart) {
  std::unique_ptr<Database> first = OpenOrDie();
  CreateTwoTaskJob(*first);
  ASSERT_TRUE(first->RecordMeasurement(MakeMeasurement("c1", "j.t0", true, 1.5)).ok());
  // While the first is still open (two connections on one WAL file) ...
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
  EXPECT_EQ(restarted->BestMeasurement("wk", "cpu")->value().candidate_id, "c2");
  EXPECT_EQ(*restarted->SchemaVersion(), LatestSchemaVersion());
}

}  // namespace
}  // namespace gtco::db
